// Per-client rate limits on an API (contract 7.4): 429 with Retry-After and RateLimit-* headers.
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { ProblemError } from '../errors.js';

export default fp(
  async function clientRateLimit(app: FastifyInstance, options: { perMinute: number }) {
    await app.register(rateLimit, {
      max: options.perMinute,
      timeWindow: 60_000,
      // After the bearer check, so the limit follows the client, not the address it calls from.
      hook: 'preHandler',
      keyGenerator: (request) => (request.auth ? `client:${request.auth.clientId}` : `ip:${request.ip}`),
      enableDraftSpec: true,
      errorResponseBuilder: (_request, context) =>
        new ProblemError(429, 'rate-limited', 'Too Many Requests', {
          detail: `This client sent more than ${context.max} requests in a minute. Retry after ${Math.ceil(context.ttl / 1000)} s.`,
        }),
    });
  },
  { name: 'client-rate-limit' },
);
