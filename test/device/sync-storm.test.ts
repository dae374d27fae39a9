// docs/lock-sync.md: a sync storm (2,000 locks back at once after an outage) against a small pool gets answers or 503
// with a jittered Retry-After, never another 5xx, and never more database connections than the pool holds.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type App } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import type { Database } from '../../src/db/database.js';
import { createPostgresDatabase } from '../../src/db/postgres.js';
import { createLogger } from '../../src/logger.js';
import { createAccessTokenIssuer } from '../../src/services/oauth/access-token.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { syncRequest } from '../helpers/device.js';
import { createTenant, type TenantFixture } from '../helpers/oauth.js';
import { postgresTestUrl } from '../helpers/postgres-url.js';

const LOCKS = 2000;
const POOL_MAX = 3;
const MAX_WAITING = 4;
const RETRY_AFTER_MAX_SECONDS = 60;
const STORM_APPLICATION = 'sync-storm-under-test';

// The admission limit reads the pool's queue of requests waiting for a connection, and the test counts the server's
// connections: both need PostgreSQL. PGlite is one in-process connection with no pool to exhaust.
describe.skipIf(!postgresTestUrl())('a sync storm against a small pool', () => {
  let t: TestApp;
  let acme: TenantFixture;
  let storm: App;
  let stormDb: Database;
  let probe: pg.Client;
  const tokens: { lockId: string; token: string }[] = [];

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4' });
    acme = await createTenant(t.app, 'acme');
    const now = Date.now();
    // 2,000 locks, each with its own bound sync client, in three statements (the API would take minutes).
    const lockIds = Array.from({ length: LOCKS }, (_, index) => `storm-${index}`);
    const clientIds = lockIds.map(() => randomUUID());
    await t.database.db.query(
      `INSERT INTO secured_objects (tenant_id, id, channels, local_name, uuid, created_at, time_zone)
       SELECT $1, id, ARRAY['btlespp'], id, gen_random_uuid(), $3, 'UTC' FROM unnest($2::text[]) AS l (id)`,
      [acme.tenantId, lockIds, now],
    );
    // Each client's id → tenant entry first, as client.repo.ts writes it (docs/scaling.md).
    await t.database.db.query(`INSERT INTO client_tenants (client_id, tenant_id) SELECT id, $1 FROM unnest($2::text[]) AS c (id)`, [
      acme.tenantId,
      clientIds,
    ]);
    await t.database.db.query(
      `INSERT INTO oauth_clients (client_id, tenant_id, name, secret_hash, scopes, mobile_device_id, secured_object_id, created_at)
       SELECT c.id, $1, 'storm lock', 'not a hash: never used', ARRAY['sync'], NULL, c.lock_id, $4
         FROM unnest($2::text[], $3::text[]) AS c (id, lock_id)`,
      [acme.tenantId, clientIds, lockIds, now],
    );
    // Their access tokens, signed as the token endpoint signs them (docs/api-reference.md 3.4), without 2,000 grants.
    const issue = createAccessTokenIssuer({
      clock: Date.now,
      issuer: t.config.PUBLIC_URL,
      keys: t.app.services.accessTokenKeys,
      accessTokenTtlSeconds: 3600,
    });
    for (const [index, lockId] of lockIds.entries()) {
      const client = { clientId: clientIds[index]!, tenantId: acme.tenantId, scopes: ['sync'], mobileDeviceId: null, securedObjectId: lockId, decommissionedSeq: null, redirectUri: null, isPublic: false };
      const { token } = await issue({ client, subject: client.clientId, audience: ['deviceapi'], scopes: ['sync'] });
      tokens.push({ lockId, token });
    }
    // A second instance with a pool of 3, named so its connections can be counted on the server.
    const url = new URL(t.database.url!);
    url.searchParams.set('application_name', STORM_APPLICATION);
    const config = loadConfig({
      ...Object.fromEntries(Object.entries(t.config).map(([key, value]) => [key, String(value)])),
      DB_POOL_MAX: String(POOL_MAX),
      SYNC_MAX_WAITING: String(MAX_WAITING),
      SYNC_RETRY_AFTER_MAX_SECONDS: String(RETRY_AFTER_MAX_SECONDS),
    });
    stormDb = createPostgresDatabase({
      connectionString: url.toString(),
      poolMax: POOL_MAX,
      connectTimeoutMs: 2000,
      statementTimeoutMs: 30_000,
      log: createLogger('silent'),
    });
    storm = await buildApp(config, {
      db: stormDb,
      log: createLogger('silent'),
      secretsKey: t.secretsKey,
    });
    await storm.ready();
    probe = new pg.Client({ connectionString: t.database.url! });
    await probe.connect();
  });
  afterAll(async () => {
    await probe?.end();
    await storm?.close();
    await t?.close();
  });

  it('answers 200 or 503 with a jittered Retry-After, nothing else, within the pool; the refused locks get in on retry', async () => {
    let sampling = true;
    let poolHigh = 0;
    let serverHigh = 0;
    const samples = (async () => {
      while (sampling) {
        poolHigh = Math.max(poolHigh, stormDb.stats().total);
        const { rows } = await probe.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1`,
          [STORM_APPLICATION],
        );
        serverHigh = Math.max(serverHigh, rows[0]!.n);
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    })();
    const stormT = { ...t, app: storm };
    const answers = await Promise.all(tokens.map(({ lockId, token }) => syncRequest(stormT, token, lockId)));
    sampling = false;
    await samples;

    const statuses = new Map<number, number>();
    for (const answer of answers) statuses.set(answer.statusCode, (statuses.get(answer.statusCode) ?? 0) + 1);
    expect([...statuses.keys()].every((status) => status === 200 || status === 503 || status === 429), JSON.stringify([...statuses])).toBe(true);
    expect(statuses.get(200) ?? 0).toBeGreaterThan(0);
    const refused = answers.filter((answer) => answer.statusCode !== 200);
    expect(refused.length).toBeGreaterThan(0);
    const delays = refused.map((answer) => Number(answer.headers['retry-after']));
    for (const [index, answer] of refused.entries()) {
      expect(Number.isInteger(delays[index]) && delays[index]! >= 1 && delays[index]! <= RETRY_AFTER_MAX_SECONDS, String(answer.headers['retry-after'])).toBe(true);
      // docs/api-reference.md 7.1: the problem format, saying why.
      expect(answer.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(answer.json()).toMatchObject({ status: 503, title: 'Service Unavailable' });
    }
    // Jitter: the refused locks are told different delays, so they do not all come back in the same second.
    expect(new Set(delays).size).toBeGreaterThan(RETRY_AFTER_MAX_SECONDS / 2);
    // The pool never grew past its size; on the server, its connections plus the one that LISTENs.
    expect(poolHigh).toBeLessThanOrEqual(POOL_MAX);
    expect(serverHigh).toBeLessThanOrEqual(POOL_MAX + 1);

    // Coming back one after another, as their Retry-After spreads them, each refused lock is answered.
    const refusedLocks = tokens.filter((_, index) => answers[index]!.statusCode !== 200).slice(0, 50);
    for (const { lockId, token } of refusedLocks) {
      const retried = await syncRequest(stormT, token, lockId);
      expect(retried.statusCode, retried.body).toBe(200);
    }
  });
});
