// /operatorapi/webhooks/{id}/deliveries, /replay and /test (docs/api-reference.md 10), scope `webhooks:manage`.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { problemResponses } from '../../schemas/problem.js';
import { pageResponse } from '../../schemas/common.js';
import {
  ReplayResultSchema,
  ReplaySchema,
  TestPingResultSchema,
  WebhookAttemptQuery,
  WebhookAttemptSchema,
  WebhookIdParams,
} from '../../schemas/webhook-delivery.js';
import type { Services } from '../../services/index.js';
import { sendPage } from '../shared/pages.js';

const webhookDeliveryRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.get(
    '/webhooks/:id/deliveries',
    {
      config: { scope: 'webhooks:manage' },
      schema: {
        tags: ['Webhooks'],
        security: [{ bearer: ['webhooks:manage'] }],
        operationId: 'listWebhookDeliveries',
        summary: 'List a subscription\'s delivery attempts',
        description:
          'Every attempt to deliver an event (or a test ping) to the subscription, newest first, optionally of one event. ' +
          'Pages follow `Link: rel="next"`.',
        params: WebhookIdParams,
        querystring: WebhookAttemptQuery,
        response: {
          200: pageResponse(WebhookAttemptSchema, 'A page of attempts.'),
          ...problemResponses(404),
        },
      },
    },
    async (request, reply) => {
      const { limit, cursor, eventId } = request.query;
      return sendPage(request, reply, await services.webhookDeliveries.listAttempts(request.auth.tenantId, request.params.id, { eventId }, limit, cursor));
    },
  );

  app.post(
    '/webhooks/:id/replay',
    {
      config: { scope: 'webhooks:manage' },
      schema: {
        tags: ['Webhooks'],
        security: [{ bearer: ['webhooks:manage'] }],
        operationId: 'replayWebhookEvents',
        summary: 'Deliver events again',
        description:
          'Makes deliveries of the named events, or of every event of the subscription\'s types since a time, due now. ' +
          'They are sent under the event\'s own `webhook-id`, as the first time, and retried on failure like any ' +
          'delivery. A paused subscription receives them once it is enabled.',
        params: WebhookIdParams,
        body: ReplaySchema,
        response: {
          202: { ...ReplayResultSchema, description: 'The deliveries are due now.' },
          ...problemResponses(404, 413, 415, 422),
        },
      },
    },
    async (request, reply) => {
      const replayed = await services.webhookDeliveries.replay(request.auth.tenantId, request.params.id, request.body);
      return reply.code(202).send({ replayed });
    },
  );

  app.post(
    '/webhooks/:id/test',
    {
      config: { scope: 'webhooks:manage' },
      schema: {
        tags: ['Webhooks'],
        security: [{ bearer: ['webhooks:manage'] }],
        operationId: 'testWebhook',
        summary: 'Send a test ping',
        description:
          'Sends `{id, type: "webhook.test", time, data: {webhookId}}` to the subscription now, signed like every ' +
          'delivery, and answers what came of it. The attempt is logged; a failed ping is not retried and does not count ' +
          'towards disabling the subscription.',
        params: WebhookIdParams,
        response: {
          200: { ...TestPingResultSchema, description: 'What the receiver answered.' },
          ...problemResponses(404, 413, 415),
        },
      },
    },
    async (request) => services.webhookDeliveries.test(request.auth.tenantId, request.params.id),
  );
};

export default webhookDeliveryRoutes;
