// /operatorapi/tickets: issue, read, page and revoke tickets (docs/api-reference.md 4.3).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { NewTicketSchema, TicketQuery, TicketSchema } from '../../schemas/ticket.js';
import { createdResponse, pageResponse } from '../../schemas/common.js';
import { problemResponses } from '../../schemas/problem.js';
import type { Services } from '../../services/index.js';
import { actionContext } from '../shared/context.js';
import { sendPage } from '../shared/pages.js';
import { markRevivedChannels } from '../shared/removed.js';
import { resourcePath } from '../shared/headers.js';
import { bearerChallenge } from '../../plugins/bearer-auth.js';
import { ForbiddenError } from '../../errors.js';

/** docs/api-reference.md 15: an override ticket opens during a lockdown, so only who may start one may issue one. */
const OVERRIDE_SCOPE = 'lockdown:manage';

const tags = ['Tickets'];
const TicketIdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 256, description: 'The ticket id.' }) });

const ticketRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.post(
    '/tickets',
    {
      config: { scope: 'tokens:create', idempotent: true },
      schema: {
        tags,
        security: [{ bearer: ['tokens:create'] }],
        operationId: 'createTicket',
        summary: 'Issue a ticket',
        description:
          'Lets one mobile device send the listed commands to one secured object over the listed channels within ' +
          '[beginDate, endDate). `400` names every malformed field; `422` says why a well-formed ticket cannot be issued ' +
          '(unknown lock or device, dates, commands, a channel the lock does not support, `nfccard`, a `schedule` that is ' +
          'malformed or never opens within the validity in the lock\'s time zone). `override: true` (the ticket opens during ' +
          'a lockdown) needs the scope `lockdown:manage` as well (`403` otherwise). With ' +
          '`Idempotency-Key`, a repeat answers the first response and issues nothing.',
        headers: Type.Object({ 'idempotency-key': Type.Optional(Type.String({ description: 'Makes the request safe to retry (24 h).' })) }),
        body: NewTicketSchema,
        response: {
          201: createdResponse(TicketSchema, 'The ticket.'),
          ...problemResponses(409, 413, 415, 422),
        },
      },
    },
    async (request, reply) => {
      if (request.body.override === true && !request.auth.scopes.has(OVERRIDE_SCOPE)) {
        throw new ForbiddenError(`An override ticket needs the scope ${OVERRIDE_SCOPE}.`, {
          'www-authenticate': bearerChallenge('operatorapi', { code: 'insufficient_scope', scope: OVERRIDE_SCOPE }),
        });
      }
      const ticket = await services.tickets.create(actionContext(request), request.body);
      markRevivedChannels(reply, ticket.channels);
      return reply.code(201).header('location', resourcePath`/operatorapi/tickets/${ticket.id}`).send(ticket);
    },
  );

  app.get(
    '/tickets',
    {
      config: { scope: 'tokens:read' },
      schema: {
        tags,
        security: [{ bearer: ['tokens:read'] }],
        operationId: 'listTickets',
        summary: 'List tickets',
        description:
          'The tenant\'s tickets in creation order, filtered by mobile device, secured object and status. Pages follow ' +
          '`Link: rel="next"` and stay stable while tickets are added.',
        querystring: TicketQuery,
        response: {
          200: pageResponse(TicketSchema, 'A page of tickets.'),
          ...problemResponses(),
        },
      },
    },
    async (request, reply) => {
      const { limit, cursor, ...filter } = request.query;
      return sendPage(request, reply, await services.tickets.list(request.auth.tenantId, filter, limit, cursor));
    },
  );

  app.get(
    '/tickets/:id',
    {
      config: { scope: 'tokens:read' },
      schema: {
        tags,
        security: [{ bearer: ['tokens:read'] }],
        operationId: 'getTicket',
        summary: 'Read a ticket',
        description: 'One ticket with its current status.',
        params: TicketIdParams,
        response: { 200: { ...TicketSchema, description: 'The ticket.' }, ...problemResponses(404, 414) },
      },
    },
    async (request) => services.tickets.get(request.auth.tenantId, request.params.id),
  );

  app.delete(
    '/tickets/:id',
    {
      config: { scope: 'tokens:delete' },
      schema: {
        tags,
        security: [{ bearer: ['tokens:delete'] }],
        operationId: 'revokeTicket',
        summary: 'Revoke a ticket',
        description: 'The ticket becomes `REVOKED`; revoking it again answers the same ticket.',
        params: TicketIdParams,
        response: { 200: { ...TicketSchema, description: 'The revoked ticket.' }, ...problemResponses(404, 413, 414, 415) },
      },
    },
    async (request) => services.tickets.revoke(actionContext(request), request.params.id),
  );
};

export default ticketRoutes;
