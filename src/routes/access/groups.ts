// /v1/residents and /v1/lock-groups (docs/api-reference.md 5): the two kinds of group share their routes; each kind's plugin
// registers them with its own schemas, so TypeBox infers every body and parameter from the schema that validates it.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type, type Static, type TObject } from '@sinclair/typebox';
import type { GroupRecord } from '../../services/group.service.js';
import {
  GroupIdParams,
  LockGroupSchema,
  NewLockGroupSchema,
  NewResidentSchema,
  RenameSchema,
  ResidentSchema,
} from '../../schemas/group.js';
import { createdResponse, PageQuery, pageResponse } from '../../schemas/common.js';
import { problemResponses } from '../../schemas/problem.js';
import type { GroupService } from '../../services/group.service.js';
import { actionContext } from '../shared/context.js';
import { pathSegment } from '../shared/headers.js';
import { sendPage } from '../shared/pages.js';

/** The Fastify instance a TypeBox route plugin receives. */
type TypeBoxApp = Parameters<FastifyPluginAsyncTypebox>[0];

/** What the two kinds of group differ in besides the schemas of their input. */
interface GroupKind {
  /** `/residents` or `/lock-groups`. */
  path: string;
  /** `mobiledevices` or `securedobjects`. */
  memberPath: string;
  noun: string;
  operationNoun: string;
  tag: string;
  /** The group as answered. */
  schema: TObject;
  present(group: GroupRecord): Static<TObject>;
}

interface GroupRoutesOptions {
  service: GroupService;
}

const WRITE = { config: { scope: 'device-groups:write' }, security: [{ bearer: ['device-groups:write'] }] };
const READ = { config: { scope: 'device-groups:read' }, security: [{ bearer: ['device-groups:read'] }] };
const MemberId = Type.String({ minLength: 1, maxLength: 128, description: `The member's id.` });

const RESIDENTS = {
  path: '/residents',
  memberPath: 'mobiledevices',
  noun: 'resident',
  operationNoun: 'Resident',
  tag: 'Residents',
  schema: ResidentSchema,
  present: (group: GroupRecord): Static<typeof ResidentSchema> => ({
    id: group.id,
    name: group.name,
    mobileDeviceIds: group.memberIds,
    creationDate: group.createdAt,
  }),
} satisfies GroupKind;

const LOCK_GROUPS = {
  path: '/lock-groups',
  memberPath: 'securedobjects',
  noun: 'lock group',
  operationNoun: 'LockGroup',
  tag: 'Lock groups',
  schema: LockGroupSchema,
  present: (group: GroupRecord): Static<typeof LockGroupSchema> => ({
    id: group.id,
    name: group.name,
    securedObjectIds: group.memberIds,
    creationDate: group.createdAt,
  }),
} satisfies GroupKind;

/** POST: the kind's own body schema, so the handler reads its member field with its type. */
function createRoute<Body extends TObject>(kind: GroupKind, body: Body) {
  return {
    config: { ...WRITE.config, idempotent: true },
    schema: {
      tags: [kind.tag],
      security: WRITE.security,
      operationId: `create${kind.operationNoun}`,
      summary: `Create a ${kind.noun}`,
      description: `Creates a ${kind.noun}, optionally with its members (at most 1000). Unknown members are a \`422\`.`,
      headers: Type.Object({ 'idempotency-key': Type.Optional(Type.String({ description: 'Makes the request safe to retry (24 h).' })) }),
      body,
      response: {
        201: createdResponse(kind.schema, `The ${kind.noun}.`),
        ...problemResponses(409, 413, 415, 422),
      },
    },
  };
}

/** PUT and DELETE of one member: the kind's own params schema (`id` and its member parameter). */
function memberRoutes<Params extends TObject>(kind: GroupKind, params: Params) {
  const schema = { tags: [kind.tag], security: WRITE.security, params };
  return {
    add: {
      config: WRITE.config,
      schema: {
        ...schema,
        operationId: `add${kind.operationNoun}Member`,
        summary: `Add a member to a ${kind.noun}`,
        description:
          `Adds the member (idempotent). It gets a ticket for every pair its ${kind.noun}'s access permissions reach, in the ` +
          'same transaction.',
        response: { 200: { ...kind.schema, description: `The ${kind.noun}.` }, ...problemResponses(404, 413, 414, 415, 422) },
      },
    },
    remove: {
      config: WRITE.config,
      schema: {
        ...schema,
        operationId: `remove${kind.operationNoun}Member`,
        summary: `Remove a member from a ${kind.noun}`,
        description: `Removes the member; the tickets this ${kind.noun}'s access permissions gave it become \`REVOKED\`.`,
        response: { 200: { ...kind.schema, description: `The ${kind.noun}.` }, ...problemResponses(404, 413, 414, 415) },
      },
    },
  };
}

