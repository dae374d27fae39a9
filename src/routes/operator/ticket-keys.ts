// /operatorapi/ticket-keys: the tenant's ticket keys and their rotation (docs/api-reference.md 8.1).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import {
  NewTicketKeyRotationSchema,
  TicketKeyParams,
  TicketKeyRotationSchema,
  TicketKeySchema,
} from '../../schemas/ticket-key.js';
import { createdResponse } from '../../schemas/common.js';
import { problemResponses } from '../../schemas/problem.js';
import type { Services } from '../../services/index.js';
import { actionContext } from '../shared/context.js';
import { resourcePath } from '../shared/headers.js';

const tags = ['Ticket keys'];

const ticketKeyRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.get(
    '/ticket-keys',
    {
      config: { scope: 'devices:read' },
      schema: {
        tags,
        security: [{ bearer: ['devices:read'] }],
        operationId: 'listTicketKeys',
        summary: 'List the ticket keys',
        description:
          'The tenant\'s published ticket keys, newest first, with their state: the same keys as ' +
          '`GET /tenants/{tenant}/jwks.json`. Empty until the tenant\'s first credential is signed or its first rotation.',
        response: {
          200: Type.Array(TicketKeySchema, { description: 'The published ticket keys.' }),
          ...problemResponses(),
        },
      },
    },
    async (request) => services.ticketKeys.describe(request.auth.tenantId),
  );

  app.get(
    '/ticket-keys/:kid',
    {
      config: { scope: 'devices:read' },
      schema: {
        tags,
        security: [{ bearer: ['devices:read'] }],
        operationId: 'getTicketKey',
        summary: 'Read a ticket key',
        description: 'One published ticket key of the tenant with its state. A withdrawn key, or one no longer published, is not found.',
        params: TicketKeyParams,
        response: { 200: { ...TicketKeySchema, description: 'The ticket key.' }, ...problemResponses(404) },
      },
    },
    async (request) => services.ticketKeys.describeOne(request.auth.tenantId, request.params.kid),
  );

  app.post(
    '/ticket-keys/rotations',
    {
      // docs/security-cases.md H50: its own scope, in no default set (an emergency rotation strands never-online locks).
      config: { scope: 'keys:rotate' },
      schema: {
        tags,
        security: [{ bearer: ['keys:rotate'] }],
        operationId: 'rotateTicketKey',
        summary: 'Rotate the ticket key',
        description:
          'Makes a new ticket key. Normally it is announced: published at once (key set, sync answers, revocation lists) ' +
          'and signing one CREDENTIAL_MAX_LIFETIME later, so locks that are never online learn it from a visiting phone ' +
          'in time; the current key signs until then and stays published one lifetime longer. While an announced key is ' +
          'pending a normal rotation is refused (409). `emergency` (a leaked key): the new key signs at once and every ' +
          'other key is withdrawn at once; locks that are never online then refuse every new credential until a visit with ' +
          'the installer\'s tools. An emergency rotation within TICKET_KEY_EMERGENCY_ROTATION_MIN_INTERVAL of the tenant\'s ' +
          'previous one is refused (429, `Retry-After`). Audited and raising `key.rotated` (`data.emergency`). Needs ' +
          '`keys:rotate`, which no client has unless given it.',
        body: NewTicketKeyRotationSchema,
        response: {
          201: createdResponse(TicketKeyRotationSchema, 'The rotation: the new key, when it signs, and the keys it replaces.'),
          ...problemResponses(409, 413, 415),
        },
      },
    },
    async (request, reply) => {
      const { kid, activatesAt, emergency, retired } = await services.ticketKeys.rotate(request.auth.tenantId, {
        emergency: request.body.emergency === true,
        context: actionContext(request),
      });
      return reply.code(201).header('location', resourcePath`/operatorapi/ticket-keys/${kid}`).send({ kid, activatesTime: activatesAt, emergency, retired });
    },
  );
};

export default ticketKeyRoutes;
