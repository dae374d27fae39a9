// `db distribute`: on a Citus coordinator, makes the global tables reference tables and every tenant-owned table a
// table distributed by tenant_id, all co-located, keeping every foreign key, and has the tenant functions run on the
// tenant's node (docs/scaling.md).
import type { Database, Queryable } from './database.js';

/**
 * The tables found without knowing the tenant, copied to every node. Every table without a tenant_id column is one
 * too (the migration ledger, the token revocations); these have a tenant_id but are looked up by something else:
 * a client id (RFC 6749 2.3.1), a claim code, or hold the server's own keys (tenant_id NULL).
 */
export const REFERENCE_TABLES_WITH_TENANT: readonly string[] = ['client_tenants', 'claim_codes', 'signing_keys'];

/**
 * The service's functions that take a tenant's id as their first argument and touch that tenant's rows alone (as
 * `regprocedure` text). Citus runs a call of one on the node that holds the tenant's shards, and its statements there
 * (function call delegation), instead of sending each of its statements from the coordinator.
 */
export const TENANT_FUNCTIONS: readonly string[] = ['issue_tickets(uuid,jsonb)'];

/** The distribution column of every tenant-owned table. */
const DISTRIBUTION_COLUMN = 'tenant_id';

/** Citus's default: enough shard groups to spread tenants over many more nodes than a first cluster has. */
export const DEFAULT_SHARD_COUNT = 32;

export class DistributeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DistributeError';
  }
}

export interface DistributeOptions {
  /** Shards of the first distributed table (the others are co-located with it); only when none is distributed yet. */
  shardCount?: number;
}

export interface DistributeResult {
  /** The tables this run made reference tables, and those it distributed by tenant_id. */
  referenceTables: string[];
  distributedTables: string[];
  /** Foreign keys dropped before and added again after (Citus cannot convert tables a foreign key joins one by one). */
  foreignKeys: string[];
  /** The tenant functions this run had Citus run on the tenant's node (TENANT_FUNCTIONS). */
  delegatedFunctions: string[];
  /** What the database holds now. */
  totalReference: number;
  totalDistributed: number;
}

interface TableRow {
  table_name: string;
  /** null: no tenant_id column. */
  tenant_not_null: boolean | null;
  /** pg_dist_partition: 'h' hash-distributed, 'n' reference or Citus-managed local table; null: a plain table. */
  method: string | null;
  /** pg_dist_partition.repmodel: 't' a reference table, 's' a Citus-managed local table (or a hash table). */
  replication: string | null;
  column_name: string | null;
  colocation: number | null;
}

interface ForeignKeyRow {
  table_name: string;
  target: string;
  name: string;
  definition: string;
}

const quote = (identifier: string) => `"${identifier.replaceAll('"', '""')}"`;

/** Refuses unless this is a PostgreSQL database with the Citus extension: nothing to distribute otherwise. */
async function requireCitus(db: Database): Promise<void> {
  if (db.kind !== 'postgres') {
    throw new DistributeError(
      'db distribute needs a Citus coordinator (DATABASE_URL); the embedded database cannot be distributed. No table was converted.',
    );
  }
  const { rows } = await db.query<{ version: string | null }>("SELECT extversion AS version FROM pg_extension WHERE extname = 'citus'");
  if (!rows[0]?.version) {
    throw new DistributeError(
      'This database has no Citus extension, so it cannot be distributed: run db distribute against a Citus coordinator ' +
        'where CREATE EXTENSION citus has run and the workers are added (docs/scaling.md). No table was converted.',
    );
  }
}

async function readTables(db: Queryable): Promise<TableRow[]> {
  const { rows } = await db.query<TableRow>(
    `SELECT c.relname AS table_name,
            (SELECT a.attnotnull FROM pg_attribute a
              WHERE a.attrelid = c.oid AND a.attname = $1 AND NOT a.attisdropped) AS tenant_not_null,
            p.partmethod::text AS method, p.repmodel::text AS replication,
            CASE WHEN p.partmethod = 'h' THEN column_to_column_name(p.logicalrelid, p.partkey) END AS column_name,
            p.colocationid AS colocation
       FROM pg_class c
       LEFT JOIN pg_dist_partition p ON p.logicalrelid = c.oid
      WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition
      ORDER BY c.relname`,
    [DISTRIBUTION_COLUMN],
  );
  return rows;
}

const isReferenceTable = (table: TableRow) => table.method === 'n' && table.replication === 't';
const isDistributedByTenant = (table: TableRow) => table.method === 'h' && table.column_name === DISTRIBUTION_COLUMN;

/**
 * Makes the reference and distributed tables that are not yet, in one transaction: a failure leaves the database as it
 * was. A second run finds everything in place and changes nothing (an empty result). Tables a later migration added
 * are converted by the migrator itself (`distributeNewTables`), or else by the next run.
 */
