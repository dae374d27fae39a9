// The schema stays distributable by tenant (docs/scaling.md): read from the catalog, every table is either a listed
// reference table or tenant-owned with tenant_id in every key; the hot paths are served by an index.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Queryable } from '../../src/db/database.js';
import { citusTestUrl } from '../helpers/citus.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

/** On a Citus coordinator (CITUS_URL) the plans are distributed: each names the shards' indexes. */
const onCitus = citusTestUrl() !== undefined;

/**
 * The reference tables: found without knowing the tenant, so on Citus they are copied to every node
 * (`create_reference_table`) instead of distributed by `tenant_id`. Every other table is tenant-owned.
 */
const REFERENCE_TABLES: Record<string, string> = {
  // Found by name: a login `USER@TENANT` (docs/api-reference.md 3.2) and the ticket issuer `{PUBLIC_URL}/tenants/{name}`
  // (docs/api-reference.md 8.1) name the tenant, not its id. Every tenant-owned table's foreign key points at it.
  tenants: 'looked up by name (login, issuer); referenced by every tenant-owned table',
  // The token endpoint learns the tenant from the client id alone (RFC 6749 2.3.1), and client ids are unique across
  // tenants. Written in the same transaction as oauth_clients (client.repo.ts); oauth_clients' foreign key needs it.
  client_tenants: 'client id → tenant for the token endpoint; client ids unique across tenants',
  // A phone presents only a claim code (docs/api-reference.md 12), which names no tenant: its hash leads to the tenant
  // and the claim. Written in the same transaction as the claim (claim.repo.ts); the claim's foreign key needs it.
  claim_codes: 'claim code hash → tenant and claim for the phone\'s look-up and redemption',
  // Read in full by every instance into memory (revocation.service.ts); subjects are ids of any tenant; rows live
  // as long as an access token (ACCESS_TOKEN_TTL_SECONDS).
  token_revocations: 'read in full by every instance; no tenant column',
  // The access-token keys belong to no tenant (tenant_id NULL); every instance reads all live keys of a purpose
  // (listLiveKeys). A few rows per tenant, written only by a rotation.
  signing_keys: "the server's own keys have no tenant; read in full by every instance",
  // The migration ledger: one per database (on Citus, the coordinator's).
  schema_migrations: 'the migration ledger, one per database',
};

/** Any UUID: the plans below do not depend on the values. */
const TENANT = '00000000-0000-4000-8000-000000000001';

interface Catalog {
  /** table → whether it has a NOT NULL tenant_id (undefined: no tenant_id column at all). */
  tenantColumn: Map<string, boolean | undefined>;
  uniqueIndexes: { table: string; name: string; columns: string[]; primary: boolean }[];
  foreignKeys: { table: string; name: string; columns: string[]; target: string; targetColumns: string[] }[];
}

