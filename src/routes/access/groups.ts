// /v1/residents and /v1/lock-groups (contract 5): the two kinds of group share their routes, built here per kind.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type, type TObject } from '@sinclair/typebox';
import { GroupIdParams, LockGroupSchema, NewLockGroupSchema, NewResidentSchema, RenameSchema, ResidentSchema } from '../../schemas/access.js';
import { problemResponses } from '../../schemas/problem.js';
import { createdResponse, pageResponse } from '../../schemas/responses.js';
import type { GroupRecord } from '../../db/repositories/group.repo.js';
import type { GroupService } from '../../services/group.service.js';
import { actionContext } from '../shared/context.js';
import { PageQuery, sendPage } from '../shared/pages.js';
import { pathSegment } from '../shared/headers.js';

interface GroupRoutesOptions {
  service: GroupService;
  /** `/residents` or `/lock-groups`. */
  path: string;
  /** `mobiledevices` or `securedobjects`. */
  memberPath: string;
  /** `mobileDeviceId` or `securedObjectId`. */
  memberParam: string;
  /** `mobileDeviceIds` or `securedObjectIds`. */
  memberField: string;
  noun: string;
  operationNoun: string;
  tag: string;
  newSchema: TObject;
  schema: TObject;
}

const groupRoutes: FastifyPluginAsyncTypebox<GroupRoutesOptions> = async (app, options) => {
  const { service, path, noun, operationNoun, memberField } = options;
  const tags = [options.tag];
  const write = { config: { scope: 'device-groups:write' }, security: [{ bearer: ['device-groups:write'] }] };
  const read = { config: { scope: 'device-groups:read' }, security: [{ bearer: ['device-groups:read'] }] };
  const present = (group: GroupRecord) => ({ id: group.id, name: group.name, [memberField]: group.memberIds, creationDate: group.createdAt });
  const MemberParams = Type.Object({
    id: GroupIdParams.properties.id,
    [options.memberParam]: Type.String({ minLength: 1, maxLength: 128, description: `The member's id.` }),
  });
  const memberOf = (params: unknown) => (params as Record<string, string>)[options.memberParam]!;

  app.post(
    path,
    {
      config: { ...write.config, idempotent: true },
      schema: {
        tags,
        security: write.security,
        operationId: `create${operationNoun}`,
        summary: `Create a ${noun}`,
        description: `Creates a ${noun}, optionally with its members (at most 1000). Unknown members are a \`422\`.`,
        headers: Type.Object({ 'idempotency-key': Type.Optional(Type.String({ description: 'Makes the request safe to retry (24 h).' })) }),
        body: options.newSchema,
        response: {
          201: createdResponse(options.schema, `The ${noun}.`),
          ...problemResponses(409, 413, 415, 422),
        },
      },
    },
    async (request, reply) => {
      const body = request.body as { name: string } & Record<string, string[] | undefined>;
      const group = await service.create(actionContext(request), body.name, body[memberField] ?? []);
      return reply.code(201).header('location', `/v1${path}/${pathSegment(group.id)}`).send(present(group));
    },
  );

  app.get(
    path,
    {
      config: read.config,
      schema: {
        tags,
        security: read.security,
        operationId: `list${operationNoun}s`,
        summary: `List ${noun}s`,
        description: `The tenant's ${noun}s with their member ids, oldest first. Pages follow \`Link: rel="next"\`.`,
        querystring: PageQuery,
        response: {
          200: pageResponse(options.schema, `A page of ${noun}s.`),
          ...problemResponses(),
        },
      },
    },
    async (request, reply) => {
      const page = await service.list(request.auth.tenantId, request.query.limit, request.query.cursor);
      return sendPage(request, reply, { items: page.items.map(present), nextCursor: page.nextCursor });
    },
  );

  app.get(
    `${path}/:id`,
    {
      config: read.config,
      schema: {
        tags,
        security: read.security,
        operationId: `get${operationNoun}`,
        summary: `Read a ${noun}`,
        description: `One ${noun} with its member ids.`,
        params: GroupIdParams,
        response: { 200: { ...options.schema, description: `The ${noun}.` }, ...problemResponses(404, 414) },
      },
    },
    async (request) => present(await service.get(request.auth.tenantId, request.params.id)),
  );

  app.patch(
    `${path}/:id`,
    {
      config: write.config,
      schema: {
        tags,
        security: write.security,
        operationId: `rename${operationNoun}`,
        summary: `Rename a ${noun}`,
        description: `Changes the ${noun}'s name; members and tickets stay as they are.`,
        params: GroupIdParams,
        body: RenameSchema,
        response: { 200: { ...options.schema, description: `The ${noun}.` }, ...problemResponses(404, 413, 414, 415) },
      },
    },
    async (request) => present(await service.rename(actionContext(request), request.params.id, request.body.name)),
  );

  app.delete(
    `${path}/:id`,
    {
      config: write.config,
      schema: {
        tags,
        security: write.security,
        operationId: `delete${operationNoun}`,
        summary: `Delete a ${noun}`,
        description: `Deletes the ${noun} and its access permissions; every ticket they made becomes \`REVOKED\`.`,
        params: GroupIdParams,
        response: { 204: Type.Null({ description: 'Deleted.' }), ...problemResponses(404, 413, 414, 415) },
      },
    },
    async (request, reply) => {
      await service.delete(actionContext(request), request.params.id);
      return reply.code(204).send(null);
    },
  );

  app.put(
    `${path}/:id/${options.memberPath}/:${options.memberParam}`,
    {
      config: write.config,
      schema: {
        tags,
        security: write.security,
        operationId: `add${operationNoun}Member`,
        summary: `Add a member to a ${noun}`,
        description:
          `Adds the member (idempotent). It gets a ticket for every pair its ${noun}'s access permissions reach, in the ` +
          'same transaction.',
        params: MemberParams,
        response: { 200: { ...options.schema, description: `The ${noun}.` }, ...problemResponses(404, 413, 414, 415, 422) },
      },
    },
    async (request) => present(await service.addMember(actionContext(request), request.params.id as string, memberOf(request.params))),
  );

  app.delete(
    `${path}/:id/${options.memberPath}/:${options.memberParam}`,
    {
      config: write.config,
      schema: {
        tags,
        security: write.security,
        operationId: `remove${operationNoun}Member`,
        summary: `Remove a member from a ${noun}`,
        description: `Removes the member; the tickets this ${noun}'s access permissions gave it become \`REVOKED\`.`,
        params: MemberParams,
        response: { 200: { ...options.schema, description: `The ${noun}.` }, ...problemResponses(404, 413, 414, 415) },
      },
    },
    async (request) => present(await service.removeMember(actionContext(request), request.params.id as string, memberOf(request.params))),
  );
};

export const residentRoutes = (service: GroupService) => ({
  service,
  path: '/residents',
  memberPath: 'mobiledevices',
  memberParam: 'mobileDeviceId',
  memberField: 'mobileDeviceIds',
  noun: 'resident',
  operationNoun: 'Resident',
  tag: 'Residents',
  newSchema: NewResidentSchema,
  schema: ResidentSchema,
});

export const lockGroupRoutes = (service: GroupService) => ({
  service,
  path: '/lock-groups',
  memberPath: 'securedobjects',
  memberParam: 'securedObjectId',
  memberField: 'securedObjectIds',
  noun: 'lock group',
  operationNoun: 'LockGroup',
  tag: 'Lock groups',
  newSchema: NewLockGroupSchema,
  schema: LockGroupSchema,
});

export default groupRoutes;