/** The routes whose input is the same for both kinds: list, read, rename, delete. */
function commonRoutes(app: TypeBoxApp, kind: GroupKind, service: GroupService): void {
  const { path, noun, operationNoun, present } = kind;
  const tags = [kind.tag];

  app.get(
    path,
    {
      config: READ.config,
      schema: {
        tags,
        security: READ.security,
        operationId: `list${operationNoun}s`,
        summary: `List ${noun}s`,
        description: `The tenant's ${noun}s with their member ids, oldest first. Pages follow \`Link: rel="next"\`.`,
        querystring: PageQuery,
        response: {
          200: pageResponse(kind.schema, `A page of ${noun}s.`),
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
      config: READ.config,
      schema: {
        tags,
        security: READ.security,
        operationId: `get${operationNoun}`,
        summary: `Read a ${noun}`,
        description: `One ${noun} with its member ids.`,
        params: GroupIdParams,
        response: { 200: { ...kind.schema, description: `The ${noun}.` }, ...problemResponses(404, 414) },
      },
    },
    async (request) => present(await service.get(request.auth.tenantId, request.params.id)),
  );

  app.patch(
    `${path}/:id`,
    {
      config: WRITE.config,
      schema: {
        tags,
        security: WRITE.security,
        operationId: `rename${operationNoun}`,
        summary: `Rename a ${noun}`,
        description: `Changes the ${noun}'s name; members and tickets stay as they are.`,
        params: GroupIdParams,
        body: RenameSchema,
        response: { 200: { ...kind.schema, description: `The ${noun}.` }, ...problemResponses(404, 413, 414, 415) },
      },
    },
    async (request) => present(await service.rename(actionContext(request), request.params.id, request.body.name)),
  );

  app.delete(
    `${path}/:id`,
    {
      config: WRITE.config,
      schema: {
        tags,
        security: WRITE.security,
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
}

/** `/v1/residents`: people, each with all of their mobile devices. */
export const residentRoutes: FastifyPluginAsyncTypebox<GroupRoutesOptions> = async (app, { service }) => {
  const kind = RESIDENTS;
  app.post(kind.path, createRoute(kind, NewResidentSchema), async (request, reply) => {
    const group = await service.create(actionContext(request), request.body.name, request.body.mobileDeviceIds ?? []);
    return reply.code(201).header('location', `/v1${kind.path}/${pathSegment(group.id)}`).send(kind.present(group));
  });
  commonRoutes(app, kind, service);
  const member = memberRoutes(kind, Type.Object({ id: GroupIdParams.properties.id, mobileDeviceId: MemberId }));
  const memberUrl = `${kind.path}/:id/${kind.memberPath}/:mobileDeviceId`;
  app.put(memberUrl, member.add, async (request) =>
    kind.present(await service.addMember(actionContext(request), request.params.id, request.params.mobileDeviceId)),
  );
  app.delete(memberUrl, member.remove, async (request) =>
    kind.present(await service.removeMember(actionContext(request), request.params.id, request.params.mobileDeviceId)),
  );
};

/** `/v1/lock-groups`: secured objects granted together. */
export const lockGroupRoutes: FastifyPluginAsyncTypebox<GroupRoutesOptions> = async (app, { service }) => {
  const kind = LOCK_GROUPS;
  app.post(kind.path, createRoute(kind, NewLockGroupSchema), async (request, reply) => {
    const group = await service.create(actionContext(request), request.body.name, request.body.securedObjectIds ?? []);
    return reply.code(201).header('location', `/v1${kind.path}/${pathSegment(group.id)}`).send(kind.present(group));
  });
  commonRoutes(app, kind, service);
  const member = memberRoutes(kind, Type.Object({ id: GroupIdParams.properties.id, securedObjectId: MemberId }));
  const memberUrl = `${kind.path}/:id/${kind.memberPath}/:securedObjectId`;
  app.put(memberUrl, member.add, async (request) =>
    kind.present(await service.addMember(actionContext(request), request.params.id, request.params.securedObjectId)),
  );
  app.delete(memberUrl, member.remove, async (request) =>
    kind.present(await service.removeMember(actionContext(request), request.params.id, request.params.securedObjectId)),
  );
};
