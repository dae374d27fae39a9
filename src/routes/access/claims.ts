// /v1/residents/{id}/claims and /v1/claims (docs/api-reference.md 12): claim links that enrol a resident's phones.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ClaimIdParams, ClaimSchema, CreatedClaimSchema, NewResidentClaimSchema } from '../../schemas/claim.js';
import { PageQuery, pageResponse, withHeaders, ResponseHeaders } from '../../schemas/common.js';
import { GroupIdParams } from '../../schemas/group.js';
import { problemResponses } from '../../schemas/problem.js';
import type { Services } from '../../services/index.js';
import { actionContext } from '../shared/context.js';
import { resourcePath } from '../shared/headers.js';
import { sendPage } from '../shared/pages.js';

const tags = ['Claims'];
const WRITE = { config: { scope: 'device-groups:write' }, security: [{ bearer: ['device-groups:write'] }] };
const READ = { config: { scope: 'device-groups:read' }, security: [{ bearer: ['device-groups:read'] }] };

const claimRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.post(
    '/residents/:id/claims',
    {
      config: { ...WRITE.config, noStore: true },
      schema: {
        tags,
        security: WRITE.security,
        operationId: 'createResidentClaim',
        summary: 'Create a claim link for a resident',
        description:
          'A link that enrols the resident\'s phone (docs/api-reference.md 12): the app sends `url` to the person, whose phone ' +
          'opens it with the app, makes its own key and redeems the code; it then has a mobile device in the resident, a ' +
          'client without a secret and the resident\'s tickets. `code` is shown only in this answer. With `replaces`, the ' +
          'first redemption removes that device of the resident (a lost phone). `404` for an unknown resident, `422` when ' +
          '`replaces` is not one of its devices.',
        params: GroupIdParams,
        body: NewResidentClaimSchema,
        response: {
          201: withHeaders(CreatedClaimSchema, 'The claim, with its code and link (shown only now).', {
            Location: ResponseHeaders.location,
            'Cache-Control': ResponseHeaders.noStore,
          }),
          ...problemResponses(404, 413, 414, 415, 422),
        },
      },
    },
    async (request, reply) => {
      const claim = await services.claims.create(actionContext(request), { ...request.body, residentId: request.params.id }, true);
      return reply.code(201).header('location', resourcePath`/v1/claims/${claim.id}`).send(claim);
    },
  );

  app.get(
    '/residents/:id/claims',
    {
      config: READ.config,
      schema: {
        tags,
        security: READ.security,
        operationId: 'listResidentClaims',
        summary: 'List a resident\'s claim links',
        description: 'The resident\'s claims, oldest first, with their state; never their codes. Pages follow `Link: rel="next"`.',
        params: GroupIdParams,
        querystring: PageQuery,
        response: { 200: pageResponse(ClaimSchema, 'A page of claims.'), ...problemResponses(404, 414) },
      },
    },
    async (request, reply) =>
      sendPage(
        request,
        reply,
        await services.claims.listOfResident(request.auth.tenantId, request.params.id, request.query.limit, request.query.cursor),
      ),
  );

  app.get(
    '/claims/:id',
    {
      config: READ.config,
      schema: {
        tags,
        security: READ.security,
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
      config: WRITE.config,
      schema: {
        tags,
        security: WRITE.security,
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
