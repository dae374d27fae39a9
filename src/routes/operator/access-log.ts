// GET /operatorapi/accesslog: the tenant's access logs as its locks reported them (docs/api-reference.md 8.5), scope `audit:read`.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { AccessLogEntrySchema, AccessLogQuery } from '../../schemas/access-log.js';
import { problemResponses } from '../../schemas/problem.js';
import { pageResponse } from '../../schemas/common.js';
import type { Services } from '../../services/index.js';
import { sendPage } from '../shared/pages.js';

const accessLogRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.get(
    '/accesslog',
    {
      config: { scope: 'audit:read' },
      schema: {
        tags: ['Audit'],
        security: [{ bearer: ['audit:read'] }],
        operationId: 'listAccessLog',
        summary: 'List access log entries',
        description:
          'What the tenant\'s locks decided, as they uploaded it or phones relayed it (docs/api-reference.md 8.5), ordered by ' +
          'the lock\'s time, then lock, then entry number; filtered by lock, phone, credential, result and lock-time ' +
          'range `[from, to)`. Pages follow `Link: rel="next"`.',
        querystring: AccessLogQuery,
        response: {
          200: pageResponse(AccessLogEntrySchema, 'A page of access log entries.'),
          ...problemResponses(),
        },
      },
    },
    async (request, reply) => {
      const { limit, cursor, ...filter } = request.query;
      return sendPage(request, reply, await services.accessLogs.list(request.auth.tenantId, filter, limit, cursor));
    },
  );
};

export default accessLogRoutes;
