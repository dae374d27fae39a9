// Lock telemetry under attack (docs/api-reference.md 8.4, 8.5, docs/security-cases.md G): what a forged cursor, a
// re-registered lock id, a relayed absurd clock, malformed values and concurrent uploads can make the server claim.
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/database.js';
import { createAccessLogBudget } from '../../src/services/access-log-budget.js';
import { createAccessLogService } from '../../src/services/access-log.service.js';
import { LockSimulator } from '../../src/simulator/lock-simulator.js';
import { ForbiddenError, NotFoundError } from '../../src/errors.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { download, lockToken, lockTrust, payloadOf, phoneToken, sync } from '../helpers/device.js';
import { bearer, clientToken, createClient, keyRotationToken, type TenantFixture } from '../helpers/oauth.js';
import { call, device, expectProblem, HOUR, lock, ticket, type TicketBody } from '../helpers/operator.js';
import { twoTenants } from '../helpers/tenants.js';
import { newKeyPair, putLockKey, receipt } from '../helpers/holder-keys.js';

const START = Date.UTC(2026, 4, 4, 7, 0, 0, 0);
const DAY = 24 * HOUR;
const YEAR = 365 * DAY;

interface LockBody {
  appliedThrough?: number;
  pendingRevocations: number;
  clockOffset?: number;
}

