// The Device API (/deviceapi, contract 6): phones download their tickets, online locks sync. Clients bound to one
// device or lock reach only its data.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ForbiddenError, NotFoundError } from '../../errors.js';
import apiDocs from '../../plugins/api-docs.js';
import bearerAuth from '../../plugins/bearer-auth.js';
import clientRateLimit from '../../plugins/client-rate-limit.js';
import { DownloadedTicketSchema, SyncAnswerSchema, SyncQuery } from '../../schemas/device.js';
import { ObjectIdParams } from '../../schemas/operator.js';
import { problemResponses } from '../../schemas/problem.js';
import { noStoreResponse, ResponseHeaders, withHeaders } from '../../schemas/responses.js';
import { DEPRECATIONS } from '../../services/deprecations.js';
import type { Services } from '../../services/index.js';
import { actionContext } from '../shared/context.js';
import { PageQuery, sendPage } from '../shared/pages.js';
import { removalError } from '../shared/removed.js';

export interface DeviceApiOptions {
  services: Services;
  tokenUrl: string;
  rateLimitPerMinute: number;
}

/** Mobile SDK 2.x was removed on 01.04.2018 (seed 9): its requests are refused before anything else. */
const SDK_2 = /^\s*2(\.|\s*$)/;

function refuseSdk2(request: FastifyRequest): void {
  const version = request.headers['x-sdk-version'];
  if (typeof version === 'string' && SDK_2.test(version)) throw removalError(DEPRECATIONS.mobileSdk2);
}

/** A bound client reaches only its own device or lock; anything else answers as missing (contract 3.7). */
function assertBinding(request: FastifyRequest, kind: 'mobileDeviceId' | 'securedObjectId', id: string, bindingRequired: boolean): void {
  const bound = request.auth[kind];
  const other = request.auth[kind === 'mobileDeviceId' ? 'securedObjectId' : 'mobileDeviceId'];
  if (bound !== undefined && bound !== id) throw new NotFoundError(`No ${kind === 'mobileDeviceId' ? 'mobile device' : 'secured object'} ${id}.`);
  if (other !== undefined) throw new ForbiddenError('This client is bound to another kind of device.');
  if (bindingRequired && bound === undefined) {
    throw new ForbiddenError('Tickets are downloaded with a client bound to the mobile device (POST /operatorapi/oauthclients with mobileDeviceId).');
  }
}

const deviceRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.get(
    '/mobiledevices/:id/tickets',
    {
      // The answer carries the tickets' credentials (contract 6.3): never stored by a cache.
      config: { scope: 'tokens:download', noStore: true },
      schema: {
        tags: ['Mobile devices'],
        security: [{ bearer: ['tokens:download'] }],
        operationId: 'downloadTickets',
        summary: 'Download the device\'s tickets',
        description:
          'The device\'s VALID tickets, each with its signed credential. The first download of a ticket sets its ' +
          '`downloadDate`. Needs a client bound to this device.',
        params: ObjectIdParams,
        querystring: PageQuery,
        response: {
          200: noStoreResponse(Type.Array(DownloadedTicketSchema), 'A page of tickets with credentials.', { Link: ResponseHeaders.nextPage }),
          ...problemResponses(404, 410, 414),
        },
      },
    },
    async (request, reply) => {
      assertBinding(request, 'mobileDeviceId', request.params.id, true);
      const page = await services.devices.download(actionContext(request), request.params.id, request.query.limit, request.query.cursor);
      return sendPage(request, reply, page);
    },
  );

  app.get(
    '/securedobjects/:id/sync',
    {
      config: { scope: 'sync' },
      schema: {
        tags: ['Secured objects'],
        security: [{ bearer: ['sync'] }],
        operationId: 'syncSecuredObject',
        summary: 'Sync an online lock',
        description:
          'Without `cursor`: the lock\'s current valid tickets and the revocations it still needs (not yet expired). ' +
          'With the `cursor` of the previous answer: only what changed after it; nothing changed answers empty arrays ' +
          'and the same cursor. Large answers are cut at `limit` with `Link: rel="next"`. Needs a client bound to this ' +
          'lock, or an unbound one.',
        params: ObjectIdParams,
        querystring: SyncQuery,
        response: {
          200: withHeaders(SyncAnswerSchema, 'The changes and the cursor to continue from.', { Link: ResponseHeaders.nextPage }),
          ...problemResponses(404, 410, 414),
        },
      },
    },
    async (request, reply) => {
      assertBinding(request, 'securedObjectId', request.params.id, false);
      const answer = await services.devices.sync(request.auth.tenantId, request.params.id, request.query.limit, request.query.cursor);
      const { more, ...body } = answer;
      if (more) sendPage(request, reply, { items: [], nextCursor: body.cursor });
      return body;
    },
  );
};

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
    resources.addHook('onRequest', async (request) => refuseSdk2(request));
    await resources.register(bearerAuth, { audience: 'deviceapi', tokens: options.services.tokens });
    await resources.register(clientRateLimit, { perMinute: options.rateLimitPerMinute });
    await resources.register(deviceRoutes, { services: options.services, prefix: '/deviceapi' });
  });
}
