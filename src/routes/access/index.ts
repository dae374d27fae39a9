// The Access API (/v1): its documentation, its bearer check (aud `accessapi`) and its resources.
import type { FastifyInstance } from 'fastify';
import apiDocs from '../../plugins/api-docs.js';
import bearerAuth from '../../plugins/bearer-auth.js';
import clientRateLimit from '../../plugins/client-rate-limit.js';
import idempotency from '../../plugins/idempotency.js';
import type { Services } from '../../services/index.js';
import { ACCESS_SCOPES } from '../../shared/scopes.js';
import accessPermissionRoutes from './access-permissions.js';
import claimRoutes from './claims.js';
import deviceListingRoutes from './devices.js';
import { lockGroupRoutes, residentRoutes } from './groups.js';
import tokenCardRoutes from './token-card.js';
import residentRevocationRoutes from './resident-revocations.js';

export interface AccessApiOptions {
  services: Services;
  tokenUrl: string;
  rateLimitPerMinute: number;
}

const SCOPE_DESCRIPTIONS: Record<string, string> = {
  offline: 'a refresh token with the access token',
  'nfc-token-writer': 'write token cards',
  'device-groups:write': 'create and change residents and lock groups',
  'device-groups:read': 'read residents and lock groups',
  'devices:read': 'list mobile devices and secured objects',
  'access-permissions:read': 'read access permissions and their tickets',
  'access-permissions:write': 'grant and withdraw access permissions',
};

export default async function accessApi(app: FastifyInstance, options: AccessApiOptions) {
  await app.register(apiDocs, {
    title: 'Access API',
    description:
      'The high-level API of the access credential service for property-management apps: residents (all devices ' +
      'of one person), lock groups, and access permissions that grant a resident a lock group in one call. ' +
      'Authenticate with an access token from `POST /oauth2/token` (password grant, username `USER@TENANT`).',
    version: '1.0.0',
    uiPrefix: '/v1/swagger-ui',
    tags: [
      { name: 'Residents', description: 'People, each with all of their mobile devices, and their token cards.' },
      { name: 'Lock groups', description: 'Secured objects granted together.' },
      { name: 'Access permissions', description: 'A resident\'s access to a lock group: one ticket per device and lock.' },
      { name: 'Claims', description: 'Links that enrol a resident\'s phone with its own key (docs/api-reference.md 12).' },
      { name: 'Devices', description: 'The mobile devices and secured objects residents and lock groups are made of.' },
    ],
    scopes: Object.fromEntries(ACCESS_SCOPES.map((scope) => [scope, SCOPE_DESCRIPTIONS[scope] ?? scope])),
    tokenUrl: options.tokenUrl,
    flow: 'password',
  });
  await app.register(async (resources) => {
    const { services } = options;
    await resources.register(bearerAuth, { audience: 'accessapi', tokens: services.tokens });
    await resources.register(clientRateLimit, { perMinute: options.rateLimitPerMinute });
    await resources.register(idempotency, { idempotency: services.idempotency });
    await resources.register(residentRoutes, { service: services.residents, prefix: '/v1' });
    await resources.register(lockGroupRoutes, { service: services.lockGroups, prefix: '/v1' });
    await resources.register(accessPermissionRoutes, { services, prefix: '/v1' });
    await resources.register(deviceListingRoutes, { services, prefix: '/v1' });
    await resources.register(tokenCardRoutes, { services, prefix: '/v1' });
    await resources.register(claimRoutes, { services, prefix: '/v1' });
    await resources.register(residentRevocationRoutes, { services, prefix: '/v1' });
  });
}
