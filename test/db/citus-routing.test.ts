// On Citus (CITUS_URL), a request of one tenant touches one shard group (docs/scaling.md): every statement the hot paths
// send is recorded as the service sends it, then read back with EXPLAIN; a plan that spreads over several shards fails.
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database, Queryable, QueryResult, TransactionScope } from '../../src/db/database.js';
import { expandAccessPermissions, issueForNewMembers, revokeForLeavingMember } from '../../src/db/repositories/access-permission.repo.js';
import { appendAuditEvents } from '../../src/db/repositories/audit.repo.js';
import { insertAccessLogEntries } from '../../src/db/repositories/access-log.repo.js';
import { recordDownload } from '../../src/db/repositories/download.repo.js';
import { JWT_BEARER_ASSERTION_TYPE } from '../../src/services/oauth/client-assertion.service.js';
import { removeInTransaction } from '../../src/services/removal.js';
import { SECURED_OBJECTS } from '../../src/services/secured-object.service.js';
import { recordLockContact } from '../../src/db/repositories/lock-telemetry.repo.js';
import { nextChangeSeq } from '../../src/db/repositories/change-log.repo.js';
import { addMembers, LOCK_GROUPS, lockGroup as lockGroupRow, removeMember, RESIDENTS } from '../../src/db/repositories/group.repo.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { accessTenant, grant, lockGroup, permissionBody, resident, userToken } from '../helpers/access.js';
import { citusTestUrl } from '../helpers/citus.js';
import { download, lockToken, phoneToken, syncRequest } from '../helpers/device.js';
import { clientAssertion, newKeyPair, putDeviceKey } from '../helpers/holder-keys.js';
import { bearer, clientToken, createClient, createTenant, form, tokenRequest, type TenantFixture } from '../helpers/oauth.js';
import { call, device, issueTicket, lock, ticketBody } from '../helpers/operator.js';

interface Recorded {
  text: string;
  params: readonly unknown[];
}

/**
 * Records every statement the app sends through `db` (outside and inside transactions) on behalf of the work run by
 * `record`: followed through its asynchronous calls, so the background work running meanwhile (webhook delivery, jobs)
 * is not counted as the request's.
 */
function recordStatements(db: Database): { record(work: () => Promise<void>): Promise<Recorded[]> } {
  const context = new AsyncLocalStorage<Recorded[]>();
  const note = (text: string, params: readonly unknown[] | undefined) => {
    context.getStore()?.push({ text, params: params ?? [] });
  };
  const query = db.query.bind(db);
  const transaction = db.transaction.bind(db);
  db.query = <Row>(text: string, params?: readonly unknown[]): Promise<QueryResult<Row>> => {
    note(text, params);
    return query<Row>(text, params);
  };
  db.transaction = <T>(work: (tx: TransactionScope) => Promise<T>): Promise<T> =>
    transaction((tx) =>
      work({
        ...tx,
        query<Row>(text: string, params?: readonly unknown[]) {
          note(text, params);
          return tx.query<Row>(text, params);
        },
      }),
    );
  return {
    async record(work) {
      const statements: Recorded[] = [];
      await context.run(statements, work);
      return statements;
    },
  };
}

/** Every "Task Count" in a Citus plan (the distributed query and its subplans); none for a statement Citus does not plan. */
function taskCounts(plan: unknown): number[] {
  if (Array.isArray(plan)) return plan.flatMap(taskCounts);
  if (plan && typeof plan === 'object') {
    return Object.entries(plan).flatMap(([key, value]) => (key === 'Task Count' && typeof value === 'number' ? [value] : taskCounts(value)));
  }
  return [];
}

/** The statements worth planning: reads and writes of tables (not BEGIN, SAVEPOINT, SET, LISTEN). */
const PLANNABLE = /^\s*(WITH|SELECT|INSERT|UPDATE|DELETE)\b/i;

