// `db distribute` (docs/scaling.md): refused clearly without Citus; on a Citus coordinator (CITUS_URL) the reference and
// co-located distributed tables, every foreign key kept, the tenant functions run on the tenant's node, a second run
// changing nothing, later migrations still applying.
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import type { Database, Queryable } from '../../src/db/database.js';
import { DistributeError, REFERENCE_TABLES_WITH_TENANT, TENANT_FUNCTIONS, distribute } from '../../src/db/distribute.js';
import { migrate, readMigrations, type Migration } from '../../src/db/migrate.js';
import { createPostgresDatabase } from '../../src/db/postgres.js';
import { createLogger } from '../../src/logger.js';
import { citusTestUrl, createCitusDatabase, dropCitusDatabase } from '../helpers/citus.js';
import { createEmptyTestDatabase, createSeededDataDir, createTestDatabase } from '../helpers/database.js';
import { postgresTestUrl } from '../helpers/postgres-url.js';
import { spawnNode, PATIENCE_MS } from '../helpers/process.js';

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

describe('db distribute without Citus', () => {
  it('refuses a database without the Citus extension, converting nothing', async () => {
    const t = await createEmptyTestDatabase();
    cleanups.push(() => t.db.close());
    await migrate(t.db);
    const refusal = await distribute(t.db).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(DistributeError);
    expect((refusal as Error).message).toMatch(
      t.db.kind === 'pglite'
        ? /^db distribute needs a Citus coordinator \(DATABASE_URL\); the embedded database cannot be distributed\./
        : /^This database has no Citus extension, so it cannot be distributed: run db distribute against a Citus coordinator/,
    );
    // The schema is as the migrations left it: a tenant-owned table is still an ordinary table.
    expect((await t.db.query("SELECT count(*)::int AS tables FROM pg_class WHERE relname = 'tickets' AND relkind = 'r'")).rows).toEqual([
      { tables: 1 },
    ]);
  });

  it('refuses a shard count that is not a whole number at least 1', async () => {
    const t = await createEmptyTestDatabase();
    cleanups.push(() => t.db.close());
    await expect(distribute(t.db, { shardCount: 0 })).rejects.toThrow(new DistributeError('The shard count must be a whole number, at least 1 (got 0).'));
  });

  it('exits non-zero from the command line, saying why, on a database without Citus', async () => {
    let env: Record<string, string>;
    if (postgresTestUrl()) {
      const t = await createEmptyTestDatabase();
      cleanups.push(() => t.db.close());
      env = { DATABASE_URL: t.url!, SECRETS_KEY: 'ab'.repeat(32) };
    } else {
      const directory = await createSeededDataDir();
      cleanups.push(() => directory.remove());
      env = { DATA_DIR: directory.path };
    }
    const child = spawnNode('src/cli.ts', ['db', 'distribute'], { LOG_LEVEL: 'warn', ...env });
    const exit = await child.waitForExit(PATIENCE_MS);
    expect(exit.code, child.stderr()).toBe(1);
    expect(child.stderr()).toMatch(/(has no Citus extension|embedded database cannot be distributed).*No table was converted\.\n$/s);
    expect(child.stderr()).not.toMatch(/\n\s+at /);
    expect(child.stdout()).toBe('');
  });

  it('refuses a bad --shard-count as a usage error', async () => {
    const child = spawnNode('src/cli.ts', ['db', 'distribute', '--shard-count', 'many'], { LOG_LEVEL: 'warn' });
    const exit = await child.waitForExit(PATIENCE_MS);
    expect(exit.code).toBe(2);
    expect(child.stderr()).toContain('--shard-count must be a whole number from 1 to 64000 (got many).');
  });
});

interface CitusTable {
  table_name: string;
  kind: 'reference' | 'distributed' | 'local';
  column_name: string | null;
  colocation: number;
  shards: number;
}

