// Reads over a tenant's locks that its statistics do not know yet (docs/scaling.md, *Plans that hold without fresh
// statistics*): a tenant's locks, lock group and lockdown written after the last ANALYZE, as for a new building or a
// bulk import in the minute before autovacuum analyzes. The planner then expects one lock, and a join of the group's or
// the lockdown's locks to secured_objects scanned the tenant's locks once per lock: each read here must look at each
// lock a bounded number of times, counted from its plan as run (EXPLAIN ANALYZE), not timed.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database, Queryable } from '../../src/db/database.js';
import { lockGroupTimeZones, locksLackingChannels } from '../../src/db/repositories/access-permission.repo.js';
import { findLockdown } from '../../src/db/repositories/lockdown.repo.js';
import { citusTestUrl } from '../helpers/citus.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

/** The tenant's locks: enough that one scan per lock (N²/2 rows) stands far above a few scans (a few N). */
const LOCKS = 2000;

interface Statement {
  text: string;
  params: readonly unknown[];
}

/** The statements `work` sends through `db`. */
async function statementsOf(db: Database, work: (recording: Queryable) => Promise<unknown>): Promise<Statement[]> {
  const sent: Statement[] = [];
  await work({
    query: (text, params) => {
      sent.push({ text, params: params ?? [] });
      return db.query(text, params);
    },
  });
  return sent;
}

type PlanNode = Record<string, unknown> & { Plans?: PlanNode[] };

/** Rows of secured_objects the plan looked at as it ran: returned or removed by a filter, over every loop. */
function securedObjectRowsVisited(node: PlanNode): number {
  const loops = Number(node['Actual Loops'] ?? 1);
  const own =
    node['Relation Name'] === 'secured_objects'
      ? (Number(node['Actual Rows'] ?? 0) + Number(node['Rows Removed by Filter'] ?? 0) + Number(node['Rows Removed by Index Recheck'] ?? 0)) * loops
      : 0;
  const joinFiltered = Number(node['Rows Removed by Join Filter'] ?? 0) * loops;
  return own + joinFiltered + (node.Plans ?? []).reduce((sum, child) => sum + securedObjectRowsVisited(child), 0);
}

/** Every node of a plan, depth first. */
function nodesOf(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(nodesOf)];
}

/**
 * The rows of secured_objects the statement looked at as it ran, and how it read the table: each read should be a
 * look-up of one lock by the primary key (`id = …`, not `id = ANY (…)`, which compares every lock it scans with every
 * id of the array).
 */