/** One line per statement that Citus plans on more than one shard, or cannot plan at all. */
async function multiShardStatements(db: Database, statements: Recorded[]): Promise<string[]> {
  const seen = new Set<string>();
  const problems: string[] = [];
  for (const statement of statements) {
    if (!PLANNABLE.test(statement.text) || seen.has(statement.text)) continue;
    seen.add(statement.text);
    const short = statement.text.replace(/\s+/g, ' ').trim().slice(0, 160);
    try {
      const { rows } = await db.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (FORMAT JSON) ${statement.text}`, statement.params);
      const counts = taskCounts(rows[0]!['QUERY PLAN']);
      if (counts.some((count) => count > 1)) problems.push(`tasks ${counts.join('+')}: ${short}`);
    } catch (error) {
      problems.push(`not planned (${(error as Error).message}): ${short}`);
    }
  }
  return problems;
}

const citus = citusTestUrl();

describe.skipIf(!citus)('on Citus, each hot path routes to one node (runs only with CITUS_URL: plans need a Citus coordinator)', () => {
  let t: TestApp;
  let recorder: ReturnType<typeof recordStatements>;
  let tenant: TenantFixture;
  let operator: string;
  let ticketId: string | undefined;

  /**
   * Runs `work` twice with recording on and answers the statements it sent: the first run takes the cold path (what a
   * cache then holds is read once), the second the warm one. At least one, or the path was not taken.
   */
  async function sent(work: () => Promise<void>): Promise<Recorded[]> {
    const statements = await recorder.record(async () => {
      await work();
      await work();
    });
    expect(statements.length).toBeGreaterThan(0);
    return statements;
  }

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4' });
    recorder = recordStatements(t.database.db);
    // A second tenant with rows of its own, so that a statement missing its tenant would find more than one shard's rows.
    const bystander = await createTenant(t.app, 'bystander');
    const bystanderToken = await clientToken(t.app, bystander);
    await lock(t, bystanderToken, 'door');
    await device(t, bystanderToken, 'phone');
    tenant = await createTenant(t.app, 'routed');
    operator = await clientToken(t.app, tenant);
    for (const id of ['door', 'gate']) await lock(t, operator, id);
    for (const id of ['phone', 'tablet']) await device(t, operator, id);
  });

  /** The phone's ticket for the door, made once by the first test that needs one. */
  async function doorTicket(): Promise<string> {
    if (!ticketId) {
      const created = await issueTicket(t, operator, ticketBody(t, 'door', 'phone'));
      expect(created.statusCode, created.body).toBe(201);
      ticketId = created.json().id as string;
    }
    return ticketId;
  }
  afterAll(async () => {
    await t?.close();
  });

  async function expectSingleShard(statements: Recorded[]) {
    expect(await multiShardStatements(t.database.db, statements)).toEqual([]);
  }

  it('token: the client credentials grant', async () => {
    const client = await createClient(t.app, tenant, ['tokens:read']);
    await expectSingleShard(
      await sent(async () => {
        const response = await tokenRequest(t.app, client, { grant_type: 'client_credentials' });
        expect(response.statusCode, response.body).toBe(200);
      }),
    );
  });

  it('token: the client credentials grant by private_key_jwt (the client and its device\'s key, the jti spent)', async () => {
    // A phone of its own: a key on the other tests' phone would bind its credentials.
    await device(t, operator, 'keyed-phone');
    const key = newKeyPair();
    await putDeviceKey(t, tenant.tenantId, 'keyed-phone', key);
    const phoneClient = await createClient(t.app, tenant, ['tokens:download'], { mobileDeviceId: 'keyed-phone' });
    await expectSingleShard(
      await sent(async () => {
        const response = await t.app.inject({
          method: 'POST',
          url: '/oauth/token',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          payload: form({
            grant_type: 'client_credentials',
            client_assertion_type: JWT_BEARER_ASSERTION_TYPE,
            client_assertion: clientAssertion(key, phoneClient.clientId, `${t.config.PUBLIC_URL}/oauth/token`),
          }),
        });
        expect(response.statusCode, response.body).toBe(200);
      }),
    );
  });

  it('token: the password grant', async () => {
    const access = await accessTenant(t, 'password');
    await expectSingleShard(
      await sent(async () => {
        await userToken(t, access);
      }),
    );
  });

  it('ticket create: one call of issue_tickets, run on the tenant\'s node', async () => {
    let n = 0;
    const statements = await sent(async () => {
      n += 1;
      const response = await issueTicket(t, operator, ticketBody(t, n % 2 ? 'gate' : 'door', 'tablet', { endDate: t.app.services.clock() + 1000 * n }));
      expect(response.statusCode, response.body).toBe(201);
    });
    await expectSingleShard(statements);
    // Its statements run inside the function, where no plan of this test sees them: the call itself must be sent to
    // one node (function call delegation, db distribute), not run on the coordinator (no task at all).
    const calls = statements.filter((statement) => /\bissue_tickets\(/.test(statement.text));
    expect(calls).toHaveLength(2);
    const { rows } = await t.database.db.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (FORMAT JSON) ${calls[0]!.text}`, calls[0]!.params);
    expect(taskCounts(rows[0]!['QUERY PLAN'])).toEqual([1]);
  });

  // migration 035: a statement Citus cannot run on one shard alone (an INSERT in a CTE, an INSERT … SELECT over a
  // distributed table with a sequence to fill) is run in steps whose results are copied to the other nodes and committed
  // there in two phases; the call stays one task and still takes several times as long. On the tenant's node, with
  // Citus's log of what it sends elsewhere switched on, a batch with refused tickets and created ones sends nothing.
  it("ticket create: every statement of issue_tickets runs on the tenant's node alone", async () => {
    const { db, url } = t.database;
    const { rows: placement } = await db.query<{ nodename: string; nodeport: number }>(
      `SELECT nodename, nodeport FROM citus_shards
        WHERE table_name = 'tickets'::regclass AND shardid = get_shard_id_for_distribution_column('tickets', $1::uuid)`,
      [tenant.tenantId],
    );
    expect(placement).toHaveLength(1);
    const node = new URL(url!);
    node.hostname = placement[0]!.nodename;
    node.port = String(placement[0]!.nodeport);
    const worker = new pg.Client({ connectionString: node.toString() });
    const notices: string[] = [];
    worker.on('notice', (notice) => notices.push(notice.message ?? ''));
    await worker.connect();
    try {
      await worker.query("SET citus.log_remote_commands = on; SET citus.log_local_commands = on; SET client_min_messages = log");
      const now = t.app.services.clock();
      const ticket = (ordinal: number, lockId: string, deviceId: string, channels: string[]) => ({
        ordinal, id: randomUUID(), secured_object_id: lockId, mobile_device_id: deviceId, begin_date: now, end_date: now + 60_000,
        created_at: now, commands: ['open'], channels, schedule: null, override: false, actor: 'test', request_id: null,
      });
      const batch = [ticket(0, 'door', 'phone', ['btlespp']), ticket(1, 'missing', 'phone', ['btlespp']), ticket(2, 'gate', 'tablet', ['btlespp'])];
      const { rows } = await worker.query<{ ordinal: number; created: boolean; device_exists: boolean }>(
        'SELECT ordinal, created, device_exists FROM issue_tickets($1::uuid, $2::jsonb) ORDER BY ordinal',
        [tenant.tenantId, JSON.stringify(batch)],
      );
      expect(rows.map((row) => [row.ordinal, row.created])).toEqual([[0, true], [1, false], [2, true]]);
      // Each statement was run on the node's own shards ("executing the command locally"), none sent ("issuing").
      expect(notices.filter((notice) => /executing the command locally/.test(notice)).length).toBeGreaterThanOrEqual(5);
      expect(notices.filter((notice) => /^issuing\b/.test(notice))).toEqual([]);
    } finally {
      await worker.end();
    }
  });

  it('ticket read and list', async () => {
    const id = await doorTicket();
    await expectSingleShard(
      await sent(async () => {
        const read = await call(t, operator, { method: 'GET', url: `/operatorapi/tickets/${id}` });
        expect(read.statusCode, read.body).toBe(200);
        const list = await call(t, operator, { method: 'GET', url: '/operatorapi/tickets' });
        expect(list.statusCode, list.body).toBe(200);
      }),
    );
  });

  it('phone download', async () => {
    await doorTicket();
    const token = await phoneToken(t, tenant, 'phone');
    await expectSingleShard(
      await sent(async () => {
        expect((await download(t, token, 'phone')).length).toBeGreaterThan(0);
      }),
    );
  });

  it('lock sync', async () => {
    const token = await lockToken(t, tenant, 'door');
    await expectSingleShard(
      await sent(async () => {
        const response = await syncRequest(t, token, 'door');
        expect(response.statusCode, response.body).toBe(200);
      }),
    );
  });

  it('access-log upload', async () => {
    const tokenId = await doorTicket();
    const token = await lockToken(t, tenant, 'gate');
    let entryNo = 0;
    await expectSingleShard(
      await sent(async () => {
        entryNo += 1;
        const now = t.app.services.clock();
        const response = await t.app.inject({
          method: 'POST',
          url: '/deviceapi/securedobjects/gate/accesslog',
          headers: bearer(token),
          payload: {
            appliedSerial: 0,
            lockTime: now,
            entries: [{ entryNo, lockTime: now - 1000, tokenId, command: 'open', channel: 'btlespp', result: 'granted' }],
          },
        });
        expect(response.statusCode, response.body).toBe(200);
      }),
    );
  });

  it('grant: an access permission expanded into tickets', async () => {
    const access = await accessTenant(t, 'granting');
    for (const id of ['door', 'gate']) await lock(t, access.operator, id);
    for (const id of ['phone', 'tablet']) await device(t, access.operator, id);
    const group = await lockGroup(t, access.token, 'both doors', ['door', 'gate']);
    let n = 0;
    await expectSingleShard(
      await sent(async () => {
        n += 1;
        const member = await resident(t, access.token, `resident ${n}`, ['phone', 'tablet']);
        const response = await grant(t, access.token, permissionBody(t, member.id, group.id));
        expect(response.statusCode, response.body).toBe(201);
      }),
    );
  });

  // migration 036: the writes of a grant and of a membership change, in one transaction on the coordinator as the
  // services run them, each planned for the tenant's node. Before, their statements wrote in CTEs: Citus copied each
  // step's result to every worker, opened the transaction on all of them and committed it in two phases.
  it("grant, joins and a leave: the transaction runs on the tenant's node alone and commits there in one phase", async () => {
    const access = await accessTenant(t, 'one-node');
    const tenantId = access.tenant.tenantId;
    for (const id of ['door', 'gate', 'lift']) await lock(t, access.operator, id);
    for (const id of ['phone', 'tablet', 'watch']) await device(t, access.operator, id);
    const group = await lockGroup(t, access.token, 'doors', ['door', 'gate']);
    const household = await resident(t, access.token, 'household', ['phone']);
    const granted = await grant(t, access.token, permissionBody(t, household.id, group.id));
    expect(granted.statusCode, granted.body).toBe(201);
    const permissionId = granted.json().id as string;
    // Tickets the grant above gave, so expanding the permission again has pairs of its own to write.
    await t.database.db.query('DELETE FROM tickets WHERE tenant_id = $1 AND access_permission_id = $2', [tenantId, permissionId]);

    const coordinator = new pg.Client({ connectionString: t.database.url! });
    const notices: string[] = [];
    coordinator.on('notice', (notice) => notices.push(notice.message ?? ''));
    await coordinator.connect();
    const db: Queryable = { query: (text, params) => coordinator.query(text, params as unknown[]) as never };
    const stamp = { actor: 'test', requestId: null };
    const member = (groupId: string, memberId: string) => ({ ...stamp, target: `membership:${groupId}:${memberId}`, data: { memberId } });
    try {
      await coordinator.query('BEGIN');
      await coordinator.query('SET LOCAL citus.log_remote_commands = on; SET LOCAL client_min_messages = log');
      const now = t.app.services.clock();
      const seq = await nextChangeSeq(db, tenantId);
      const expanded = await expandAccessPermissions(db, tenantId, [permissionId], now, seq, stamp);
      // As the services add members: the group locked, the members added, their tickets issued.
      expect(await lockGroupRow(db, RESIDENTS, tenantId, household.id, 'UPDATE')).toBe(true);
      expect(await addMembers(db, RESIDENTS, tenantId, household.id, ['tablet', 'watch'])).toEqual(['tablet', 'watch']);
      const byDevice = await issueForNewMembers(db, RESIDENTS, tenantId, household.id, ['tablet', 'watch'], now, seq, member(household.id, 'tablet'));
      expect(await lockGroupRow(db, LOCK_GROUPS, tenantId, group.id, 'UPDATE')).toBe(true);
      expect(await addMembers(db, LOCK_GROUPS, tenantId, group.id, ['lift'])).toEqual(['lift']);
      const byLock = await issueForNewMembers(db, LOCK_GROUPS, tenantId, group.id, ['lift'], now, seq, member(group.id, 'lift'));
      // And as they remove one: the watch leaves the household, its tickets revoked.
      expect(await removeMember(db, RESIDENTS, tenantId, household.id, 'watch')).toBe(true);
      const revoked = await revokeForLeavingMember(db, RESIDENTS, tenantId, household.id, 'watch', now, seq);
      await appendAuditEvents(db, [{ tenantId, time: now, actor: 'test', action: 'resident.member_added', target: 'membership', requestId: null }]);
      await coordinator.query('COMMIT');
      // phone × (door, gate); tablet and watch × (door, gate); every device of the household (phone, tablet, watch) ×
      // lift, the lock group's new lock; the watch's three.
      expect([[...expanded.entries()], byDevice, byLock, revoked.length]).toEqual([[[permissionId, 2]], 4, 3, 3]);
    } finally {
      await coordinator.end();
    }
    const begun = notices.filter((notice) => /^issuing BEGIN\b/.test(notice));
    expect(begun, notices.join('\n')).toHaveLength(1);
    expect(notices.filter((notice) => /PREPARE TRANSACTION|^issuing COPY\b/.test(notice)), notices.join('\n')).toEqual([]);
    const { rows } = await t.database.db.query<{ action: string; tickets: number }>(
      `SELECT action, jsonb_array_length(data -> 'ticketIds')::int AS tickets FROM audit_events
        WHERE tenant_id = $1 AND actor = 'test' ORDER BY seq`,
      [tenantId],
    );
    expect(rows.map((row) => [row.action, row.tickets])).toEqual([['ticket.created', 2], ['ticket.created', 4], ['ticket.created', 3], ['resident.member_added', null]]);
  });

  // The download's writes, as recordDownload runs them in the download's transaction: the devices and tickets locked,
  // the tickets written, then their `ticket.downloaded` events (a statement of their own; with the events in the
  // update's CTEs, Citus opened the transaction on every worker and committed it in two phases).
  it("phone download: the transaction runs on the tenant's node alone and commits there in one phase", async () => {
    const ticket = await doorTicket();
    const coordinator = new pg.Client({ connectionString: t.database.url! });
    const notices: string[] = [];
    coordinator.on('notice', (notice) => notices.push(notice.message ?? ''));
    await coordinator.connect();
    const db: Queryable = { query: (text, params) => coordinator.query(text, params as unknown[]) as never };
    try {
      await coordinator.query('BEGIN');
      await coordinator.query('SET LOCAL citus.log_remote_commands = on; SET LOCAL client_min_messages = log');
      const stamps = await recordDownload(db, tenant.tenantId, [ticket], [null], t.app.services.clock(), { actor: 'test', requestId: null }, [
        { mobileDeviceId: 'phone', keyThumbprint: null, boundUntil: 0 },
      ]);
      await coordinator.query('COMMIT');
      expect([...stamps.keys()]).toEqual([ticket]);
    } finally {
      await coordinator.end();
    }
    expect(notices.filter((notice) => /^issuing BEGIN\b/.test(notice)), notices.join('\n')).toHaveLength(1);
    expect(notices.filter((notice) => /PREPARE TRANSACTION|^issuing COPY\b/.test(notice)), notices.join('\n')).toEqual([]);
  });

  // migration 037: a lock's contact and its access-log upload. Before, each was one statement with writes in its CTEs
  // (the telemetry row, the stamped revocations, the entries, the events), which Citus ran through every worker.
  describe("a lock's contact, its upload and its removal run on the tenant's node alone and commit there in one phase", () => {
    /** A downloaded ticket of the phone for `lockId`, then revoked: a revocation on its way to the lock. */
    async function pendingRevocation(lockId: string): Promise<string> {
      await lock(t, operator, lockId);
      const created = await issueTicket(t, operator, ticketBody(t, lockId, 'phone'));
      expect(created.statusCode, created.body).toBe(201);
      const id = created.json().id as string;
      expect((await download(t, await phoneToken(t, tenant, 'phone'), 'phone')).length).toBeGreaterThan(0);
      const revoked = await call(t, operator, { method: 'DELETE', url: `/operatorapi/tickets/${id}` });
      expect(revoked.statusCode, revoked.body).toBe(200);
      return id;
    }

    /**
     * Runs `work` on a connection of its own to the coordinator with Citus's log of what it sends; answers the log, each
     * command with the node it went to. `work` runs seven times, logged the last time only: PL/pgSQL plans a function's
     * statements for the first five calls on a connection, then may keep a generic plan, which Citus routes apart.
     */
    async function sentByCoordinator(work: (db: Queryable, coordinator: pg.Client, call: number) => Promise<void>): Promise<string[]> {
      const coordinator = new pg.Client({ connectionString: t.database.url! });
      const notices: string[] = [];
      coordinator.on('notice', (notice) => notices.push(`${notice.message ?? ''} [${notice.detail ?? ''}]`));
      await coordinator.connect();
      try {
        const db: Queryable = { query: (text, params) => coordinator.query(text, params as unknown[]) as never };
        for (let call = 0; call < 6; call++) await work(db, coordinator, call);
        await coordinator.query("SET citus.log_remote_commands = on; SET client_min_messages = log");
        await work(db, coordinator, 6);
      } finally {
        await coordinator.end();
      }
      return notices;
    }

    /** Everything sent went to one node, in at most one transaction there, committed in one phase. */
    function expectOneNodeOnePhase(notices: string[]) {
      const issued = notices.filter((notice) => /^issuing\b/.test(notice));
      expect(issued.length, notices.join('\n')).toBeGreaterThan(0);
      expect(new Set(issued.map((notice) => /on server (\S+)/.exec(notice)?.[1])).size, notices.join('\n')).toBe(1);
      expect(issued.filter((notice) => /^issuing BEGIN\b/.test(notice)).length, notices.join('\n')).toBeLessThanOrEqual(1);
      expect(issued.filter((notice) => /PREPARE TRANSACTION|^issuing COPY\b/.test(notice)), notices.join('\n')).toEqual([]);
    }

    async function eventsOf(target: string): Promise<[string, unknown][]> {
      const { rows } = await t.database.db.query<{ action: string; data: Record<string, unknown> }>(
        'SELECT action, data FROM audit_events WHERE tenant_id = $1 AND target = $2 AND actor = $3 ORDER BY seq',
        [tenant.tenantId, target, 'test'],
      );
      return rows.map((row) => [row.action, row.data.ticketIds ?? row.data.entryNos ?? row.data.clockOffset]);
    }

    it('a sync acknowledging a revocation, outside a transaction as the sync records it', async () => {
      let ticket = '';
      const notices = await sentByCoordinator(async (db, _coordinator, call) => {
        // The last call finds a revocation to stamp; the earlier ones warm the plans up, as a pooled connection does.
        if (call === 6) ticket = await pendingRevocation('vault');
        const seenAt = t.app.services.clock() + call;
        const telemetry = await recordLockContact(db, tenant.tenantId, 'vault', { seenAt, appliedThrough: Number.MAX_SAFE_INTEGER, actor: 'test' });
        expect(telemetry.lastSeenAt).toBe(seenAt);
      });
      expectOneNodeOnePhase(notices);
      expect(await eventsOf('secured_object:vault')).toEqual([['ticket.revocation_applied', [ticket]]]);
    });

    it("an upload of the lock's word: its contact, its entries and their events in one transaction", async () => {
      const ticket = await pendingRevocation('safe');
      const now = t.app.services.clock();
      const notices = await sentByCoordinator(async (db, coordinator, call) => {
        if (call < 6) {
          // Earlier uploads of other entries, which find nothing to stamp.
          const entries = [{ entryNo: 100 + call, lockTime: now, command: 'open', channel: 'btlespp', result: 'granted' as const }];
          const stamp = { receivedAt: now, via: 'lock', numbering: 'lock', signed: true, clockOffsetMs: null };
          expect(await insertAccessLogEntries(db, tenant.tenantId, 'safe', entries, stamp, { actor: 'warm-up', requestId: null, contact: { revocationsApplied: [], driftOffsetMs: null } })).toEqual({ accepted: 1 });
          return;
        }
        await coordinator.query('BEGIN');
        // As the upload runs them (access-log.service.ts): the contact's events deferred, appended with the entries'.
        const telemetry = await recordLockContact(db, tenant.tenantId, 'safe', {
          seenAt: now,
          appliedThrough: Number.MAX_SAFE_INTEGER,
          clockOffsetMs: 3_600_000,
          events: 'defer',
        });
        expect(telemetry.events).toEqual({ revocationsApplied: [ticket], driftOffsetMs: 3_600_000 });
        const entry = (entryNo: number, result: 'granted' | 'denied') => ({ entryNo, lockTime: now, tokenId: ticket, command: 'open', channel: 'btlespp', result });
        const stored = await insertAccessLogEntries(
          db,
          tenant.tenantId,
          'safe',
          [entry(2, 'denied'), entry(1, 'granted'), entry(3, 'granted'), entry(1, 'granted')],
          { receivedAt: now, via: 'lock', numbering: 'lock', signed: true, clockOffsetMs: 3_600_000 },
          { actor: 'test', requestId: null, contact: telemetry.events },
        );
        expect(stored).toEqual({ accepted: 3 });
        await coordinator.query('COMMIT');
      });
      expectOneNodeOnePhase(notices);
      expect(await eventsOf('secured_object:safe')).toEqual([
        ['ticket.revocation_applied', [ticket]],
        ['secured_object.clock_drift', 3_600_000],
        ['access_log.granted', [1, 3]],
        ['access_log.denied', [2]],
      ]);
      const { rows } = await t.database.db.query<{ entry_no: string; mobile_device_id: string | null }>(
        'SELECT entry_no, mobile_device_id FROM access_log_entries WHERE tenant_id = $1 AND secured_object_id = $2 ORDER BY entry_no',
        [tenant.tenantId, 'safe'],
      );
      expect(rows.filter((row) => Number(row.entry_no) < 100).map((row) => [Number(row.entry_no), row.mobile_device_id])).toEqual([[1, 'phone'], [2, 'phone'], [3, 'phone']]);
    });

    it("a lock's removal with no bound client: the row, its tickets revoked and their events in one transaction", async () => {
      const tickets: string[] = [];
      const notices = await sentByCoordinator(async (db, coordinator, call) => {
        // Each call removes a lock of its own with a live ticket (made through the app, on its own connections).
        await lock(t, operator, `bin-${call}`);
        const created = await issueTicket(t, operator, ticketBody(t, `bin-${call}`, 'phone'));
        expect(created.statusCode, created.body).toBe(201);
        tickets.push(created.json().id as string);
        await coordinator.query('BEGIN');
        // As removeWithTickets runs it (removal.ts): the change number, the removal, then its events last.
        const context = { tenantId: tenant.tenantId, actor: 'test', requestId: null };
        const seq = await nextChangeSeq(db, tenant.tenantId);
        const dependencies = { clock: t.app.services.clock, revocations: t.app.services.revocations, accessTokenTtlMs: 3_600_000 };
        const removal = await removeInTransaction(db, dependencies, SECURED_OBJECTS, context, `bin-${call}`, seq);
        expect(removal?.revoked).toBe(1);
        await appendAuditEvents(db, removal!.events);
        await coordinator.query('COMMIT');
      });
      expectOneNodeOnePhase(notices);
      expect(await eventsOf('secured_object:bin-6')).toEqual([
        ['ticket.revoked', [tickets[6]]],
        ['secured_object.deleted', undefined],
      ]);
      const { rows } = await t.database.db.query<{ revoked_at: string | null }>('SELECT revoked_at FROM tickets WHERE tenant_id = $1 AND id = $2', [
        tenant.tenantId,
        tickets[6],
      ]);
      expect(rows[0]?.revoked_at).not.toBeNull();
    });
  });

  it('finds a statement that spreads over shards (the check itself)', async () => {
    const problems = await multiShardStatements(t.database.db, [
      { text: 'SELECT count(*) FROM tickets WHERE revoked_at IS NULL', params: [] },
      { text: 'SELECT count(*) FROM tickets WHERE tenant_id = $1', params: [tenant.tenantId] },
    ]);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^tasks [2-9]\d*: SELECT count\(\*\) FROM tickets WHERE revoked_at IS NULL$/);
  });

  it('records the statements the app sends, in and out of transactions', async () => {
    const statements = await sent(async () => {
      await clientToken(t.app, await createClient(t.app, tenant, ['tokens:read']));
    });
    // The client's insert runs in a transaction, the token's look-up of the fresh client outside one.
    expect(statements.some((statement) => /^\s*INSERT INTO oauth_clients\b/.test(statement.text))).toBe(true);
    expect(statements.some((statement) => /^\s*SELECT\b[\s\S]*\bFROM client_tenants\b/.test(statement.text))).toBe(true);
  });
});
