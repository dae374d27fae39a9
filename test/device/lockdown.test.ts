// A lockdown reaching the door (docs/api-reference.md 15, docs/lock-sync.md, docs/lock-integration.md 11): an online
// reference lock holding `?wait=` learns it within a second, an offline one from a phone's download; override credentials
// open, others are refused `lockdown`; the end brings normal again. Held syncs: the deadline, the per-instance bound
// and its 503, shutdown answering them at once, schema rejections, and (PostgreSQL) a change made on another instance.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import type { App } from '../../src/app.js';
import { LockSimulator, type SyncAnswer } from '../../src/simulator/lock-simulator.js';
import { PhoneSimulator } from '../../src/simulator/phone-simulator.js';
import { es256KeyPair, privateJwk } from '../../src/simulator/es256.js';
import { registerKey } from '../helpers/holder-keys.js';
import { anotherInstance, buildTestApp, type TestApp } from '../helpers/app.js';
import { download, lockKeysToken, lockToken, lockTrust, phoneToken, sync, syncUrl, trustWith, type SyncBody } from '../helpers/device.js';
import { bearer, clientToken, createClient, createTenant, type TenantFixture } from '../helpers/oauth.js';
import { call, device, expectProblem, fieldsOf, issueTicket, lock, ticketBody } from '../helpers/operator.js';
import { postgresTestUrl } from '../helpers/postgres-url.js';

const onPostgres = postgresTestUrl() !== undefined;

