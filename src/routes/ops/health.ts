// Operational probes: GET /healthz (process alive) and GET /readyz (database reachable, migrations applied).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ServiceUnavailableError } from '../../errors.js';
import { ProblemSchema } from '../../schemas/problem.js';

export interface HealthRoutesOptions {
  /** Resolves true when the database answers and every migration is applied. */
  isReady: () => Promise<boolean>;
}

const Status = Type.Object({ status: Type.String({ description: '`ok` or `ready`.' }) });

const healthRoutes: FastifyPluginAsyncTypebox<HealthRoutesOptions> = async (app, options) => {
  // Probes run every few seconds: their request lines would drown the log (warnings still show).
  app.get(
    '/healthz',
    {
      logLevel: 'warn',
      schema: { summary: 'Liveness probe', response: { 200: Status } },
    },
    async () => ({ status: 'ok' }),
  );

  app.get(
    '/readyz',
    {
      logLevel: 'warn',
      schema: { summary: 'Readiness probe', response: { 200: Status, 503: ProblemSchema } },
    },
    async (request) => {
      let ready = false;
      try {
        ready = await options.isReady();
      } catch (error) {
        request.log.warn({ err: error }, 'readiness check failed');
      }
      if (!ready) throw new ServiceUnavailableError('The database is unreachable or its migrations are not applied.');
      return { status: 'ready' };
    },
  );
};

export default healthRoutes;
