// /operatorapi/users: Access API user management (docs/api-reference.md 3.7), scope `users:manage`.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { problemResponses } from '../../schemas/problem.js';
import { createdResponse, PageQuery, pageResponse } from '../../schemas/common.js';
import { NewUserSchema, UserSchema, UsernameParams } from '../../schemas/user.js';
import type { Services } from '../../services/index.js';
import { actionContext } from '../shared/context.js';
import { sendPage } from '../shared/pages.js';
import { resourcePath } from '../shared/headers.js';

const tags = ['Users'];
const security = [{ bearer: ['users:manage'] }];
const config = { scope: 'users:manage' };

const userRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.post(
    '/users',
    {
      config,
      schema: {
        tags,
        security,
        operationId: 'createUser',
        summary: 'Create an Access API user',
        description:
          'A person who logs in to the Access API as `USERNAME@TENANT` with the password grant. The password is ' +
          'stored as a bcrypt hash; passwords over 72 bytes are refused, never truncated.',
        body: NewUserSchema,
        response: {
          201: createdResponse(UserSchema, 'The user.'),
          ...problemResponses(409, 413, 415),
        },
      },
    },
    async (request, reply) => {
      const user = await services.users.create(actionContext(request), request.body.username, request.body.password);
      return reply.code(201).header('location', resourcePath`/operatorapi/users/${user.username}`).send(user);
    },
  );

  app.get(
    '/users',
    {
      config,
      schema: {
        tags,
        security,
        operationId: 'listUsers',
        summary: 'List Access API users',
        description: 'The tenant\'s users, oldest first. Pages follow `Link: rel="next"`.',
        querystring: PageQuery,
        response: {
          200: pageResponse(UserSchema, 'A page of users.'),
          ...problemResponses(),
        },
      },
    },
    async (request, reply) =>
      sendPage(request, reply, await services.users.list(request.auth.tenantId, request.query.limit, request.query.cursor)),
  );

  app.delete(
    '/users/:username',
    {
      config,
      schema: {
        tags,
        security,
        operationId: 'deleteUser',
        summary: 'Delete an Access API user',
        description: 'Its refresh tokens stop working at once and its access tokens within 5 s.',
        params: UsernameParams,
        response: { 204: Type.Null({ description: 'Deleted.' }), ...problemResponses(404, 413, 414, 415) },
      },
    },
    async (request, reply) => {
      await services.users.delete(actionContext(request), request.params.username);
      return reply.code(204).send(null);
    },
  );
};

export default userRoutes;