export async function distribute(db: Database, options: DistributeOptions = {}): Promise<DistributeResult> {
  const shardCount = options.shardCount ?? DEFAULT_SHARD_COUNT;
  if (!Number.isInteger(shardCount) || shardCount < 1) {
    throw new DistributeError(`The shard count must be a whole number, at least 1 (got ${shardCount}).`);
  }
  await requireCitus(db);
  return db.transaction(async (tx) => {
    // Blocks a second distribute (or a migration holding its tables) until this one has committed, so two runs
    // started together do not both convert a table.
    await tx.query("SELECT pg_advisory_xact_lock(hashtext('acs db distribute'))");
    // Foreign keys to reference tables make Citus keep one connection per node for the rest of the transaction; asked
    // for from the start, no earlier statement has already spread over several.
    await tx.query("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'");
    return convertTables(tx, shardCount, true);
  });
}

/** True when this database has tables distributed by Citus: then a migration's new tables must be distributed too. */
export async function isDistributed(db: Queryable): Promise<boolean> {
  const { rows } = await db.query<{ found: boolean }>(
    "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') AS found",
  );
  if (!rows[0]?.found) return false;
  const distributed = await db.query<{ found: boolean }>("SELECT EXISTS (SELECT 1 FROM pg_dist_partition WHERE partmethod = 'h') AS found");
  return distributed.rows[0]?.found ?? false;
}

/** The names of the tables of the current schema: what a migration's statements find before they run. */
export async function tableNames(db: Queryable): Promise<Set<string>> {
  return new Set((await readTables(db)).map((table) => table.table_name));
}

/**
 * For the migrator on a distributed database, after each statement: a table the migration created (not in `before`)
 * is made a reference or distributed table at once, so the migration's next statements (a foreign key from or to it)
 * find it in place. Tables the migration did not create are left as they are; one not yet fit to convert (its tenant_id
 * still nullable) is left for `db distribute`, which names it. The caller's transaction must run in Citus's sequential
 * mode.
 */
export async function distributeNewTables(tx: Queryable, before: ReadonlySet<string>): Promise<DistributeResult> {
  return convertTables(tx, DEFAULT_SHARD_COUNT, false, before);
}

