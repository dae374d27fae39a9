// /operatorapi/access-checks: "why can't this phone open that door?" — the lock's decision and its reasons (docs/api-reference.md 8.6).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { AccessCheckQuery, AccessCheckSchema } from '../../schemas/access-check.js';
import { problemResponses } from '../../schemas/problem.js';
import type { Services } from '../../services/index.js';

const tags = ['Access checks'];

const accessCheckRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.get(
    '/access-checks',
    {
      config: { scope: 'tokens:read' },
      schema: {
        tags,
        security: [{ bearer: ['tokens:read'] }],
        operationId: 'checkAccess',
        summary: 'Explain whether a phone opens a lock',
        description:
          'The decision the lock would take at `at` (default now) for this phone, with what it has: the credentials the ' +
          'phone holds (or, for a ticket it has not downloaded, what a downloaded one would meet), the revocations the lock ' +
          'has applied (a revocation it has not applied yet may still let the door open), the tenant\'s published ticket ' +
          'keys (a key withdrawn since the last key-set change the lock applied may still open it), the lock\'s channels and its clock (it judges `at` plus its estimated offset). Decided by the same rule as ' +
          'the lock simulator. The phone\'s tickets for the lock are judged, those that may open first, each newest first; the ' +
          'answer is `allow` when any opens. An unknown (or another tenant\'s) lock or phone is `404`, naming which.',
        querystring: AccessCheckQuery,
        response: {
          200: { ...AccessCheckSchema, description: 'The lock\'s decision and why.' },
          ...problemResponses(404),
        },
      },
    },
    async (request) => services.accessChecks.check(request.auth.tenantId, request.query),
  );
};

export default accessCheckRoutes;
