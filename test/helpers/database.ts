// A fresh, migrated database for one test file: a clone of the run's template (PostgreSQL) or of its dump (PGlite), or
// on Citus one made, migrated and distributed for it.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { inject } from 'vitest';
import type { Database } from '../../src/db/database.js';
import { createPgliteDatabase } from '../../src/db/pglite.js';
import { createPostgresDatabase } from '../../src/db/postgres.js';
import { createLogger } from '../../src/logger.js';
import { citusTestUrl, createCitusDatabase, dropCitusDatabase } from './citus.js';
import { adminUrl, postgresTestUrl } from './postgres-url.js';

export interface TestDatabase {
  db: Database;
  /** A connection string for this database (PostgreSQL only), for a second app or a spawned server. */
  url: string | undefined;
}

let pgliteTemplate: Blob | undefined;

export async function createTestDatabase(): Promise<TestDatabase> {
  const url = postgresTestUrl();
  if (!url) {
    pgliteTemplate ??= new Blob([readFileSync(inject('pgliteDump'))]);
    return { db: await createPgliteDatabase({ loadDataDir: pgliteTemplate }), url: undefined };
  }
  return citusTestUrl() ? createPostgresTestDatabase(url, { citus: true }) : createPostgresTestDatabase(url, { template: inject('pgTemplate') });
}

/** A database with nothing in it, not even the migrations ledger: for tests of migrating from scratch. */
export async function createEmptyTestDatabase(): Promise<TestDatabase> {
  const url = postgresTestUrl();
  if (!url) return { db: await createPgliteDatabase(), url: undefined };
  return createPostgresTestDatabase(url);
}

/**
 * A DATA_DIR holding a migrated embedded database, for spawned servers and CLI runs that need not start from
 * nothing: loading the dump takes a second where a first start (initdb, migrations) takes several.
 */
export async function createSeededDataDir(): Promise<{ path: string; remove(): void }> {
  const path = mkdtempSync(join(tmpdir(), 'acs-data-'));
  pgliteTemplate ??= new Blob([readFileSync(inject('pgliteDump'))]);
  const db = await createPgliteDatabase({ dataDir: path, loadDataDir: pgliteTemplate });
  await db.close();
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

/**
 * A new database on the test server, dropped when its handle is closed: a copy of `template`, or empty, or on Citus
 * one made on every node, migrated and distributed.
 */
async function createPostgresTestDatabase(url: string, source: { template?: string; citus?: boolean } = {}): Promise<TestDatabase> {
  const name = `acs_test_${randomBytes(6).toString('hex')}`;
  const { template, citus = false } = source;
  if (citus) {
    await createCitusDatabase(url, name);
  } else {
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      await admin.query(`CREATE DATABASE ${name}${template ? ` TEMPLATE ${template}` : ''}`);
    } finally {
      await admin.end();
    }
  }
  const databaseUrl = adminUrl(url, name);
  const db = createPostgresDatabase({
    connectionString: databaseUrl,
    poolMax: 10,
    connectTimeoutMs: 2000,
    statementTimeoutMs: 30_000,
    log: createLogger('silent'),
  });
  const close = db.close.bind(db);
  return {
    url: databaseUrl,
    db: Object.assign(db, {
      async close() {
        await close();
        if (citus) {
          await dropCitusDatabase(url, name);
          return;
        }
        const dropper = new pg.Client({ connectionString: url });
        await dropper.connect();
        await dropper.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
        await dropper.end();
      },
    }),
  };
}
