// Per-client rate limits on an API (docs/contract.md 7.4): 429 with Retry-After and RateLimit-* headers.
import rateLimit, { normalizeIP } from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { ProblemError } from '../errors.js';

/**
 * A caller with a valid access token is counted as its client, whatever address it calls from; one without (missing,
 * malformed or invalid token: the bearer check leaves `auth` unset) is counted as its address, an IPv6 one by its /64
 * as @fastify/rate-limit does by default, so guessing tokens or sending 401s costs a budget too (docs/security-checklist.md G46).
 */
function limitKey(request: FastifyRequest): string {
  return request.auth ? `client:${request.auth.clientId}` : `ip:${normalizeIP(request.ip)}`;
}

export default fp(
  async function clientRateLimit(app: FastifyInstance, options: { perMinute: number }) {
    await app.register(rateLimit, {
      max: options.perMinute,
      timeWindow: 60_000,
      // Not on every route by itself (its route-level hook would run after the bearer check refuses): the hook below.
      global: false,
      keyGenerator: limitKey,
      enableDraftSpec: true,
      errorResponseBuilder: (request, context) =>
        new ProblemError(429, 'rate-limited', 'Too Many Requests', {
          detail: request.auth
            ? `This client sent more than ${context.max} requests in a minute. Retry after ${Math.ceil(context.ttl / 1000)} s.`
            : `This address sent more than ${context.max} requests without a valid access token in a minute. Retry after ${Math.ceil(context.ttl / 1000)} s.`,
        }),
    });
    // docs/security-checklist.md G46: counted in onRequest, before the body is parsed and validated, so invalid bodies count
    // too. This instance hook runs after the bearer check's (registered first) and before its route-level hook that
    // refuses a failed authentication, so a 401 or 403 is counted as well.
    app.addHook('onRequest', app.rateLimit());
  },
  { name: 'client-rate-limit', dependencies: ['bearer-auth'] },
);
