// /operatorapi/users: Access API user management (docs/api-reference.md 3.7), scope `users:manage`.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { problemResponses } from '../../schemas/problem.js';
import { createdResponse, PageQuery, pageResponse } from '../../schemas/common.js';
import { NewUserSchema, UserPatchSchema, UserSchema, UsernameParams } from '../../schemas/user.js';
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
          'stored as a bcrypt hash; passwords over 72 bytes are refused, never truncated. With a `role` the user may also ' +
          'sign in to the operator console (`GET /oauth/authorize`).',
        body: NewUserSchema,
        response: {
          201: createdResponse(UserSchema, 'The user.'),
          ...problemResponses(409, 413, 415),
        },
      },
    },
    async (request, reply) => {
      const { username, password, role } = request.body;
      const user = await services.users.create(actionContext(request), username, password, role);
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

  app.get(
    '/users/:username',
    {
      config,
      schema: {
        tags,
        security,
        operationId: 'getUser',
        summary: 'Read an Access API user',
        description: 'One user, with its console role when it has one.',
        params: UsernameParams,
        response: { 200: { ...UserSchema, description: 'The user.' }, ...problemResponses(404, 414) },
      },
    },
    async (request) => services.users.get(request.auth.tenantId, request.params.username),
  );

  app.patch(
    '/users/:username',
    {
      config,
      schema: {
        tags,
        security,
        operationId: 'updateUser',
        summary: 'Change a user\'s console role',
        description:
          'Gives, changes or (with `null`) removes the console role. Console sign-ins already made keep their scopes ' +
          'until their access token expires; their next refresh carries the new role\'s scopes, and fails without one.',
        params: UsernameParams,
        body: UserPatchSchema,
        response: { 200: { ...UserSchema, description: 'The user.' }, ...problemResponses(404, 413, 414, 415) },
      },
    },
    async (request) => services.users.update(actionContext(request), request.params.username, { role: request.body.role }),
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
