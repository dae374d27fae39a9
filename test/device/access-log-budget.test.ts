// Access logs stay bounded (docs/api-reference.md 8.5, docs/security-cases.md H56): one per-minute budget of new
// entries per lock, shared by its own client and every phone relaying for it, refused whole with 429 and Retry-After
// beyond it; and the retention prune, by the server's receipt time, a tenant and a bounded batch at a time.
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pruneAccessLogEntries } from '../../src/db/repositories/access-log-bounds.repo.js';
import { buildApp } from '../../src/app.js';
import { createPostgresDatabase } from '../../src/db/postgres.js';
import { createLogger } from '../../src/logger.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { lockToken, phoneToken } from '../helpers/device.js';
import { bearer, clientToken, type TenantFixture } from '../helpers/oauth.js';
import { expectProblem, HOUR, lock, ticket } from '../helpers/operator.js';
import { postgresTestUrl } from '../helpers/postgres-url.js';
import { twoTenants, type TwoTenants } from '../helpers/tenants.js';

const START = Date.UTC(2026, 2, 2, 8, 0, 0, 0);
const DAY = 24 * HOUR;
/** The smallest budget the configuration takes: one full upload (docs/lock-integration.md 8). */
const BUDGET = 1000;
const RETENTION_DAYS = 30;

interface Entry {
  entryNo: number;
  lockTime: number;
  command: string;
  channel: string;
  result: 'granted' | 'denied';
}

