// /operatorapi/events: the tenant's event log as a feed for clients that poll (docs/api-reference.md 10), scope `events:read`.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { EventSchema, EventsQuery } from '../../schemas/event.js';
import { problemResponses } from '../../schemas/problem.js';
import { pageResponse } from '../../schemas/common.js';
import type { Services } from '../../services/index.js';
import { linkNextPage } from '../shared/pages.js';

const eventRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.get(
    '/events',
    {
      config: { scope: 'events:read' },
      schema: {
        tags: ['Events'],
        security: [{ bearer: ['events:read'] }],
        operationId: 'listEvents',
        summary: 'List events',
        description:
          'The tenant\'s event log (docs/api-reference.md 10) after `after`, in sequence order: the same events webhooks ' +
          'deliver, written in the transaction of each change, numbered without gaps. Poll with the `sequence` of the ' +
          'last event seen; while more remain, `Link: rel="next"` names the next page (docs/api-reference.md 7.3). Events ' +
          'are kept for EVENT_RETENTION_DAYS (default 30).',
        querystring: EventsQuery,
        response: {
          200: pageResponse(EventSchema, 'A page of events.'),
          ...problemResponses(),
        },
      },
    },
    async (request, reply) => {
      const { after, types, limit } = request.query;
      const page = await services.audit.feed(request.auth.tenantId, after, types, limit);
      // docs/api-reference.md 7.3: the same route and filters; `after` is this feed's public cursor.
      if (page.nextAfter !== null) linkNextPage(request, reply, String(page.nextAfter), 'after');
      return page.items;
    },
  );
};

export default eventRoutes;