/** The answer, or a failure once `ms` have passed without one: the test waits for an event, with a deadline. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** Polls `condition` until it holds, failing after `ms`. */
async function until(condition: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${ms} ms`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** A ticket valid since a minute ago: its credential opens at once, whatever second it was signed in. */
const validNow = (t: TestApp, securedObjectId: string, mobileDeviceId: string, extra: object = {}) =>
  ticketBody(t, securedObjectId, mobileDeviceId, { beginDate: t.app.services.clock() - 60_000, ...extra });

function heldSync(app: App, token: string, securedObjectId: string, cursor: string, wait: number): Promise<LightMyRequestResponse> {
  return app.inject({ url: `${syncUrl(securedObjectId, cursor)}&wait=${wait}`, headers: bearer(token) });
}

describe('lockdown at the door', () => {
  let t: TestApp;
  let tenant: TenantFixture;
  let operator: string;
  let manager: string;

  beforeAll(async () => {
    t = await buildTestApp();
    tenant = await createTenant(t.app, 'school');
    operator = await clientToken(t.app, tenant);
    manager = await clientToken(t.app, await createClient(t.app, tenant, ['lockdown:manage', 'tokens:create']));
    for (const id of ['online-door', 'offline-door', 'quiet-door', 'vault-door']) await lock(t, operator, id);
    await device(t, operator, 'pupil');
    await device(t, operator, 'officer');
  });

  afterAll(async () => {
    await t.close();
  });

  const startLockdown = async (mode: 'lockdown' | 'normal') => {
    const response = await call(t, manager, { method: 'POST', url: '/operatorapi/lockdowns', payload: { scope: 'tenant', mode, reason: 'threat on site' } });
    expect(response.statusCode, response.body).toBe(201);
    return response.json() as { id: string; serial: number };
  };

  it('an online lock holding ?wait= learns a lockdown within 1 s; override opens, others are refused; the end brings normal', async () => {
    await issueTicket(t, operator, validNow(t, 'online-door', 'pupil'));
    await issueTicket(t, manager, validNow(t, 'online-door', 'officer', { override: true }));
    const [pupil] = await download(t, await phoneToken(t, tenant, 'pupil'), 'pupil');
    const officer = (await download(t, await phoneToken(t, tenant, 'officer'), 'officer')).find((item) => item.securedObjectId === 'online-door')!;
    expect(JSON.parse(Buffer.from(officer.credential.split('.')[1]!, 'base64url').toString())).toMatchObject({ ovr: true });
    const door = new LockSimulator((await lockTrust(t, tenant, 'online-door')) as never);
    const token = await lockToken(t, tenant, 'online-door');
    // docs/api-reference.md 15: the trust answer carries the lock's state, signed, and whether the lock applied it.
    const trustNow = async () => (await t.app.inject({ url: '/deviceapi/securedobjects/online-door/trust', headers: bearer(token) })).json();
    const claimsOf = (jws: string) => JSON.parse(Buffer.from(jws.split('.')[1]!, 'base64url').toString()) as { aud: string; serial: number; mode: string };
    const before = await trustNow();
    expect(before).toMatchObject({ lockMode: 'normal', lockStateSerial: 0, lockStateApplied: true });
    expect(claimsOf(before.lockState)).toMatchObject({ aud: 'online-door', serial: 0, mode: 'normal' });
    door.applySync((await sync(t, token, 'online-door')) as unknown as SyncAnswer);
    expect(await door.decide(pupil!.credential, 'open', Date.now())).toMatchObject({ decision: 'open' });

    const held = heldSync(t.app, token, 'online-door', door.cursor!, 30);
    await until(() => t.app.services.heldSyncs.count === 1, 5000, 'the sync being held');
    const lockdown = await startLockdown('lockdown');
    const answer = await within(held, 1000, 'the held sync');
    expect(answer.statusCode, answer.body).toBe(200);
    const body = answer.json() as SyncBody;
    expect(body.lockState).toEqual(expect.any(String));
    door.applySync(body as unknown as SyncAnswer);
    expect(door).toMatchObject({ lockdown: true, lockStateSerial: lockdown.serial });
    expect(await door.decide(pupil!.credential, 'open', Date.now())).toMatchObject({ decision: 'deny', reason: 'lockdown' });
    expect(await door.decide(officer.credential, 'open', Date.now())).toMatchObject({ decision: 'open', reason: 'ok' });
    const during = await trustNow();
    expect(during).toMatchObject({ lockMode: 'lockdown', lockStateSerial: lockdown.serial, lockStateApplied: false });
    expect(claimsOf(during.lockState)).toMatchObject({ aud: 'online-door', serial: lockdown.serial, mode: 'lockdown' });
    // A lock provisioned now starts in the lockdown.
    const provisioned = new LockSimulator(during as never);
    expect(provisioned.applyLockState(during.lockState)).toEqual({ applied: true, serial: lockdown.serial, mode: 'lockdown' });

    // docs/api-reference.md 8.4: the next sync acknowledges it; the lock and the lockdown say so.
    door.applySync((await sync(t, token, 'online-door', door.cursor)) as unknown as SyncAnswer);
    expect(await trustNow()).toMatchObject({ lockMode: 'lockdown', lockStateSerial: lockdown.serial, lockStateApplied: true });
    const secured = (await call(t, operator, { method: 'GET', url: '/operatorapi/securedobjects/online-door' })).json();
    expect(secured).toMatchObject({ lockMode: 'lockdown', lockdownApplied: true });
    const reached = (await call(t, manager, { method: 'GET', url: `/operatorapi/lockdowns/${lockdown.id}` })).json();
    expect(reached).toMatchObject({ lockCount: 4, locksReached: 1, locksNotReached: 3 });

    const heldAgain = heldSync(t.app, token, 'online-door', door.cursor!, 30);
    await until(() => t.app.services.heldSyncs.count === 1, 5000, 'the sync being held');
    await startLockdown('normal');
    door.applySync((await within(heldAgain, 1000, 'the held sync')).json() as SyncAnswer);
    expect(door.lockdown).toBe(false);
    expect(await door.decide(pupil!.credential, 'open', Date.now())).toMatchObject({ decision: 'open' });
  });

  it('an offline lock learns it from the next phone download, and the end from a later one; a stale state changes nothing', async () => {
    await issueTicket(t, operator, validNow(t, 'offline-door', 'pupil'));
    await issueTicket(t, manager, validNow(t, 'offline-door', 'officer', { override: true }));
    const door = new LockSimulator((await lockTrust(t, tenant, 'offline-door')) as never);
    const pupilToken = await phoneToken(t, tenant, 'pupil');
    const officerToken = await phoneToken(t, tenant, 'officer');
    const carried = async (token: string, phone: string) => (await download(t, token, phone)).find((item) => item.securedObjectId === 'offline-door' && item.lockState)!;

    const lockdown = await startLockdown('lockdown');
    const visit = await carried(pupilToken, 'pupil');
    expect(door.applyLockState(visit.lockState!)).toEqual({ applied: true, serial: lockdown.serial, mode: 'lockdown' });
    const pupil = (await download(t, pupilToken, 'pupil')).find((item) => item.securedObjectId === 'offline-door')!;
    const officer = (await download(t, officerToken, 'officer')).find((item) => item.securedObjectId === 'offline-door')!;
    expect(await door.decide(pupil.credential, 'open', Date.now())).toMatchObject({ decision: 'deny', reason: 'lockdown' });
    expect(await door.decide(officer.credential, 'open', Date.now())).toMatchObject({ decision: 'open', reason: 'ok' });

    await startLockdown('normal');
    const ended = await carried(officerToken, 'officer');
    expect(door.applyLockState(ended.lockState!)).toMatchObject({ applied: true, mode: 'normal' });
    // A phone that downloaded during the lockdown carries the older state: the lock ignores it.
    expect(door.applyLockState(visit.lockState!)).toEqual({ applied: false, reason: 'stale' });
    expect(await door.decide(pupil.credential, 'open', Date.now())).toMatchObject({ decision: 'open', reason: 'ok' });
  });

  it('an offline lock\'s signed receipt, relayed by the phone that brought the state, makes it reached', async () => {
    // The lock's own key, registered by its installer: its receipts are its word (docs/api-reference.md 11.5).
    const key = es256KeyPair();
    await registerKey(t, await lockKeysToken(t, tenant, 'vault-door'), 'securedobjects', 'vault-door', key);
    const door = new LockSimulator((await trustWith(t, await lockToken(t, tenant, 'vault-door'), 'vault-door')) as never, { key: privateJwk(key) });
    await issueTicket(t, operator, validNow(t, 'vault-door', 'pupil'));
    const lockdown = await startLockdown('lockdown');
    const pupilToken = await phoneToken(t, tenant, 'pupil');
    const phone = new PhoneSimulator();
    const carried = (await download(t, pupilToken, 'pupil')).find((item) => item.securedObjectId === 'vault-door' && item.lockState)!;
    // The phone hands over the revocation list and the state: the list's serial counts the lockdown too.
    expect(await door.applyRevocationList(carried.revocationList!)).toMatchObject({ applied: true });
    expect(door.applyLockState(carried.lockState!)).toMatchObject({ applied: true, mode: 'lockdown' });
    expect(door.serial).toBeGreaterThanOrEqual(lockdown.serial);
    const before = (await call(t, operator, { method: 'GET', url: '/operatorapi/securedobjects/vault-door' })).json();
    expect(before).toMatchObject({ lockMode: 'lockdown', lockdownApplied: false });
    phone.takeReceipt('vault-door', door.receipt(Date.now()));
    const [relay] = phone.receiptUploads();
    const uploaded = await t.app.inject({ method: 'POST', url: '/deviceapi/mobiledevices/pupil/accesslog', headers: bearer(pupilToken), payload: relay });
    expect(uploaded.statusCode, uploaded.body).toBe(200);
    const after = (await call(t, operator, { method: 'GET', url: '/operatorapi/securedobjects/vault-door' })).json();
    expect(after).toMatchObject({ lockMode: 'lockdown', lockdownApplied: true });
    const reached = (await call(t, manager, { method: 'GET', url: `/operatorapi/lockdowns/${lockdown.id}` })).json();
    expect(reached.locksReached).toBeGreaterThanOrEqual(1);
    await startLockdown('normal');
  });

  it('a forged state in a sync answer fails it closed: the lock keeps its state and cursor and says why', async () => {
    const door = new LockSimulator((await lockTrust(t, tenant, 'quiet-door')) as never);
    const answer = (await sync(t, await lockToken(t, tenant, 'quiet-door'), 'quiet-door')) as SyncBody;
    const [header, payload] = answer.lockState!.split('.');
    const forged = JSON.parse(Buffer.from(payload!, 'base64url').toString());
    const tampered = `${header}.${Buffer.from(JSON.stringify({ ...forged, mode: 'normal', serial: forged.serial + 1 })).toString('base64url')}.${answer.lockState!.split('.')[2]}`;
    door.lockdown = true;
    expect(() => door.applySync({ ...answer, lockState: tampered } as unknown as SyncAnswer)).toThrow(/bad-signature/);
    expect(door).toMatchObject({ lockdown: true, cursor: undefined, lockStateRefusal: 'bad-signature' });
  });

  it('a held sync with nothing new answers empty at its deadline, and a change for another lock does not end it early', async () => {
    const token = await lockToken(t, tenant, 'quiet-door');
    const first = await sync(t, token, 'quiet-door');
    const started = Date.now();
    const held = heldSync(t.app, token, 'quiet-door', first.cursor, 1);
    await until(() => t.app.services.heldSyncs.count === 1, 5000, 'the sync being held');
    await issueTicket(t, operator, validNow(t, 'offline-door', 'pupil'));
    const answer = await within(held, 5000, 'the held sync');
    expect(answer.statusCode, answer.body).toBe(200);
    expect(answer.json()).toEqual({ tokens: [], revocations: [], cursor: first.cursor, serial: first.serial, holderBinding: 'optional', revokedKeys: [] });
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(t.app.services.heldSyncs.count).toBe(0);
  });

  it('a held sync answers a new ticket of its lock as soon as it is issued', async () => {
    const token = await lockToken(t, tenant, 'quiet-door');
    const first = await sync(t, token, 'quiet-door');
    const held = heldSync(t.app, token, 'quiet-door', first.cursor, 30);
    await until(() => t.app.services.heldSyncs.count === 1, 5000, 'the sync being held');
    const issued = (await issueTicket(t, operator, ticketBody(t, 'quiet-door', 'pupil'))).json();
    const answer = (await within(held, 1000, 'the held sync')).json() as SyncBody;
    expect(answer.tokens.map((item) => item.id)).toEqual([issued.id]);
  });

  it('refuses a wait above 30 s, below 0 or not a number with 400', async () => {
    const token = await lockToken(t, tenant, 'quiet-door');
    for (const wait of ['31', '-1', 'soon', '1.5']) {
      const response = await t.app.inject({ url: `${syncUrl('quiet-door')}?wait=${wait}`, headers: bearer(token) });
      expectProblem(response, 400);
      expect(fieldsOf(response).join(' ')).toContain('wait');
    }
  });
});

describe('held syncs per instance', () => {
  it('beyond SYNC_WAIT_MAX_HELD a sync answers 503 with Retry-After; shutdown answers the held ones at once', async () => {
    const t = await buildTestApp({ SYNC_WAIT_MAX_HELD: '1' });
    let closed = false;
    try {
      const tenant = await createTenant(t.app, 'bounded');
      const operator = await clientToken(t.app, tenant);
      await lock(t, operator, 'a');
      await lock(t, operator, 'b');
      const tokenA = await lockToken(t, tenant, 'a');
      const tokenB = await lockToken(t, tenant, 'b');
      const cursorA = (await sync(t, tokenA, 'a')).cursor;
      const cursorB = (await sync(t, tokenB, 'b')).cursor;
      const held = heldSync(t.app, tokenA, 'a', cursorA, 30);
      await until(() => t.app.services.heldSyncs.count === 1, 5000, 'the sync being held');
      const refused = await heldSync(t.app, tokenB, 'b', cursorB, 30);
      expectProblem(refused, 503);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      // Without wait the same lock is answered as ever.
      expect((await t.app.inject({ url: syncUrl('b', cursorB), headers: bearer(tokenB) })).statusCode).toBe(200);

      const closing = t.close();
      closed = true;
      const answer = await within(held, 2000, 'the held sync at shutdown');
      expect(answer.statusCode, answer.body).toBe(200);
      expect(answer.json()).toMatchObject({ tokens: [], revocations: [], cursor: cursorA });
      await closing;
    } finally {
      if (!closed) await t.close();
    }
  });

  it('a lock that hangs up while its sync is held stops being held at once, and its slot is free again', async () => {
    const t = await buildTestApp({ SYNC_WAIT_MAX_HELD: '1' });
    try {
      const tenant = await createTenant(t.app, 'hang-up');
      const operator = await clientToken(t.app, tenant);
      await lock(t, operator, 'door');
      const token = await lockToken(t, tenant, 'door');
      const cursor = (await sync(t, token, 'door')).cursor;
      const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
      const gone = new AbortController();
      const request = fetch(`${address}${syncUrl('door', cursor)}&wait=30`, { headers: bearer(token), signal: gone.signal }).catch((error: unknown) => error);
      await until(() => t.app.services.heldSyncs.count === 1, 5000, 'the sync being held');
      gone.abort();
      expect(await request).toMatchObject({ name: 'AbortError' });
      await until(() => t.app.services.heldSyncs.count === 0, 2000, 'the hung-up sync being let go');
      // The slot is free: the next held sync is held, not refused with 503.
      const next = heldSync(t.app, token, 'door', cursor, 1);
      await until(() => t.app.services.heldSyncs.count === 1, 5000, 'the next sync being held');
      expect((await within(next, 5000, 'the next held sync')).statusCode).toBe(200);
    } finally {
      await t.close();
    }
  });

  describe.skipIf(!onPostgres)('on PostgreSQL, two instances', () => {
    it('a lockdown made on one instance answers a sync held on the other', async () => {
      const t = await buildTestApp();
      const peer = await anotherInstance(t);
      try {
        await peer.ready();
        const tenant = await createTenant(t.app, 'campus');
        const operator = await clientToken(t.app, tenant);
        const manager = await clientToken(t.app, await createClient(t.app, tenant, ['lockdown:manage']));
        await lock(t, operator, 'gate');
        const token = await lockToken(t, tenant, 'gate');
        const first = await sync(t, token, 'gate');
        // The peer must trust its watermark (its LISTEN holds) before it holds a sync.
        await until(() => peer.services.changeWatermarks.current(tenant.tenantId) !== undefined, 5000, 'the peer listening');
        const held = heldSync(peer, token, 'gate', first.cursor, 30);
        await until(() => peer.services.heldSyncs.count === 1, 5000, 'the sync being held on the peer');
        const started = await call(t, manager, { method: 'POST', url: '/operatorapi/lockdowns', payload: { scope: 'tenant', mode: 'lockdown', reason: 'x' } });
        expect(started.statusCode, started.body).toBe(201);
        const answer = await within(held, 2000, 'the sync held on the other instance');
        expect(answer.statusCode, answer.body).toBe(200);
        const body = answer.json() as SyncBody;
        expect(JSON.parse(Buffer.from(body.lockState!.split('.')[1]!, 'base64url').toString())).toMatchObject({ aud: 'gate', mode: 'lockdown', serial: started.json().serial });
      } finally {
        await peer.close();
        await t.close();
      }
    });
  });
});
