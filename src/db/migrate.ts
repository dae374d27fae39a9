// Forward-only SQL migrations from migrations/NNN_name.sql: each in its own transaction, recorded with a checksum.
import { hash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Database, Queryable } from './database.js';
import { distributeNewTables, isDistributed, tableNames } from './distribute.js';
import { SqlSplitError, splitSqlStatements } from './sql-split.js';

/** src/db and dist/db are both two levels below the project root. */
export const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/', import.meta.url));

/** Any constant works; it only has to be the same for every instance of this service. */
const MIGRATION_LOCK_KEY = 7_318_442_901;

/**
 * How long a migration's statements wait for a table lock (PostgreSQL `lock_timeout`) unless told otherwise
 * (MIGRATION_LOCK_TIMEOUT_MS). An ALTER TABLE waiting for its ACCESS EXCLUSIVE lock queues every later query of the
 * table behind it, so a migration stuck behind one long transaction would stall every lock's sync: it gives up instead,
 * rolls back whole, and is retried (docs/scaling.md).
 */
export const DEFAULT_MIGRATION_LOCK_TIMEOUT_MS = 5000;

/** SQLSTATE 55P03 lock_not_available: `lock_timeout` expired (or NOWAIT found the lock taken). */
const LOCK_NOT_AVAILABLE = '55P03';
/** SQLSTATE 40P01 deadlock_detected: PostgreSQL ended this transaction to break a deadlock with another session. */
const DEADLOCK_DETECTED = '40P01';

export interface MigrateOptions {
  /** `lock_timeout` of every migration transaction, in ms (at least 1). */
  lockTimeoutMs?: number;
}

export interface Migration {
  version: number;
  name: string;
  sql: string;
  checksum: string;
}

/**
 * A migration's statements, sent one per query: Citus propagates a distributed table's DDL statement by statement and
 * refuses several in one query string (docs/scaling.md). The file, and so its checksum, stays as written.
 */
export function migrationStatements(migration: Migration): string[] {
  try {
    return splitSqlStatements(migration.sql);
  } catch (error) {
    if (error instanceof SqlSplitError) {
      throw new MigrationError(`Migration ${migration.version}_${migration.name} cannot be read: ${error.message}`);
    }
    throw error;
  }
}

export class MigrationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MigrationError';
  }
}

export function readMigrations(directory: string = MIGRATIONS_DIR): Migration[] {
  const migrations = readdirSync(directory)
    .filter((file) => file.endsWith('.sql'))
    .map((file) => {
      const match = /^(\d{3,})_([a-z0-9_]+)\.sql$/.exec(file);
      if (!match) throw new MigrationError(`Migration file name ${file} is not NNN_name.sql`);
      const sql = readFileSync(`${directory}/${file}`, 'utf8');
      return {
        version: Number(match[1]),
        name: match[2]!,
        sql,
        checksum: hash('sha256', sql, 'hex'),
      };
    })
    .sort((a, b) => a.version - b.version);
  for (let i = 1; i < migrations.length; i++) {
    if (migrations[i]!.version === migrations[i - 1]!.version) {
      throw new MigrationError(`Two migrations share the version ${migrations[i]!.version}`);
    }
  }
  return migrations;
}

const CREATE_LEDGER = `
  CREATE TABLE IF NOT EXISTS schema_migrations (
    version integer PRIMARY KEY,
    name text NOT NULL,
    checksum text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
  )`;

interface AppliedRow {
  version: number;
  name: string;
  checksum: string;
}

async function appliedMigrations(db: Queryable): Promise<Map<number, AppliedRow>> {
  const { rows } = await db.query<AppliedRow>('SELECT version, name, checksum FROM schema_migrations ORDER BY version');
  return new Map(rows.map((row) => [row.version, row]));
}

function verifyChecksum(migration: Migration, applied: AppliedRow | undefined): void {
  if (applied && applied.checksum !== migration.checksum) {
    throw new MigrationError(
      `Migration ${migration.version}_${migration.name} was changed after it was applied ` +
        `(recorded checksum ${applied.checksum.slice(0, 12)}…, file ${migration.checksum.slice(0, 12)}…). ` +
        'Applied migrations are immutable: restore the file and add a new migration instead.',
    );
  }
}

/**
 * Applies what is missing, in order. Each migration runs in its own transaction under a transaction-scoped
 * advisory lock, so instances starting together on one PostgreSQL apply each migration exactly once.
 * Returns the versions this call applied.
 */
