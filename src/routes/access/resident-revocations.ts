// POST /v1/residents/{id}/revocations (docs/api-reference.md 13): "revoke everywhere" for one person.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { GroupIdParams } from '../../schemas/group.js';
import { named } from '../../schemas/common.js';
import { problemResponses } from '../../schemas/problem.js';
import type { Services } from '../../services/index.js';
import { actionContext } from '../shared/context.js';

const ResidentRevocationSchema = named(
  'ResidentRevocation',
  Type.Object(
    {
      revoked: Type.Integer({ minimum: 0, description: 'How many tickets this call revoked.' }),
      tokenIds: Type.Array(Type.String(), { description: 'Their ids, in creation order: follow them with `GET /operatorapi/revocations?applied=false&residentId=`.' }),
    },
    { additionalProperties: false },
  ),
  { revoked: 2, tokenIds: ['9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d', '0b1c2d3e-4f5a-4b6c-9d7e-8f9a0b1c2d3e'] },
);

const residentRevocationRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.post(
    '/residents/:id/revocations',
    {
      config: { scope: 'access-permissions:write' },
      schema: {
        tags: ['Residents'],
        security: [{ bearer: ['access-permissions:write'] }],
        operationId: 'revokeResidentEverywhere',
        summary: 'Revoke every ticket of a resident',
        description:
          'Revokes, in one transaction, every valid ticket of every mobile device of the resident: tickets of its access ' +
          'permissions and tickets made directly alike. Each lock learns the revocations as it learns any other (its ' +
          'next sync, or the revocation list of the next phone that visits it); `GET /operatorapi/revocations?' +
          'applied=false&residentId=` lists the doors still to learn them. The resident, its devices and its permissions ' +
          'stay. Calling it again revokes nothing more (`revoked: 0`).',
        params: GroupIdParams,
        response: { 200: { ...ResidentRevocationSchema, description: 'What was revoked.' }, ...problemResponses(404, 413, 414, 415) },
      },
    },
    async (request) => services.residentRevocations.revokeEverywhere(actionContext(request), request.params.id),
  );
};

export default residentRevocationRoutes;