async function rowsVisited(db: Database, statement: Statement): Promise<number> {
  const { rows } = await db.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${statement.text}`, statement.params);
  const plan = rows[0]!['QUERY PLAN'][0].Plan;
  for (const node of nodesOf(plan).filter((each) => each['Relation Name'] === 'secured_objects')) {
    expect({ index: node['Index Name'], condition: node['Index Cond'] }).toEqual({
      index: 'secured_objects_pkey',
      condition: expect.stringMatching(/\(id = [a-z]+\.secured_object_id\)/),
    });
  }
  return securedObjectRowsVisited(plan);
}

// On Citus the plan a worker runs is not in the coordinator's EXPLAIN in this form; the statements are the same.
describe.skipIf(citusTestUrl() !== undefined)('reads of a tenant the statistics do not know yet', () => {
  let database: TestDatabase;
  const tenantId = randomUUID();
  const lockGroupId = randomUUID();
  const lockdownId = randomUUID();

  beforeAll(async () => {
    database = await createTestDatabase();
    const { db } = database;
    const other = randomUUID();
    await db.query('INSERT INTO tenants (id, name, created_at) VALUES ($1, $2, 0), ($3, $4, 0)', [other, `other-${other}`, tenantId, `new-${tenantId}`]);
    const locks = (tenant: string, prefix: string, count: number) =>
      db.query(
        `INSERT INTO secured_objects (tenant_id, id, channels, local_name, uuid, created_at)
         SELECT $1, $2 || n, '{btlespp}', 'L' || n, '7d8a0c1e-4b7f-4d5e-9a41-3c2b1f0e9d8c', n FROM generate_series(1, $3::int) AS n`,
        [tenant, prefix, count],
      );
    await locks(other, 'o', 500);
    await db.query('ANALYZE');
    // Nor may autovacuum analyse them behind the test's back (PostgreSQL; PGlite runs none).
    for (const table of ['secured_objects', 'lock_group_objects', 'lockdown_locks', 'lock_telemetry']) {
      await db.query(`ALTER TABLE ${table} SET (autovacuum_enabled = false)`);
    }
    // Everything of the new tenant comes after the statistics.
    await locks(tenantId, 'l', LOCKS);
    await db.query("INSERT INTO lock_groups (tenant_id, id, name, created_at) VALUES ($1, $2, 'all', 0)", [tenantId, lockGroupId]);
    await db.query(`INSERT INTO lock_group_objects (tenant_id, lock_group_id, secured_object_id) SELECT $1, $2, 'l' || n FROM generate_series(1, $3::int) AS n`, [
      tenantId,
      lockGroupId,
      LOCKS,
    ]);
    await db.query(
      `INSERT INTO lockdowns (tenant_id, id, lock_group_id, mode, reason, created_at, actor, change_seq, lock_count)
       VALUES ($1, $2, NULL, 'lockdown', 'drill', 0, 'test', 1, $3)`,
      [tenantId, lockdownId, LOCKS],
    );
    // One lock deleted since: left out of the counts.
    await db.query(
      `INSERT INTO lockdown_locks (tenant_id, lockdown_id, secured_object_id, mode, change_seq)
       SELECT $1, $2, 'l' || n, 'lockdown', 1 FROM generate_series(1, $3::int + 1) AS n`,
      [tenantId, lockdownId, LOCKS],
    );
    // 100 locks applied the lockdown, one more was heard from before it, the rest never.
    await db.query(
      `INSERT INTO lock_telemetry (tenant_id, secured_object_id, last_seen_at, applied_through)
       SELECT $1, 'l' || n, 0, CASE WHEN n <= 100 THEN 1 ELSE 0 END FROM generate_series(1, 101) AS n`,
      [tenantId],
    );
  });

  it('starts from statistics that expect a handful of the tenant\'s locks, where it has thousands', async () => {
    const { rows } = await database.db.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
      'EXPLAIN (FORMAT JSON) SELECT id FROM secured_objects WHERE tenant_id = $1',
      [tenantId],
    );
    expect(Number(rows[0]!['QUERY PLAN'][0].Plan['Plan Rows'])).toBeLessThan(LOCKS / 10);
  });
  afterAll(async () => {
    await database?.db.close();
  });

  it("a lockdown's reach reads each of its locks a bounded number of times, and counts only the locks that exist", async () => {
    const [statement] = await statementsOf(database.db, async (db) => {
      expect(await findLockdown(db, tenantId, lockdownId)).toMatchObject({ lockCount: LOCKS, locksReached: 100, locksNotReached: LOCKS - 100 });
    });
    expect(await rowsVisited(database.db, statement!)).toBeLessThanOrEqual(3 * LOCKS);
  });

  it("a lock group's time zones and its locks lacking a channel read each lock a bounded number of times", async () => {
    const statements = await statementsOf(database.db, async (db) => {
      expect(await lockGroupTimeZones(db, tenantId, [lockGroupId])).toEqual(new Map([[lockGroupId, ['UTC']]]));
      expect(await locksLackingChannels(db, tenantId, [{ lockGroupId, channels: ['btlespp', 'nfc'] }])).toEqual([
        Array.from({ length: LOCKS }, (_, i) => `l${i + 1}`)
          .sort()
          .slice(0, 20),
      ]);
    });
    expect(statements).toHaveLength(2);
    for (const statement of statements) expect(await rowsVisited(database.db, statement)).toBeLessThanOrEqual(3 * LOCKS);
  });
});
