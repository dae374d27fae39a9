// The METRICS_PORT listener: GET /metrics alone, on an address of its own, so the API port never serves it.
import Fastify, { type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { Config } from '../config.js';
import { ProblemError } from '../errors.js';
import { ownListenerMetricsAccess, metricsRoute } from './metrics.js';
import { sendProblem } from './problem-details.js';

/** Listens on METRICS_HOST:METRICS_PORT and answers scrapes from `registry` (the API app's); close it before the app. */
export async function listenForMetrics(registry: Registry, config: Config & { METRICS_PORT: number }, log: Logger): Promise<FastifyInstance> {
  const app = Fastify({ loggerInstance: log.child({ listener: 'metrics' }), disableRequestLogging: true }) as unknown as FastifyInstance;
  // The refusals are problem details (docs/api-reference.md 7.1), as on the API listener.
  app.setErrorHandler((error, _request, reply) =>
    error instanceof ProblemError ? sendProblem(reply, error) : sendProblem(reply, new ProblemError(500, 'internal', 'Internal Server Error')),
  );
  metricsRoute(app, registry, ownListenerMetricsAccess(config));
  await app.listen({ host: config.METRICS_HOST, port: config.METRICS_PORT });
  return app;
}
