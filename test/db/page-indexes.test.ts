// The page indexes (tenant_id, created_at, id) serve pages and nothing else (migration 038; docs/scaling.md, *Plans
// that hold without fresh statistics*). For a tenant the statistics do not know, the planner expects one row, and a
// look-up by key then cost the same through the page index as through the primary key: PostgreSQL kept the newer
// index, the page index for nine of these tables, and scanned the tenant's entries for the one row. Each plan here is
// read, not timed: a look-up by key does not name the page index (it names the primary key where no other index led
// by tenant_id ties with it), and each list's page names its page index and sorts nothing.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Queryable } from '../../src/db/database.js';
import { findConsoleClientId, listClients } from '../../src/db/repositories/client.repo.js';
import { findGroupsNamed, listGroups, LOCK_GROUPS, RESIDENTS } from '../../src/db/repositories/group.repo.js';
import { listAccessPermissions } from '../../src/db/repositories/access-permission.repo.js';
import { listClaims } from '../../src/db/repositories/claim.repo.js';
import { listJobs } from '../../src/db/repositories/job.repo.js';
import { listLockdowns } from '../../src/db/repositories/lockdown.repo.js';
import { listMobileDevices } from '../../src/db/repositories/mobile-device.repo.js';
import { listSecuredObjects } from '../../src/db/repositories/secured-object.repo.js';
import { listTickets } from '../../src/db/repositories/ticket.repo.js';
import { listWebhooks } from '../../src/db/repositories/webhook.repo.js';
import type { KeysetPosition } from '../../src/shared/keyset.js';
import { citusTestUrl } from '../helpers/citus.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

type PlanNode = Record<string, unknown> & { Plans?: PlanNode[] };

/** Every node of a plan, depth first. */
function nodesOf(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(nodesOf)];
}

/** Each table with a page index, its key column, whether that key is text (else uuid) and its page index. */
const TABLES = [
  { table: 'secured_objects', key: 'id', text: true, pageIndex: 'secured_objects_page_idx' },
  { table: 'mobile_devices', key: 'id', text: true, pageIndex: 'mobile_devices_page_idx' },
  { table: 'tickets', key: 'id', text: false, pageIndex: 'tickets_page_idx' },
  { table: 'residents', key: 'id', text: false, pageIndex: 'residents_page_idx' },
  { table: 'lock_groups', key: 'id', text: false, pageIndex: 'lock_groups_page_idx' },
  { table: 'access_permissions', key: 'id', text: false, pageIndex: 'access_permissions_page_idx' },
  { table: 'oauth_clients', key: 'client_id', text: true, pageIndex: 'oauth_clients_tenant_idx' },
  { table: 'webhooks', key: 'id', text: false, pageIndex: 'webhooks_tenant_page_idx' },
  { table: 'claims', key: 'id', text: false, pageIndex: 'claims_page_idx' },
  { table: 'jobs', key: 'id', text: false, pageIndex: 'jobs_tenant_page_idx' },
  { table: 'lockdowns', key: 'id', text: false, pageIndex: 'lockdowns_page_idx' },
] as const;

