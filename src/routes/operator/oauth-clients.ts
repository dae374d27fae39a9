// /operatorapi/oauthclients: OAuth client management (docs/api-reference.md 3.7), scope `clients:manage`.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ClientIdParams, ClientSchema, ClientWithSecretSchema, CreatedClientSchema, NewClientSchema } from '../../schemas/oauth-client.js';
import { problemResponses } from '../../schemas/problem.js';
import { noStoreResponse, PageQuery, pageResponse, ResponseHeaders } from '../../schemas/common.js';
import type { Services } from '../../services/index.js';
import { actionContext } from '../shared/context.js';
import { sendPage } from '../shared/pages.js';
import { resourcePath } from '../shared/headers.js';

const tags = ['OAuth clients'];
const security = [{ bearer: ['clients:manage'] }];
const config = { scope: 'clients:manage' };
/** The answers that show a secret (docs/api-reference.md 3.7: once) are never stored by a cache. */
const secretConfig = { ...config, noStore: true };

/** docs/api-reference.md 7.6: creates honour `Idempotency-Key`. */
const IdempotencyKeyHeaders = Type.Object({
  'idempotency-key': Type.Optional(Type.String({ description: 'Makes the request safe to retry (24 h); a replay withholds the secret.' })),
});

const oauthClientRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.post(
    '/oauthclients',
    {
      // docs/security-cases.md H57: a retry with the same Idempotency-Key makes no second client and shows no secret.
      config: { ...secretConfig, idempotent: { withholdSecret: 'clientSecret' } },
      schema: {
        tags,
        security,
        operationId: 'createOAuthClient',
        summary: 'Create an OAuth client',
        description:
          'Creates a client of the caller\'s tenant with any scopes of any API. Bind it to one mobile device or one ' +
          'secured object to make a Device API client. The secret is in this answer only. With `Idempotency-Key`, a ' +
          'repeat answers the same client and creates nothing, without the secret and with `secretWithheld: true` (the ' +
          'secret was shown once); the same key with another body is `422`.',
        headers: IdempotencyKeyHeaders,
        body: NewClientSchema,
        response: {
          201: noStoreResponse(CreatedClientSchema, 'The client, with its secret (withheld on a replay).', { Location: ResponseHeaders.location }),
          ...problemResponses(409, 413, 415, 422),
        },
      },
    },
    async (request, reply) => {
      const client = await services.clients.create(actionContext(request), request.body);
      return reply.code(201).header('location', resourcePath`/operatorapi/oauthclients/${client.clientId}`).send(client);
    },
  );

  app.get(
    '/oauthclients',
    {
      config,
      schema: {
        tags,
        security,
        operationId: 'listOAuthClients',
        summary: 'List OAuth clients',
        description: 'The tenant\'s clients, oldest first, without secrets. Pages follow `Link: rel="next"`.',
        querystring: PageQuery,
        response: {
          200: pageResponse(ClientSchema, 'A page of clients.'),
          ...problemResponses(),
        },
      },
    },
    async (request, reply) =>
      sendPage(request, reply, await services.clients.list(request.auth.tenantId, request.query.limit, request.query.cursor)),
  );

  app.get(
    '/oauthclients/:clientId',
    {
      config,
      schema: {
        tags,
        security,
        operationId: 'getOAuthClient',
        summary: 'Read an OAuth client',
        description: 'One client of the tenant, without its secret.',
        params: ClientIdParams,
        response: { 200: { ...ClientSchema, description: 'The client.' }, ...problemResponses(404, 414) },
      },
    },
    async (request) => services.clients.get(request.auth.tenantId, request.params.clientId),
  );

  app.delete(
    '/oauthclients/:clientId',
    {
      config,
      schema: {
        tags,
        security,
        operationId: 'deleteOAuthClient',
        summary: 'Delete an OAuth client',
        description: 'The client can no longer get tokens, and the access tokens it holds stop working within 5 s.',
        params: ClientIdParams,
        response: { 204: Type.Null({ description: 'Deleted.' }), ...problemResponses(404, 413, 414, 415) },
      },
    },
    async (request, reply) => {
      await services.clients.delete(actionContext(request), request.params.clientId);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/oauthclients/:clientId/secret',
    {
      config: secretConfig,
      schema: {
        tags,
        security,
        operationId: 'rotateOAuthClientSecret',
        summary: 'Rotate an OAuth client\'s secret',
        description:
          'A new secret, shown in this answer only; the old one stops working at once. A client made by a claim link has no ' +
          'secret and authenticates only with `private_key_jwt` (docs/api-reference.md 12): `409`, it is given none.',
        params: ClientIdParams,
        response: { 200: noStoreResponse(ClientWithSecretSchema, 'The client with its new secret.'), ...problemResponses(404, 409, 413, 414, 415) },
      },
    },
    async (request) => services.clients.rotateSecret(actionContext(request), request.params.clientId),
  );
};

export default oauthClientRoutes;
