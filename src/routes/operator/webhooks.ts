// /operatorapi/webhooks: webhook subscriptions and their signing secrets (docs/api-reference.md 10), scope `webhooks:manage`.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { problemResponses } from '../../schemas/problem.js';
import { noStoreResponse, PageQuery, pageResponse, ResponseHeaders } from '../../schemas/common.js';
import { CreatedWebhookSchema, NewWebhookSchema, WebhookChangesSchema, WebhookIdParams, WebhookSchema, WebhookWithSecretSchema } from '../../schemas/webhook.js';
import type { Services } from '../../services/index.js';
import { actionContext } from '../shared/context.js';
import { resourcePath } from '../shared/headers.js';
import { sendPage } from '../shared/pages.js';

const tags = ['Webhooks'];
const security = [{ bearer: ['webhooks:manage'] }];
const config = { scope: 'webhooks:manage' };
/** The answers that show a secret (docs/api-reference.md 10: once) are never stored by a cache. */
const secretConfig = { ...config, noStore: true };

/** docs/api-reference.md 7.6: creates honour `Idempotency-Key`. */
const IdempotencyKeyHeaders = Type.Object({
  'idempotency-key': Type.Optional(Type.String({ description: 'Makes the request safe to retry (24 h); a replay withholds the secret.' })),
});

const webhookRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.post(
    '/webhooks',
    {
      // docs/security-cases.md H57: a retry with the same Idempotency-Key makes no second subscription and shows no secret.
      config: { ...secretConfig, idempotent: { withholdSecret: 'secret' } },
      schema: {
        tags,
        security,
        operationId: 'createWebhook',
        summary: 'Subscribe to events',
        description:
          'Subscribes `url` to the listed event types. It receives the events committed after it, each POSTed with the ' +
          'Standard Webhooks headers and signed with `secret`, which is in this answer only. A URL that is not `https` or ' +
          'resolves to a loopback, private, link-local or cloud-metadata address is a 422 naming the reason; a tenant has ' +
          'at most 50 subscriptions (409). With `Idempotency-Key`, a repeat answers the same subscription and creates ' +
          'nothing, without the secret and with `secretWithheld: true` (the secret was shown once); the same key with ' +
          'another body is `422`.',
        headers: IdempotencyKeyHeaders,
        body: NewWebhookSchema,
        response: {
          201: noStoreResponse(CreatedWebhookSchema, 'The subscription, with its secret (withheld on a replay).', { Location: ResponseHeaders.location }),
          ...problemResponses(409, 413, 415, 422),
        },
      },
    },
    async (request, reply) => {
      const webhook = await services.webhooks.create(actionContext(request), request.body);
      return reply.code(201).header('location', resourcePath`/operatorapi/webhooks/${webhook.id}`).send(webhook);
    },
  );

  app.get(
    '/webhooks',
    {
      config,
      schema: {
        tags,
        security,
        operationId: 'listWebhooks',
        summary: 'List webhook subscriptions',
        description: 'The tenant\'s subscriptions, oldest first, without secrets. Pages follow `Link: rel="next"`.',
        querystring: PageQuery,
        response: {
          200: pageResponse(WebhookSchema, 'A page of subscriptions.'),
          ...problemResponses(),
        },
      },
    },
    async (request, reply) =>
      sendPage(request, reply, await services.webhooks.list(request.auth.tenantId, request.query.limit, request.query.cursor)),
  );

  app.get(
    '/webhooks/:id',
    {
      config,
      schema: {
        tags,
        security,
        operationId: 'getWebhook',
        summary: 'Read a webhook subscription',
        description: 'One subscription of the tenant, without its secret.',
        params: WebhookIdParams,
        response: { 200: { ...WebhookSchema, description: 'The subscription.' }, ...problemResponses(404, 414) },
      },
    },
    async (request) => services.webhooks.get(request.auth.tenantId, request.params.id),
  );

  app.patch(
    '/webhooks/:id',
    {
      config,
      schema: {
        tags,
        security,
        operationId: 'updateWebhook',
        summary: 'Change a webhook subscription',
        description:
          'Changes the given fields and answers the subscription. A new `url` is checked as at creation (422). `enabled: ' +
          'false` pauses it; `enabled: true` resumes it, a subscription the service disabled too, from where it stopped, so ' +
          'no event committed meanwhile is lost. A body that changes nothing answers 200 and records nothing.',
        params: WebhookIdParams,
        body: WebhookChangesSchema,
        response: {
          200: { ...WebhookSchema, description: 'The subscription.' },
          ...problemResponses(404, 413, 414, 415, 422),
        },
      },
    },
    async (request) => services.webhooks.update(actionContext(request), request.params.id, request.body),
  );

  app.delete(
    '/webhooks/:id',
    {
      config,
      schema: {
        tags,
        security,
        operationId: 'deleteWebhook',
        summary: 'Delete a webhook subscription',
        description: 'Unsubscribes: nothing more is sent, and its pending deliveries and recorded attempts are deleted.',
        params: WebhookIdParams,
        response: { 204: Type.Null({ description: 'Deleted.' }), ...problemResponses(404, 413, 414, 415) },
      },
    },
    async (request, reply) => {
      await services.webhooks.delete(actionContext(request), request.params.id);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/webhooks/:id/secret',
    {
      config: secretConfig,
      schema: {
        tags,
        security,
        operationId: 'rotateWebhookSecret',
        summary: 'Rotate a webhook subscription\'s secret',
        description:
          'A new signing secret, shown in this answer only. The previous one keeps signing beside it for 24 h ' +
          '(`previousSecretExpiresTime`; deliveries carry both signatures), so the receiver can switch without missing one. ' +
          'Rotating again within those 24 h ends the oldest secret at once.',
        params: WebhookIdParams,
        response: {
          200: noStoreResponse(WebhookWithSecretSchema, 'The subscription with its new secret.'),
          ...problemResponses(404, 413, 414, 415),
        },
      },
    },
    async (request) => services.webhooks.rotateSecret(actionContext(request), request.params.id),
  );
};

export default webhookRoutes;
