// Access-log uploads (docs/api-reference.md 8.5, 8.4): by the lock's own client, relayed by a phone in receipts the lock
// signed or as plain reports, idempotent on (lock, numbering, entryNo), gaps, the clock offset, appliedSerial stamping
// revocations end to end with the simulator, and every refusal.
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LockSimulator, type LockProvisioning } from '../../src/simulator/lock-simulator.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { download, lockToken, phoneToken } from '../helpers/device.js';
import { bearer, clientToken, createClient } from '../helpers/oauth.js';
import { call, expectProblem, fieldsOf, lock, ticket } from '../helpers/operator.js';
import { newKeyPair, putLockKey, receipt } from '../helpers/holder-keys.js';
import { twoTenants, type TwoTenants } from '../helpers/tenants.js';

const START = Date.UTC(2026, 0, 15, 9, 0, 0, 0);

interface Entry {
  entryNo: number;
  lockTime: number;
  tokenId?: string;
  command: string;
  channel: string;
  result: string;
  reason?: string;
}

interface LogRow {
  secured_object_id: string;
  lock_registered_at: number;
  entry_no: number;
  lock_time: number;
  token_id: string | null;
  mobile_device_id: string | null;
  result: string;
  reason: string | null;
  received_at: number;
  via: string;
  clock_offset_ms: number | null;
  signed: boolean;
}

