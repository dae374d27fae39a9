// /operatorapi/mobiledevices: phones and cards (docs/api-reference.md 4.2), plus the removed ticket listing (docs/api-reference.md 4.4).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { MobileDeviceSchema, NewMobileDeviceSchema } from '../../schemas/mobile-device.js';
import { createdResponse, deprecatedResponse, ObjectIdParams, PageQuery, pageResponse } from '../../schemas/common.js';
import { TicketSchema } from '../../schemas/ticket.js';
import { problemResponses } from '../../schemas/problem.js';
import { DEPRECATIONS } from '../../shared/deprecations.js';
import type { Services } from '../../services/index.js';
import type { Ticket } from '../../services/ticket.service.js';
import { actionContext } from '../shared/context.js';
import { sendPage } from '../shared/pages.js';
import { removedInterface } from '../shared/removed.js';
import { resourcePath } from '../shared/headers.js';

const tags = ['Mobile devices'];

const mobileDeviceRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.post(
    '/mobiledevices',
    {
      config: { scope: 'devices:write', idempotent: true },
      schema: {
        tags,
        security: [{ bearer: ['devices:write'] }],
        operationId: 'registerMobileDevice',
        summary: 'Register a mobile device',
        description: 'Registers a phone or card. Without an `id` the server makes one. Send `Idempotency-Key` to make retries safe.',
        headers: Type.Object({ 'idempotency-key': Type.Optional(Type.String({ description: 'Makes the request safe to retry (24 h).' })) }),
        body: NewMobileDeviceSchema,
        response: {
          201: createdResponse(MobileDeviceSchema, 'The mobile device.'),
          ...problemResponses(409, 413, 415, 422),
        },
      },
    },
    async (request, reply) => {
      const device = await services.mobileDevices.register(actionContext(request), request.body);
      return reply.code(201).header('location', resourcePath`/operatorapi/mobiledevices/${device.id}`).send(device);
    },
  );

  app.get(
    '/mobiledevices',
    {
      config: { scope: 'devices:read' },
      schema: {
        tags,
        security: [{ bearer: ['devices:read'] }],
        operationId: 'listMobileDevices',
        summary: 'List mobile devices',
        description: 'The tenant\'s mobile devices, oldest first. Pages follow `Link: rel="next"`.',
        querystring: PageQuery,
        response: {
          200: pageResponse(MobileDeviceSchema, 'A page of mobile devices.'),
          ...problemResponses(),
        },
      },
    },
    async (request, reply) =>
      sendPage(request, reply, await services.mobileDevices.list(request.auth.tenantId, request.query.limit, request.query.cursor)),
  );

  app.get(
    '/mobiledevices/:id',
    {
      config: { scope: 'devices:read' },
      schema: {
        tags,
        security: [{ bearer: ['devices:read'] }],
        operationId: 'getMobileDevice',
        summary: 'Read a mobile device',
        description: 'One mobile device of the tenant.',
        params: ObjectIdParams,
        response: { 200: { ...MobileDeviceSchema, description: 'The mobile device.' }, ...problemResponses(404, 414) },
      },
    },
    async (request) => services.mobileDevices.get(request.auth.tenantId, request.params.id),
  );

  app.delete(
    '/mobiledevices/:id',
    {
      config: { scope: 'devices:write' },
      schema: {
        tags,
        security: [{ bearer: ['devices:write'] }],
        operationId: 'removeMobileDevice',
        summary: 'Remove a mobile device',
        description: 'Removes the device; every ticket issued to it becomes `REVOKED` in the same transaction.',
        params: ObjectIdParams,
        response: { 204: Type.Null({ description: 'Removed.' }), ...problemResponses(404, 413, 414, 415) },
      },
    },
    async (request, reply) => {
      await services.mobileDevices.remove(actionContext(request), request.params.id);
      return reply.code(204).send(null);
    },
  );

  app.delete(
    '/mobiledevices/:id/key',
    {
      config: { scope: 'devices:write' },
      schema: {
        tags,
        security: [{ bearer: ['devices:write'] }],
        operationId: 'revokeMobileDeviceKey',
        summary: 'Revoke the phone\'s key',
        description:
          'Revokes the device\'s registered key (docs/api-reference.md 11.4): every lock learns it through sync and revocation ' +
          'lists, and refuses every credential bound to it, however many tickets it had. The device\'s next download has ' +
          'credentials bound to no key until its client registers a new one. `404` when the device has no key. Audited.',
        params: ObjectIdParams,
        response: { 204: Type.Null({ description: 'Revoked.' }), ...problemResponses(404, 413, 414, 415) },
      },
    },
    async (request, reply) => {
      await services.holderKeys.revokeDeviceKey(actionContext(request), request.params.id);
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/mobiledevices/:id/tickets',
    {
      config: { scope: 'tokens:read' },
      schema: {
        tags,
        security: [{ bearer: ['tokens:read'] }],
        operationId: 'listTicketsOfMobileDeviceRemoved',
        summary: 'Tickets of a mobile device (removed 01.01.2018)',
        description:
          'Removed on 01.01.2018: answers `410 Gone` naming `GET /operatorapi/tickets?mobileDeviceId=`. An operator ' +
          'can keep it alive (`DEPRECATED_INTERFACES_ENABLED=tickets-by-object`); it then lists the device\'s tickets, ' +
          'with `Deprecation` and `Sunset` headers.',
        deprecated: true,
        params: ObjectIdParams,
        response: {
          200: deprecatedResponse(Type.Array(TicketSchema), 'The device\'s tickets (only while an operator keeps this interface alive).'),
          ...problemResponses(404, 410, 414),
        },
      },
    },
    async (request, reply) => {
      const successor = resourcePath`/operatorapi/tickets?mobileDeviceId=${request.params.id}`;
      removedInterface(reply, services.revived, DEPRECATIONS.ticketsByObject, successor);
      await services.mobileDevices.get(request.auth.tenantId, request.params.id);
      const tickets: Ticket[] = [];
      for await (const ticket of services.tickets.all(request.auth.tenantId, { mobileDeviceId: request.params.id })) tickets.push(ticket);
      return tickets;
    },
  );
};

export default mobileDeviceRoutes;
