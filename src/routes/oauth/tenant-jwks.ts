// GET /tenants/{tenant}/jwks.json: a tenant's published ticket keys (docs/api-reference.md 8.1), what its locks verify
// credentials with. No authentication: public keys only, as /.well-known/jwks.json (RFC 7517).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { Services } from '../../services/index.js';
import { TENANT_NAME_PATTERN } from '../../services/oauth/tenant.service.js';

const TenantParams = Type.Object({
  tenant: Type.String({ pattern: TENANT_NAME_PATTERN.source, description: 'The tenant name, as in `tenant create NAME`.' }),
});

const JwksSchema = Type.Object({
  keys: Type.Array(Type.Object({}, { additionalProperties: true }), {
    description: 'The tenant\'s announced, signing and recently retired ticket keys (RFC 7517), public halves only.',
  }),
});

const tenantJwksRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.get(
    '/tenants/:tenant/jwks.json',
    { schema: { params: TenantParams, response: { 200: JwksSchema } } },
    async (request, reply) => {
      // An unknown tenant answers 404 (NotFoundError); a name that cannot be one fails the params schema (400).
      const tenant = await services.tenants.byName(request.params.tenant);
      // Cacheable (docs/api-reference.md 8.1) but briefly: after an emergency rotation a withdrawn key must leave caches soon.
      return reply.header('cache-control', 'public, max-age=300').send({ keys: services.ticketKeys.publicJwks(tenant.id) });
    },
  );
};

export default tenantJwksRoutes;
