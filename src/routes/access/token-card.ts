// GET /v1/residents/{id}/token-card (docs/api-reference.md 5): the data for a v2 token card; v1 cards were removed on 01.03.2019.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { GroupIdParams } from '../../schemas/group.js';
import { named, noStoreResponse } from '../../schemas/common.js';
import { problemResponses } from '../../schemas/problem.js';
import { DEPRECATIONS } from '../../shared/deprecations.js';
import type { Services } from '../../services/index.js';
import { actionContext } from '../shared/context.js';
import { resourcePath } from '../shared/headers.js';
import { removalError } from '../shared/removed.js';

const tokenCardRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.get(
    '/residents/:id/token-card',
    {
      // The card data holds the resident's credentials (docs/api-reference.md 6.3): never stored by a cache.
      config: { scope: 'nfc-token-writer', noStore: true },
      schema: {
        tags: ['Residents'],
        security: [{ bearer: ['nfc-token-writer'] }],
        operationId: 'getResidentTokenCard',
        summary: 'Token card data for a resident',
        description:
          'The data to write on a v2 token card (C SDK 3.6 and later): base64 of `{"version":2,"credentials":[…]}` ' +
          'with the credentials of the resident\'s valid tickets. `version=1` answers `410`: v1 cards were removed on ' +
          '01.03.2019.',
        params: GroupIdParams,
        querystring: Type.Object(
          { version: Type.Integer({ minimum: 1, maximum: 2, description: 'The card format: 2 (1 was removed).' }) },
          { additionalProperties: false },
        ),
        response: {
          200: noStoreResponse(
            named(
              'TokenCard',
              Type.Object({
                version: Type.Literal(2),
                cardData: Type.String({ description: 'Base64 of the card contents.' }),
              }),
              { version: 2, cardData: 'eyJ2ZXJzaW9uIjoyLCJjcmVkZW50aWFscyI6WyJleUpoYkdjaU9pSkZaRVJUUVNKOS5leUpxZEdraU9pSXdZalJtSW4wLnNpZyJdfQ==' },
            ),
            'The card data.',
          ),
          ...problemResponses(404, 410, 414, 422),
        },
      },
    },
    async (request) => {
      if (request.query.version === 1) {
        throw removalError(DEPRECATIONS.tokenCardV1, resourcePath`/v1/residents/${request.params.id}/token-card?version=2`);
      }
      await services.residents.get(request.auth.tenantId, request.params.id);
      return services.downloads.tokenCard(actionContext(request), request.params.id);
    },
  );
};

export default tokenCardRoutes;
