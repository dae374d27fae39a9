// GET /operatorapi/revocations (docs/api-reference.md 8.4): revoked tickets by whether their lock has applied the revocation.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { RevocationQuery, TicketSchema } from '../../schemas/ticket.js';
import { pageResponse } from '../../schemas/common.js';
import { problemResponses } from '../../schemas/problem.js';
import type { Services } from '../../services/index.js';
import { sendPage } from '../shared/pages.js';

const revocationRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.get(
    '/revocations',
    {
      config: { scope: 'tokens:read' },
      schema: {
        tags: ['Tickets'],
        security: [{ bearer: ['tokens:read'] }],
        operationId: 'listRevocations',
        summary: 'List revocations by how far they have reached their lock',
        description:
          'Revoked tickets in creation order. `applied=false`: their lock has not applied the revocation yet and a ' +
          'credential of the ticket may still be alive there (at the lock\'s clock): the doors that may still open for a ' +
          'revoked phone. `applied=true`: the lock has applied it (`revocationAppliedTime`). Without `applied`, both. A ' +
          'revocation its lock never needed (the ticket was never downloaded) or no longer needs (every credential ' +
          'expired first) is in neither. A deleted lock\'s tickets are listed too: the door exists until it applied ' +
          'them. An unknown `securedObjectId` lists nothing. `residentId` follows a resident\'s "revoke everywhere" ' +
          '(`POST /v1/residents/{id}/revocations`) to its doors. Pages follow `Link: rel="next"`.',
        querystring: RevocationQuery,
        response: {
          200: pageResponse(TicketSchema, 'A page of revoked tickets.'),
          ...problemResponses(),
        },
      },
    },
    async (request, reply) => {
      const { limit, cursor, applied, securedObjectId, residentId } = request.query;
      const filter = { applied: applied === undefined ? undefined : applied === 'true', securedObjectId, residentId };
      return sendPage(request, reply, await services.lockTelemetry.revocations(request.auth.tenantId, filter, limit, cursor));
    },
  );
};

export default revocationRoutes;