describe('access-log uploads', () => {
  let t: TestApp;
  let now = START;
  let tenants: TwoTenants;
  let doorToken: string;

  const entry = (entryNo: number, overrides: Partial<Entry> = {}): Entry => ({
    entryNo,
    lockTime: now - 60_000 + entryNo,
    command: 'open',
    channel: 'btlespp',
    result: 'granted',
    ...overrides,
  });
  const entries = (...entryNos: number[]) => entryNos.map((entryNo) => entry(entryNo));

  const fromLock = (token: string, lockId: string, payload: object) =>
    t.app.inject({ method: 'POST', url: `/deviceapi/securedobjects/${encodeURIComponent(lockId)}/accesslog`, headers: bearer(token), payload });
  const relay = (token: string, deviceId: string, payload: object) =>
    t.app.inject({ method: 'POST', url: `/deviceapi/mobiledevices/${encodeURIComponent(deviceId)}/accesslog`, headers: bearer(token), payload });

  function answer(response: LightMyRequestResponse) {
    expect(response.statusCode, response.body).toBe(200);
    return response.json() as { accepted: number; duplicates: number; gaps: [number, number][] };
  }

  async function logRows(tenantId: string, lockId: string): Promise<LogRow[]> {
    const { rows } = await t.database.db.query<LogRow>(
      `SELECT secured_object_id, lock_registered_at, entry_no, lock_time, token_id, mobile_device_id, result, reason, received_at, via, clock_offset_ms, signed
         FROM access_log_entries WHERE tenant_id = $1 AND secured_object_id = $2 ORDER BY lock_registered_at, numbering, entry_no`,
      [tenantId, lockId],
    );
    return rows.map((row) => ({
      ...row,
      lock_registered_at: Number(row.lock_registered_at),
      entry_no: Number(row.entry_no),
      lock_time: Number(row.lock_time),
      received_at: Number(row.received_at),
      clock_offset_ms: row.clock_offset_ms === null ? null : Number(row.clock_offset_ms),
    }));
  }

  async function telemetry(tenantId: string, lockId: string) {
    const { rows } = await t.database.db.query<Record<string, string | number | null>>(
      'SELECT last_seen_at, applied_through, clock_offset_ms, log_high FROM lock_telemetry WHERE tenant_id = $1 AND secured_object_id = $2',
      [tenantId, lockId],
    );
    return rows[0] ? Object.fromEntries(Object.entries(rows[0]).map(([key, value]) => [key, value === null ? null : Number(value)])) : null;
  }

  /** Everything an upload writes, all tenants: a refused request changes none of it. */
  async function logState() {
    const { rows } = await t.database.db.query<{ entries: number; telemetry: string | null; stamped: number }>(
      `SELECT (SELECT count(*) FROM access_log_entries)::int AS entries,
              (SELECT string_agg(row_to_json(x)::text, '|' ORDER BY x.tenant_id, x.secured_object_id) FROM lock_telemetry x) AS telemetry,
              (SELECT count(*) FROM tickets WHERE revocation_applied_at IS NOT NULL)::int AS stamped`,
    );
    return rows[0]!;
  }

  async function expectUnchanged(action: () => Promise<void>) {
    const before = await logState();
    await action();
    expect(await logState()).toEqual(before);
  }

  async function createdAt(tenantId: string, lockId: string): Promise<number> {
    const { rows } = await t.database.db.query<{ created_at: number }>('SELECT created_at FROM secured_objects WHERE tenant_id = $1 AND id = $2', [tenantId, lockId]);
    return Number(rows[0]!.created_at);
  }

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4' }, { clock: () => now });
    tenants = await twoTenants(t, {
      acme: { locks: ['door', 'side-door', 'vault', 'gate', 'porch'], devices: ['phone', 'stranger', 'courier'] },
      other: { locks: ['door', 'elsewhere'], devices: ['phone'] },
    });
    doorToken = await lockToken(t, tenants.acme, 'door');
  });
  afterAll(async () => {
    await t.close();
  });

  it('stores a lock\'s own upload: via lock, the phone of each ticket of this tenant for this lock, the clock offset, the high mark', async () => {
    const { acme, token, otherToken } = tenants;
    const mine = await ticket(t, token, 'door', 'phone');
    const otherLock = await ticket(t, token, 'side-door', 'phone');
    const othersTicket = await ticket(t, otherToken, 'door', 'phone');
    // The lock's clock runs 45 s ahead of the server's.
    const response = await fromLock(doorToken, 'door', {
      appliedSerial: 0,
      lockTime: now + 45_000,
      entries: [
        entry(1, { tokenId: mine.id, reason: 'ok' }),
        entry(2, { tokenId: othersTicket.id, result: 'denied', reason: 'wrong-issuer' }),
        entry(3, { tokenId: otherLock.id, result: 'denied', reason: 'wrong-lock' }),
        entry(4, { tokenId: 'not-a-uuid', result: 'denied', reason: 'malformed' }),
        entry(5, { tokenId: `${mine.id}x`, result: 'denied' }),
      ],
    });
    expect(answer(response)).toEqual({ accepted: 5, duplicates: 0, gaps: [] });
    const rows = await logRows(acme.tenantId, 'door');
    const registeredAt = await createdAt(acme.tenantId, 'door');
    expect(rows.map((row) => [row.entry_no, row.token_id, row.mobile_device_id, row.via, row.clock_offset_ms, row.received_at, row.lock_registered_at])).toEqual([
      [1, mine.id, 'phone', 'lock', 45_000, now, registeredAt],
      // Another tenant's credential, a ticket of another lock, malformed ids: no phone, and never an error.
      [2, othersTicket.id, null, 'lock', 45_000, now, registeredAt],
      [3, otherLock.id, null, 'lock', 45_000, now, registeredAt],
      [4, 'not-a-uuid', null, 'lock', 45_000, now, registeredAt],
      [5, `${mine.id}x`, null, 'lock', 45_000, now, registeredAt],
    ]);
    expect(rows[1]).toMatchObject({ result: 'denied', reason: 'wrong-issuer', lock_time: now - 60_000 + 2 });
    expect(await telemetry(acme.tenantId, 'door')).toMatchObject({ last_seen_at: now, clock_offset_ms: 45_000, log_high: 5 });
    // Nothing of the other tenant's lock of the same id.
    expect(await logRows(tenants.other.tenantId, 'door')).toEqual([]);
    expect(await telemetry(tenants.other.tenantId, 'door')).toBeNull();
  });

  it('stores nothing twice: a re-sent upload and a repeat within one upload count as duplicates', async () => {
    const { acme } = tenants;
    now += 1000;
    const again = answer(await fromLock(doorToken, 'door', { entries: entries(1, 2, 3, 4, 5) }));
    expect(again).toEqual({ accepted: 0, duplicates: 5, gaps: [] });
    expect(answer(await fromLock(doorToken, 'door', { entries: entries(6, 6, 7) }))).toEqual({ accepted: 2, duplicates: 1, gaps: [] });
    const rows = await logRows(acme.tenantId, 'door');
    expect(rows.map((row) => row.entry_no)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    // The first copy stays as it was received; an upload without lockTime stamps the lock's last estimate.
    expect(rows[0]!.received_at).toBe(now - 1000);
    expect(rows[6]).toMatchObject({ received_at: now, clock_offset_ms: 45_000 });
    expect(await telemetry(acme.tenantId, 'door')).toMatchObject({ last_seen_at: now, clock_offset_ms: 45_000, log_high: 7 });
  });

  it('reports the gaps above the previous high mark, and a later upload fills them without reporting them again', async () => {
    const { acme } = tenants;
    expect(answer(await fromLock(doorToken, 'door', { entries: entries(14, 8, 11, 12) }))).toEqual({ accepted: 4, duplicates: 0, gaps: [[9, 10], [13, 13]] });
    expect(answer(await fromLock(doorToken, 'door', { entries: entries(9, 10, 13) }))).toEqual({ accepted: 3, duplicates: 0, gaps: [] });
    // Old entries mixed with new ones beyond a gap: only the new gap is reported.
    expect(answer(await fromLock(doorToken, 'door', { entries: entries(10, 20) }))).toEqual({ accepted: 1, duplicates: 1, gaps: [[15, 19]] });
    expect((await logRows(acme.tenantId, 'door')).map((row) => row.entry_no)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 20]);
    expect(await telemetry(acme.tenantId, 'door')).toMatchObject({ log_high: 20 });
  });

  it('estimates a drifting clock per upload: 45 s behind is stored on the entries and in the lock\'s telemetry', async () => {
    const { acme } = tenants;
    now += 10_000;
    expect(answer(await fromLock(doorToken, 'door', { lockTime: now - 45_000, entries: entries(21) }))).toMatchObject({ accepted: 1 });
    expect((await logRows(acme.tenantId, 'door')).at(-1)).toMatchObject({ entry_no: 21, clock_offset_ms: -45_000 });
    expect(await telemetry(acme.tenantId, 'door')).toMatchObject({ clock_offset_ms: -45_000, last_seen_at: now });
    // docs/api-reference.md 8.5: off by more than 30 s, the lock is flagged on the secured object.
    const read = async () => (await call(t, tenants.token, { method: 'GET', url: '/operatorapi/securedobjects/door' })).json() as Record<string, unknown>;
    expect(await read()).toMatchObject({ clockOffset: -45_000, clockDrift: true });
    // A later upload within the limit clears the flag: the estimate is the latest one.
    now += 10_000;
    expect(answer(await fromLock(doorToken, 'door', { lockTime: now + 20_000, entries: entries(22) }))).toMatchObject({ accepted: 1 });
    expect(await read()).toMatchObject({ clockOffset: 20_000, clockDrift: false });
  });

  it('serialises concurrent uploads of one lock: each entry is stored once and the counts add up', async () => {
    const { acme } = tenants;
    const body = { entries: entries(...Array.from({ length: 50 }, (_, i) => 101 + i)) };
    const answers = (await Promise.all([0, 1, 2].map(() => fromLock(doorToken, 'door', body)))).map(answer);
    expect(answers.reduce((sum, item) => sum + item.accepted, 0)).toBe(50);
    expect(answers.reduce((sum, item) => sum + item.duplicates, 0)).toBe(100);
    // Exactly one upload came first and saw the gap up to 100; the others saw the high mark at 150.
    expect(answers.filter((item) => item.gaps.length > 0)).toEqual([{ accepted: 50, duplicates: 0, gaps: [[23, 100]] }]);
    expect((await logRows(acme.tenantId, 'door')).filter((row) => row.entry_no > 100)).toHaveLength(50);
  });

  it('takes a phone\'s plain relay for a lock it holds or held a ticket for as a report: via the phone, unsigned, any ticket status', async () => {
    const { acme, token } = tenants;
    const held = await ticket(t, token, 'side-door', 'courier');
    expect((await call(t, token, { method: 'DELETE', url: `/operatorapi/tickets/${held.id}` })).statusCode).toBe(200);
    const courier = await phoneToken(t, acme, 'courier');
    now += 1000;
    const response = await relay(courier, 'courier', { securedObjectId: 'side-door', lockTime: now + 2000, entries: [entry(1, { tokenId: held.id, result: 'denied', reason: 'revoked' })] });
    // docs/api-reference.md 8.5: a report has no gaps; it is numbered apart from the lock's own entries.
    expect(answer(response)).toEqual({ accepted: 1, duplicates: 0, gaps: [] });
    expect(await logRows(acme.tenantId, 'side-door')).toEqual([
      expect.objectContaining({ entry_no: 1, token_id: held.id, mobile_device_id: 'courier', via: 'courier', clock_offset_ms: null, received_at: now, signed: false }),
    ]);
    // The relay's lockTime is no clock reading, and a report is no contact with the lock: nothing of its telemetry.
    expect(await telemetry(acme.tenantId, 'side-door')).toBeNull();
    // The same report again is a duplicate in the phone's numbering; the lock's own upload of entry 1 is not.
    expect(answer(await relay(courier, 'courier', { securedObjectId: 'side-door', entries: [entry(1, { tokenId: held.id, result: 'denied', reason: 'revoked' })] }))).toMatchObject({ accepted: 0, duplicates: 1 });
    expect(answer(await fromLock(await lockToken(t, acme, 'side-door'), 'side-door', { lockTime: now, entries: entries(1, 2) }))).toEqual({ accepted: 2, duplicates: 0, gaps: [] });
    expect((await logRows(acme.tenantId, 'side-door')).map((row) => [row.entry_no, row.via, row.signed])).toEqual([
      [1, 'lock', true],
      [2, 'lock', true],
      [1, 'courier', false],
    ]);
  });

  it('refuses a relay for a door the phone never had, another tenant\'s lock or a missing one as missing, and changes nothing', async () => {
    const { acme } = tenants;
    const stranger = await phoneToken(t, acme, 'stranger');
    const phone = await phoneToken(t, acme, 'phone');
    await expectUnchanged(async () => {
      // No ticket for the lock: as missing, neither log nor acknowledgement written.
      expect(expectProblem(await relay(stranger, 'stranger', { securedObjectId: 'door', appliedSerial: 1000, entries: entries(1) }), 404).detail).toBe('No secured object door.');
      // The phone holds tickets for door, but `elsewhere` exists only in the other tenant.
      expect(expectProblem(await relay(phone, 'phone', { securedObjectId: 'elsewhere', entries: entries(1) }), 404).detail).toBe('No secured object elsewhere.');
      expectProblem(await relay(phone, 'phone', { securedObjectId: 'nowhere', entries: entries(1) }), 404);
      // Another phone's id, of this tenant or the other: as missing.
      expect(expectProblem(await relay(phone, 'stranger', { securedObjectId: 'door', entries: entries(1) }), 404).detail).toBe('No mobile device stranger.');
      expectProblem(await relay(await phoneToken(t, tenants.other, 'phone'), 'courier', { securedObjectId: 'door', entries: entries(1) }), 404);
    });
  });

  it('counts a lock deleted and registered again from its own first entry', async () => {
    const { acme, token } = tenants;
    const porch = await lockToken(t, acme, 'porch');
    expect(answer(await fromLock(porch, 'porch', { entries: entries(1, 2) }))).toMatchObject({ accepted: 2 });
    const first = await createdAt(acme.tenantId, 'porch');
    expect((await call(t, token, { method: 'DELETE', url: '/operatorapi/securedobjects/porch' })).statusCode).toBe(204);
    now += 1000;
    await lock(t, token, 'porch');
    const second = await createdAt(acme.tenantId, 'porch');
    expect(answer(await fromLock(await lockToken(t, acme, 'porch'), 'porch', { entries: entries(1, 2, 3) }))).toMatchObject({ accepted: 3, duplicates: 0 });
    expect((await logRows(acme.tenantId, 'porch')).map((row) => [row.lock_registered_at, row.entry_no])).toEqual([
      [first, 1],
      [first, 2],
      [second, 1],
      [second, 2],
      [second, 3],
    ]);
  });

  it('refuses 401 without a token, 403 with the wrong scope, an unbound client, a phone\'s client, a deleted lock\'s client; 404 for another lock', async () => {
    const { acme, other, token } = tenants;
    const body = { entries: entries(500) };
    const gateClient = await createClient(t.app, acme, ['sync'], { securedObjectId: 'gate' });
    const gateToken = await clientToken(t.app, gateClient);
    expect(answer(await fromLock(gateToken, 'gate', body))).toMatchObject({ accepted: 1 });
    expect((await call(t, token, { method: 'DELETE', url: '/operatorapi/securedobjects/gate' })).statusCode).toBe(204);
    const decommissioned = await clientToken(t.app, gateClient, 'sync');
    const unbound = await clientToken(t.app, await createClient(t.app, acme, ['sync', 'tokens:download']));
    const phone = await phoneToken(t, acme, 'phone');
    await expectUnchanged(async () => {
      const anonymous = await t.app.inject({ method: 'POST', url: '/deviceapi/securedobjects/door/accesslog', payload: body });
      expectProblem(anonymous, 401);
      expect(anonymous.headers['www-authenticate']).toBe('Bearer realm="deviceapi"');
      expectProblem(await t.app.inject({ method: 'POST', url: '/deviceapi/mobiledevices/phone/accesslog', payload: { securedObjectId: 'door', ...body } }), 401);
      // A phone's client on the lock's route, and a lock's client on the phone's: the scope refuses them.
      const wrongScope = await fromLock(phone, 'door', body);
      expectProblem(wrongScope, 403);
      expect(wrongScope.headers['www-authenticate']).toContain('scope="sync"');
      expect(expectProblem(await relay(doorToken, 'phone', { securedObjectId: 'door', ...body }), 403)).toBeDefined();
      // An unbound client syncs any lock (docs/api-reference.md 6.2) but writes no lock's log, and is told which client to use.
      expect(expectProblem(await fromLock(unbound, 'door', body), 403).detail).toMatch(/bound to the secured object/);
      expect(expectProblem(await relay(unbound, 'phone', { securedObjectId: 'door', ...body }), 403).detail).toMatch(/bound to the mobile device/);
      // For a lock that is not the tenant's, it learns no more than that.
      expectProblem(await fromLock(unbound, 'elsewhere', body), 404);
      // A deleted lock's client only syncs.
      expect(expectProblem(await fromLock(decommissioned, 'gate', body), 403).detail).toMatch(/deleted/);
      // Another lock of the tenant, and the other tenant's lock of the same id space: as missing.
      expect(expectProblem(await fromLock(doorToken, 'side-door', body), 404).detail).toBe('No secured object side-door.');
      expectProblem(await fromLock(doorToken, 'elsewhere', body), 404);
      expectProblem(await fromLock(await lockToken(t, other, 'elsewhere'), 'door', body), 404);
    });
  });

  it('refuses malformed uploads with 400 naming the field, and changes nothing', async () => {
    const phone = await phoneToken(t, tenants.acme, 'phone');
    const tooMany = { entries: Array.from({ length: 1001 }, (_, i) => entry(1000 + i)) };
    const cases: [object, string[]][] = [
      [{ entries: [{ ...entry(1), entryNo: 1.5 }] }, ['entries[0].entryNo']],
      [{ entries: [entry(0)] }, ['entries[0].entryNo']],
      [{ entries: [{ ...entry(1), entryNo: Number.MAX_SAFE_INTEGER + 1 }] }, ['entries[0].entryNo']],
      [{ entries: [{ ...entry(1), entryNo: '1' }] }, ['entries[0].entryNo']],
      [tooMany, ['entries']],
      [{ entries: [] }, ['entries']],
      [{ entries: [entry(1, { result: 'maybe' })] }, ['entries[0].result']],
      [{ entries: [entry(1, { lockTime: -1 })] }, ['entries[0].lockTime']],
      [{ entries: [entry(1, { lockTime: 8640000000000001 })] }, ['entries[0].lockTime']],
      [{ entries: [entry(1, { command: 'x'.repeat(17) })] }, ['entries[0].command']],
      [{ entries: [{ ...entry(1), extra: true }] }, ['entries[0].extra']],
      [{ lockTime: 1.5, entries: entries(1) }, ['lockTime']],
      [{ appliedSerial: -1, entries: entries(1) }, ['appliedSerial']],
      [{ entries: entries(1), securedObjectId: 'door' }, ['securedObjectId']],
    ];
    await expectUnchanged(async () => {
      for (const [payload, fields] of cases) {
        const response = await fromLock(doorToken, 'door', payload);
        expectProblem(response, 400);
        expect(fieldsOf(response), JSON.stringify(payload).slice(0, 100)).toEqual(fields);
      }
      // The relay takes the same entries, and needs the lock.
      expectProblem(await relay(phone, 'phone', { entries: entries(1) }), 400);
      expectProblem(await relay(phone, 'phone', { securedObjectId: 'door', entries: [entry(1, { result: 'maybe' })] }), 400);
      // Text PostgreSQL cannot store is the client's fault too.
      expectProblem(await fromLock(doorToken, 'door', { entries: [entry(900, { reason: 'a\u0000b' })] }), 400);
    });
  });

  it('marks a revocation applied once a phone relays the log of a lock that applied the list it carried (simulator end to end)', async () => {
    const { acme, token } = tenants;
    now += 60_000;
    const kept = await ticket(t, token, 'vault', 'phone', { endDate: now + 86_400_000 });
    const revoked = await ticket(t, token, 'vault', 'phone', { endDate: now + 86_400_000 });
    const phone = await phoneToken(t, acme, 'phone');
    // The lock is installed (docs/api-reference.md 8.1) and never goes online again.
    const trust = (await t.app.inject({ url: '/deviceapi/securedobjects/vault/trust', headers: bearer(await lockToken(t, acme, 'vault')) })).json() as LockProvisioning;
    const vault = new LockSimulator(trust);
    const credentialOf = (tickets: { id: string; credential: string }[], id: string) => tickets.find((item) => item.id === id)!.credential;
    const before = await download(t, phone, 'phone');
    const stolen = credentialOf(before, revoked.id);
    expect(await vault.decide(stolen, 'open', now)).toMatchObject({ decision: 'open' });

    expect((await call(t, token, { method: 'DELETE', url: `/operatorapi/tickets/${revoked.id}` })).statusCode).toBe(200);
    const revocationApplied = async () => {
      const { rows } = await t.database.db.query<{ revocation_applied_at: number | null }>('SELECT revocation_applied_at FROM tickets WHERE id = $1', [revoked.id]);
      return rows[0]!.revocation_applied_at === null ? null : Number(rows[0]!.revocation_applied_at);
    };
    // Pending: the door may still open for the revoked phone.
    expect(await revocationApplied()).toBeNull();
    now += 1000;
    const carried = (await download(t, phone, 'phone')).find((item) => item.id === kept.id)!.revocationList!;
    const { serial } = JSON.parse(Buffer.from(carried.split('.')[1]!, 'base64url').toString('utf8')) as { serial: number };
    // The phone visits: the lock applies the list, then refuses the revoked credential and logs it.
    expect(await vault.applyRevocationList(carried)).toMatchObject({ applied: true, serial });
    expect(await vault.decide(stolen, 'open', now + 5000)).toEqual({ decision: 'deny', reason: 'revoked', ticketId: revoked.id });
    expect(await vault.decide(credentialOf(before, kept.id), 'open', now + 6000)).toMatchObject({ decision: 'open' });

    // The phone reads the lock's log. Relayed as plain entries, it is the phone's word: it acknowledges nothing
    // (docs/api-reference.md 8.5), however true its appliedSerial.
    const upload = vault.accessLogUpload(now + 7000)!;
    expect(upload.appliedSerial).toBe(serial);
    expect(answer(await relay(phone, 'phone', { securedObjectId: 'vault', ...upload }))).toEqual({ accepted: 3, duplicates: 0, gaps: [] });
    expect(await revocationApplied()).toBeNull();
    expect(await telemetry(acme.tenantId, 'vault')).toBeNull();

    // The lock's key is registered; the same log signed by it in a receipt is the lock's own word.
    const vaultKey = newKeyPair();
    await putLockKey(t, acme.tenantId, 'vault', vaultKey);
    now += 1000;
    const signed = receipt(vaultKey, 'vault', { appliedSerial: upload.appliedSerial, lockTime: now + 7000, entries: upload.entries as unknown as Record<string, unknown>[] });
    expect(answer(await relay(phone, 'phone', { securedObjectId: 'vault', receipts: [signed] }))).toEqual({ accepted: 3, duplicates: 0, gaps: [] });
    expect(vault.acknowledgeAccessLog(upload.entries.at(-1)!.entryNo)).toBe(3);
    expect(vault.accessLogUpload(now)).toBeNull();

    expect(await revocationApplied()).toBe(now);
    expect(await telemetry(acme.tenantId, 'vault')).toMatchObject({ applied_through: serial, last_seen_at: now, clock_offset_ms: 7000, log_high: 3 });
    expect((await logRows(acme.tenantId, 'vault')).map((row) => [row.entry_no, row.result, row.reason, row.token_id, row.mobile_device_id, row.via, row.signed])).toEqual([
      [1, 'granted', 'ok', revoked.id, 'phone', 'phone', true],
      [2, 'denied', 'revoked', revoked.id, 'phone', 'phone', true],
      [3, 'granted', 'ok', kept.id, 'phone', 'phone', true],
      [1, 'granted', 'ok', revoked.id, 'phone', 'phone', false],
      [2, 'denied', 'revoked', revoked.id, 'phone', 'phone', false],
      [3, 'granted', 'ok', kept.id, 'phone', 'phone', false],
    ]);
    // Relayed again, the receipt is stored once.
    expect(answer(await relay(phone, 'phone', { securedObjectId: 'vault', receipts: [signed] }))).toEqual({ accepted: 0, duplicates: 3, gaps: [] });
  });
});
