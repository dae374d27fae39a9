// Prometheus metrics at GET /metrics: request count and latency by route and status, database pool figures.
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Database } from '../db/database.js';
import { routeConfig } from './route-config.js';

declare module 'fastify' {
  interface FastifyInstance {
    metrics: Registry;
  }
  interface FastifyRequest {
    startTime: bigint;
  }
}

export interface MetricsOptions {
  db: Database;
  /** Events every tenant's log has been written so far (docs/contract.md 10): gapless sequences, so a database count. */
  eventsWritten: () => Promise<number>;
}

export default fp(
  async function metrics(app: FastifyInstance, options: MetricsOptions) {
    // One registry per app: several apps in one process (tests) must not share counters.
    const registry = new Registry();
    collectDefaultMetrics({ register: registry });
    const requests = new Counter({
      name: 'http_requests_total',
      help: 'HTTP requests answered, by method, route pattern and status code.',
      labelNames: ['method', 'route', 'status'] as const,
      registers: [registry],
    });
    const duration = new Histogram({
      name: 'http_request_duration_seconds',
      help: 'Time from receiving a request to sending its response, by method, route pattern and status code.',
      labelNames: ['method', 'route', 'status'] as const,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    });
    const pool = (name: string, help: string, pick: (stats: ReturnType<Database['stats']>) => number) =>
      new Gauge({
        name,
        help,
        registers: [registry],
        collect() {
          this.set(pick(options.db.stats()));
        },
      });
    pool('db_pool_connections', 'Database connections open.', (stats) => stats.total);
    pool('db_pool_idle_connections', 'Database connections idle.', (stats) => stats.idle);
    pool('db_pool_waiting_requests', 'Queries waiting for a database connection.', (stats) => stats.waiting);

    // Read from the database at each scrape, so it counts every instance's appends and survives restarts: the counter
    // rises by what was appended since the last scrape (the first scrape starts it at the total so far).
    let eventsSeen: number | null = null;
    new Counter({
      name: 'event_log_events_written_total',
      help: 'Events appended to the tenants\' event logs (docs/contract.md 10), all instances together.',
      registers: [registry],
      async collect() {
        const total = await options.eventsWritten();
        if (total > (eventsSeen ?? 0)) this.inc(total - (eventsSeen ?? 0));
        eventsSeen = Math.max(total, eventsSeen ?? 0);
      },
    });

    app.decorate('metrics', registry);
    app.decorateRequest('startTime', 0n);
    app.addHook('onRequest', (request, _reply, done) => {
      request.startTime = process.hrtime.bigint();
      done();
    });
    app.addHook('onResponse', (request, reply, done) => {
      // The route pattern, not the URL: ids must not explode the label cardinality.
      const labels = {
        method: request.method,
        route: routeConfig(request).url ?? 'unmatched',
        status: String(reply.statusCode),
      };
      requests.inc(labels);
      duration.observe(labels, Number(process.hrtime.bigint() - request.startTime) / 1e9);
      done();
    });

    app.get(
      '/metrics',
      async (_request, reply) => {
        reply.type(registry.contentType);
        return registry.metrics();
      },
    );
  },
  { name: 'metrics' },
);

/** What the webhook metrics read: the delivery service's outcomes and its oldest waiting delivery. */
export interface WebhookDeliveryMetricsSource {
  onOutcome(listener: (outcome: string) => void): void;
  oldestPendingAgeMs(): Promise<number>;
}

/**
 * Webhook delivery (docs/contract.md 10): attempts by outcome, and how long the oldest delivery still waiting for an
 * enabled subscription has waited (a growing age is a stuck or failing receiver, or workers that cannot keep up).
 */
export function registerWebhookMetrics(registry: Registry, source: WebhookDeliveryMetricsSource): void {
  const outcomes = new Counter({
    name: 'webhook_deliveries_total',
    help: 'Webhook delivery attempts by outcome: delivered, retrying, failed (retries exhausted), gone (410, disabled).',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  for (const outcome of ['delivered', 'retrying', 'failed', 'gone']) outcomes.inc({ outcome }, 0);
  source.onOutcome((outcome) => outcomes.inc({ outcome }));
  new Gauge({
    name: 'webhook_oldest_undelivered_age_seconds',
    help: 'Age of the oldest webhook delivery still pending for an enabled subscription, seconds (0 when none).',
    registers: [registry],
    async collect() {
      // A database outage keeps the last figure rather than failing the whole scrape.
      const ageMs = await source.oldestPendingAgeMs().catch(() => null);
      if (ageMs !== null) this.set(ageMs / 1000);
    },
  });
}
