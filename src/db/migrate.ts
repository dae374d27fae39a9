// Forward-only SQL migrations from migrations/NNN_name.sql: each in its own transaction, recorded with a checksum.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Database, Queryable } from './database.js';

/** src/db and dist/db are both two levels below the project root. */
export const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/', import.meta.url));

/** Any constant works; it only has to be the same for every instance of this service. */
const MIGRATION_LOCK_KEY = 7_318_442_901;

export interface Migration {
  version: number;
  name: string;
  sql: string;
  checksum: string;
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
        checksum: createHash('sha256').update(sql).digest('hex'),
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
export async function migrate(db: Database, migrations: Migration[] = readMigrations()): Promise<number[]> {
  await db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
    await tx.execScript(CREATE_LEDGER);
  });
  const before = await appliedMigrations(db);
  for (const migration of migrations) verifyChecksum(migration, before.get(migration.version));

  const appliedNow: number[] = [];
  for (const migration of migrations) {
    if (before.has(migration.version)) continue;
    const applied = await db.transaction(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
      // Another instance may have applied it while we waited for the lock.
      const { rows } = await tx.query<AppliedRow>(
        'SELECT version, name, checksum FROM schema_migrations WHERE version = $1',
        [migration.version],
      );
      if (rows[0]) {
        verifyChecksum(migration, rows[0]);
        return false;
      }
      await tx.execScript(migration.sql);
      await tx.query('INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)', [
        migration.version,
        migration.name,
        migration.checksum,
      ]);
      return true;
    });
    if (applied) appliedNow.push(migration.version);
  }
  return appliedNow;
}

/** True when every migration file is applied with its checksum: what `/readyz` requires. */
export async function migrationsCurrent(db: Queryable, migrations: Migration[]): Promise<boolean> {
  const applied = await appliedMigrations(db);
  return migrations.every((migration) => applied.get(migration.version)?.checksum === migration.checksum);
}
