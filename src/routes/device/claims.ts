// The phone's side of a claim link (docs/api-reference.md 12): look it up and redeem it, without a bearer token; the code
// on the path is the credential, so these routes are rate-limited per address (routes/device/index.ts).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ClaimCodeParams, ClaimLookupSchema, ClaimRedemptionSchema, RedeemedClaimSchema } from '../../schemas/claim.js';
import { noStoreResponse, ResponseHeaders } from '../../schemas/common.js';
import { problemResponses } from '../../schemas/problem.js';
import type { Services } from '../../services/index.js';
import { resourcePath } from '../shared/headers.js';

const tags = ['Claims'];

const GONE =
  '`404` for an unknown code; `410` for a claim used up (`claimed`), expired or revoked, the problem\'s `state` naming ' +
  'which. Unknown and known codes take the same work to answer. `429` beyond the per-address limit.';

const claimRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.get(
    '/claims/:code',
    {
      config: { noStore: true },
      schema: {
        tags,
        security: [],
        operationId: 'lookUpClaim',
        summary: 'Look up a claim link',
        description:
          'What the phone shows before it enrols, and a nonce for its key proof (single use, 5 minutes; each look-up gives a ' +
          'new one). No access token: the code is the credential. The first look-up marks the claim `opened`. ' +
          GONE,
        params: ClaimCodeParams,
        response: { 200: noStoreResponse(ClaimLookupSchema, 'The claim, as the phone shows it.'), ...problemResponses(404, 410, 414, 429) },
      },
    },
    async (request) => services.claims.lookup(request.params.code, String(request.id)),
  );

  app.post(
    '/claims/:code',
    {
      config: { noStore: true },
      schema: {
        tags,
        security: [],
        operationId: 'redeemClaim',
        summary: 'Redeem a claim link',
        description:
          'The phone sends its public key and a key proof over the look-up\'s nonce (docs/api-reference.md 11.1). In one ' +
          'transaction: its mobile device (new in the resident, or the claim\'s own device) with that key, a client bound to ' +
          'it with `tokens:download` and `keys:register` and no secret (it authenticates with `private_key_jwt`), the ' +
          'resident\'s tickets for it, and, with `replaces`, the old phone removed (tickets revoked, key revoked at every ' +
          'lock, clients deleted). Its first download returns credentials bound to its key. A wrong or reused proof is ' +
          '`400`, a private key member `422`, a key another device holds `409`. ' +
          GONE,
        params: ClaimCodeParams,
        body: ClaimRedemptionSchema,
        response: {
          201: noStoreResponse(RedeemedClaimSchema, 'The phone\'s device and client.', { Location: ResponseHeaders.location }),
          ...problemResponses(404, 409, 410, 413, 414, 415, 422, 429),
        },
      },
    },
    async (request, reply) => {
      const redeemed = await services.claims.redeem(request.params.code, String(request.id), request.body);
      // RFC 9110 15.3.2: the primary resource the redemption created is the mobile device (the operator reads it there).
      return reply.code(201).header('location', resourcePath`/operatorapi/mobiledevices/${redeemed.mobileDeviceId}`).send(redeemed);
    },
  );
};

export default claimRoutes;
