// The Device API (/deviceapi, docs/contract.md 6): its documentation, the Mobile SDK 2.x refusal, its bearer check (aud
// `deviceapi`) and its resources: phones download their tickets, online locks sync.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import apiDocs from '../../plugins/api-docs.js';
import bearerAuth from '../../plugins/bearer-auth.js';
import clientRateLimit from '../../plugins/client-rate-limit.js';
import { DEPRECATIONS } from '../../services/deprecations.js';
import type { Services } from '../../services/index.js';
import { removalError } from '../shared/removed.js';
import mobileDeviceRoutes from './mobile-devices.js';
import securedObjectRoutes from './secured-objects.js';

export interface DeviceApiOptions {
  services: Services;
  tokenUrl: string;
  rateLimitPerMinute: number;
}

/** Mobile SDK 2.x was removed on 01.04.2018 (docs/seed.md 9): its requests are refused before anything else. */
const SDK_2 = /^\s*2(\.|\s*$)/;

function refuseSdk2(request: FastifyRequest): void {
  const version = request.headers['x-sdk-version'];
  if (typeof version === 'string' && SDK_2.test(version)) throw removalError(DEPRECATIONS.mobileSdk2);
}

export default async function deviceApi(app: FastifyInstance, options: DeviceApiOptions) {
  await app.register(apiDocs, {
    title: 'Device API',
    description:
      'Used by mobile devices (their SDK) and online locks: phones download their tickets with signed credentials, ' +
      'online locks sync tickets and revocations. Authenticate with an access token from `POST /oauth/token` of a ' +
      'client bound to one mobile device (scope `tokens:download`) or one secured object (scope `sync`).',
    version: '1.0.0',
    uiPrefix: '/deviceapi/apidocs',
    uiAliases: ['/deviceapi/apidocs/index.html'],
    tags: [
      { name: 'Mobile devices', description: 'A phone downloading its tickets.' },
      { name: 'Secured objects', description: 'An online lock syncing its tickets and revocations.' },
    ],
    scopes: { 'tokens:download': 'a mobile device fetching its own tickets', sync: 'an online lock syncing its tickets and revocations' },
    tokenUrl: options.tokenUrl,
  });
  await app.register(async (resources) => {
    const { services } = options;
    resources.addHook('onRequest', async (request) => refuseSdk2(request));
    await resources.register(bearerAuth, { audience: 'deviceapi', tokens: services.tokens });
    await resources.register(clientRateLimit, { perMinute: options.rateLimitPerMinute });
    for (const routes of [mobileDeviceRoutes, securedObjectRoutes]) {
      await resources.register(routes, { services, prefix: '/deviceapi' });
    }
  });
}
