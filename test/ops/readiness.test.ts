// GET /readyz: 503 problem when the database is closed, unreachable, silent, or behind on migrations; never hangs.
import { randomBytes } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type App } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import type { Database } from '../../src/db/database.js';
import { readMigrations } from '../../src/db/migrate.js';
import { createPostgresDatabase } from '../../src/db/postgres.js';
import { createLogger } from '../../src/logger.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { freePort } from '../helpers/process.js';
import { secretsKeyOf } from '../../src/shared/crypto.js';

const PROBLEM_BASE = 'https://access-credential-service.dev/problems/';

/** A Database whose connection can be swapped under a running app, to take PostgreSQL away after start. */
function swappableDatabase(initial: Database) {
  let current = initial;
  const db: Database = {
    get kind() {
      return current.kind;
    },
    query: <Row>(text: string, params?: readonly unknown[]) => current.query<Row>(text, params),
    transaction: (work) => current.transaction(work),
    listen: (channel, onNotification) => current.listen(channel, onNotification),
    stats: () => current.stats(),
    close: () => current.close(),
  };
  return {
    db,
    /** Routes every later query to `next`; returns the previous connection. */
    swap(next: Database): Database {
      const previous = current;
      current = next;
      return previous;
    },
  };
}

/** A pg pool on an address that cannot serve; its connect timeout is what bounds the wait. */
function unusablePostgres(connectionString: string): Database {
  const log = createLogger('silent');
  return createPostgresDatabase({ connectionString, poolMax: 2, connectTimeoutMs: 500, statementTimeoutMs: 1000, log });
}

async function expectUnready(app: App, withinMs: number) {
  const started = Date.now();
  const response = await app.inject({ method: 'GET', url: '/readyz' });
  expect(Date.now() - started).toBeLessThan(withinMs);
  expect(response.statusCode).toBe(503);
  expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(response.headers['retry-after']).toMatch(/^\d+$/);
  expect(response.json()).toMatchObject({
    type: `${PROBLEM_BASE}unavailable`,
    status: 503,
    instance: '/readyz',
    requestId: response.headers['x-request-id'],
  });
  return response;
}

describe('readiness when the database is closed under the app', () => {
  it('answers 503 at once, keeps /healthz at 200, and still closes cleanly', async () => {
    const t = await buildTestApp();
    expect((await t.app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);

    await t.database.db.close();

    await expectUnready(t.app, 2000);
    expect((await t.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    // The app closes its database again on close: that must be harmless on both adapters.
    await expect(t.close()).resolves.toBeUndefined();
  });
});

// buildApp needs the database while it starts (services load their keys), so the outage starts after the build:
// the app's database is swapped for a pg pool on an address that refuses or never answers.
describe('readiness when PostgreSQL becomes unreachable', () => {
  let database: TestDatabase;
  let swappable: ReturnType<typeof swappableDatabase>;
  let app: App;
  const lines: string[] = [];
  let silent: Server | undefined;
  const sockets = new Set<Socket>();
  const unusable: Database[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    swappable = swappableDatabase(database.db);
    const config = loadConfig({ DB_CONNECT_TIMEOUT_MS: '500', LOG_LEVEL: 'info', PUBLIC_URL: 'http://issuer.test' });
    const log = createLogger(config.LOG_LEVEL, { write: (line: string) => void lines.push(line) });
    app = await buildApp(config, { db: swappable.db, log, secretsKey: secretsKeyOf(randomBytes(32)) });
    await app.ready();
  });
  afterEach(async () => {
    // Back on the working database after each outage.
    swappable.swap(database.db);
    await Promise.all(unusable.splice(0).map((db) => db.close()));
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => (silent ? silent.close(() => resolve()) : resolve()));
    silent = undefined;
  });
  afterAll(async () => {
    await app.close();
  });

  function outage(connectionString: string): void {
    const db = unusablePostgres(connectionString);
    unusable.push(db);
    swappable.swap(db);
  }

  it('answers 503 within 2 s when nothing listens on the port, keeps /healthz at 200, and recovers', async () => {
    expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    outage(`postgres://postgres@127.0.0.1:${await freePort()}/x`);

    await expectUnready(app, 2000);
    const health = await app.inject({ method: 'GET', url: '/healthz' });
    expect(health.statusCode).toBe(200);
    expect(health.json()).toEqual({ status: 'ok' });

    swappable.swap(database.db);
    expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
  });

  it('answers 503 within 2 s when the server accepts connections but never answers', async () => {
    silent = createServer((socket) => sockets.add(socket));
    await new Promise<void>((resolve) => silent!.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as { port: number };
    outage(`postgres://postgres@127.0.0.1:${port}/x`);

    await expectUnready(app, 2000);
    expect(sockets.size).toBeGreaterThan(0); // it did try, and gave up on time
    expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
  });

  it('logs why it is not ready, without the connection string password', async () => {
    const before = lines.length;
    outage(`postgres://postgres:pw-s3cret@127.0.0.1:${await freePort()}/x`);

    await expectUnready(app, 2000);

    const written = lines.slice(before).join('');
    expect(written).toMatch(/readiness check failed/);
    expect(written).toMatch(/ECONNREFUSED/);
    expect(lines.join('')).not.toContain('pw-s3cret');
  });
});

describe('readiness and migrations', () => {
  let t: TestApp;
  const latest = readMigrations().at(-1)!;
  beforeAll(async () => {
    t = await buildTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it('answers 200 when every migration file is applied', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/readyz' });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ status: 'ready' });
  });

  it('answers 503 while a migration file is not applied, and 200 again once it is', async () => {
    const { rows } = await t.database.db.query<{ version: number; name: string; checksum: string; applied_at: unknown }>(
      'DELETE FROM schema_migrations WHERE version = $1 RETURNING version, name, checksum, applied_at',
      [latest.version],
    );
    expect(rows).toHaveLength(1);

    const response = await expectUnready(t.app, 2000);
    expect(response.json().detail).toMatch(/migrations/);

    const row = rows[0]!;
    await t.database.db.query('INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES ($1, $2, $3, $4)', [
      row.version,
      row.name,
      row.checksum,
      row.applied_at,
    ]);
    expect((await t.app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
  });

  it('answers 503 when an applied migration no longer matches its file', async () => {
    await t.database.db.query("UPDATE schema_migrations SET checksum = 'edited' WHERE version = $1", [latest.version]);
    try {
      await expectUnready(t.app, 2000);
    } finally {
      await t.database.db.query('UPDATE schema_migrations SET checksum = $1 WHERE version = $2', [
        latest.checksum,
        latest.version,
      ]);
    }
    expect((await t.app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
  });
});
