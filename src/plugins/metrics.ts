// Prometheus metrics at GET /metrics: request count and latency by route and status, database pool figures.
import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import { ForbiddenError, UnauthorizedError } from '../errors.js';
import { sha256 } from '../shared/crypto.js';
import { isLoopbackHost, isLoopbackUrl } from '../shared/loopback.js';
import {
  GRANT_OUTCOMES,
  GRANT_TYPES,
  LOGIN_FAILURE_REASONS,
  SIGNING_ALGORITHMS,
  SYNC_OUTCOMES,
  type DomainMetrics,
  type SyncOutcome,
} from '../services/domain-metrics.js';
import { createRequestMetrics } from './request-metrics.js';
import { routeConfig } from './route-config.js';

declare module 'fastify' {
  interface FastifyInstance {
    metrics: Registry;
  }
}

export interface MetricsOptions {
  db: Database;
  /** Events every tenant's log has been written so far (docs/api-reference.md 10): gapless sequences, so a database count. */
  eventsWritten: () => Promise<number>;
  /** Who may scrape `GET /metrics` on the API listener; null: it is served on a listener of its own (METRICS_PORT). */
  access: MetricsAccess | null;
}

/** Who may read the metrics on one listener. */
export interface MetricsAccess {
  /** METRICS_TOKEN: a scrape sends it as `Authorization: Bearer` (RFC 6750 section 2.1). */
  token: string | undefined;
  /** Without a token: whether this listener serves them to anyone (only this machine reaches it, or the operator said so). */
  openWithoutToken: boolean;
}

/**
 * The access rule of the API listener: a token when one is set; otherwise open only on a development start, where
 * both HOST and PUBLIC_URL are loopback. A loopback HOST alone is not enough: a reverse proxy on the same machine
 * (the usual production layout, PUBLIC_URL naming it) would pass /metrics on to anyone.
 */
export function apiListenerMetricsAccess(config: Config): MetricsAccess | null {
  if (config.METRICS_PORT !== undefined) return null;
  return {
    token: config.METRICS_TOKEN,
    openWithoutToken: config.METRICS_UNAUTHENTICATED === 'true' || (isLoopbackHost(config.HOST) && isLoopbackUrl(config.PUBLIC_URL)),
  };
}

/** The access rule of the METRICS_PORT listener: open without a token on loopback only, unless the operator said so. */
export function ownListenerMetricsAccess(config: Config): MetricsAccess {
  return {
    token: config.METRICS_TOKEN,
    openWithoutToken: config.METRICS_UNAUTHENTICATED === 'true' || isLoopbackHost(config.METRICS_HOST),
  };
}

/**
 * Throws the answer to a scrape this listener refuses. The token is compared as SHA-256 digests with timingSafeEqual,
 * so neither its content nor its length shows in the time taken.
 */
export function checkMetricsAccess(authorization: string | undefined, access: MetricsAccess): void {
  if (access.token === undefined) {
    if (access.openWithoutToken) return;
    throw new ForbiddenError(
      'GET /metrics is not served without authentication on a listener other machines may reach. Set METRICS_TOKEN (and ' +
        'send it as a bearer token) or METRICS_PORT (a listener of its own); README, "Metrics".',
    );
  }
  const presented = /^Bearer +([A-Za-z0-9._~+/-]+=*) *$/i.exec(authorization ?? '')?.[1];
  if (presented === undefined) {
    throw new UnauthorizedError('GET /metrics needs the METRICS_TOKEN as a bearer token.', 'Bearer realm="metrics"');
  }
  if (!timingSafeEqual(sha256(presented), sha256(access.token))) {
    throw new UnauthorizedError('The bearer token is not the METRICS_TOKEN.', 'Bearer realm="metrics", error="invalid_token"');
  }
}

/** GET /metrics on `app`, answering with `registry` to the scrapes `access` lets through. */
export function metricsRoute(app: FastifyInstance, registry: Registry, access: MetricsAccess): void {
  app.get('/metrics', async (request, reply) => {
    checkMetricsAccess(request.headers.authorization, access);
    reply.type(registry.contentType);
    return registry.metrics();
  });
}

export default fp(
  async function metrics(app: FastifyInstance, options: MetricsOptions) {
    // One registry per app: several apps in one process (tests) must not share counters.
    const registry = new Registry();
    collectDefaultMetrics({ register: registry });
    const requests = createRequestMetrics();
    requests.register(registry);
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
      help: 'Events appended to the tenants\' event logs (docs/api-reference.md 10), all instances together.',
      registers: [registry],
      async collect() {
        const total = await options.eventsWritten();
        if (total > (eventsSeen ?? 0)) this.inc(total - (eventsSeen ?? 0));
        eventsSeen = Math.max(total, eventsSeen ?? 0);
      },
    });

    app.decorate('metrics', registry);
    app.addHook('onResponse', (request, reply, done) => {
      // The route pattern, not the URL: ids must not explode the label cardinality. The time is Fastify's own, taken
      // before the first onRequest hook and when the response finished (reply.elapsedTime, milliseconds).
      const config = routeConfig(request);
      requests.observe(config, config.url ?? 'unmatched', request.method, reply.statusCode, reply.elapsedTime / 1000);
      done();
    });

    if (options.access) {
      metricsRoute(app, registry, options.access);
      if (options.access.token === undefined && !options.access.openWithoutToken) {
        app.log.warn('GET /metrics answers 403: set METRICS_TOKEN or METRICS_PORT to scrape it (README, "Metrics")');
      }
    }
  },
  { name: 'metrics' },
);