/** Every table of the schema and what Citus made of it. */
async function citusTables(db: Queryable): Promise<CitusTable[]> {
  const { rows } = await db.query<CitusTable>(
    `SELECT c.relname AS table_name,
            CASE WHEN p.partmethod = 'h' THEN 'distributed' WHEN p.repmodel = 't' THEN 'reference' ELSE 'local' END AS kind,
            CASE WHEN p.partmethod = 'h' THEN column_to_column_name(p.logicalrelid, p.partkey) END AS column_name,
            coalesce(p.colocationid, 0) AS colocation,
            (SELECT count(*)::int FROM pg_dist_shard s WHERE s.logicalrelid = c.oid) AS shards
       FROM pg_class c LEFT JOIN pg_dist_partition p ON p.logicalrelid = c.oid
      WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'
      ORDER BY c.relname`,
  );
  return rows;
}

/**
 * The functions Citus runs on the node of their distribution argument: each with that argument's position (0: the
 * first) and whether it is co-located with the tickets, as `regprocedure` text.
 */
async function delegatedFunctions(db: Queryable): Promise<{ signature: string; argument: number; withTickets: boolean }[]> {
  const { rows } = await db.query<{ signature: string; argument: number; withTickets: boolean }>(
    `SELECT replace(o.objid::regprocedure::text, ' ', '') AS signature, o.distribution_argument_index AS argument,
            o.colocationid = (SELECT colocationid FROM pg_dist_partition WHERE logicalrelid = 'tickets'::regclass) AS "withTickets"
       FROM pg_dist_object o
      WHERE o.classid = 'pg_proc'::regclass AND o.distribution_argument_index IS NOT NULL
      ORDER BY 1`,
  );
  return rows;
}

async function foreignKeys(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ key: string }>(
    `SELECT c.relname || '.' || k.conname || ' ' || pg_get_constraintdef(k.oid) AS key
       FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid
      WHERE k.contype = 'f' AND c.relnamespace = current_schema()::regnamespace
      ORDER BY 1`,
  );
  return rows.map((row) => row.key);
}

const citus = citusTestUrl();

