// What a phone may say about a lock (docs/api-reference.md 8.4, 8.5 "Signed receipts"; docs/security-cases.md H49, H51,
// H52): a receipt signed with the lock's key is the lock's own word; a plain relay is a report that acknowledges
// nothing, never moves the lock's clock estimate or its drift flag, and never claims the lock's entry numbers.
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { countEvents, download, lockToken, phoneToken } from '../helpers/device.js';
import { newKeyPair, putLockKey, receipt, signJws, type HolderKeyPair } from '../helpers/holder-keys.js';
import { bearer, type TenantFixture } from '../helpers/oauth.js';
import { call, device, expectProblem, lock, ticket, type TicketBody } from '../helpers/operator.js';
import { twoTenants } from '../helpers/tenants.js';

const START = Date.UTC(2026, 5, 1, 9, 0, 0, 0);
const MAX = Number.MAX_SAFE_INTEGER;

interface LockBody {
  lastSeenTime?: number;
  appliedThrough?: number;
  pendingRevocations: number;
  clockOffset?: number;
  clockDrift: boolean;
}

describe('signed receipts and plain reports', () => {
  let t: TestApp;
  let now = START;
  let acme: TenantFixture;
  let other: TenantFixture;
  let operator: string;
  let otherOperator: string;

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4' }, { clock: () => now });
    const tenants = await twoTenants(t);
    acme = tenants.acme;
    other = tenants.other;
    operator = tenants.token;
    otherOperator = tenants.otherToken;
  });
  afterAll(async () => {
    await t.close();
  });

  const entry = (entryNo: number, overrides: Record<string, unknown> = {}) => ({
    entryNo,
    lockTime: now - 1000,
    command: 'open',
    channel: 'btlespp',
    result: 'denied',
    reason: 'revoked',
    ...overrides,
  });
  const relay = (token: string, deviceId: string, payload: object) =>
    t.app.inject({ method: 'POST', url: `/deviceapi/mobiledevices/${encodeURIComponent(deviceId)}/accesslog`, headers: bearer(token), payload });
  const fromLock = (token: string, lockId: string, payload: object) =>
    t.app.inject({ method: 'POST', url: `/deviceapi/securedobjects/${encodeURIComponent(lockId)}/accesslog`, headers: bearer(token), payload });
  const answer = (response: LightMyRequestResponse) => {
    expect(response.statusCode, response.body).toBe(200);
    return response.json() as { accepted: number; duplicates: number; gaps: [number, number][] };
  };

  async function readLock(id: string): Promise<LockBody> {
    const response = await call(t, operator, { method: 'GET', url: `/operatorapi/securedobjects/${id}` });
    expect(response.statusCode, response.body).toBe(200);
    return response.json();
  }

  async function pendingIds(lockId: string): Promise<string[]> {
    const response = await call(t, operator, { method: 'GET', url: `/operatorapi/revocations?applied=false&securedObjectId=${lockId}` });
    expect(response.statusCode, response.body).toBe(200);
    return (response.json() as TicketBody[]).map((item) => item.id);
  }

  async function readTicket(id: string): Promise<Record<string, unknown>> {
    const response = await call(t, operator, { method: 'GET', url: `/operatorapi/tickets/${id}` });
    expect(response.statusCode, response.body).toBe(200);
    return response.json();
  }

  /** Everything an upload can write, for the lock: refused requests change none of it. */
  async function lockState(lockId: string) {
    const { rows } = await t.database.db.query(
      `SELECT (SELECT count(*)::int FROM access_log_entries WHERE tenant_id = $1 AND secured_object_id = $2) AS entries,
              (SELECT row_to_json(x)::text FROM lock_telemetry x WHERE tenant_id = $1 AND secured_object_id = $2) AS telemetry,
              (SELECT count(*)::int FROM tickets WHERE tenant_id = $1 AND secured_object_id = $2 AND revocation_applied_at IS NOT NULL) AS stamped,
              (SELECT count(*)::int FROM audit_events WHERE tenant_id = $1) AS events`,
      [acme.tenantId, lockId],
    );
    return rows[0];
  }

  /** A lock with a key, a phone holding a downloaded ticket for it that is then revoked, and the lock's serial after that. */
  async function revokedPhone(lockId: string, phoneId: string) {
    await lock(t, operator, lockId);
    await device(t, operator, phoneId);
    const key = newKeyPair();
    await putLockKey(t, acme.tenantId, lockId, key);
    const issued = await ticket(t, operator, lockId, phoneId, { endDate: now + 30 * 86_400_000 });
    const phone = await phoneToken(t, acme, phoneId);
    await download(t, phone, phoneId);
    expect((await call(t, operator, { method: 'DELETE', url: `/operatorapi/tickets/${issued.id}` })).statusCode).toBe(200);
    const { rows } = await t.database.db.query<{ last_seq: number }>('SELECT last_seq FROM tenant_change_counters WHERE tenant_id = $1', [acme.tenantId]);
    return { key, ticketId: issued.id, phone, serial: Number(rows[0]!.last_seq) };
  }

  it('H49: a revoked phone\'s plain relay claiming the lock applied the revocation acknowledges nothing; the lock\'s receipt does', async () => {
    const { key, ticketId, phone, serial } = await revokedPhone('vault', 'mallory');
    expect(await pendingIds('vault')).toEqual([ticketId]);
    const before = await readLock('vault');
    expect(before.pendingRevocations).toBe(1);

    now += 1000;
    const reported = answer(await relay(phone, 'mallory', { securedObjectId: 'vault', appliedSerial: serial, lockTime: now, entries: [entry(1)] }));
    expect(reported).toEqual({ accepted: 1, duplicates: 0, gaps: [] });
    // Still pending everywhere: the list, the count, the ticket, the event log and explain.
    expect(await pendingIds('vault')).toEqual([ticketId]);
    expect(await readLock('vault')).toEqual(before);
    expect(await readTicket(ticketId)).not.toHaveProperty('revocationAppliedTime');
    expect(await countEvents(t, acme.tenantId, 'ticket.revocation_applied', 'secured_object:vault')).toBe(0);
    const explained = await call(t, operator, { method: 'GET', url: `/operatorapi/access-checks?mobileDeviceId=mallory&securedObjectId=vault&at=${now}` });
    expect(explained.statusCode, explained.body).toBe(200);
    const codes = (explained.json() as { tokens: { reasons: { code: string }[] }[] }).tokens.flatMap((item) => item.reasons.map((reason) => reason.code));
    expect(codes).toContain('revocation-not-applied');

    // A receipt signed by another key: 400, and nothing of the upload stored, its plain entries neither.
    const forged = receipt(newKeyPair(), 'vault', { appliedSerial: serial, lockTime: now, entries: [entry(2)] });
    const state = await lockState('vault');
    const refused = expectProblem(await relay(phone, 'mallory', { securedObjectId: 'vault', receipts: [forged], entries: [entry(3)] }), 400);
    expect(refused.detail).toMatch(/receipts\[0\] is not signed ES256 by the lock's registered key/);
    expect(await lockState('vault')).toEqual(state);
    expect(await pendingIds('vault')).toEqual([ticketId]);

    // The lock's own receipt, relayed by the same phone: the lock's word acknowledges.
    now += 1000;
    const signed = receipt(key, 'vault', { appliedSerial: serial, lockTime: now, entries: [entry(1)] });
    expect(answer(await relay(phone, 'mallory', { securedObjectId: 'vault', receipts: [signed] }))).toEqual({ accepted: 1, duplicates: 0, gaps: [] });
    expect(await pendingIds('vault')).toEqual([]);
    expect(await readTicket(ticketId)).toMatchObject({ revocationAppliedTime: now });
    expect(await readLock('vault')).toMatchObject({ appliedThrough: serial, pendingRevocations: 0, lastSeenTime: now });
    expect(await countEvents(t, acme.tenantId, 'ticket.revocation_applied', 'secured_object:vault')).toBe(1);
    // The operator sees which entry is the lock's word and which the phone's report.
    const log = await call(t, operator, { method: 'GET', url: '/operatorapi/accesslog?securedObjectId=vault' });
    expect(log.statusCode, log.body).toBe(200);
    expect((log.json() as { entryNo: number; via: string; signed: boolean }[]).map((item) => [item.entryNo, item.via, item.signed]).sort()).toEqual([
      [1, 'mallory', false],
      [1, 'mallory', true],
    ]);
  });

  it('refuses a receipt of another lock, of another type, unsigned, malformed, or for a lock without a key: 400, nothing stored', async () => {
    const { key, phone, serial } = await revokedPhone('cellar', 'eve');
    await lock(t, operator, 'keyless');
    await ticket(t, operator, 'keyless', 'eve');
    const body = { appliedSerial: serial, lockTime: now, entries: [entry(1)] };
    const good = receipt(key, 'cellar', body);
    const [header, payload] = good.split('.');
    const cases: [string, string, RegExp][] = [
      ['cellar', receipt(key, 'vault', body), /receipt of another lock/],
      ['cellar', receipt(key, 'cellar', body, { typ: 'lock-hello+jwt' }), /typ lock-receipt\+jwt/],
      ['cellar', receipt(key, 'cellar', body, { typ: undefined }), /typ lock-receipt\+jwt/],
      ['cellar', `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'lock-receipt+jwt' })).toString('base64url')}.${payload}.`, /not signed ES256/],
      ['cellar', `${header}.${payload}.${'A'.repeat(86)}`, /not signed ES256/],
      ['cellar', 'not-a-jws', /not a compact JWS/],
      ['cellar', receipt(key, 'cellar', { lockTime: now, entries: [entry(1, { entryNo: MAX + 1 })] }), /entries\[0\]\.entryNo/],
      ['cellar', receipt(key, 'cellar', { lockTime: now, entries: [entry(1, { reason: 'a\u0000b' })] }), /entries\[0\]\.reason/],
      ['cellar', receipt(key, 'cellar', { lockTime: now, entries: [entry(1, { extra: true })] }), /unknown members: extra/],
      ['cellar', signJws(key.privateKey, { alg: 'ES256', typ: 'lock-receipt+jwt' }, { sub: 'cellar', lockTime: -1, entries: [] }), /lockTime/],
      ['keyless', receipt(key, 'keyless', body), /has no registered key/],
    ];
    for (const [lockId, signed, detail] of cases) {
      const state = await lockState(lockId);
      const response = await relay(phone, 'eve', { securedObjectId: lockId, receipts: [signed], entries: [entry(9)] });
      expect(expectProblem(response, 400).detail, signed.slice(0, 40)).toMatch(detail);
      expect(await lockState(lockId)).toEqual(state);
    }
    // One bad receipt among good ones refuses them all.
    const state = await lockState('cellar');
    expectProblem(await relay(phone, 'eve', { securedObjectId: 'cellar', receipts: [good, receipt(newKeyPair(), 'cellar', body)] }), 400);
    expect(await lockState('cellar')).toEqual(state);
    // Neither receipts nor entries, and too many entries altogether.
    expectProblem(await relay(phone, 'eve', { securedObjectId: 'cellar' }), 400);
    const many = Array.from({ length: 600 }, (_, i) => entry(i + 1));
    expectProblem(await relay(phone, 'eve', { securedObjectId: 'cellar', receipts: [receipt(key, 'cellar', { lockTime: now, entries: many })], entries: many }), 400);
    expect(await lockState('cellar')).toEqual(state);
  });

  it('H51: relayed entries numbered up to 2^53-1 never block the lock\'s own upload of those numbers, and gaps keep working', async () => {
    await lock(t, operator, 'gate');
    await device(t, operator, 'squatter');
    await ticket(t, operator, 'gate', 'squatter');
    const phone = await phoneToken(t, acme, 'squatter');
    const claimed = [1, 2, 3, 4, 5, 6, MAX - 1, MAX];
    expect(answer(await relay(phone, 'squatter', { securedObjectId: 'gate', entries: claimed.map((n) => entry(n)) }))).toEqual({ accepted: 8, duplicates: 0, gaps: [] });

    const gate = await lockToken(t, acme, 'gate');
    // The lock's own entries of the same numbers are stored, not duplicates; the gap 3..4 is reported.
    expect(answer(await fromLock(gate, 'gate', { entries: [entry(1), entry(2), entry(5)] }))).toEqual({ accepted: 3, duplicates: 0, gaps: [[3, 4]] });
    expect(answer(await fromLock(gate, 'gate', { entries: [entry(3), entry(4), entry(8)] }))).toEqual({ accepted: 3, duplicates: 0, gaps: [[6, 7]] });
    expect(answer(await fromLock(gate, 'gate', { entries: [entry(MAX)] }))).toEqual({ accepted: 1, duplicates: 0, gaps: [[9, MAX - 1]] });
    const { rows } = await t.database.db.query<{ log_high: string }>("SELECT log_high FROM lock_telemetry WHERE tenant_id = $1 AND secured_object_id = 'gate'", [acme.tenantId]);
    expect(Number(rows[0]!.log_high)).toBe(MAX);
    const { rows: stored } = await t.database.db.query<{ numbering: string; n: number }>(
      "SELECT numbering, count(*)::int AS n FROM access_log_entries WHERE tenant_id = $1 AND secured_object_id = 'gate' GROUP BY numbering ORDER BY numbering",
      [acme.tenantId],
    );
    expect(stored).toEqual([
      { numbering: 'lock', n: 7 },
      { numbering: 'phone:squatter', n: 8 },
    ]);
  });

  it('H52: a relayed lockTime never moves the clock estimate nor clears clockDrift; the lock\'s client and a fresh receipt do, an old receipt does not', async () => {
    await lock(t, operator, 'clock');
    await device(t, operator, 'courier');
    await ticket(t, operator, 'clock', 'courier');
    const key = newKeyPair();
    await putLockKey(t, acme.tenantId, 'clock', key);
    const phone = await phoneToken(t, acme, 'courier');
    const own = await lockToken(t, acme, 'clock');

    // The lock's own client: 60 s ahead, flagged.
    expect(answer(await fromLock(own, 'clock', { lockTime: now + 60_000, entries: [entry(1)] })).accepted).toBe(1);
    expect(await readLock('clock')).toMatchObject({ clockOffset: 60_000, clockDrift: true });
    const drifts = await countEvents(t, acme.tenantId, 'secured_object.clock_drift', 'secured_object:clock');
    expect(drifts).toBe(1);
    // A phone says the clock is right now, then ten years behind: neither moves it nor clears the flag.
    now += 1000;
    answer(await relay(phone, 'courier', { securedObjectId: 'clock', lockTime: now, entries: [entry(2, { lockTime: now })] }));
    answer(await relay(phone, 'courier', { securedObjectId: 'clock', lockTime: now - 10 * 365 * 86_400_000, entries: [entry(3)] }));
    expect(await readLock('clock')).toMatchObject({ clockOffset: 60_000, clockDrift: true });
    // The entries it reported carry the lock's own estimate, not the phone's.
    const { rows } = await t.database.db.query<{ clock_offset_ms: string }>(
      "SELECT clock_offset_ms FROM access_log_entries WHERE tenant_id = $1 AND secured_object_id = 'clock' AND NOT signed",
      [acme.tenantId],
    );
    expect(rows.map((row) => Number(row.clock_offset_ms))).toEqual([60_000, 60_000]);

    // The lock's receipt with new entries: its clock is right again, the flag clears.
    now += 1000;
    const fresh = receipt(key, 'clock', { lockTime: now + 2000, entries: [entry(2), entry(3)] });
    expect(answer(await relay(phone, 'courier', { securedObjectId: 'clock', receipts: [fresh] }))).toEqual({ accepted: 2, duplicates: 0, gaps: [] });
    expect(await readLock('clock')).toMatchObject({ clockOffset: 2000, clockDrift: false });

    // A receipt the lock signed long ago (entries the server already holds), relayed again: its stale clock is ignored,
    // though its entries and applied serial are idempotent anyway.
    const old = receipt(key, 'clock', { lockTime: now - 3_600_000, entries: [entry(1), entry(2)] });
    now += 1000;
    expect(answer(await relay(phone, 'courier', { securedObjectId: 'clock', receipts: [old] }))).toEqual({ accepted: 0, duplicates: 2, gaps: [] });
    expect(await readLock('clock')).toMatchObject({ clockOffset: 2000, clockDrift: false });
    // Among several receipts, the one with the newest entries speaks for the clock.
    now += 1000;
    const newer = receipt(key, 'clock', { lockTime: now - 45_000, entries: [entry(5)] });
    const newest = receipt(key, 'clock', { lockTime: now + 1000, entries: [entry(4), entry(6)] });
    expect(answer(await relay(phone, 'courier', { securedObjectId: 'clock', receipts: [newest, newer, old] }))).toEqual({ accepted: 3, duplicates: 2, gaps: [] });
    expect(await readLock('clock')).toMatchObject({ clockOffset: 1000, clockDrift: false });
    // A receipt with no entries acknowledges but never moves the clock.
    answer(await relay(phone, 'courier', { securedObjectId: 'clock', receipts: [receipt(key, 'clock', { lockTime: now - 99_000, entries: [] })] }));
    expect(await readLock('clock')).toMatchObject({ clockOffset: 1000, clockDrift: false });
    // The lock's own client stays trusted as before.
    expect(answer(await fromLock(own, 'clock', { lockTime: now - 40_000, entries: [entry(7)] })).accepted).toBe(1);
    expect(await readLock('clock')).toMatchObject({ clockOffset: -40_000, clockDrift: true });
    expect(await countEvents(t, acme.tenantId, 'secured_object.clock_drift', 'secured_object:clock')).toBe(2);
  });

  it('a receipt is verified with the lock\'s current key: after the key changes, the old key\'s receipts are refused', async () => {
    await lock(t, operator, 'rekeyed');
    await device(t, operator, 'walker');
    await ticket(t, operator, 'rekeyed', 'walker');
    const first: HolderKeyPair = newKeyPair();
    await putLockKey(t, acme.tenantId, 'rekeyed', first);
    const phone = await phoneToken(t, acme, 'walker');
    answer(await relay(phone, 'walker', { securedObjectId: 'rekeyed', receipts: [receipt(first, 'rekeyed', { lockTime: now, entries: [entry(1)] })] }));
    await putLockKey(t, acme.tenantId, 'rekeyed', newKeyPair());
    expectProblem(await relay(phone, 'walker', { securedObjectId: 'rekeyed', receipts: [receipt(first, 'rekeyed', { lockTime: now, entries: [entry(2)] })] }), 400);
    // A phone of another tenant with a device of the same id learns nothing of this lock: as missing.
    await device(t, otherOperator, 'walker');
    const foreign = await phoneToken(t, other, 'walker');
    expectProblem(await relay(foreign, 'walker', { securedObjectId: 'rekeyed', receipts: [receipt(first, 'rekeyed', { lockTime: now, entries: [entry(3)] })] }), 404);
  });
});
