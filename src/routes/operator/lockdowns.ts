// /operatorapi/lockdowns: start and end lockdowns, and how far each has reached (docs/api-reference.md 15).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { LockdownSchema, NewLockdownSchema } from '../../schemas/lockdown.js';
import { createdResponse, pageResponse, PageQuery } from '../../schemas/common.js';
import { problemResponses } from '../../schemas/problem.js';
import type { Services } from '../../services/index.js';
import { actionContext } from '../shared/context.js';
import { sendPage } from '../shared/pages.js';
import { resourcePath } from '../shared/headers.js';

const tags = ['Lockdowns'];
const LockdownIdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 256, description: 'The lockdown id.' }) });

const lockdownRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.post(
    '/lockdowns',
    {
      config: { scope: 'lockdown:manage', idempotent: true },
      schema: {
        tags,
        security: [{ bearer: ['lockdown:manage'] }],
        operationId: 'createLockdown',
        summary: 'Start or end a lockdown',
        description:
          '`mode: "lockdown"` makes every lock in scope (the tenant\'s, or a lock group\'s members now) refuse every ' +
          'credential but those of override tickets; `mode: "normal"` ends it. The new state is signed for each lock ' +
          '(`lock-state+jwt`, docs/lock-integration.md 11) and reaches online locks with their next sync (a sync held with ' +
          '`?wait=` answers at once) and offline locks with the next phone download that passes by. An unknown lock group ' +
          'is `404`. Send `Idempotency-Key` to make retries safe.',
        headers: Type.Object({ 'idempotency-key': Type.Optional(Type.String({ description: 'Makes the request safe to retry (24 h).' })) }),
        body: NewLockdownSchema,
        response: {
          201: createdResponse(LockdownSchema, 'The lockdown.'),
          ...problemResponses(404, 409, 413, 415, 422),
        },
      },
    },
    async (request, reply) => {
      const lockdown = await services.lockdowns.create(actionContext(request), request.body);
      return reply.code(201).header('location', resourcePath`/operatorapi/lockdowns/${lockdown.id}`).send(lockdown);
    },
  );

  app.get(
    '/lockdowns',
    {
      config: { scope: 'lockdown:manage' },
      schema: {
        tags,
        security: [{ bearer: ['lockdown:manage'] }],
        operationId: 'listLockdowns',
        summary: 'List lockdowns',
        description: 'The tenant\'s lockdowns and their ends, oldest first, each with how many of its locks it has reached.',
        querystring: PageQuery,
        response: { 200: pageResponse(LockdownSchema, 'A page of lockdowns.'), ...problemResponses() },
      },
    },
    async (request, reply) => {
      const { limit, cursor } = request.query;
      return sendPage(request, reply, await services.lockdowns.list(request.auth.tenantId, limit, cursor));
    },
  );

  app.get(
    '/lockdowns/:id',
    {
      config: { scope: 'lockdown:manage' },
      schema: {
        tags,
        security: [{ bearer: ['lockdown:manage'] }],
        operationId: 'getLockdown',
        summary: 'Read a lockdown',
        description: 'One lockdown, with the locks it has reached and those it has not yet.',
        params: LockdownIdParams,
        response: { 200: { ...LockdownSchema, description: 'The lockdown.' }, ...problemResponses(404, 414) },
      },
    },
    async (request) => services.lockdowns.get(request.auth.tenantId, request.params.id),
  );
};

export default lockdownRoutes;