describe.skipIf(!citus)('db distribute on a Citus coordinator (runs only with CITUS_URL)', () => {
  /** A database migrated on the coordinator and its workers but not yet distributed. */
  async function undistributed(): Promise<Database> {
    const name = `acs_test_${randomBytes(6).toString('hex')}`;
    await createCitusDatabase(citus!, name, { distribute: false });
    const db = createPostgresDatabase({
      connectionString: Object.assign(new URL(citus!), { pathname: `/${name}` }).toString(),
      poolMax: 2,
      connectTimeoutMs: 5000,
      statementTimeoutMs: 300_000,
      log: createLogger('silent'),
    });
    cleanups.push(async () => {
      await db.close();
      await dropCitusDatabase(citus!, name);
    });
    return db;
  }

  it('makes the global tables reference tables and the rest distributed by tenant_id, co-located, keeping every key', async () => {
    const db = await undistributed();
    const keysBefore = await foreignKeys(db);
    const result = await distribute(db, { shardCount: 4 });
    const tables = await citusTables(db);
    const reference = tables.filter((table) => table.kind === 'reference').map((table) => table.table_name);
    const distributed = tables.filter((table) => table.kind === 'distributed');
    expect(reference).toEqual(['claim_codes', 'client_tenants', 'schema_migrations', 'signing_keys', 'tenants', 'token_revocations']);
    expect(reference).toEqual(expect.arrayContaining([...REFERENCE_TABLES_WITH_TENANT]));
    expect(tables.filter((table) => table.kind === 'local')).toEqual([]);
    expect(distributed.map((table) => table.table_name)).toEqual(expect.arrayContaining(['tickets', 'users', 'oauth_clients', 'audit_events']));
    expect(new Set(distributed.map((table) => table.column_name))).toEqual(new Set(['tenant_id']));
    expect(new Set(distributed.map((table) => table.colocation)).size).toBe(1);
    expect(new Set(distributed.map((table) => table.shards))).toEqual(new Set([4]));
    expect(result).toEqual({
      referenceTables: reference,
      distributedTables: distributed.map((table) => table.table_name),
      foreignKeys: expect.any(Array),
      delegatedFunctions: [...TENANT_FUNCTIONS],
      totalReference: reference.length,
      totalDistributed: distributed.length,
    });
    // Each tenant function runs where its first argument's tenant lives.
    expect(await delegatedFunctions(db)).toEqual(TENANT_FUNCTIONS.map((signature) => ({ signature, argument: 0, withTickets: true })));
    // Every foreign key is there again, exactly as the migrations made it.
    expect(await foreignKeys(db)).toEqual(keysBefore);
    expect(result.foreignKeys).toHaveLength(keysBefore.length);
    // The migration ledger's rows moved to the reference table with it.
    expect((await db.query<{ count: number }>('SELECT count(*)::int AS count FROM schema_migrations')).rows[0]!.count).toBe(
      readMigrations().length,
    );
  });

  it('changes nothing on a second run, and says so', async () => {
    const t = await createTestDatabase();
    cleanups.push(() => t.db.close());
    const before = await citusTables(t.db);
    const result = await distribute(t.db);
    expect(result).toEqual({
      referenceTables: [],
      distributedTables: [],
      foreignKeys: [],
      delegatedFunctions: [],
      totalReference: before.filter((table) => table.kind === 'reference').length,
      totalDistributed: before.filter((table) => table.kind === 'distributed').length,
    });
    expect(await citusTables(t.db)).toEqual(before);

    const child = spawnNode('src/cli.ts', ['db', 'distribute'], { LOG_LEVEL: 'warn', DATABASE_URL: t.url!, SECRETS_KEY: 'ab'.repeat(32) });
    const exit = await child.waitForExit(PATIENCE_MS);
    expect(exit.code, child.stderr()).toBe(0);
    expect(child.stdout()).toBe(
      `Already distributed: ${result.totalReference} reference tables and ${result.totalDistributed} distributed tables ` +
        'co-located by tenant_id. Nothing changed.\n',
    );
  });

  it('applies a later migration on the distributed database, distributing the table it adds', async () => {
    const t = await createTestDatabase();
    cleanups.push(() => t.db.close());
    const sql = `-- A later migration: a column and an index on a distributed table, a tenant-owned table with its keys.
ALTER TABLE tickets ADD COLUMN note text;
CREATE INDEX tickets_note_idx ON tickets (tenant_id, note);
CREATE TABLE ticket_notes (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  ticket_id uuid NOT NULL,
  body text NOT NULL DEFAULT 'a; b',
  PRIMARY KEY (tenant_id, ticket_id)
);
ALTER TABLE ticket_notes ADD CONSTRAINT ticket_notes_ticket_fkey
  FOREIGN KEY (tenant_id, ticket_id) REFERENCES tickets (tenant_id, id) ON DELETE CASCADE;
CREATE TABLE note_kinds (code text PRIMARY KEY, label text NOT NULL);
CREATE FUNCTION note_default() RETURNS text LANGUAGE sql AS $$ SELECT 'x;y' $$;`;
    const later: Migration = { version: 9001, name: 'later', sql, checksum: 'later' };
    expect(await migrate(t.db, [...readMigrations(), later])).toEqual([9001]);

    const tables = await citusTables(t.db);
    const tickets = tables.find((table) => table.table_name === 'tickets')!;
    expect(tables.find((table) => table.table_name === 'ticket_notes')).toMatchObject({
      kind: 'distributed',
      column_name: 'tenant_id',
      colocation: tickets.colocation,
    });
    expect(tables.find((table) => table.table_name === 'note_kinds')).toMatchObject({ kind: 'reference' });
    expect(await foreignKeys(t.db)).toContain(
      'ticket_notes.ticket_notes_ticket_fkey FOREIGN KEY (tenant_id, ticket_id) REFERENCES tickets(tenant_id, id) ON DELETE CASCADE',
    );
    // The new column is on the shards: a row written and read through the coordinator.
    const tenant = '00000000-0000-4000-8000-0000000000aa';
    await t.db.query("INSERT INTO tenants (id, name, created_at) VALUES ($1, 'later-migration', 0)", [tenant]);
    await t.db.query('SELECT note FROM tickets WHERE tenant_id = $1', [tenant]);
    expect((await distribute(t.db)).distributedTables).toEqual([]);
  });

  it('has a tenant function that a later migration makes run on the tenant\'s node, as an upgraded database gets it', async () => {
    const t = await createTestDatabase();
    cleanups.push(() => t.db.close());
    // A database distributed before the function existed: the function's migration is applied again, as a later one.
    const issueTickets = readMigrations().find((migration) => migration.name === 'issue_tickets_function')!;
    await t.db.query('DROP FUNCTION issue_tickets(uuid, jsonb)');
    expect(await delegatedFunctions(t.db)).toEqual([]);
    const later: Migration = { ...issueTickets, version: 9002, name: 'later_function', checksum: 'later' };
    expect(await migrate(t.db, [...readMigrations(), later])).toEqual([9002]);
    expect(await delegatedFunctions(t.db)).toEqual([{ signature: TENANT_FUNCTIONS[0], argument: 0, withTickets: true }]);
    expect((await distribute(t.db)).delegatedFunctions).toEqual([]);
  });

  it('upgrades a database distributed at migration 035: 036 drops audit_events.id on every shard, and its functions append there', async () => {
    const name = `acs_test_${randomBytes(6).toString('hex')}`;
    const all = readMigrations();
    const url = await createCitusDatabase(citus!, name, { migrations: all.filter((migration) => migration.version <= 35) });
    const db = createPostgresDatabase({ connectionString: url, poolMax: 2, connectTimeoutMs: 5000, statementTimeoutMs: 300_000, log: createLogger('silent') });
    cleanups.push(async () => {
      await db.close();
      await dropCitusDatabase(citus!, name);
    });
    expect(await migrate(db, all)).toEqual(all.filter((migration) => migration.version > 35).map((migration) => migration.version));

    const { rows: shards } = await db.query<{ result: string }>(
      `SELECT result FROM run_command_on_shards('audit_events',
         $$SELECT count(*) FROM information_schema.columns WHERE table_name = '%s' AND column_name = 'id'$$)`,
    );
    expect(shards.length).toBeGreaterThan(1);
    expect(new Set(shards.map((shard) => shard.result))).toEqual(new Set(['0']));
    const tenant = '00000000-0000-4000-8000-0000000000ab';
    await db.query("INSERT INTO tenants (id, name, created_at) VALUES ($1, 'upgraded', 0)", [tenant]);
    for (const action of ['first', 'second']) {
      await db.query(
        "SELECT append_audit_events($1, ARRAY[1]::bigint[], ARRAY['test'], ARRAY[$2], ARRAY['t'], ARRAY[NULL]::text[], ARRAY['{}']::jsonb[])",
        [tenant, action],
      );
    }
    const { rows } = await db.query<{ seq: number; action: string }>('SELECT seq::int, action FROM audit_events WHERE tenant_id = $1 ORDER BY seq', [tenant]);
    expect(rows).toEqual([{ seq: 1, action: 'first' }, { seq: 2, action: 'second' }]);
  });

  it('refuses a table with a trigger, naming it, and converts nothing', async () => {
    const db = await undistributed();
    await db.query(
      'CREATE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$',
    );
    await db.query('CREATE TRIGGER residents_touch BEFORE UPDATE ON residents FOR EACH ROW EXECUTE FUNCTION touch()');
    await expect(distribute(db, { shardCount: 4 })).rejects.toThrow(/^Citus cannot distribute a table with a trigger.*residents\.residents_touch.*No table was converted\.$/s);
    expect((await citusTables(db)).filter((table) => table.kind !== 'local')).toEqual([]);
  });
});