/** The tables, unique indexes (primary keys and unique constraints included) and foreign keys of the current schema. */
async function readCatalog(db: Queryable): Promise<Catalog> {
  const tables = await db.query<{ table_name: string; tenant_nullable: string | null }>(
    `SELECT t.table_name, c.is_nullable AS tenant_nullable
       FROM information_schema.tables t
       LEFT JOIN information_schema.columns c
              ON c.table_schema = t.table_schema AND c.table_name = t.table_name AND c.column_name = 'tenant_id'
      WHERE t.table_schema = current_schema() AND t.table_type = 'BASE TABLE'
      ORDER BY t.table_name`,
  );
  // Key columns only (indnkeyatts): an INCLUDE column does not make an index unique. An expression has no name.
  const uniqueIndexes = await db.query<{ table_name: string; index_name: string; columns: (string | null)[]; primary: boolean }>(
    `SELECT tc.relname AS table_name, ic.relname AS index_name, i.indisprimary AS primary,
            array(SELECT a.attname FROM generate_series(0, i.indnkeyatts - 1) AS k (n)
                    LEFT JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[k.n]
                   ORDER BY k.n)::text[] AS columns
       FROM pg_index i
       JOIN pg_class tc ON tc.oid = i.indrelid
       JOIN pg_class ic ON ic.oid = i.indexrelid
      WHERE i.indisunique AND tc.relnamespace = current_schema()::regnamespace
      ORDER BY tc.relname, ic.relname`,
  );
  const foreignKeys = await db.query<{ table_name: string; name: string; columns: string[]; target: string; target_columns: string[] }>(
    `SELECT tc.relname AS table_name, con.conname AS name, rc.relname AS target,
            array(SELECT a.attname FROM unnest(con.conkey) WITH ORDINALITY AS k (attnum, n)
                    JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.attnum ORDER BY k.n)::text[] AS columns,
            array(SELECT a.attname FROM unnest(con.confkey) WITH ORDINALITY AS k (attnum, n)
                    JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.attnum ORDER BY k.n)::text[] AS target_columns
       FROM pg_constraint con
       JOIN pg_class tc ON tc.oid = con.conrelid
       JOIN pg_class rc ON rc.oid = con.confrelid
      WHERE con.contype = 'f' AND tc.relnamespace = current_schema()::regnamespace
      ORDER BY tc.relname, con.conname`,
  );
  return {
    tenantColumn: new Map(
      tables.rows.map((row) => [row.table_name, row.tenant_nullable === null ? undefined : row.tenant_nullable === 'NO']),
    ),
    uniqueIndexes: uniqueIndexes.rows.map((row) => ({
      table: row.table_name,
      name: row.index_name,
      columns: row.columns.map((column) => column ?? '(expression)'),
      primary: row.primary,
    })),
    foreignKeys: foreignKeys.rows.map((row) => ({
      table: row.table_name,
      name: row.name,
      columns: row.columns,
      target: row.target,
      targetColumns: row.target_columns,
    })),
  };
}

/**
 * What keeps the schema from being distributed by tenant, one line per table and constraint; empty when nothing does.
 * Tenant-owned: a NOT NULL tenant_id, a primary key, tenant_id in every unique index and every foreign key, and a
 * foreign key to another tenant-owned table pairs tenant_id with tenant_id (Citus requires the distribution column on
 * both sides). Reference tables may hold no foreign key to a tenant-owned table (Citus cannot keep one).
 */
function citusViolations(catalog: Catalog, reference: readonly string[]): string[] {
  const violations: string[] = [];
  const isReference = (table: string) => reference.includes(table);
  for (const table of reference) {
    if (!catalog.tenantColumn.has(table)) violations.push(`${table}: listed as a reference table but there is no such table`);
  }
  for (const [table, tenantNotNull] of catalog.tenantColumn) {
    if (isReference(table)) continue;
    if (tenantNotNull === undefined) {
      violations.push(`${table}: no tenant_id column, and not listed as a reference table`);
      continue;
    }
    if (!tenantNotNull) violations.push(`${table}: tenant_id may be NULL`);
    if (!catalog.uniqueIndexes.some((index) => index.table === table && index.primary)) {
      violations.push(`${table}: no primary key`);
    }
  }
  for (const index of catalog.uniqueIndexes) {
    if (isReference(index.table) || !catalog.tenantColumn.has(index.table)) continue;
    if (!index.columns.includes('tenant_id')) {
      const kind = index.primary ? 'primary key' : 'unique index';
      violations.push(`${index.table}: ${kind} ${index.name} (${index.columns.join(', ')}) lacks tenant_id`);
    }
  }
  for (const key of catalog.foreignKeys) {
    const describe = `foreign key ${key.name} (${key.columns.join(', ')}) → ${key.target} (${key.targetColumns.join(', ')})`;
    if (isReference(key.table)) {
      if (!isReference(key.target)) violations.push(`${key.table}: reference table with ${describe} to a tenant-owned table`);
      continue;
    }
    const position = key.columns.indexOf('tenant_id');
    if (position < 0) {
      violations.push(`${key.table}: ${describe} lacks tenant_id`);
    } else if (!isReference(key.target) && key.targetColumns[position] !== 'tenant_id') {
      violations.push(`${key.table}: ${describe} does not pair tenant_id with ${key.target}.tenant_id`);
    }
  }
  return violations;
}

