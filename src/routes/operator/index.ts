// The Operator API (/operatorapi): its documentation, its bearer check (aud `operatorapi`) and its resources.
import type { FastifyInstance } from 'fastify';
import apiDocs from '../../plugins/api-docs.js';
import bearerAuth from '../../plugins/bearer-auth.js';
import type { Services } from '../../services/index.js';
import { OPERATOR_SCOPES } from '../../shared/scopes.js';
import clientRateLimit from '../../plugins/client-rate-limit.js';
import idempotency from '../../plugins/idempotency.js';
import accessCheckRoutes from './access-checks.js';
import accessLogRoutes from './access-log.js';
import auditRoutes from './audit-events.js';
import erasureRoutes from './erasures.js';
import claimRoutes from './claims.js';
import eventRoutes from './events.js';
import lockdownRoutes from './lockdowns.js';
import jobRoutes from './jobs.js';
import mobileDeviceRoutes from './mobile-devices.js';
import oauthClientRoutes from './oauth-clients.js';
import revocationRoutes from './revocations.js';
import scheduleRoutes from './schedules.js';
import securedObjectRoutes from './secured-objects.js';
import settingsRoutes from './settings.js';
import ticketKeyRoutes from './ticket-keys.js';
import ticketRoutes from './tickets.js';
import userRoutes from './users.js';
import webhookRoutes from './webhooks.js';
import webhookDeliveryRoutes from './webhook-deliveries.js';

export interface OperatorApiOptions {
  services: Services;
  tokenUrl: string;
  rateLimitPerMinute: number;
}

const SCOPE_DESCRIPTIONS: Record<string, string> = {
  'tokens:create': 'create tickets',
  'tokens:read': 'list and read tickets',
  'tokens:delete': 'revoke tickets',
  'tokens:download': 'a mobile device fetching its own tickets (Device API)',
  'devices:read': 'list and read mobile devices and secured objects',
  'devices:write': 'register and remove mobile devices and secured objects',
  sync: 'download ticket and revocation data for online secured objects (Device API)',
  'clients:manage': 'manage OAuth clients',
  'users:manage': 'manage Access API users',
  'audit:read': 'read the audit trail',
  'events:read': 'read the event feed',
  'webhooks:manage': 'manage webhook subscriptions and their deliveries',
  'keys:register': 'a bound client registering its own mobile device\'s or secured object\'s public key (Device API)',
  'settings:manage': 'read and change the tenant\'s settings',
  'lockdown:manage': 'start and end lockdowns, and issue override tickets that open during one',
  'device-groups:write': 'bulk jobs of residents and lock groups (docs/api-reference.md 14), as on the Access API',
  'access-permissions:write': 'bulk jobs of access permissions (docs/api-reference.md 14), as on the Access API',
};

export default async function operatorApi(app: FastifyInstance, options: OperatorApiOptions) {
  await app.register(apiDocs, {
    title: 'Operator API',
    description:
      'The low-level API of the access credential service: secured objects (locks), mobile devices, tickets ' +
      '(time-limited tokens that let one device operate one lock), OAuth clients and users. Authenticate with an ' +
      'access token from `POST /oauth/token` (client credentials).',
    version: '1.0.0',
    uiPrefix: '/operatorapi/apidocs',
    tags: [
      { name: 'Secured objects', description: 'Locks, each with the channels it supports and the address of each.' },
      { name: 'Mobile devices', description: 'Phones and cards that tickets are issued to.' },
      { name: 'Claims', description: 'Links that put a phone in service with its own key, and replace a lost one (docs/api-reference.md 12).' },
      { name: 'Tickets', description: 'Time-limited permissions for one mobile device to operate one secured object.' },
      { name: 'OAuth clients', description: 'The backends and devices that get access tokens from `POST /oauth/token`.' },
      { name: 'Users', description: 'The people who log in to the Access API.' },
      { name: 'Audit', description: 'The record of every change in the tenant: a view of its event log.' },
      { name: 'Events', description: 'The tenant\'s event log (docs/api-reference.md 10): every change a client would react to, in order.' },
      {
        name: 'Access checks',
        description: 'Why a phone does or does not open a lock: the lock\'s decision, as far as the server knows what it holds.',
      },
      {
        name: 'Ticket keys',
        description: 'The keys the tenant\'s credentials are signed with, published at `/tenants/{tenant}/jwks.json`, and their rotation.',
      },
      {
        name: 'Lockdowns',
        description: 'Lock every door of the tenant or of a lock group at once, offline locks included (docs/api-reference.md 15).',
      },
      {
        name: 'Jobs',
        description: 'Bulk jobs (docs/api-reference.md 14): many locks, devices, residents, lock groups, permissions or tickets in one request, JSON or CSV, with a result per item.',
      },
      {
        name: 'Settings',
        description: 'The tenant\'s settings: the holder-binding policy of its locks and how long its records are kept (docs/api-reference.md 11.2, 16.1).',
      },
      { name: 'Erasures', description: 'Erasing a person\'s data on request, and the record of each erasure (docs/api-reference.md 16.2).' },
      {
        name: 'Webhooks',
        description: 'Subscriptions that receive the tenant\'s events as signed HTTP requests (Standard Webhooks), their secrets and their deliveries.',
      },
    ],
    scopes: Object.fromEntries(OPERATOR_SCOPES.map((scope) => [scope, SCOPE_DESCRIPTIONS[scope] ?? scope])),
    tokenUrl: options.tokenUrl,
  });
  await app.register(async (resources) => {
    const { services } = options;
    await resources.register(bearerAuth, { audience: 'operatorapi', tokens: services.tokens });
    await resources.register(clientRateLimit, { perMinute: options.rateLimitPerMinute });
    await resources.register(idempotency, { idempotency: services.idempotency });
    for (const routes of [
      securedObjectRoutes,
      mobileDeviceRoutes,
      ticketRoutes,
      oauthClientRoutes,
      userRoutes,
      auditRoutes,
      eventRoutes,
      ticketKeyRoutes,
      revocationRoutes,
      accessCheckRoutes,
      accessLogRoutes,
      scheduleRoutes,
      webhookRoutes,
      webhookDeliveryRoutes,
      settingsRoutes,
      erasureRoutes,
      claimRoutes,
      lockdownRoutes,
      jobRoutes,
    ]) {
      await resources.register(routes, { services, prefix: '/operatorapi' });
    }
  });
}
