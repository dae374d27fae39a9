// /v1/access-permissions (docs/api-reference.md 5): grant a resident a lock group; one call makes every device × lock ticket.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { AccessPermissionQuery, AccessPermissionSchema, NewAccessPermissionSchema } from '../../schemas/access-permission.js';
import { GroupIdParams } from '../../schemas/group.js';
import { TicketSchema } from '../../schemas/ticket.js';
import { createdResponse, PageQuery, pageResponse } from '../../schemas/common.js';
import { problemResponses } from '../../schemas/problem.js';
import type { Services } from '../../services/index.js';
import { actionContext } from '../shared/context.js';
import { sendPage } from '../shared/pages.js';
import { resourcePath } from '../shared/headers.js';

const tags = ['Access permissions'];
const write = { scope: 'access-permissions:write' };
const read = { scope: 'access-permissions:read' };

const accessPermissionRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.post(
    '/access-permissions',
    {
      config: { ...write, idempotent: true },
      schema: {
        tags,
        security: [{ bearer: [write.scope] }],
        operationId: 'createAccessPermission',
        summary: 'Grant a resident access to a lock group',
        description:
          'Creates one ticket per (mobile device of the resident) × (secured object of the lock group), all in one ' +
          'transaction: all or nothing. Later membership changes keep the tickets true. `tokenCount` says how many ' +
          'were made. An optional `schedule` (in each lock\'s time zone) is copied to every ticket; `422` when it is ' +
          'malformed or never opens within [beginDate, endDate) in a zone of the group\'s locks. Send `Idempotency-Key` ' +
          'to make retries safe.',
        headers: Type.Object({ 'idempotency-key': Type.Optional(Type.String({ description: 'Makes the request safe to retry (24 h).' })) }),
        body: NewAccessPermissionSchema,
        response: {
          201: createdResponse(AccessPermissionSchema, 'The access permission.'),
          ...problemResponses(409, 413, 415, 422),
        },
      },
    },
    async (request, reply) => {
      const permission = await services.accessPermissions.create(actionContext(request), request.body);
      return reply.code(201).header('location', resourcePath`/v1/access-permissions/${permission.id}`).send(permission);
    },
  );

  app.get(
    '/access-permissions',
    {
      config: read,
      schema: {
        tags,
        security: [{ bearer: [read.scope] }],
        operationId: 'listAccessPermissions',
        summary: 'List access permissions',
        description: 'The tenant\'s access permissions, oldest first, filtered by resident or lock group.',
        querystring: AccessPermissionQuery,
        response: {
          200: pageResponse(AccessPermissionSchema, 'A page of access permissions.'),
          ...problemResponses(),
        },
      },
    },
    async (request, reply) => {
      const { limit, cursor, ...filter } = request.query;
      return sendPage(request, reply, await services.accessPermissions.list(request.auth.tenantId, filter, limit, cursor));
    },
  );

  app.get(
    '/access-permissions/:id',
    {
      config: read,
      schema: {
        tags,
        security: [{ bearer: [read.scope] }],
        operationId: 'getAccessPermission',
        summary: 'Read an access permission',
        description: 'One access permission with the number of live tickets it holds.',
        params: GroupIdParams,
        response: { 200: { ...AccessPermissionSchema, description: 'The access permission.' }, ...problemResponses(404, 414) },
      },
    },
    async (request) => services.accessPermissions.get(request.auth.tenantId, request.params.id),
  );

  app.get(
    '/access-permissions/:id/tokens',
    {
      config: read,
      schema: {
        tags,
        security: [{ bearer: [read.scope] }],
        operationId: 'listAccessPermissionTokens',
        summary: 'List the tickets of an access permission',
        description: 'The tickets the permission made, revoked ones included, in creation order.',
        params: GroupIdParams,
        querystring: PageQuery,
        response: {
          200: pageResponse(TicketSchema, 'A page of tickets.'),
          ...problemResponses(404, 414),
        },
      },
    },
    async (request, reply) =>
      sendPage(
        request,
        reply,
        await services.accessPermissions.tokens(request.auth.tenantId, request.params.id, request.query.limit, request.query.cursor),
      ),
  );

  app.delete(
    '/access-permissions/:id',
    {
      config: write,
      schema: {
        tags,
        security: [{ bearer: [write.scope] }],
        operationId: 'deleteAccessPermission',
        summary: 'Delete an access permission',
        description: 'Every ticket the permission made becomes `REVOKED`, in one transaction.',
        params: GroupIdParams,
        response: { 204: Type.Null({ description: 'Deleted.' }), ...problemResponses(404, 413, 414, 415) },
      },
    },
    async (request, reply) => {
      await services.accessPermissions.delete(actionContext(request), request.params.id);
      return reply.code(204).send(null);
    },
  );
};

export default accessPermissionRoutes;
