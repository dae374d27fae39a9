// GET /deviceapi/mobiledevices/{id}/tickets (docs/api-reference.md 6.1): a phone downloads its valid tickets with credentials.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { DownloadedTicketSchema } from '../../schemas/credential.js';
import { noStoreResponse, ObjectIdParams, PageQuery, ResponseHeaders } from '../../schemas/common.js';
import { problemResponses } from '../../schemas/problem.js';
import type { Services } from '../../services/index.js';
import { actionContext } from '../shared/context.js';
import { sendPage } from '../shared/pages.js';

const mobileDeviceRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.get(
    '/mobiledevices/:id/tickets',
    {
      // The answer carries the tickets' credentials (docs/api-reference.md 6.3): never stored by a cache.
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
      const { limit, cursor } = request.query;
      return sendPage(request, reply, await services.downloads.download(actionContext(request), request.auth, request.params.id, limit, cursor));
    },
  );
};

export default mobileDeviceRoutes;