export async function migrate(
  db: Database,
  migrations: Migration[] = readMigrations(),
  options: MigrateOptions = {},
): Promise<number[]> {
  const lockTimeoutMs = options.lockTimeoutMs ?? DEFAULT_MIGRATION_LOCK_TIMEOUT_MS;
  if (!Number.isInteger(lockTimeoutMs) || lockTimeoutMs < 1) {
    throw new MigrationError(`The migration lock timeout must be a whole number of milliseconds, at least 1 (got ${lockTimeoutMs}).`);
  }
  await db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
    await tx.execScript(CREATE_LEDGER);
  });
  const before = await appliedMigrations(db);
  for (const migration of migrations) verifyChecksum(migration, before.get(migration.version));
  // Read every pending file before applying any, so one that cannot be split stops the run before it changes anything.
  const statements = new Map(
    migrations.filter((migration) => !before.has(migration.version)).map((migration) => [migration.version, migrationStatements(migration)]),
  );

  const appliedNow: number[] = [];
  for (const migration of migrations) {
    if (before.has(migration.version)) continue;
    const applied = await db.transaction(async (tx) => {
      // The advisory lock is taken first and without the timeout: an instance starting beside one that migrates waits
      // for it, however long the migration runs.
      await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
      // SET LOCAL: for this transaction only, so the pooled connection goes back as it was.
      await tx.query(`SET LOCAL lock_timeout = ${lockTimeoutMs}`);
      // Another instance may have applied it while we waited for the lock.
      const { rows } = await tx.query<AppliedRow>(
        'SELECT version, name, checksum FROM schema_migrations WHERE version = $1',
        [migration.version],
      );
      if (rows[0]) {
        verifyChecksum(migration, rows[0]);
        return false;
      }
      // On a database distributed by Citus (docs/scaling.md): one connection per node for the whole migration, as
      // Citus requires once a statement touches a table with a foreign key to a reference table, and each table a
      // statement creates is distributed before the next statement refers to it.
      const distributed = await isDistributed(tx);
      if (distributed) await tx.query("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'");
      const before = distributed ? await tableNames(tx) : new Set<string>();
      for (const statement of statements.get(migration.version) ?? []) {
        await tx.execScript(statement);
        if (distributed) await distributeNewTables(tx, before);
      }
      await tx.query('INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)', [
        migration.version,
        migration.name,
        migration.checksum,
      ]);
      return true;
    }).catch((error: unknown) => {
      throw lockLostError(error, migration, lockTimeoutMs) ?? error;
    });
    if (applied) appliedNow.push(migration.version);
  }
  return appliedNow;
}

/** The SQLSTATE of a database error, if it is one. */
function sqlStateOf(error: unknown): unknown {
  return error && typeof error === 'object' ? (error as { code?: unknown }).code : undefined;
}

/**
 * The clear error for a migration that lost a table lock to another session; undefined for any other error. Either it
 * gave up waiting for the lock, or PostgreSQL ended it to break a deadlock: taking several tables' locks one after
 * another (038 takes eleven), it met a session holding one of them and waiting for one it held.
 */
function lockLostError(error: unknown, migration: Migration, lockTimeoutMs: number): MigrationError | undefined {
  const state = sqlStateOf(error);
  const name = `${migration.version}_${migration.name}`;
  if (state === LOCK_NOT_AVAILABLE) {
    const detail = (error as { message?: unknown }).message;
    return new MigrationError(
      `Migration ${name} waited ${lockTimeoutMs} ms for a table lock that another session ` +
        `holds (${typeof detail === 'string' ? detail : 'lock timeout'}), and gave up so as not to stall the queries ` +
        'queued behind it. Nothing of it was applied. Retry when that session has finished (a long transaction or query; ' +
        'see pg_stat_activity), or raise MIGRATION_LOCK_TIMEOUT_MS.',
    );
  }
  if (state === DEADLOCK_DETECTED) {
    return new MigrationError(
      `Migration ${name} was ended by PostgreSQL to break a deadlock with another session ` +
        'that held a lock it needed while waiting for one it held. Nothing of it was applied. Retry; at a quieter time ' +
        'the same locks are taken without meeting another session.',
    );
  }
  return undefined;
}

/** True when every migration file is applied with its checksum: what `/readyz` requires. */
export async function migrationsCurrent(db: Queryable, migrations: Migration[]): Promise<boolean> {
  const applied = await appliedMigrations(db);
  return migrations.every((migration) => applied.get(migration.version)?.checksum === migration.checksum);
}
