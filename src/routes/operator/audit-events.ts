// /operatorapi/audit-events: the tenant's audit trail (docs/api-reference.md 7.5), a view of its event log, scope `audit:read`.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { AuditEventSchema, AuditQuery } from '../../schemas/audit-event.js';
import { pageResponse } from '../../schemas/common.js';
import { problemResponses } from '../../schemas/problem.js';
import type { Services } from '../../services/index.js';
import { sendPage } from '../shared/pages.js';

const auditRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.get(
    '/audit-events',
    {
      config: { scope: 'audit:read' },
      schema: {
        tags: ['Audit'],
        security: [{ bearer: ['audit:read'] }],
        operationId: 'listAuditEvents',
        summary: 'List audit events',
        description:
          'Every change in the tenant (clients, users, devices, locks, tickets, groups, permissions, downloads), in ' +
          'append order, filtered by target, action and time range `[from, to)`: a view of the event log ' +
          '(`GET /operatorapi/events`; `id` is its `sequence`, `action` its `type`). `target=ticket:<id>` shows the ' +
          'ticket\'s creation and revocation whatever made them, the chunked events of grants, membership changes and ' +
          'removals included. Pages follow `Link: rel="next"`.',
        querystring: AuditQuery,
        response: {
          200: pageResponse(AuditEventSchema, 'A page of audit events.'),
          ...problemResponses(),
        },
      },
    },
    async (request, reply) => {
      const { limit, cursor, ...filter } = request.query;
      return sendPage(request, reply, await services.audit.list(request.auth.tenantId, filter, limit, cursor));
    },
  );
};

export default auditRoutes;