describe('the schema is ready to be distributed by tenant (docs/scaling.md)', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(async () => {
    await t.db.close();
  });

  it('keys every tenant-owned table by tenant_id, and lists every other table as a reference table', async () => {
    const catalog = await readCatalog(t.db);
    expect(citusViolations(catalog, Object.keys(REFERENCE_TABLES))).toEqual([]);
    // The check read the real schema: the tables the service lives on are there, on either side of the line.
    expect([...catalog.tenantColumn.keys()]).toEqual(expect.arrayContaining(['tickets', 'oauth_clients', 'audit_events', 'tenants']));
    expect(catalog.uniqueIndexes.find((index) => index.name === 'tickets_pkey')?.columns).toEqual(['tenant_id', 'id']);
  });

  it('names the table and the constraint of each way a table can break the rule', async () => {
    await t.db.transaction(async (tx) => {
      await tx.query(`CREATE TABLE ct_global (id uuid PRIMARY KEY, tenant_id uuid NOT NULL, code text,
                        CONSTRAINT ct_global_code_key UNIQUE (code))`);
      await tx.query(`CREATE TABLE ct_child (tenant_id uuid, parent_id uuid, CONSTRAINT ct_child_parent_fkey
                        FOREIGN KEY (parent_id) REFERENCES ct_global (id))`);
      await tx.query(`CREATE TABLE ct_pair (tenant_id uuid NOT NULL, id uuid NOT NULL, other_tenant uuid NOT NULL,
                        PRIMARY KEY (tenant_id, id), UNIQUE (other_tenant, id))`);
      await tx.query(`CREATE TABLE ct_crossed (tenant_id uuid NOT NULL PRIMARY KEY, pair_id uuid NOT NULL,
                        CONSTRAINT ct_crossed_pair_fkey FOREIGN KEY (pair_id, tenant_id) REFERENCES ct_pair (other_tenant, id))`);
      await tx.query('CREATE TABLE ct_lookup (code text PRIMARY KEY, tenant_id uuid, pair_tenant uuid, pair_id uuid, ' +
        'CONSTRAINT ct_lookup_pair_fkey FOREIGN KEY (pair_tenant, pair_id) REFERENCES ct_pair (tenant_id, id))');
      await tx.query('CREATE TABLE ct_loose (name text)');
      const violations = citusViolations(await readCatalog(tx), [...Object.keys(REFERENCE_TABLES), 'ct_lookup', 'ct_gone']);
      expect(violations.filter((line) => /^ct_/.test(line)).sort()).toEqual(
        [
          'ct_gone: listed as a reference table but there is no such table',
          'ct_global: primary key ct_global_pkey (id) lacks tenant_id',
          'ct_global: unique index ct_global_code_key (code) lacks tenant_id',
          'ct_child: tenant_id may be NULL',
          'ct_child: no primary key',
          'ct_child: foreign key ct_child_parent_fkey (parent_id) → ct_global (id) lacks tenant_id',
          'ct_pair: unique index ct_pair_other_tenant_id_key (other_tenant, id) lacks tenant_id',
          'ct_crossed: foreign key ct_crossed_pair_fkey (pair_id, tenant_id) → ct_pair (other_tenant, id) does not pair tenant_id with ct_pair.tenant_id',
          'ct_lookup: reference table with foreign key ct_lookup_pair_fkey (pair_tenant, pair_id) → ct_pair (tenant_id, id) to a tenant-owned table',
          'ct_loose: no tenant_id column, and not listed as a reference table',
        ].sort(),
      );
      // Rolled back: the tables above exist only for this check.
      throw new Rollback();
    }).catch((error: unknown) => {
      if (!(error instanceof Rollback)) throw error;
    });
    expect((await t.db.query("SELECT to_regclass('ct_global') AS found")).rows).toEqual([{ found: null }]);
  });

  /**
   * The hot paths' statements (as their repositories write them) and the index each must be served by with the new
   * keys. Sequential scans are switched off so that the planner shows which index fits, whatever the table's size: a
   * statement no index fits still plans a Seq Scan, and fails here.
   */
  const HOT_PATHS: [name: string, sql: string, params: unknown[], index: string, seed?: string][] = [
    ['a ticket by id (ticket.repo.ts findTicket)', 'SELECT id FROM tickets WHERE tenant_id = $1 AND id = $2', [TENANT, TENANT], 'tickets_pkey'],
    [
      'a lock sync after its cursor (lock-sync.repo.ts listLockChanges)',
      `SELECT id, change_seq FROM tickets WHERE tenant_id = $1 AND secured_object_id = $2 AND (change_seq, id) > ($3::bigint, $4::uuid)
        ORDER BY change_seq, id LIMIT 100`,
      [TENANT, 'lock-1', 0, TENANT],
      'tickets_sync_idx',
    ],
    [
      'a refresh token by hash (refresh-token.repo.ts consumeRefreshToken)',
      `UPDATE refresh_tokens SET used_at = $3 WHERE tenant_id = $4 AND token_hash = $1 AND client_id = $2 AND used_at IS NULL
          AND revoked_at IS NULL AND expires_at > $3`,
      [Buffer.alloc(32), 'client', 0, TENANT],
      'refresh_tokens_pkey',
      // On empty tables the client's index (migration 019) ties with the key; with one client's many tokens, as in
      // use, the planner must still pick the key. Foreign keys are off for the seed (rolled back with the plan).
      `SET LOCAL session_replication_role = replica;
       INSERT INTO refresh_tokens (token_hash, family_id, tenant_id, client_id, user_id, scopes, created_at, expires_at)
       SELECT sha256(n::text::bytea), gen_random_uuid(), '${TENANT}', 'client', gen_random_uuid(), '{}', 0, 1
         FROM generate_series(1, 2000) AS n;
       ANALYZE refresh_tokens`,
    ],
    ['a client id to its tenant (client.repo.ts findClient)', 'SELECT tenant_id FROM client_tenants WHERE client_id = $1', ['client'], 'client_tenants_pkey'],
    ['a client within its tenant (client.repo.ts findTenantClient)', 'SELECT name FROM oauth_clients WHERE tenant_id = $1 AND client_id = $2', [TENANT, 'client'], 'oauth_clients_pkey'],
    ...(['oauth_clients_pkey', 'mobile_devices_pkey'] as const).map((index): [string, string, unknown[], string] => [
      `a client and its device's key, private_key_jwt (client.repo.ts findClientWithDeviceKey), by ${index}`,
      `SELECT c.name, md.public_key, md.key_thumbprint FROM oauth_clients c
         LEFT JOIN mobile_devices md ON md.tenant_id = $1 AND md.id = c.mobile_device_id
        WHERE c.tenant_id = $1 AND c.client_id = $2`,
      [TENANT, 'client'],
      index,
    ]),
    [
      "a permission's live tickets (access-permission.repo.ts TOKEN_COUNT)",
      'SELECT count(*) FROM tickets WHERE tenant_id = $1 AND access_permission_id = $2 AND revoked_at IS NULL',
      [TENANT, TENANT],
      'tickets_permission_pair_idx',
    ],
  ];

  it.each(HOT_PATHS)('serves %s from an index', async (_name, sql, params, index, seed) => {
    let plan = '';
    // Rolled back: the seed and its statistics exist only for this plan.
    await t.db
      .transaction(async (tx) => {
        // On Citus the settings below must reach the workers, which plan each shard's part.
        if (onCitus) await tx.query("SET LOCAL citus.propagate_set_commands = 'local'");
        for (const statement of seed?.split(';') ?? []) await tx.query(statement);
        await tx.query('SET LOCAL enable_seqscan = off');
        const { rows } = await tx.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (FORMAT JSON) ${sql}`, params);
        plan = JSON.stringify(rows[0]!['QUERY PLAN']);
        throw new Rollback();
      })
      .catch((error: unknown) => {
        if (!(error instanceof Rollback)) throw error;
      });
    expect(plan).not.toContain('"Seq Scan"');
    if (onCitus) {
      // Citus plans the statement as one task on the node holding the tenant's shard (or the reference table's copy),
      // and that node serves it from the shard's copy of the index, named after it with the shard's id.
      // test/db/citus-routing.test.ts reads the hot paths as the service sends them.
      expect(plan).toContain('"Task Count":1');
      expect(plan).toMatch(new RegExp(`"Index Name":"${index}_\\d+"`));
    } else {
      expect(plan).toContain(`"Index Name":"${index}"`);
    }
  });
});

/**
 * Foreign keys that no index needs to serve: PostgreSQL reads the referencing table by the key's columns only when a
 * target row is deleted or its key changes, and these targets never are.
 */
const UNINDEXED_FOREIGN_KEYS: Record<string, string> = {
  // Tenants are never deleted (no statement of the service does), and a tenant's id never changes.
  signing_keys_tenant_id_fkey: 'tenants are never deleted',
};

/**
 * The foreign keys (`table.constraint (columns)`) that no index of their table serves: none whose leading key columns
 * are exactly the foreign key's columns, in any order. A delete of a referenced row (a cascade, or the check that
 * nothing still points at it) then scans the whole referencing table.
 */
async function unindexedForeignKeys(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ name: string; table_name: string; columns: string[] }>(
    `SELECT con.conname AS name, tc.relname AS table_name,
            array(SELECT a.attname FROM unnest(con.conkey) WITH ORDINALITY AS k (attnum, n)
                    JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.attnum ORDER BY k.n)::text[] AS columns
       FROM pg_constraint con
       JOIN pg_class tc ON tc.oid = con.conrelid
      WHERE con.contype = 'f' AND tc.relnamespace = current_schema()::regnamespace
        AND NOT EXISTS (
              SELECT 1 FROM pg_index i
               WHERE i.indrelid = con.conrelid AND i.indpred IS NULL
                 AND (SELECT array_agg(i.indkey[k.n]) FROM generate_series(0, cardinality(con.conkey) - 1) AS k (n))
                     @> con.conkey
                 AND cardinality(con.conkey) <= i.indnkeyatts)
      ORDER BY tc.relname, con.conname`,
  );
  return rows.filter((row) => !(row.name in UNINDEXED_FOREIGN_KEYS)).map((row) => `${row.table_name}.${row.name} (${row.columns.join(', ')})`);
}

describe('every foreign key is served by an index', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(async () => {
    await t.db.close();
  });

  it('finds an index leading with the columns of each foreign key (migration 019)', async () => {
    expect(await unindexedForeignKeys(t.db)).toEqual([]);
    const { rows } = await t.db.query<{ found: string | null }>("SELECT to_regclass('refresh_tokens_client_idx')::text AS found");
    expect(rows).toEqual([{ found: 'refresh_tokens_client_idx' }]);
  });

  it('names a foreign key whose columns lead no index, and not one whose columns do in another order', async () => {
    await t.db.transaction(async (tx) => {
      await tx.query('CREATE TABLE fk_parent (tenant_id uuid NOT NULL, id uuid NOT NULL, PRIMARY KEY (tenant_id, id))');
      await tx.query(`CREATE TABLE fk_bare (tenant_id uuid NOT NULL, id uuid NOT NULL, parent_id uuid NOT NULL, PRIMARY KEY (tenant_id, id),
                        CONSTRAINT fk_bare_parent_fkey FOREIGN KEY (tenant_id, parent_id) REFERENCES fk_parent (tenant_id, id))`);
      await tx.query(`CREATE TABLE fk_served (tenant_id uuid NOT NULL, id uuid NOT NULL, parent_id uuid NOT NULL, PRIMARY KEY (tenant_id, id),
                        CONSTRAINT fk_served_parent_fkey FOREIGN KEY (tenant_id, parent_id) REFERENCES fk_parent (tenant_id, id))`);
      await tx.query('CREATE INDEX fk_served_parent_idx ON fk_served (parent_id, tenant_id, id)');
      // A partial index does not serve every delete, and an index's trailing column is not a leading one.
      await tx.query(`CREATE TABLE fk_partial (tenant_id uuid NOT NULL, id uuid NOT NULL, parent_id uuid, PRIMARY KEY (tenant_id, id),
                        CONSTRAINT fk_partial_parent_fkey FOREIGN KEY (tenant_id, parent_id) REFERENCES fk_parent (tenant_id, id))`);
      await tx.query('CREATE INDEX fk_partial_parent_idx ON fk_partial (tenant_id, parent_id) WHERE parent_id IS NOT NULL');
      await tx.query('CREATE INDEX fk_partial_trailing_idx ON fk_partial (tenant_id, id, parent_id)');
      expect((await unindexedForeignKeys(tx)).filter((line) => line.startsWith('fk_'))).toEqual([
        'fk_bare.fk_bare_parent_fkey (tenant_id, parent_id)',
        'fk_partial.fk_partial_parent_fkey (tenant_id, parent_id)',
      ]);
      throw new Rollback();
    }).catch((error: unknown) => {
      if (!(error instanceof Rollback)) throw error;
    });
  });
});

class Rollback extends Error {}
