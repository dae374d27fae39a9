// Issue → download → open → revoke → sync → deny: the backend's truth reaching the door (docs/api-reference.md 6, docs/service-overview.md 1 and 4),
// with locks provisioned from the trust endpoint (docs/api-reference.md 8.1), and a lock that is never online learning a
// revocation from the list a visiting phone carries (docs/api-reference.md 8.3).
import { SignJWT, generateKeyPair, decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LockSimulator, type LockProvisioning, type SyncAnswer } from '../../src/simulator/lock-simulator.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { bearer, clientToken, createClient, createTenant, createUser, passwordGrant, type TenantFixture } from '../helpers/oauth.js';

describe('a lock deciding on downloaded credentials', () => {
  let now = Date.UTC(2026, 10, 22, 12);
  let t: TestApp;
  let tenant: TenantFixture;
  let operator: Record<string, string>;
  let access: Record<string, string>;
  let phoneToken: string;
  let lockToken: string;
  let garageToken: string;
  let lock: LockSimulator;
  const day = 86_400_000;

  async function syncLock(): Promise<void> {
    await lock.sync(async (cursor) => {
      const query = cursor ? `?cursor=${encodeURIComponent(cursor)}` : '';
      const response = await t.app.inject({ url: `/deviceapi/securedobjects/front-door/sync${query}`, headers: bearer(lockToken) });
      expect(response.statusCode).toBe(200);
      return { answer: response.json() as SyncAnswer, more: String(response.headers.link ?? '').includes('rel="next"') };
    });
  }

  /** What an installer writes into the lock, fetched through the lock's own client (docs/api-reference.md 8.1). */
  async function provision(securedObjectId: string, token: string): Promise<LockSimulator> {
    const response = await t.app.inject({ url: `/deviceapi/securedobjects/${securedObjectId}/trust`, headers: bearer(token) });
    expect(response.statusCode, response.body).toBe(200);
    const trust = response.json() as LockProvisioning;
    expect(trust).toMatchObject({ issuer: 'http://issuer.test/tenants/acme', securedObjectId, maxCredentialLifetime: 604_800 });
    return new LockSimulator(trust);
  }

  async function download(): Promise<{ id: string; credential: string; securedObjectId: string; downloadDate: number; revocationList?: string }[]> {
    const response = await t.app.inject({ url: '/deviceapi/mobiledevices/phone-1/tickets', headers: bearer(phoneToken) });
    expect(response.statusCode).toBe(200);
    return response.json();
  }

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4' }, { clock: () => now });
    tenant = await createTenant(t.app, 'acme');
    operator = bearer(await clientToken(t.app, tenant));
    const uuid = '7d8a0c1e-4b7f-4d5e-9a41-3c2b1f0e9d8c';
    for (const id of ['front-door', 'garage']) {
      const registered = await t.app.inject({ method: 'POST', url: '/operatorapi/securedobjects', headers: operator, payload: { id, channels: ['btlespp'], localName: id, uuid } });
      expect(registered.statusCode).toBe(201);
    }
    expect((await t.app.inject({ method: 'POST', url: '/operatorapi/mobiledevices', headers: operator, payload: { id: 'phone-1' } })).statusCode).toBe(201);
    phoneToken = await clientToken(t.app, await createClient(t.app, tenant, ['tokens:download'], { mobileDeviceId: 'phone-1' }));
    lockToken = await clientToken(t.app, await createClient(t.app, tenant, ['sync'], { securedObjectId: 'front-door' }));
    garageToken = await clientToken(t.app, await createClient(t.app, tenant, ['sync'], { securedObjectId: 'garage' }));
    const app = await createClient(t.app, tenant, ['device-groups:write', 'access-permissions:write']);
    await createUser(t.app, tenant, 'manager', 'long enough pass');
    access = bearer((await passwordGrant(t.app, app, 'manager@acme', 'long enough pass')).json().access_token);
    lock = await provision('front-door', lockToken);
  });
  afterAll(async () => {
    await t.close();
  });

  it('opens for a granted phone, denies after revocation once synced', async () => {
    const resident = (await t.app.inject({ method: 'POST', url: '/v1/residents', headers: access, payload: { name: 'Alice', mobileDeviceIds: ['phone-1'] } })).json();
    const group = (await t.app.inject({ method: 'POST', url: '/v1/lock-groups', headers: access, payload: { name: 'Home', securedObjectIds: ['front-door', 'garage'] } })).json();
    const granted = await t.app.inject({
      method: 'POST',
      url: '/v1/access-permissions',
      headers: access,
      payload: { residentId: resident.id, lockGroupId: group.id, beginDate: now - day, endDate: now + 30 * day, commands: ['open'], channels: ['btlespp'] },
    });
    expect(granted.json().tokenCount).toBe(2);

    const tickets = await download();
    expect(tickets).toHaveLength(2);
    await syncLock();
    const front = tickets.find((ticket) => ticket.securedObjectId === 'front-door')!;
    const garage = tickets.find((ticket) => ticket.securedObjectId === 'garage')!;
    expect(decodeProtectedHeader(front.credential)).toMatchObject({ typ: 'ticket+jwt', alg: 'EdDSA' });
    expect(front.downloadDate).toBe(now);

    expect(await lock.decide(front.credential, 'open', now)).toEqual({ decision: 'open', reason: 'ok', ticketId: front.id });
    expect(await lock.decide(front.credential, 'clos', now)).toMatchObject({ decision: 'deny', reason: 'command-not-granted' });
    expect(await lock.decide(garage.credential, 'open', now)).toMatchObject({ decision: 'deny', reason: 'wrong-lock' });
    expect(await lock.decide(front.credential, 'open', now + 31 * day)).toMatchObject({ decision: 'deny', reason: 'expired' });
    expect(await lock.decide(front.credential, 'open', now - 2 * day)).toMatchObject({ decision: 'deny', reason: 'not-yet-valid' });

    // Offline the lock keeps opening until it learns of the revocation: that is what sync is for.
    const revoked = await t.app.inject({ method: 'DELETE', url: `/operatorapi/tickets/${front.id}`, headers: operator });
    expect(revoked.json().status).toBe('REVOKED');
    expect(await lock.decide(front.credential, 'open', now)).toMatchObject({ decision: 'open' });
    await syncLock();
    expect(lock.isRevoked(front.id)).toBe(true);
    expect(await lock.decide(front.credential, 'open', now)).toEqual({ decision: 'deny', reason: 'revoked', ticketId: front.id });

    // The phone no longer gets the revoked ticket; the download date was set once.
    const again = await download();
    expect(again.map((ticket) => ticket.id)).toEqual([garage.id]);
    expect(again[0]!.credential).toBe(garage.credential);
  });

  it('refuses forged signatures, unknown keys and access tokens presented as credentials', async () => {
    const [ticket] = await download();
    const [header, payload, signature] = ticket!.credential.split('.');
    const flipped = `${header}.${payload}.${signature!.startsWith('A') ? 'B' : 'A'}${signature!.slice(1)}`;
    expect(await lock.decide(flipped, 'open', now)).toMatchObject({ decision: 'deny', reason: 'bad-signature' });

    const { privateKey } = await generateKeyPair('EdDSA', { extractable: true });
    const forged = await new SignJWT(JSON.parse(Buffer.from(payload!, 'base64url').toString()))
      .setProtectedHeader({ alg: 'EdDSA', typ: 'ticket+jwt', kid: 'not-a-known-kid' })
      .sign(privateKey);
    expect(await lock.decide(forged, 'open', now)).toMatchObject({ decision: 'deny', reason: 'unknown-key' });

    const sameKid = await new SignJWT(JSON.parse(Buffer.from(payload!, 'base64url').toString()))
      .setProtectedHeader({ alg: 'EdDSA', typ: 'ticket+jwt', kid: decodeProtectedHeader(ticket!.credential).kid! })
      .sign(privateKey);
    expect(await lock.decide(sameKid, 'open', now)).toMatchObject({ decision: 'deny', reason: 'bad-signature' });

    expect(await lock.decide(phoneToken, 'open', now)).toMatchObject({ decision: 'deny', reason: 'malformed' });
    // And the other way round: a credential is never an access token (docs/security-cases.md 27).
    const asBearer = await t.app.inject({ url: '/deviceapi/mobiledevices/phone-1/tickets', headers: bearer(ticket!.credential) });
    expect(asBearer.statusCode).toBe(401);
  });

  it('a lock that is never online learns a revocation from the list a visiting phone carries, and ignores stale ones', async () => {
    // The garage is provisioned once and never syncs: what it learns comes from phones (docs/api-reference.md 8.3).
    const garageLock = await provision('garage', garageToken);
    // A second garage ticket for the phone, so that its downloads keep carrying the garage's list once one is revoked.
    const extra = await t.app.inject({
      method: 'POST',
      url: '/operatorapi/tickets',
      headers: operator,
      payload: { securedObjectId: 'garage', mobileDeviceId: 'phone-1', beginDate: now - day, endDate: now + day, commands: ['open'], channels: ['btlespp'] },
    });
    expect(extra.statusCode, extra.body).toBe(201);
    const before = (await download()).filter((ticket) => ticket.securedObjectId === 'garage');
    expect(before).toHaveLength(2);
    const [kept, revoked] = [before.find((ticket) => ticket.id === extra.json().id)!, before.find((ticket) => ticket.id !== extra.json().id)!];
    // The page carries the garage's list once, on its first garage ticket, whichever that is.
    const listOf = (tickets: { securedObjectId: string; revocationList?: string }[]) => {
      const carrying = tickets.filter((ticket) => ticket.securedObjectId === 'garage' && ticket.revocationList !== undefined);
      expect(carrying).toHaveLength(1);
      return carrying[0]!.revocationList!;
    };
    const oldList = listOf(before);
    expect(decodeProtectedHeader(oldList)).toMatchObject({ typ: 'revocation-list+jwt' });
    expect(await garageLock.applyRevocationList(oldList)).toMatchObject({ applied: true, newlyRevoked: 0 });
    for (const ticket of [kept, revoked]) expect(await garageLock.decide(ticket.credential, 'open', now)).toEqual({ decision: 'open', reason: 'ok', ticketId: ticket.id });

    expect((await t.app.inject({ method: 'DELETE', url: `/operatorapi/tickets/${revoked.id}`, headers: operator })).statusCode).toBe(200);
    // Offline, the garage still opens for the revoked ticket until a phone brings the news.
    expect(await garageLock.decide(revoked.credential, 'open', now)).toMatchObject({ decision: 'open' });
    const carried = listOf(await download());
    expect(await garageLock.applyRevocationList(carried)).toMatchObject({ applied: true, newlyRevoked: 1 });
    expect(garageLock.serial).toBeGreaterThan(0);
    expect(await garageLock.decide(revoked.credential, 'open', now)).toEqual({ decision: 'deny', reason: 'revoked', ticketId: revoked.id });
    expect(await garageLock.decide(kept.credential, 'open', now)).toEqual({ decision: 'open', reason: 'ok', ticketId: kept.id });

    // A phone carrying an older list, or the same one again, changes nothing; another lock's list is not for it.
    expect(await garageLock.applyRevocationList(oldList)).toEqual({ applied: false, reason: 'stale' });
    expect(await garageLock.applyRevocationList(carried)).toEqual({ applied: false, reason: 'stale' });
    expect(await lock.applyRevocationList(carried)).toEqual({ applied: false, reason: 'wrong-lock' });
    expect(await garageLock.decide(revoked.credential, 'open', now)).toMatchObject({ reason: 'revoked' });
  });

  it('sync without changes answers empty arrays and the same cursor', async () => {
    await syncLock();
    const cursor = lock.cursor!;
    const response = await t.app.inject({ url: `/deviceapi/securedobjects/front-door/sync?cursor=${encodeURIComponent(cursor)}`, headers: bearer(lockToken) });
    expect(response.json()).toEqual({ tokens: [], revocations: [], cursor, serial: lock.serial, holderBinding: 'optional', revokedKeys: [] });
    now += 1000;
  });
});