/** What the webhook metrics read: the delivery service's outcomes and its oldest waiting delivery. */
export interface WebhookDeliveryMetricsSource {
  onOutcome(listener: (outcome: string) => void): void;
  oldestPendingAgeMs(): Promise<number>;
}

/**
 * Webhook delivery (docs/api-reference.md 10): attempts by outcome, and how long the oldest delivery still waiting for an
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

/** docs/lock-sync.md: how many syncs held with `?wait=` this instance keeps now (bounded by SYNC_WAIT_MAX_HELD). */
export function registerHeldSyncMetrics(registry: Registry, source: { readonly count: number }): void {
  new Gauge({
    name: 'lock_syncs_held',
    help: 'Lock syncs this instance holds open with ?wait= now (at most SYNC_WAIT_MAX_HELD).',
    registers: [registry],
    collect() {
      this.set(source.count);
    },
  });
}

/**
 * The domain counters behind the services' metrics port (services/domain-metrics.ts). Every label combination is set to 0
 * at start, so a rate over a counter that has not moved yet is 0 rather than absent, and the label values are the
 * port's fixed lists: never a tenant, client or lock id.
 */
export function createDomainMetrics(registry: Registry): DomainMetrics {
  const grants = new Counter({
    name: 'oauth_grants_total',
    help: 'Token endpoint answers by grant type and outcome: success or the RFC 6749 error code.',
    labelNames: ['grant_type', 'outcome'] as const,
    registers: [registry],
  });
  for (const grant_type of GRANT_TYPES) for (const outcome of GRANT_OUTCOMES) grants.inc({ grant_type, outcome }, 0);
  const loginFailures = new Counter({
    name: 'login_failures_total',
    help: 'Password grants refused by reason: invalid_credentials (wrong user or password), locked (refused unchecked).',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  for (const reason of LOGIN_FAILURE_REASONS) loginFailures.inc({ reason }, 0);
  const lockouts = new Counter({
    name: 'login_lockouts_total',
    help: 'Logins locked for reaching LOCKOUT_THRESHOLD attempts.',
    registers: [registry],
  });
  const created = new Counter({
    name: 'tickets_created_total',
    help: 'Tickets issued by committed changes: single creates and every ticket an access permission or membership made.',
    registers: [registry],
  });
  const revoked = new Counter({
    name: 'tickets_revoked_total',
    help: 'Tickets revoked by committed changes, one by one or with their permission, group, lock or device.',
    registers: [registry],
  });
  const signed = new Counter({
    name: 'credentials_signed_total',
    help: 'Ticket credentials signed and handed out by downloads and token cards, by signature algorithm.',
    labelNames: ['alg'] as const,
    registers: [registry],
  });
  for (const alg of SIGNING_ALGORITHMS) signed.inc({ alg }, 0);
  // Counted on every sync (online locks poll): plain counts, handed to the counter when it is scraped, so a sync does
  // not pay for prom-client's hashing of its labels. Handed in SYNC_OUTCOMES order, the order they were always listed.
  const syncCounts: Record<SyncOutcome, number> = { changes: 0, nothing_new: 0, refused: 0 };
  new Counter({
    name: 'lock_syncs_total',
    help: 'Lock syncs by outcome: changes to apply, nothing_new since the cursor, refused.',
    labelNames: ['outcome'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const outcome of SYNC_OUTCOMES) this.inc({ outcome }, syncCounts[outcome]);
    },
  });
  const knownAlgorithms = new Set<string>(SIGNING_ALGORITHMS);
  return {
    grantAnswered: (grant_type, outcome) => grants.inc({ grant_type, outcome }),
    loginFailed: (reason) => loginFailures.inc({ reason }),
    loginLocked: () => lockouts.inc(),
    ticketsCreated: (count) => {
      if (count > 0) created.inc(count);
    },
    ticketsRevoked: (count) => {
      if (count > 0) revoked.inc(count);
    },
    credentialsSigned: (alg, count) => {
      // A key of an algorithm this version no longer makes still signs; it is counted, under a bounded name.
      if (count > 0) signed.inc({ alg: knownAlgorithms.has(alg) ? alg : 'other' }, count);
    },
    lockSynced: (outcome) => {
      syncCounts[outcome]++;
    },
  };
}