// On Citus the plan a worker runs is not in the coordinator's EXPLAIN in this form; the shards' indexes come from the
// same migration, and the workers plan with the same PostgreSQL.
describe.skipIf(citusTestUrl() !== undefined)('the page indexes serve pages only', () => {
  let database: TestDatabase;
  const tenantId = randomUUID();

  beforeAll(async () => {
    database = await createTestDatabase();
    // Statistics taken while the tenant had no rows: to the planner it has one row in each table, as a new tenant
    // has until the tables are analysed again.
    await database.db.query('ANALYZE');
  });
  afterAll(async () => {
    await database?.db.close();
  });

  /**
   * The statement's plan among index scans: the tables here are nearly empty, where a sequential scan is cheapest;
   * with a tenant's rows among many others' it is not, and the choice is between the indexes, which this plan shows.
   */
  async function planOf(text: string, params: readonly unknown[]): Promise<PlanNode[]> {
    return database.db.transaction(async (tx) => {
      await tx.query('SET LOCAL enable_seqscan = off');
      const { rows } = await tx.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (FORMAT JSON) ${text}`, params);
      return nodesOf(rows[0]!['QUERY PLAN'][0].Plan);
    });
  }

  // access_permissions and claims have other indexes led by tenant_id, newer than the primary key, which tie with it
  // the same way (docs/scaling.md): there a look-up by key is kept off the page index, no more.
  it.each(TABLES)('a look-up of one row of $table by its key never takes its page index', async ({ table, key, text, pageIndex }) => {
    const nodes = await planOf(`SELECT * FROM ${table} WHERE tenant_id = $1 AND ${key} = $2`, [tenantId, text ? 'some-id' : randomUUID()]);
    const indexes = nodes.filter((node) => node['Relation Name'] === table).map((node) => node['Index Name']);
    expect(indexes).toHaveLength(1);
    expect(indexes).not.toContain(pageIndex);
    if (table !== 'access_permissions' && table !== 'claims') expect(indexes).toEqual([`${table}_pkey`]);
  });

  it("each list's first and later pages read its page index and sort nothing", async () => {
    const statements: { text: string; params: readonly unknown[] }[] = [];
    const recording: Queryable = {
      query: (text, params) => {
        statements.push({ text, params: params ?? [] });
        return database.db.query(text, params);
      },
    };
    const expected: string[] = [];
    const page = async (pageIndex: string, list: (after: KeysetPosition | null) => Promise<unknown>, textId: boolean) => {
      await list(null);
      await list({ createdAt: 5, id: textId ? 'some-id' : randomUUID() });
      expected.push(pageIndex, pageIndex);
    };
    await page('secured_objects_page_idx', (after) => listSecuredObjects(recording, tenantId, after, 50), true);
    await page('mobile_devices_page_idx', (after) => listMobileDevices(recording, tenantId, after, 50), true);
    await page('tickets_page_idx', (after) => listTickets(recording, tenantId, {}, Date.now(), after, 50), false);
    await page('residents_page_idx', (after) => listGroups(recording, RESIDENTS, tenantId, after, 50), false);
    await page('lock_groups_page_idx', (after) => listGroups(recording, LOCK_GROUPS, tenantId, after, 50), false);
    await page('access_permissions_page_idx', (after) => listAccessPermissions(recording, tenantId, {}, after, 50), false);
    await page('oauth_clients_tenant_idx', (after) => listClients(recording, tenantId, after, 50), true);
    await page('webhooks_tenant_page_idx', (after) => listWebhooks(recording, tenantId, after, 50), false);
    await page('claims_page_idx', (after) => listClaims(recording, tenantId, {}, after, 50), false);
    await page('jobs_tenant_page_idx', (after) => listJobs(recording, tenantId, after, 50), false);
    await page('lockdowns_page_idx', (after) => listLockdowns(recording, tenantId, after, 50), false);
    // Two look-ups in page order: a group by its name (a bulk job), the console's client by its redirect path.
    await findGroupsNamed(recording, LOCK_GROUPS, tenantId, 'Building A', 2);
    await findConsoleClientId(recording, tenantId, '/console/callback');
    expected.push('lock_groups_page_idx', 'oauth_clients_tenant_idx');

    expect(statements).toHaveLength(expected.length);
    for (const [i, statement] of statements.entries()) {
      const nodes = await planOf(statement.text, statement.params);
      expect({ statement: i, indexes: nodes.map((node) => node['Index Name']).filter(Boolean), sorts: nodes.filter((node) => node['Node Type'] === 'Sort').length }).toEqual({
        statement: i,
        indexes: expect.arrayContaining([expected[i]]),
        sorts: 0,
      });
    }
  });
});
