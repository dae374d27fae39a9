// /operatorapi/claims (docs/api-reference.md 12): claim links for a resident or for one mobile device.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ClaimIdParams, ClaimListQuery, ClaimSchema, CreatedClaimSchema, NewClaimSchema } from '../../schemas/claim.js';
import { pageResponse, ResponseHeaders, withHeaders } from '../../schemas/common.js';
import { problemResponses } from '../../schemas/problem.js';
import type { Services } from '../../services/index.js';
import { actionContext } from '../shared/context.js';
import { resourcePath } from '../shared/headers.js';
import { sendPage } from '../shared/pages.js';

const tags = ['Claims'];

const claimRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.post(
    '/claims',
    {
      config: { scope: 'devices:write', noStore: true },
      schema: {
        tags,
        security: [{ bearer: ['devices:write'] }],
        operationId: 'createClaim',
        summary: 'Create a claim link',
        description:
          'A link that puts a phone in service with its own key (docs/api-reference.md 12). With `residentId`, each redemption ' +
          'adds a new mobile device to the resident with the resident\'s tickets; with `mobileDeviceId`, the phone becomes that ' +
          'device (its key, a bound client). Either way the phone gets a client without a secret that authenticates with ' +
          '`private_key_jwt`. `code` is shown only in this answer. `422` for an unknown resident or device, both or neither, ' +
          '`replaces` that is not a device of the resident, or `maxDevices` above 1 for one device.',
        body: NewClaimSchema,
        response: {
          201: withHeaders(CreatedClaimSchema, 'The claim, with its code and link (shown only now).', {
            Location: ResponseHeaders.location,
            'Cache-Control': ResponseHeaders.noStore,
          }),
          ...problemResponses(413, 415, 422),
        },
      },
    },
    async (request, reply) => {
      const claim = await services.claims.create(actionContext(request), request.body);
      return reply.code(201).header('location', resourcePath`/operatorapi/claims/${claim.id}`).send(claim);
    },
  );

  app.get(
    '/claims',
    {
      config: { scope: 'devices:read' },
      schema: {
        tags,
        security: [{ bearer: ['devices:read'] }],
        operationId: 'listClaims',
        summary: 'List claim links',
        description: 'The tenant\'s claims, oldest first, optionally of one resident or one device; never their codes. Pages follow `Link: rel="next"`.',
        querystring: ClaimListQuery,
        response: { 200: pageResponse(ClaimSchema, 'A page of claims.'), ...problemResponses() },
      },
    },
    async (request, reply) => {
      const { residentId, mobileDeviceId, limit, cursor } = request.query;
      return sendPage(request, reply, await services.claims.list(request.auth.tenantId, { residentId, mobileDeviceId }, limit, cursor));
    },
  );

  app.get(
    '/claims/:id',
    {
      config: { scope: 'devices:read' },
      schema: {
        tags,
        security: [{ bearer: ['devices:read'] }],
        operationId: 'getClaim',
        summary: 'Read a claim link',
        description: 'One claim with its state and the devices it enrolled; never its code.',
        params: ClaimIdParams,
        response: { 200: { ...ClaimSchema, description: 'The claim.' }, ...problemResponses(404, 414) },
      },
    },
    async (request) => services.claims.get(request.auth.tenantId, request.params.id),
  );

  app.delete(
    '/claims/:id',
    {
      config: { scope: 'devices:write' },
      schema: {
        tags,
        security: [{ bearer: ['devices:write'] }],
        operationId: 'revokeClaim',
        summary: 'Revoke a claim link',
        description:
          'The link stops working at once (`revoked`); phones it already enrolled stay. `409` for a claim already claimed, expired or revoked.',
        params: ClaimIdParams,
        response: { 204: Type.Null({ description: 'Revoked.' }), ...problemResponses(404, 409, 413, 414, 415) },
      },
    },
    async (request, reply) => {
      await services.claims.revoke(actionContext(request), request.params.id);
      return reply.code(204).send(null);
    },
  );
};

export default claimRoutes;