describe('lock telemetry under attack', () => {
  let t: TestApp;
  let now = START;
  let acme: TenantFixture;
  let other: TenantFixture;
  let operator = '';
  let operatorAt = -Infinity;

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4', ACCESS_TOKEN_TTL_SECONDS: '86400' }, { clock: () => now });
    const tenants = await twoTenants(t);
    acme = tenants.acme;
    other = tenants.other;
  });
  afterAll(async () => {
    await t.close();
  });

  /** A management token of acme, minted again once the clock moved on by half a day (tokens last a day at most). */
  async function op(): Promise<string> {
    if (now - operatorAt > 12 * HOUR) {
      operator = await clientToken(t.app, acme);
      operatorAt = now;
    }
    return operator;
  }

  /** Past LAST_SEEN_RESOLUTION_MS, so the next sync is written whatever its position. */
  const later = () => {
    now += 60_000;
  };

  async function readLock(id: string): Promise<LockBody> {
    const response = await call(t, await op(), { method: 'GET', url: `/operatorapi/securedobjects/${id}` });
    expect(response.statusCode, response.body).toBe(200);
    return response.json();
  }

  async function revoke(id: string): Promise<void> {
    const response = await call(t, await op(), { method: 'DELETE', url: `/operatorapi/tickets/${id}` });
    expect(response.statusCode, response.body).toBe(200);
  }

  async function appliedAt(id: string): Promise<number | null> {
    const { rows } = await t.database.db.query<{ revocation_applied_at: number | null }>('SELECT revocation_applied_at FROM tickets WHERE id = $1', [id]);
    return rows[0]!.revocation_applied_at === null ? null : Number(rows[0]!.revocation_applied_at);
  }

  async function pendingIds(lockId: string): Promise<string[]> {
    const response = await call(t, await op(), { method: 'GET', url: `/operatorapi/revocations?applied=false&securedObjectId=${lockId}` });
    expect(response.statusCode, response.body).toBe(200);
    return (response.json() as TicketBody[]).map((item) => item.id);
  }

  async function downloadedTicket(lockId: string, phoneId: string, overrides: object = {}): Promise<TicketBody> {
    const issued = await ticket(t, await op(), lockId, phoneId, overrides);
    await download(t, await phoneToken(t, acme, phoneId), phoneId);
    return issued;
  }

  const relay = (token: string, deviceId: string, payload: object) =>
    t.app.inject({ method: 'POST', url: `/deviceapi/mobiledevices/${encodeURIComponent(deviceId)}/accesslog`, headers: bearer(token), payload });
  const fromLock = (token: string, lockId: string, payload: object) =>
    t.app.inject({ method: 'POST', url: `/deviceapi/securedobjects/${encodeURIComponent(lockId)}/accesslog`, headers: bearer(token), payload });

  const syncCursor = (seq: number, id = 'ffffffff-ffff-4fff-bfff-ffffffffffff') => Buffer.from(`${seq}:${id}`, 'utf8').toString('base64url');

  async function lastSeq(tenantId: string): Promise<number> {
    const { rows } = await t.database.db.query<{ last_seq: number }>('SELECT last_seq FROM tenant_change_counters WHERE tenant_id = $1', [tenantId]);
    return Number(rows[0]!.last_seq);
  }

  it('a lock registered again with a deleted lock\'s id never acknowledges the revocations its deletion left on their way to the old door', async () => {
    await lock(t, await op(), 'annex');
    await device(t, await op(), 'phone-annex');
    const oldTicket = await downloadedTicket('annex', 'phone-annex');
    // The old door is deleted before it syncs: its deletion's revocation is on its way to it.
    expect((await call(t, await op(), { method: 'DELETE', url: '/operatorapi/securedobjects/annex' })).statusCode).toBe(204);
    expect(await pendingIds('annex')).toEqual([oldTicket.id]);

    // Registrations are told apart by time (ms), as a relay's right is (findRelayRight).
    now += 1;
    await lock(t, await op(), 'annex');
    // The old door may still open for its revocation: it is counted under the id until its credential runs out.
    expect(await readLock('annex')).toMatchObject({ pendingRevocations: 1 });
    const newTicket = await downloadedTicket('annex', 'phone-annex');
    await revoke(newTicket.id);
    expect(await readLock('annex')).toMatchObject({ pendingRevocations: 2 });
    const newLock = await lockToken(t, acme, 'annex');
    const full = await sync(t, newLock, 'annex');
    later();
    await sync(t, newLock, 'annex', full.cursor);
    // The new lock applied its own revocation; the old door's is still on its way to the old door.
    expect(await appliedAt(newTicket.id)).toBe(now);
    expect(await appliedAt(oldTicket.id)).toBeNull();
    expect(await pendingIds('annex')).toEqual([oldTicket.id]);
    expect(await readLock('annex')).toMatchObject({ pendingRevocations: 1 });

    // Nor does the new lock's log upload, whatever appliedSerial it claims.
    later();
    const upload = await fromLock(newLock, 'annex', { appliedSerial: await lastSeq(acme.tenantId), entries: [{ entryNo: 1, lockTime: now, command: 'open', channel: 'btlespp', result: 'denied' }] });
    expect(upload.statusCode, upload.body).toBe(200);
    expect(await appliedAt(oldTicket.id)).toBeNull();
  });

  it('acknowledges a forged sync cursor no further than the lock\'s own last change', async () => {
    await lock(t, await op(), 'quiet');
    await lock(t, await op(), 'busy-elsewhere');
    await device(t, await op(), 'phone-quiet');
    const issued = await downloadedTicket('quiet', 'phone-quiet');
    const quietLock = await lockToken(t, acme, 'quiet');
    const full = await sync(t, quietLock, 'quiet');
    // The tenant moves on with changes that do not concern the lock.
    for (let i = 0; i < 3; i++) await ticket(t, await op(), 'busy-elsewhere', 'phone-quiet');
    const tenantLast = await lastSeq(acme.tenantId);
    expect(tenantLast).toBeGreaterThan(full.serial);

    // A hand-made cursor at the tenant's last change: the lock was never answered that far.
    later();
    const forged = await sync(t, quietLock, 'quiet', syncCursor(tenantLast));
    expect(forged.tokens).toEqual([]);
    expect((await readLock('quiet')).appliedThrough).toBe(full.serial);
    // Another lock's cursor, the same.
    later();
    const elsewhere = await sync(t, await lockToken(t, acme, 'busy-elsewhere'), 'busy-elsewhere');
    later();
    await sync(t, quietLock, 'quiet', elsewhere.cursor);
    expect((await readLock('quiet')).appliedThrough).toBe(full.serial);
    // A relay's appliedSerial, the same.
    const phone = await phoneToken(t, acme, 'phone-quiet');
    const relayed = await relay(phone, 'phone-quiet', {
      securedObjectId: 'quiet',
      appliedSerial: Number.MAX_SAFE_INTEGER,
      entries: [{ entryNo: 1, lockTime: now, tokenId: issued.id, command: 'open', channel: 'btlespp', result: 'granted' }],
    });
    expect(relayed.statusCode, relayed.body).toBe(200);
    expect((await readLock('quiet')).appliedThrough).toBe(full.serial);
  });

  it('bounds the clock margin an absurd lockTime in a signed receipt opens to one credential lifetime: lists and counts stay bounded', async () => {
    await lock(t, await op(), 'cellar');
    await device(t, await op(), 'phone-cellar');
    await device(t, await op(), 'visitor');
    // Revoked a month ago: its credential ran out more than three weeks ago (CREDENTIAL_MAX_LIFETIME is 7 days).
    const old = await downloadedTicket('cellar', 'phone-cellar', { endDate: now + 60 * DAY });
    await revoke(old.id);
    now += 30 * DAY;
    // Revoked now, its credential ran out three days ago: a lock three days behind still accepts it.
    const recent = await downloadedTicket('cellar', 'phone-cellar', { endDate: now + 60 * DAY });
    now += 10 * DAY;
    await revoke(recent.id);
    const cellar = await lockToken(t, acme, 'cellar');
    expect((await sync(t, cellar, 'cellar')).revocations).toEqual([]);
    expect(await readLock('cellar')).toMatchObject({ pendingRevocations: 0 });

    // A phone that held a ticket for the lock says the lock's clock is ten years behind: a report, it moves nothing.
    const phone = await phoneToken(t, acme, 'phone-cellar');
    const entry = { entryNo: 1, lockTime: now - 10 * YEAR, command: 'open', channel: 'btlespp', result: 'denied' };
    const reported = await relay(phone, 'phone-cellar', { securedObjectId: 'cellar', lockTime: now - 10 * YEAR, entries: [entry] });
    expect(reported.statusCode, reported.body).toBe(200);
    expect(await readLock('cellar')).not.toHaveProperty('clockOffset');
    // The lock itself says so, in a receipt signed with its key (its clock was reset, or its key stolen).
    const cellarKey = newKeyPair();
    await putLockKey(t, acme.tenantId, 'cellar', cellarKey);
    const relayed = await relay(phone, 'phone-cellar', { securedObjectId: 'cellar', receipts: [receipt(cellarKey, 'cellar', { lockTime: now - 10 * YEAR, entries: [entry] })] });
    expect(relayed.statusCode, relayed.body).toBe(200);
    // The estimate is shown as it is...
    expect(await readLock('cellar')).toMatchObject({ clockOffset: -10 * YEAR, pendingRevocations: 1 });
    // ...but the lists widen by one credential lifetime at most: the recent revocation, never the old one.
    expect((await sync(t, cellar, 'cellar')).revocations.map((item) => item.tokenId)).toEqual([recent.id]);
    expect(await pendingIds('cellar')).toEqual([recent.id]);
    await ticket(t, await op(), 'cellar', 'visitor');
    const carried = await download(t, await phoneToken(t, acme, 'visitor'), 'visitor');
    expect(payloadOf(carried.find((item) => item.securedObjectId === 'cellar')!.revocationList!).revoked).toEqual([recent.id]);
  });

  it('never answers 500 for extreme values: 1000 weird entries, duplicates, extreme clocks, explain at the extremes', async () => {
    await lock(t, await op(), 'weird');
    await device(t, await op(), 'phone-weird');
    const issued = await downloadedTicket('weird', 'phone-weird');
    const lockAuth = await lockToken(t, acme, 'weird');
    const weirdIds = ['', 'x', 'not-a-uuid', '00000000-0000-0000-0000-000000000000', issued.id.toUpperCase(), `${issued.id}x`, '\u00e9\u{1F600}', 'a'.repeat(256), "'; DROP TABLE tickets; --", '\ud800'];
    const weirdTimes = [0, 1, 8640000000000000, START, Number.MAX_SAFE_INTEGER];
    const entries = Array.from({ length: 1000 }, (_, i) => ({
      // Every tenth a repeat of the one before: duplicates within one upload.
      entryNo: i % 10 === 9 ? i : i + 1,
      lockTime: weirdTimes[i % weirdTimes.length]!,
      ...(i % 3 === 0 ? {} : { tokenId: weirdIds[i % weirdIds.length]! }),
      command: ['open', 'x', 'c'.repeat(16)][i % 3]!,
      channel: ['btlespp', 'nfc', 'z'.repeat(32)][i % 3]!,
      result: i % 2 === 0 ? 'granted' : 'denied',
      ...(i % 4 === 0 ? { reason: 'r'.repeat(200) } : {}),
    }));
    const status = (response: LightMyRequestResponse) => {
      expect([200, 400], response.body).toContain(response.statusCode);
      return response.statusCode;
    };
    // Some of these are refused by the schema (an empty tokenId, a time beyond a Date): never a 500.
    status(await fromLock(lockAuth, 'weird', { lockTime: 8640000000000000, appliedSerial: Number.MAX_SAFE_INTEGER, entries }));
    const valid = entries.filter((entry) => entry.lockTime <= 8640000000000000 && entry.tokenId !== '');
    const stored = await fromLock(lockAuth, 'weird', { lockTime: 8640000000000000, appliedSerial: Number.MAX_SAFE_INTEGER, entries: valid });
    expect(stored.statusCode, stored.body).toBe(200);
    const answer = stored.json() as { accepted: number; duplicates: number };
    expect(answer.accepted + answer.duplicates).toBe(valid.length);
    expect(answer.accepted).toBe(new Set(valid.map((entry) => entry.entryNo)).size);
    // The lock's clock says it is far ahead, then far behind: explain and the counts at every extreme of `at`.
    for (const lockTime of [8640000000000000, 0]) {
      expect(status(await fromLock(lockAuth, 'weird', { lockTime, entries: [{ entryNo: 5000, lockTime, command: 'open', channel: 'btlespp', result: 'denied' }] }))).toBe(200);
      for (const at of [0, 1, now, 8640000000000000]) {
        const explained = await call(t, await op(), { method: 'GET', url: `/operatorapi/access-checks?mobileDeviceId=phone-weird&securedObjectId=weird&at=${at}` });
        expect(explained.statusCode, explained.body).toBe(200);
      }
      expect((await call(t, await op(), { method: 'GET', url: '/operatorapi/securedobjects/weird' })).statusCode).toBe(200);
      expect((await call(t, await op(), { method: 'GET', url: '/operatorapi/revocations?securedObjectId=weird' })).statusCode).toBe(200);
      expect((await sync(t, lockAuth, 'weird')).decommissioned).toBeUndefined();
      await download(t, await phoneToken(t, acme, 'phone-weird'), 'phone-weird');
    }
    for (const query of ['from=0&to=8640000000000000', 'tokenId=%00', `tokenId=${'a'.repeat(256)}`, 'securedObjectId=weird&result=denied']) {
      expect(status(await call(t, await op(), { method: 'GET', url: `/operatorapi/accesslog?${query}` }))).toBeLessThan(500);
    }
    // Another tenant reads none of it.
    const foreign = await call(t, await clientToken(t.app, other), { method: 'GET', url: '/operatorapi/accesslog?securedObjectId=weird' });
    expect(foreign.json()).toEqual([]);
    expectProblem(await call(t, await clientToken(t.app, other), { method: 'GET', url: '/operatorapi/access-checks?mobileDeviceId=phone-weird&securedObjectId=weird' }), 404);
  });

  it('stores overlapping uploads of the lock and a phone relaying its receipts at once exactly once each', async () => {
    await lock(t, await op(), 'busy');
    await device(t, await op(), 'phone-busy');
    await downloadedTicket('busy', 'phone-busy');
    const busyKey = newKeyPair();
    await putLockKey(t, acme.tenantId, 'busy', busyKey);
    const lockAuth = await lockToken(t, acme, 'busy');
    const phone = await phoneToken(t, acme, 'phone-busy');
    const entry = (entryNo: number) => ({ entryNo, lockTime: now - 1000 + entryNo, command: 'open', channel: 'btlespp', result: 'granted' });
    const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => entry(from + i));
    const signed = (entries: Record<string, unknown>[]) => receipt(busyKey, 'busy', { lockTime: now, entries });
    const answers = await Promise.all([
      fromLock(lockAuth, 'busy', { entries: range(1, 600) }),
      relay(phone, 'phone-busy', { securedObjectId: 'busy', receipts: [signed(range(300, 600)), signed(range(601, 900))] }),
      fromLock(lockAuth, 'busy', { entries: range(500, 1000) }),
      relay(phone, 'phone-busy', { securedObjectId: 'busy', receipts: [signed(range(1, 1000).filter((item) => item.entryNo % 2 === 0))] }),
    ]);
    const bodies = answers.map((response) => {
      expect(response.statusCode, response.body).toBe(200);
      return response.json() as { accepted: number; duplicates: number };
    });
    expect(bodies.reduce((sum, body) => sum + body.accepted, 0)).toBe(1000);
    const { rows } = await t.database.db.query<{ n: number; high: number }>(
      `SELECT (SELECT count(*)::int FROM access_log_entries WHERE tenant_id = $1 AND secured_object_id = 'busy') AS n,
              (SELECT log_high FROM lock_telemetry WHERE tenant_id = $1 AND secured_object_id = 'busy') AS high`,
      [acme.tenantId],
    );
    expect({ n: rows[0]!.n, high: Number(rows[0]!.high) }).toEqual({ n: 1000, high: 1000 });
  });

  it('an upload racing the lock\'s deletion and re-registration stores under the old lock or is refused, never under the new one, and never a 500', async () => {
    await device(t, await op(), 'phone-race');
    for (let round = 0; round < 5; round++) {
      const id = `race-${round}`;
      await lock(t, await op(), id);
      await downloadedTicket(id, 'phone-race');
      const oldLock = await lockToken(t, acme, id);
      const entries = Array.from({ length: 200 }, (_, i) => ({ entryNo: i + 1, lockTime: now, command: 'open', channel: 'btlespp', result: 'granted' }));
      const reRegister = async () => {
        expect((await call(t, await op(), { method: 'DELETE', url: `/operatorapi/securedobjects/${id}` })).statusCode).toBe(204);
        now += 1;
        await lock(t, await op(), id);
      };
      const [upload] = await Promise.all([fromLock(oldLock, id, { entries }), reRegister()]);
      expect([200, 403, 404], upload!.body).toContain(upload!.statusCode);
      const { rows } = await t.database.db.query<{ registered: number; n: number }>(
        `SELECT lock_registered_at AS registered, count(*)::int AS n FROM access_log_entries
          WHERE tenant_id = $1 AND secured_object_id = $2 GROUP BY lock_registered_at`,
        [acme.tenantId, id],
      );
      const { rows: current } = await t.database.db.query<{ created_at: number }>('SELECT created_at FROM secured_objects WHERE tenant_id = $1 AND id = $2', [acme.tenantId, id]);
      // Whatever the interleaving, nothing the old lock's client sent is filed under the new lock.
      for (const row of rows) expect(Number(row.registered)).toBeLessThan(Number(current[0]!.created_at));
      if (upload!.statusCode === 200) expect(rows).toEqual([expect.objectContaining({ n: 200 })]);
      else expect(rows).toEqual([]);
      now += 1000;
    }
  });

  it('an upload whose lock is deleted and registered again between the checks and the write stores nothing for the new lock', async () => {
    await device(t, await op(), 'phone-between');
    for (const via of ['lock', 'phone'] as const) {
      const id = `between-${via}`;
      await lock(t, await op(), id);
      await downloadedTicket(id, 'phone-between');
      const lockClient = await createClient(t.app, acme, ['sync'], { securedObjectId: id });
      const phoneClient = await createClient(t.app, acme, ['tokens:download'], { mobileDeviceId: 'phone-between' });
      // The service as the app builds it, whose transaction starts only once the lock was deleted and registered again.
      const db = t.database.db;
      const racing: Database = Object.assign(Object.create(db) as Database, {
        transaction: async <T>(work: Parameters<Database['transaction']>[0]): Promise<T> => {
          expect((await call(t, await op(), { method: 'DELETE', url: `/operatorapi/securedobjects/${id}` })).statusCode).toBe(204);
          now += 1;
          await lock(t, await op(), id);
          return db.transaction(work) as Promise<T>;
        },
      });
      const service = createAccessLogService({ db: racing, clock: () => now, budget: createAccessLogBudget({ entriesPerMinute: t.config.ACCESS_LOG_ENTRIES_PER_LOCK_PER_MINUTE }) });
      const upload = { lockTime: now, appliedSerial: await lastSeq(acme.tenantId), entries: [{ entryNo: 1, lockTime: now, command: 'open', channel: 'btlespp', result: 'granted' as const }] };
      const attempt =
        via === 'lock'
          ? service.uploadFromLock(acme.tenantId, { clientId: lockClient.clientId, securedObjectId: id }, id, upload)
          : service.uploadFromPhone(acme.tenantId, { clientId: phoneClient.clientId, mobileDeviceId: 'phone-between' }, 'phone-between', { ...upload, securedObjectId: id });
      // The old lock's client speaks for a lock that is gone; the phone never held a ticket for the new one.
      await expect(attempt).rejects.toBeInstanceOf(via === 'lock' ? ForbiddenError : NotFoundError);
      const { rows } = await db.query<{ n: number; telemetry: number }>(
        `SELECT (SELECT count(*)::int FROM access_log_entries WHERE tenant_id = $1 AND secured_object_id = $2) AS n,
                (SELECT count(*)::int FROM lock_telemetry WHERE tenant_id = $1 AND secured_object_id = $2) AS telemetry`,
        [acme.tenantId, id],
      );
      expect(rows[0]).toEqual({ n: 0, telemetry: 0 });
    }
  });

  it('an upload holds its lock\'s registration while it writes: a deletion and re-registration meanwhile waits, and files nothing under the new lock', async () => {
    const id = 'held';
    await lock(t, await op(), id);
    const lockClient = await createClient(t.app, acme, ['sync'], { securedObjectId: id });
    const registeredAt = Number((await t.database.db.query<{ created_at: number }>('SELECT created_at FROM secured_objects WHERE tenant_id = $1 AND id = $2', [acme.tenantId, id])).rows[0]!.created_at);
    const db = t.database.db;
    let racer: Promise<void> | undefined;
    const reRegister = async () => {
      expect((await call(t, await op(), { method: 'DELETE', url: `/operatorapi/securedobjects/${id}` })).statusCode).toBe(204);
      now += 1;
      await lock(t, await op(), id);
    };
    // The deletion and re-registration start just before the entries are written, and are given time to commit.
    const racing: Database = Object.assign(Object.create(db) as Database, {
      transaction: <T>(work: Parameters<Database['transaction']>[0]): Promise<T> =>
        db.transaction((tx) =>
          work(
            Object.assign(Object.create(tx) as typeof tx, {
              query: async (text: string, params?: readonly unknown[]) => {
                // The entries are written by insert_access_log_entries (migration 037), called once per numbering.
                if (text.includes('insert_access_log_entries(') && racer === undefined) {
                  racer = reRegister();
                  await Promise.race([racer, new Promise((resolve) => setTimeout(resolve, 500))]);
                }
                return tx.query(text, params);
              },
            }),
          ),
        ) as Promise<T>,
    });
    const service = createAccessLogService({ db: racing, clock: () => now, budget: createAccessLogBudget({ entriesPerMinute: t.config.ACCESS_LOG_ENTRIES_PER_LOCK_PER_MINUTE }) });
    const entries = [{ entryNo: 1, lockTime: now, command: 'open', channel: 'btlespp', result: 'granted' as const }];
    const answer = await service.uploadFromLock(acme.tenantId, { clientId: lockClient.clientId, securedObjectId: id }, id, { entries });
    await racer;
    expect(answer.accepted).toBe(1);
    const { rows } = await db.query<{ registered: number }>('SELECT lock_registered_at AS registered FROM access_log_entries WHERE tenant_id = $1 AND secured_object_id = $2', [acme.tenantId, id]);
    // Filed under the lock the client spoke for, which existed until the upload committed.
    expect(rows.map((row) => Number(row.registered))).toEqual([registeredAt]);
    // The new lock starts with no telemetry of the old one's upload.
    expect((await db.query('SELECT 1 FROM lock_telemetry WHERE tenant_id = $1 AND secured_object_id = $2', [acme.tenantId, id])).rows).toEqual([]);
  });

  it('explain judges first the tickets that may open: a revoked credential the lock has not applied, beyond 50 newer ones, still says allow as the lock does', async () => {
    await lock(t, await op(), 'crowded');
    await device(t, await op(), 'phone-crowded');
    const old = await downloadedTicket('crowded', 'phone-crowded', { commands: ['open'] });
    const credential = (await download(t, await phoneToken(t, acme, 'phone-crowded'), 'phone-crowded')).find((item) => item.id === old.id)!.credential;
    await revoke(old.id);
    for (let index = 0; index < 50; index++) {
      now += 1000;
      await ticket(t, await op(), 'crowded', 'phone-crowded', { commands: ['clos'] });
    }
    await download(t, await phoneToken(t, acme, 'phone-crowded'), 'phone-crowded');
    // The lock never learnt the revocation (provisioned before it, as its trust then said): it opens for the old credential.
    const simulator = new LockSimulator({ ...(await lockTrust(t, acme, 'crowded')), revoked: [] });
    expect(await simulator.decide(credential, 'open', now, 'btlespp')).toMatchObject({ decision: 'open' });
    const response = await call(t, await op(), { method: 'GET', url: '/operatorapi/access-checks?mobileDeviceId=phone-crowded&securedObjectId=crowded' });
    expect(response.statusCode, response.body).toBe(200);
    const body = response.json() as { decision: string; reasons: { code: string }[]; tokens: { id: string }[]; truncated: boolean };
    expect(body).toMatchObject({ decision: 'allow', reasons: [{ code: 'revocation-not-applied' }], truncated: true });
    expect(body.tokens[0]!.id).toBe(old.id);
    expect(body.tokens).toHaveLength(50);
  });

  it('explain says a credential under a withdrawn key may still open a lock that has not applied the key-set change, as the lock does', async () => {
    // On a whole second: the credential's nbf rounds up to one.
    now = Math.ceil(now / 1000) * 1000;
    await lock(t, await op(), 'offline');
    await device(t, await op(), 'phone-offline');
    const issued = await downloadedTicket('offline', 'phone-offline');
    const credential = (await download(t, await phoneToken(t, acme, 'phone-offline'), 'phone-offline')).find((item) => item.id === issued.id)!.credential;
    const lockAuth = await lockToken(t, acme, 'offline');
    const simulator = new LockSimulator(await lockTrust(t, acme, 'offline'));
    const syncSimulator = () =>
      simulator.sync(async (cursor) => {
        const response = await t.app.inject({ url: `/deviceapi/securedobjects/offline/sync${cursor ? `?cursor=${encodeURIComponent(cursor)}` : ''}`, headers: bearer(lockAuth) });
        expect(response.statusCode, response.body).toBe(200);
        return { answer: response.json(), more: false };
      });
    await syncSimulator();
    const explain = async () => {
      const response = await call(t, await op(), { method: 'GET', url: '/operatorapi/access-checks?mobileDeviceId=phone-offline&securedObjectId=offline' });
      expect(response.statusCode, response.body).toBe(200);
      return response.json() as { decision: string; reasons: { code: string; message: string }[] };
    };
    // The key leaked: an emergency rotation withdraws it at once. The lock has not synced since: it still holds the key.
    const rotation = await call(t, await keyRotationToken(t.app, acme), { method: 'POST', url: '/operatorapi/ticket-keys/rotations', payload: { emergency: true } });
    expect(rotation.statusCode, rotation.body).toBe(201);
    expect(await simulator.decide(credential, 'open', now, 'btlespp')).toMatchObject({ decision: 'open' });
    const before = await explain();
    expect(before).toMatchObject({ decision: 'allow', reasons: [{ code: 'key-not-published' }] });
    expect(before.reasons[0]!.message).toMatch(/MAY STILL OPEN/);
    // The lock syncs (learning the new set), and its next sync acknowledges it: both refuse.
    later();
    await syncSimulator();
    later();
    await syncSimulator();
    expect(await simulator.decide(credential, 'open', now, 'btlespp')).toMatchObject({ decision: 'deny', reason: 'unknown-key' });
    expect(await explain()).toMatchObject({ decision: 'deny', reasons: [{ code: 'key-not-published' }] });
  });
});