describe('the access-log budget and retention', () => {
  let t: TestApp;
  let now = START;
  let tenants: TwoTenants;

  const entries = (from: number, to: number, lockTime = now - 60_000): Entry[] =>
    Array.from({ length: to - from + 1 }, (_, index) => ({ entryNo: from + index, lockTime, command: 'open', channel: 'btlespp', result: 'granted' }));

  const fromLock = (token: string, lockId: string, payload: object) =>
    t.app.inject({ method: 'POST', url: `/deviceapi/securedobjects/${encodeURIComponent(lockId)}/accesslog`, headers: bearer(token), payload });
  const relay = (token: string, deviceId: string, payload: object) =>
    t.app.inject({ method: 'POST', url: `/deviceapi/mobiledevices/${encodeURIComponent(deviceId)}/accesslog`, headers: bearer(token), payload });

  function answer(response: LightMyRequestResponse) {
    expect(response.statusCode, response.body).toBe(200);
    return response.json() as { accepted: number; duplicates: number; gaps: [number, number][] };
  }

  /** A 429 problem whose Retry-After is `seconds`; answers the detail. */
  function refused(response: LightMyRequestResponse, seconds: number): string {
    const problem = expectProblem(response, 429);
    expect(problem.type).toMatch(/\/rate-limited$/);
    expect(response.headers['retry-after']).toBe(String(seconds));
    return problem.detail!;
  }

  async function stored(tenant: TenantFixture, lockId: string): Promise<number[]> {
    const { rows } = await t.database.db.query<{ entry_no: string | number }>(
      'SELECT entry_no FROM access_log_entries WHERE tenant_id = $1 AND secured_object_id = $2 ORDER BY entry_no',
      [tenant.tenantId, lockId],
    );
    return rows.map((row) => Number(row.entry_no));
  }

  /** Everything an upload writes, every tenant: a refused upload changes none of it. */
  async function logState() {
    const { rows } = await t.database.db.query<{ entries: number; telemetry: string | null }>(
      `SELECT (SELECT count(*) FROM access_log_entries)::int AS entries,
              (SELECT string_agg(row_to_json(x)::text, '|' ORDER BY x.tenant_id, x.secured_object_id) FROM lock_telemetry x) AS telemetry`,
    );
    return rows[0]!;
  }

  beforeAll(async () => {
    t = await buildTestApp(
      { BCRYPT_COST: '4', ACCESS_LOG_ENTRIES_PER_LOCK_PER_MINUTE: String(BUDGET), ACCESS_LOG_RETENTION_DAYS: String(RETENTION_DAYS) },
      { clock: () => now },
    );
    tenants = await twoTenants(t, {
      acme: { locks: ['door', 'gate', 'shed', 'pair', 'kept'], devices: ['phone', 'courier'] },
      other: { locks: ['door'], devices: [] },
    });
    for (const lockId of ['door', 'gate', 'pair']) {
      await ticket(t, tenants.token, lockId, 'phone');
      await ticket(t, tenants.token, lockId, 'courier');
    }
  });
  afterAll(async () => {
    await t.close();
  });

  it('refuses an upload beyond the budget with 429 and Retry-After, storing nothing of it, and frees it after the minute', async () => {
    const door = await lockToken(t, tenants.acme, 'door');
    expect(answer(await fromLock(door, 'door', { entries: entries(1, 600) })).accepted).toBe(600);
    now += 10_000;
    const before = await logState();
    // 600 + 401 new: one over. Refused whole, with the seconds until the minute that began with entry 1 ends.
    const detail = refused(await fromLock(door, 'door', { appliedSerial: 0, lockTime: now, entries: entries(601, 1001) }), 50);
    expect(detail).toContain('600 of its 1000');
    expect(detail).toContain('401 more');
    expect(await logState()).toEqual(before);
    // What still fits is stored, up to the budget exactly.
    expect(answer(await fromLock(door, 'door', { entries: entries(601, 1000) })).accepted).toBe(400);
    refused(await fromLock(door, 'door', { entries: entries(1001, 1001) }), 50);
    // Re-sending what was stored costs nothing and is never refused, even with the budget spent.
    expect(answer(await fromLock(door, 'door', { entries: entries(1, 1000) }))).toMatchObject({ accepted: 0, duplicates: 1000 });
    // An upload mixing stored entries with one new one is charged the new one only: still refused, still nothing stored.
    refused(await fromLock(door, 'door', { entries: entries(990, 1001) }), 50);
    expect(await stored(tenants.acme, 'door')).toHaveLength(1000);

    now += 50_000 - 1;
    refused(await fromLock(await lockToken(t, tenants.acme, 'door'), 'door', { entries: entries(1001, 1001) }), 1);
    now += 1;
    const fresh = await lockToken(t, tenants.acme, 'door');
    expect(answer(await fromLock(fresh, 'door', { entries: entries(1001, 1800) })).accepted).toBe(800);
    // The new minute began with that upload.
    refused(await fromLock(fresh, 'door', { entries: entries(1801, 2001) }), 60);
    expect(answer(await fromLock(fresh, 'door', { entries: entries(1801, 2000) })).accepted).toBe(200);
    expect(await stored(tenants.acme, 'door')).toHaveLength(2000);
  });

  it('counts the lock\'s own client and every relaying phone against one budget, so alternating them gains nothing', async () => {
    const gate = await lockToken(t, tenants.acme, 'gate');
    const phone = await phoneToken(t, tenants.acme, 'phone');
    const courier = await phoneToken(t, tenants.acme, 'courier');
    expect(answer(await fromLock(gate, 'gate', { entries: entries(1, 300) })).accepted).toBe(300);
    expect(answer(await relay(phone, 'phone', { securedObjectId: 'gate', entries: entries(301, 600) })).accepted).toBe(300);
    expect(answer(await relay(courier, 'courier', { securedObjectId: 'gate', entries: entries(601, 900) })).accepted).toBe(300);
    const before = await logState();
    for (const attempt of [
      relay(phone, 'phone', { securedObjectId: 'gate', entries: entries(901, 1001) }),
      relay(courier, 'courier', { securedObjectId: 'gate', entries: entries(5000, 5101) }),
      fromLock(gate, 'gate', { entries: entries(901, 1001) }),
    ]) {
      refused(await attempt, 60);
    }
    expect(await logState()).toEqual(before);
    // Re-sending what was stored is charged nothing: the lock's own entries, and a phone's reports in its numbering.
    expect(answer(await fromLock(gate, 'gate', { entries: entries(1, 300) }))).toMatchObject({ accepted: 0, duplicates: 300 });
    expect(answer(await relay(courier, 'courier', { securedObjectId: 'gate', entries: entries(601, 900) }))).toMatchObject({ accepted: 0, duplicates: 300 });
    // The same numbers from another phone are that phone's reports (docs/api-reference.md 8.5): new, so charged.
    refused(await relay(courier, 'courier', { securedObjectId: 'gate', entries: entries(1, 101) }), 60);
    expect(answer(await relay(phone, 'phone', { securedObjectId: 'gate', entries: entries(901, 1000) })).accepted).toBe(100);
    expect(await stored(tenants.acme, 'gate')).toHaveLength(1000);
  });

  it('leaves another lock\'s budget, and another tenant\'s lock of the same id, untouched', async () => {
    // acme's door has spent its minute (the first test).
    refused(await fromLock(await lockToken(t, tenants.acme, 'door'), 'door', { entries: entries(2001, 2001) }), 60);
    expect(answer(await fromLock(await lockToken(t, tenants.acme, 'shed'), 'shed', { entries: entries(1, 1000) })).accepted).toBe(1000);
    expect(answer(await fromLock(await lockToken(t, tenants.other, 'door'), 'door', { entries: entries(1, 1000) })).accepted).toBe(1000);
    expect(await stored(tenants.other, 'door')).toHaveLength(1000);
  });

  it('lets one of two concurrent uploads that fit apart but not together through, and stores nothing of the other', async () => {
    const pair = await lockToken(t, tenants.acme, 'pair');
    const phone = await phoneToken(t, tenants.acme, 'phone');
    const answers = await Promise.all([
      fromLock(pair, 'pair', { entries: entries(1, 600) }),
      relay(phone, 'phone', { securedObjectId: 'pair', entries: entries(601, 1200) }),
    ]);
    expect(answers.map((response) => response.statusCode).sort()).toEqual([200, 429]);
    const winner = answers.findIndex((response) => response.statusCode === 200);
    expect(await stored(tenants.acme, 'pair')).toEqual(winner === 0 ? entries(1, 600).map((e) => e.entryNo) : entries(601, 1200).map((e) => e.entryNo));
  });

  it.runIf(postgresTestUrl() !== undefined)('holds across two instances on one database, concurrent uploads included', async () => {
    // Another server on the same database, as behind one load balancer, with this test's clock.
    const peer = await buildApp(t.config, {
      db: createPostgresDatabase({ connectionString: t.database.url!, poolMax: 4, connectTimeoutMs: 2000, statementTimeoutMs: 30_000, log: createLogger('silent') }),
      log: createLogger('silent'),
      secretsKey: t.secretsKey,
      clock: () => now,
    });
    try {
      await peer.ready();
      const kept = await lockToken(t, tenants.acme, 'kept');
      const onPeer = (payload: object) =>
        peer.inject({ method: 'POST', url: '/deviceapi/securedobjects/kept/accesslog', headers: bearer(kept), payload });
      const both = await Promise.all([fromLock(kept, 'kept', { entries: entries(1, 600) }), onPeer({ entries: entries(601, 1200) })]);
      expect(both.map((response) => response.statusCode).sort()).toEqual([200, 429]);
      const first = both[0]!.statusCode === 200 ? entries(1, 600) : entries(601, 1200);
      // Whichever won, 400 remain for both instances together.
      const rest = both[0]!.statusCode === 200 ? entries(601, 1000) : entries(1, 400);
      const response = await onPeer({ entries: rest });
      expect(response.statusCode, response.body).toBe(200);
      refused(await fromLock(kept, 'kept', { entries: entries(5000, 5000) }), 60);
      refused(await onPeer({ entries: entries(5000, 5000) }), 60);
      expect(await stored(tenants.acme, 'kept')).toEqual([...first, ...rest].map((e) => e.entryNo).sort((a, b) => a - b));
    } finally {
      await peer.close();
    }
  });

  it('prunes, a tenant at a time, the entries received before the retention, whatever lockTime they claim', async () => {
    // Fresh locks, so the other tests' entries (received at START and after) do not count here.
    // Fresh management tokens, however far the tests before moved the clock.
    const acmeOperator = await clientToken(t.app, tenants.acme);
    await lock(t, acmeOperator, 'aged');
    await ticket(t, acmeOperator, 'aged', 'phone');
    await lock(t, await clientToken(t.app, tenants.other), 'aged');
    const acmeLock = await lockToken(t, tenants.acme, 'aged');
    const otherLock = await lockToken(t, tenants.other, 'aged');
    const received = now;
    // Received now, one claiming a lockTime far in the future: it goes with its receipt time all the same.
    expect(answer(await fromLock(acmeLock, 'aged', { entries: [...entries(1, 3), ...entries(4, 4, now + 10 * 365 * DAY)] })).accepted).toBe(4);
    expect(answer(await fromLock(otherLock, 'aged', { entries: entries(1, 2) })).accepted).toBe(2);
    // A phone's report numbered 5, in its own numbering (docs/api-reference.md 8.5): old, it goes; the lock's own 5,
    // received later, stays.
    expect(answer(await relay(await phoneToken(t, tenants.acme, 'phone'), 'phone', { securedObjectId: 'aged', entries: entries(5, 5) })).accepted).toBe(1);
    now += 20 * DAY;
    // Received 20 days later, one claiming a lockTime far in the past: kept, as received within the retention.
    expect(answer(await fromLock(await lockToken(t, tenants.acme, 'aged'), 'aged', { entries: [...entries(5, 5), ...entries(6, 6, 0)] })).accepted).toBe(2);
    now += 11 * DAY;

    // The repository's batch is bounded, names its tenant, and takes the oldest first: two of the door's first
    // upload (the first test's, at START), none of this lock's, none of the other tenant's.
    const before = now - RETENTION_DAYS * DAY;
    expect(await pruneAccessLogEntries(t.database.db, tenants.acme.tenantId, before, 2)).toBe(2);
    expect(await stored(tenants.acme, 'door')).toHaveLength(1998);
    expect(await stored(tenants.acme, 'aged')).toEqual([1, 2, 3, 4, 5, 5, 6]);
    expect(await stored(tenants.other, 'aged')).toEqual([1, 2]);
    expect(await stored(tenants.other, 'door')).toHaveLength(1000);

    const ages = async () => {
      const { rows } = await t.database.db.query<{ old: number; young: number }>(
        `SELECT count(*) FILTER (WHERE received_at < $1)::int AS old, count(*) FILTER (WHERE received_at >= $1)::int AS young FROM access_log_entries`,
        [before],
      );
      return rows[0]!;
    };
    const { old } = await ages();
    // This test's first four, and every entry of the tests before, all received at least 31 days ago.
    expect(received).toBeLessThan(before);
    expect(old).toBeGreaterThan(4 + 1 + 2 + 1000);
    expect(await t.app.services.accessLogRetention.prune()).toBe(old);
    expect(await stored(tenants.acme, 'aged')).toEqual([5, 6]);
    expect(await stored(tenants.other, 'aged')).toEqual([]);
    expect(await stored(tenants.other, 'door')).toEqual([]);
    expect(await ages()).toEqual({ old: 0, young: 2 });
    expect(await t.app.services.accessLogRetention.prune()).toBe(0);
  });
});