async function convertTables(tx: Queryable, shardCount: number, strict: boolean, before?: ReadonlySet<string>): Promise<DistributeResult> {
  // With `before`: the tables the migration made, and those already in place (the co-location group to join).
  const tables = (await readTables(tx)).filter(
    (table) => !before?.has(table.table_name) || isDistributedByTenant(table) || isReferenceTable(table),
  );
  const wantsReference = (table: TableRow) =>
    table.tenant_not_null === null || REFERENCE_TABLES_WITH_TENANT.includes(table.table_name);

  const problems: string[] = [];
  const unfit = new Set<string>();
  for (const table of tables) {
    let problem: string | undefined;
    if (wantsReference(table)) {
      if (table.method === 'h') problem = `${table.table_name} is distributed, but belongs to no tenant and must be a reference table`;
    } else if (!table.tenant_not_null) {
      problem = `${table.table_name}: tenant_id may be NULL, so it can be neither distributed by it nor listed as global`;
    } else if (table.method === 'h' && table.column_name !== DISTRIBUTION_COLUMN) {
      problem = `${table.table_name} is distributed by ${table.column_name ?? 'another column'}, not by tenant_id`;
    } else if (isReferenceTable(table)) {
      problem = `${table.table_name} is a reference table, but is tenant-owned and must be distributed by tenant_id`;
    }
    if (problem) {
      problems.push(problem);
      unfit.add(table.table_name);
    }
  }
  const distributed = tables.filter(isDistributedByTenant);
  const colocations = new Set(distributed.map((table) => table.colocation));
  if (colocations.size > 1) {
    problems.push(`the tables distributed by tenant_id are not co-located (${[...colocations].length} co-location groups)`);
  }
  if (strict && problems.length > 0) {
    throw new DistributeError(`This database is distributed in a way db distribute does not undo:\n  ${problems.join('\n  ')}\nNo table was converted.`);
  }

  const pending = tables.filter((table) => !unfit.has(table.table_name));
  const toReference = pending.filter((table) => wantsReference(table) && !isReferenceTable(table)).map((table) => table.table_name);
  const toDistribute = pending.filter((table) => !wantsReference(table) && !isDistributedByTenant(table)).map((table) => table.table_name);
  const converting = new Set([...toReference, ...toDistribute]);
  if (converting.size === 0) {
    return {
      referenceTables: [],
      distributedTables: [],
      foreignKeys: [],
      delegatedFunctions: await delegateTenantFunctions(tx, distributed[0]?.table_name),
      totalReference: tables.filter(isReferenceTable).length,
      totalDistributed: distributed.length,
    };
  }

  // Citus distributes no table with a trigger unless told to run triggers unsafely (citus.enable_unsafe_triggers),
  // and the service keeps none; one that is still there comes from a migration this database has not yet replaced.
  const triggers = await tx.query<{ table_name: string; trigger_name: string }>(
    `SELECT c.relname AS table_name, t.tgname AS trigger_name
       FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
      WHERE NOT t.tgisinternal AND c.relnamespace = current_schema()::regnamespace AND c.relname = ANY ($1::text[])
      ORDER BY 1, 2`,
    [[...converting]],
  );
  if (triggers.rows.length > 0) {
    throw new DistributeError(
      `Citus cannot distribute a table with a trigger (without citus.enable_unsafe_triggers, which db distribute does ` +
        `not use): ${triggers.rows.map((row) => `${row.table_name}.${row.trigger_name}`).join(', ')}. Apply this ` +
        "release's migrations first (npm run migrate): the service's schema keeps no trigger. No table was converted.",
    );
  }

  // Citus converts a table and the tables its foreign keys join only together (a local table cannot refer to a
  // distributed one, nor a reference table to a local one), so the keys that touch a table to convert are dropped
  // first and added again, as they were, once every table is in place.
  const keys = await tx.query<ForeignKeyRow>(
    `SELECT c.relname AS table_name, r.relname AS target, k.conname AS name, pg_get_constraintdef(k.oid) AS definition
       FROM pg_constraint k
       JOIN pg_class c ON c.oid = k.conrelid
       JOIN pg_class r ON r.oid = k.confrelid
      WHERE k.contype = 'f' AND c.relnamespace = current_schema()::regnamespace
        AND (c.relname = ANY ($1::text[]) OR r.relname = ANY ($1::text[]))
      ORDER BY c.relname, k.conname`,
    [[...converting]],
  );
  for (const key of keys.rows) {
    await tx.query(`ALTER TABLE ${quote(key.table_name)} DROP CONSTRAINT ${quote(key.name)}`);
  }
  for (const table of toReference) {
    await tx.query('SELECT create_reference_table($1::regclass)', [quote(table)]);
  }
  // Co-located with the tables already distributed, or the first one sets the shard count for all.
  let anchor = distributed[0]?.table_name;
  for (const table of toDistribute) {
    if (anchor) {
      await tx.query('SELECT create_distributed_table($1::regclass, $2, colocate_with => $3)', [
        quote(table),
        DISTRIBUTION_COLUMN,
        quote(anchor),
      ]);
    } else {
      await tx.query('SELECT create_distributed_table($1::regclass, $2, shard_count => $3)', [
        quote(table),
        DISTRIBUTION_COLUMN,
        shardCount,
      ]);
      anchor = table;
    }
  }
  for (const key of keys.rows) {
    await tx.query(`ALTER TABLE ${quote(key.table_name)} ADD CONSTRAINT ${quote(key.name)} ${key.definition}`);
  }
  // Rows a converted table held were copied to its shards; the coordinator's own copy is dead weight.
  for (const table of converting) {
    await tx.query('SELECT truncate_local_data_after_distributing_table($1::regclass)', [quote(table)]);
  }
  const delegatedFunctions = await delegateTenantFunctions(tx, anchor);
  const after = await readTables(tx);
  return {
    referenceTables: toReference,
    distributedTables: toDistribute,
    foreignKeys: keys.rows.map((key) => `${key.table_name}.${key.name}`),
    delegatedFunctions,
    totalReference: after.filter(isReferenceTable).length,
    totalDistributed: after.filter(isDistributedByTenant).length,
  };
}

/**
 * Has Citus run each tenant function that exists and does not yet run on the tenant's node there, its first argument
 * the distribution argument, co-located with `anchor` (a table distributed by tenant_id). Without an anchor nothing is
 * distributed yet, and a call runs on the coordinator, which sends its statements on as any other. Answers what it did.
 */
async function delegateTenantFunctions(tx: Queryable, anchor: string | undefined): Promise<string[]> {
  if (!anchor) return [];
  const { rows } = await tx.query<{ signature: string }>(
    `SELECT f.signature
       FROM unnest($1::text[]) WITH ORDINALITY AS f (signature, ordinal)
      WHERE to_regprocedure(f.signature) IS NOT NULL
        AND NOT EXISTS (SELECT FROM pg_dist_object o
                         WHERE o.classid = 'pg_proc'::regclass AND o.objid = to_regprocedure(f.signature)
                           AND o.distribution_argument_index IS NOT NULL)
      ORDER BY f.ordinal`,
    [TENANT_FUNCTIONS],
  );
  for (const { signature } of rows) {
    await tx.query("SELECT create_distributed_function($1::regprocedure, '$1', colocate_with => $2::text)", [signature, quote(anchor)]);
  }
  return rows.map((row) => row.signature);
}
