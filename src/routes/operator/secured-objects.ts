// /operatorapi/securedobjects: locks (docs/api-reference.md 4.1) and their time zone (docs/api-reference.md 9), plus the removed ticket-id listing (docs/api-reference.md 4.4).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import {
  NewSecuredObjectSchema,
  SecuredObjectChangesSchema,
  SecuredObjectDetailSchema,
  SecuredObjectListQuery,
  SecuredObjectSchema,
} from '../../schemas/secured-object.js';
import { createdResponse, deprecatedResponse, ObjectIdParams, pageResponse } from '../../schemas/common.js';
import { problemResponses } from '../../schemas/problem.js';
import { DoorAccessQuery, DoorAccessSchema } from '../../schemas/door-access.js';
import { DEPRECATIONS } from '../../shared/deprecations.js';
import type { Services } from '../../services/index.js';
import { actionContext } from '../shared/context.js';
import { sendPage } from '../shared/pages.js';
import { markRevivedChannels, removedInterface } from '../shared/removed.js';
import { resourcePath } from '../shared/headers.js';

const tags = ['Secured objects'];

const securedObjectRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.post(
    '/securedobjects',
    {
      config: { scope: 'devices:write', idempotent: true },
      schema: {
        tags,
        security: [{ bearer: ['devices:write'] }],
        operationId: 'registerSecuredObject',
        summary: 'Register a secured object (lock)',
        description:
          'Registers a lock with its Bluetooth LE local name and service UUID. Without an `id` the server makes one. ' +
          '`timeZone` (an IANA name, default `UTC`) is the wall clock its tickets\' schedules are read on; it is stored ' +
          'in its canonical spelling, and an unknown zone or a UTC offset is a 422. Send `Idempotency-Key` to make retries safe.',
        headers: Type.Object({ 'idempotency-key': Type.Optional(Type.String({ description: 'Makes the request safe to retry (24 h).' })) }),
        body: NewSecuredObjectSchema,
        response: {
          201: createdResponse(SecuredObjectSchema, 'The secured object.'),
          ...problemResponses(409, 413, 415, 422),
        },
      },
    },
    async (request, reply) => {
      const object = await services.securedObjects.register(actionContext(request), request.body);
      markRevivedChannels(reply, object.channels);
      return reply.code(201).header('location', resourcePath`/operatorapi/securedobjects/${object.id}`).send(object);
    },
  );

  app.get(
    '/securedobjects',
    {
      config: { scope: 'devices:read' },
      schema: {
        tags,
        security: [{ bearer: ['devices:read'] }],
        operationId: 'listSecuredObjects',
        summary: 'List secured objects',
        description:
          'The tenant\'s locks, oldest first. `search` keeps only those whose id or Bluetooth LE local name contains the ' +
          'text, ignoring case. Pages follow `Link: rel="next"`, which keeps the search.',
        querystring: SecuredObjectListQuery,
        response: {
          200: pageResponse(SecuredObjectSchema, 'A page of secured objects.'),
          ...problemResponses(),
        },
      },
    },
    async (request, reply) => {
      const { limit, cursor, search } = request.query;
      return sendPage(request, reply, await services.securedObjects.list(request.auth.tenantId, limit, cursor, search));
    },
  );

  app.get(
    '/securedobjects/:id',
    {
      config: { scope: 'devices:read' },
      schema: {
        tags,
        security: [{ bearer: ['devices:read'] }],
        operationId: 'getSecuredObject',
        summary: 'Read a secured object',
        description:
          'One lock with its channels and their addresses (docs/service-overview.md 2.1), and how far the backend\'s truth has ' +
          'reached it: when it was last seen, the change-log position it has applied, how many revocations are still on ' +
          'their way to it, and its clock\'s offset.',
        params: ObjectIdParams,
        response: { 200: { ...SecuredObjectDetailSchema, description: 'The secured object.' }, ...problemResponses(404, 414) },
      },
    },
    async (request) => services.securedObjects.read(request.auth.tenantId, request.params.id),
  );

  app.get(
    '/securedobjects/:id/access',
    {
      config: { scope: 'tokens:read' },
      schema: {
        tags,
        security: [{ bearer: ['tokens:read'] }],
        operationId: 'listDoorAccess',
        summary: 'Who can open this door',
        description:
          'The phones whose credential would open the lock at `at` (default now), in ticket creation order: valid ' +
          'tickets (not revoked, `beginDate <= at < endDate`) that grant `open`, and whose schedule, read in the ' +
          'lock\'s time zone, has a window at `at`. Each names its phone, resident, ticket, permission and whether the ' +
          'credential is bound to the phone\'s key. Revoked tickets the lock has not applied yet are in ' +
          '`GET /operatorapi/revocations?applied=false&securedObjectId=`. A page may hold fewer than `limit` items ' +
          'when schedules leave tickets out; follow `Link: rel="next"`.',
        params: ObjectIdParams,
        querystring: DoorAccessQuery,
        response: { 200: pageResponse(DoorAccessSchema, 'A page of who can open the door.'), ...problemResponses(404, 414) },
      },
    },
    async (request, reply) => {
      const { at, limit, cursor } = request.query;
      const page = await services.doorAccess.whoCanOpen(request.auth.tenantId, request.params.id, at, limit, cursor);
      return sendPage(request, reply, page);
    },
  );

  app.patch(
    '/securedobjects/:id',
    {
      config: { scope: 'devices:write', idempotent: true },
      schema: {
        tags,
        security: [{ bearer: ['devices:write'] }],
        operationId: 'updateSecuredObject',
        summary: 'Change a secured object\'s time zone or holder-binding policy',
        description:
          '`holderBinding` sets the lock\'s own policy (`optional`, `required`) or, with `null`, lets the tenant\'s apply ' +
          '(docs/api-reference.md 11.2); the lock learns it at its next sync and from the next revocation list. ' +
          'Sets the lock\'s `timeZone` (an IANA name such as `Europe/Berlin`; an unknown zone or a UTC offset is a 422), ' +
          'the wall clock its tickets\' schedules are read on (docs/api-reference.md 9), and answers the lock as the single ' +
          'read does. Each phone\'s next download re-signs its scheduled credentials for this lock with windows (`win`) in ' +
          'the new zone; a credential a phone already holds keeps its windows until then, at most one credential lifetime ' +
          '(docs/api-reference.md 8.2), as a lock that is never online learns nothing sooner. Send `Idempotency-Key` ' +
          'to make retries safe.',
        headers: Type.Object({ 'idempotency-key': Type.Optional(Type.String({ description: 'Makes the request safe to retry (24 h).' })) }),
        params: ObjectIdParams,
        body: SecuredObjectChangesSchema,
        response: {
          200: { ...SecuredObjectDetailSchema, description: 'The secured object.' },
          ...problemResponses(404, 409, 413, 414, 415, 422),
        },
      },
    },
    async (request) => services.securedObjects.update(actionContext(request), request.params.id, request.body),
  );

  app.delete(
    '/securedobjects/:id',
    {
      config: { scope: 'devices:write' },
      schema: {
        tags,
        security: [{ bearer: ['devices:write'] }],
        operationId: 'removeSecuredObject',
        summary: 'Remove a secured object',
        description: 'Removes the lock; every ticket for it becomes `REVOKED` in the same transaction.',
        params: ObjectIdParams,
        response: { 204: Type.Null({ description: 'Removed.' }), ...problemResponses(404, 413, 414, 415) },
      },
    },
    async (request, reply) => {
      await services.securedObjects.remove(actionContext(request), request.params.id);
      return reply.code(204).send(null);
    },
  );

  app.delete(
    '/securedobjects/:id/key',
    {
      config: { scope: 'devices:write' },
      schema: {
        tags,
        security: [{ bearer: ['devices:write'] }],
        operationId: 'removeSecuredObjectKey',
        summary: 'Remove the lock\'s key',
        description:
          'Removes the lock\'s registered key (docs/api-reference.md 11.1), so that its client can register a new one (a ' +
          'replaced lock, a reset one). Only an operator can: a stolen lock client cannot swap the lock\'s identity. ' +
          'Phones\' downloads carry no `lockKey` for it until then. `404` when the lock has no key. Audited.',
        params: ObjectIdParams,
        response: { 204: Type.Null({ description: 'Removed.' }), ...problemResponses(404, 413, 414, 415) },
      },
    },
    async (request, reply) => {
      await services.holderKeys.removeLockKey(actionContext(request), request.params.id);
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/securedobjects/:id/tickets',
    {
      config: { scope: 'tokens:read' },
      schema: {
        tags,
        security: [{ bearer: ['tokens:read'] }],
        operationId: 'listTicketIdsOfSecuredObjectRemoved',
        summary: 'Ticket ids of a secured object (removed 01.01.2018)',
        description:
          'Removed on 01.01.2018: answers `410 Gone` naming `GET /operatorapi/tickets?securedObjectId=`. An operator ' +
          'can keep it alive (`DEPRECATED_INTERFACES_ENABLED=tickets-by-object`); it then lists the ticket ids, with ' +
          '`Deprecation` and `Sunset` headers.',
        deprecated: true,
        params: ObjectIdParams,
        response: {
          200: deprecatedResponse(Type.Array(Type.String(), { examples: [['0b4f5b9e-3f3a-4c56-9a41-3c2b1f0e9d8c']] }), 'The ids of the lock\'s tickets (only while an operator keeps this interface alive).'),
          ...problemResponses(404, 410, 414),
        },
      },
    },
    async (request, reply) => {
      const successor = resourcePath`/operatorapi/tickets?securedObjectId=${request.params.id}`;
      removedInterface(reply, services.revived, DEPRECATIONS.ticketsByObject, successor);
      await services.securedObjects.get(request.auth.tenantId, request.params.id);
      const ids: string[] = [];
      for await (const ticket of services.tickets.all(request.auth.tenantId, { securedObjectId: request.params.id })) ids.push(ticket.id);
      return ids;
    },
  );
};

export default securedObjectRoutes;
