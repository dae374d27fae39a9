// Lock trust (docs/api-reference.md 8.1–8.3, 6.3; docs/security-cases.md G39, G48): tenant-bound credentials and the
// trust a lock is provisioned with, bounded offline validity, renewal, and the revocation lists phones carry.
import { compactVerify, createLocalJWKSet, decodeProtectedHeader, errors, jwtVerify, type JSONWebKeySet } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { download as downloadPage, downloadRequest, lockToken, phoneToken, sync, type DownloadedTicket } from '../helpers/device.js';
import { bearer, clientToken } from '../helpers/oauth.js';
import { call, expectProblem, HOUR, ticket } from '../helpers/operator.js';
import { twoTenants, type TwoTenants } from '../helpers/tenants.js';

const DAY = 24 * HOUR;
const LIFETIME_S = 7 * 86400;
/** A fixed instant with a millisecond part, so rounding shows. */
const START = Date.UTC(2026, 0, 5, 12, 0, 0, 250);

interface Trust {
  issuer: string;
  securedObjectId: string;
  keys: JSONWebKeySet;
  maxCredentialLifetime: number;
}

/** A downloaded ticket with the fields of docs/api-reference.md 8.2 and 8.3. */
type Downloaded = Omit<DownloadedTicket, 'credential'> & { credential?: string; credentialAvailableFrom?: number; revocationList?: string };

const download = async (...args: Parameters<typeof downloadPage>) => (await downloadPage(...args)) as unknown as Downloaded[];

interface RevocationListClaims {
  iss: string;
  aud: string;
  serial: number;
  iat: number;
  revoked: string[];
  keys: JSONWebKeySet;
}

describe('lock trust', () => {
  let t: TestApp;
  let now = START;
  let tenants: TwoTenants;

  async function trustOf(tenant: TwoTenants['acme'], lockId: string): Promise<Trust> {
    const response = await t.app.inject({ url: `/deviceapi/securedobjects/${lockId}/trust`, headers: bearer(await lockToken(t, tenant, lockId)) });
    expect(response.statusCode, response.body).toBe(200);
    return response.json();
  }

  /** Verifies a credential the way docs/api-reference.md 8.1 says a lock does, with a plain jose jwtVerify. */
  function verifyAsLock(credential: string, trust: Trust, at: number) {
    return jwtVerify(credential, createLocalJWKSet(trust.keys), {
      issuer: trust.issuer,
      audience: trust.securedObjectId,
      typ: 'ticket+jwt',
      algorithms: ['EdDSA', 'ES256'],
      currentDate: new Date(at),
      clockTolerance: 0,
    });
  }

  async function revocationListClaims(list: string, trust: Trust): Promise<RevocationListClaims> {
    const header = decodeProtectedHeader(list);
    expect(header.typ).toBe('revocation-list+jwt');
    const { payload } = await compactVerify(list, createLocalJWKSet(trust.keys));
    return JSON.parse(new TextDecoder().decode(payload)) as RevocationListClaims;
  }

  beforeAll(async () => {
    t = await buildTestApp({}, { clock: () => now });
    tenants = await twoTenants(t, {
      acme: { locks: ['front-door', 'back-door'], devices: ['phone-a', 'phone-b', 'phone-c'] },
      other: { locks: ['front-door'], devices: ['intruder-phone'] },
    });
  });
  afterAll(async () => {
    await t.close();
  });

  describe('tenant-bound credentials (docs/api-reference.md 8.1, docs/security-cases.md G39)', () => {
    it('refuses another tenant\'s credential for a lock with the same id: jose with the tenant\'s issuer and key set rejects it', async () => {
      const { acme, other, otherToken } = tenants;
      await ticket(t, otherToken, 'front-door', 'intruder-phone', { endDate: now + DAY });
      const [stolen] = await download(t, await phoneToken(t, other, 'intruder-phone'), 'intruder-phone');
      const acmeTrust = await trustOf(acme, 'front-door');
      const otherTrust = await trustOf(other, 'front-door');
      expect(acmeTrust.issuer).toBe('http://issuer.test/tenants/acme');
      expect(otherTrust.issuer).toBe('http://issuer.test/tenants/other');
      // Same lock id, two issuers and two disjoint key sets.
      expect(acmeTrust.securedObjectId).toBe(otherTrust.securedObjectId);
      const acmeKids = acmeTrust.keys.keys.map((key) => key.kid);
      expect(otherTrust.keys.keys.some((key) => acmeKids.includes(key.kid))).toBe(false);
      await expect(verifyAsLock(stolen!.credential!, acmeTrust, now + 1000)).rejects.toBeInstanceOf(errors.JOSEError);
      // The issuer alone decides it too: with the other tenant's keys but acme's issuer, it is still refused.
      await expect(verifyAsLock(stolen!.credential!, { ...otherTrust, issuer: acmeTrust.issuer }, now + 1000)).rejects.toThrow(/iss/);
      // And it is a genuine credential of its own tenant.
      const { payload } = await verifyAsLock(stolen!.credential!, otherTrust, now + 1000);
      expect(payload.iss).toBe('http://issuer.test/tenants/other');
    });

    it('answers the trust a lock is provisioned with to the lock\'s own client only', async () => {
      const { acme, other } = tenants;
      const trust = await trustOf(acme, 'front-door');
      expect(trust).toEqual({
        issuer: 'http://issuer.test/tenants/acme',
        securedObjectId: 'front-door',
        keys: { keys: expect.any(Array) },
        maxCredentialLifetime: LIFETIME_S,
        holderBinding: 'optional',
        serial: expect.any(Number),
        revoked: [],
        revokedKeys: [],
        // docs/api-reference.md 15: no lockdown reached it; the same state signed for the installer to write.
        lockMode: 'normal',
        lockStateSerial: 0,
        lockStateApplied: true,
        lockState: expect.stringMatching(/^[\w-]+\.[\w-]+\.[\w-]+$/),
      });
      for (const key of trust.keys.keys) expect(Object.keys(key)).not.toContain('d');
      const ownToken = await lockToken(t, acme, 'front-door');
      const get = (token: string, id: string) => t.app.inject({ url: `/deviceapi/securedobjects/${id}/trust`, headers: bearer(token) });
      // Another lock of the tenant: as missing; another tenant's lock of the same id: as missing.
      expect(expectProblem(await get(ownToken, 'back-door'), 404).detail).toBe('No secured object back-door.');
      const otherTenantsLock = await get(await lockToken(t, other, 'front-door'), 'back-door');
      expectProblem(otherTenantsLock, 404);
      // An unbound sync client syncs any lock but provisions none.
      const unbound = await t.app.services.clients.create({ tenantId: acme.tenantId, actor: 'cli', requestId: null }, { name: 'hub', scopes: ['sync'] });
      const { access_token: unboundToken } = (
        await t.app.inject({
          method: 'POST',
          url: '/oauth/token',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          payload: `grant_type=client_credentials&client_id=${encodeURIComponent(unbound.clientId)}&client_secret=${encodeURIComponent(unbound.clientSecret)}`,
        })
      ).json();
      expect(expectProblem(await get(unboundToken, 'front-door'), 403).detail).toMatch(/bound to the secured object/);
      // A phone's client may not read it.
      expectProblem(await get(await phoneToken(t, acme, 'phone-a'), 'front-door'), 403);
    });

    it('rounds nbf up and exp down, so the seconds never widen [beginDate, endDate)', async () => {
      const { acme, token } = tenants;
      const beginDate = now + 1_500; // …:01.750
      const endDate = now + 2 * HOUR + 300; // …:00.550
      const issued = await ticket(t, token, 'back-door', 'phone-c', { beginDate, endDate });
      const downloaded = (await download(t, await phoneToken(t, acme, 'phone-c'), 'phone-c')).find((item) => item.id === issued.id)!;
      const trust = await trustOf(acme, 'back-door');
      const { payload } = await verifyAsLock(downloaded.credential!, trust, beginDate + 1000);
      expect(payload.nbf).toBe(Math.ceil(beginDate / 1000));
      expect(payload.exp).toBe(Math.floor(endDate / 1000));
      expect(payload.nbf! * 1000).toBeGreaterThanOrEqual(beginDate);
      expect(payload.exp! * 1000).toBeLessThanOrEqual(endDate);
      expect(payload).toMatchObject({ jti: issued.id, sub: 'phone-c', aud: 'back-door', beginDate, endDate, iat: Math.floor(now / 1000) });
      // A lock checking the standard way refuses it a millisecond before nbf and at exp.
      await expect(verifyAsLock(downloaded.credential!, trust, payload.nbf! * 1000 - 1)).rejects.toThrow(/nbf/);
      await expect(verifyAsLock(downloaded.credential!, trust, payload.exp! * 1000)).rejects.toThrow(/exp/);
    });
  });

  describe('bounded offline validity (docs/api-reference.md 8.2)', () => {
    it('signs a year-long ticket for one lifetime, renews it only past half-life, and stores it sealed (docs/security-cases.md G48)', async () => {
      const { acme } = tenants;
      now = START + 10 * DAY;
      const token = await clientToken(t.app, acme);
      const issued = await ticket(t, token, 'front-door', 'phone-a', { beginDate: now - HOUR, endDate: now + 365 * DAY });
      const first = (await download(t, await phoneToken(t, acme, 'phone-a'), 'phone-a')).find((item) => item.id === issued.id)!;
      const trust = await trustOf(acme, 'front-door');
      const claims = (await verifyAsLock(first.credential!, trust, now)).payload;
      expect(claims.exp! - claims.iat!).toBe(LIFETIME_S);
      const { rows } = await t.database.db.query<Record<string, unknown>>('SELECT * FROM tickets WHERE id = $1', [issued.id]);
      const row = rows[0]!;
      expect(row.credential_expires_at).toBe(claims.exp! * 1000);
      expect(row.credential_issued_at).toBe(claims.iat! * 1000);
      expect(row.credential_kid).toBe(decodeProtectedHeader(first.credential!).kid);
      // No column of the row holds the credential or any part of it in plain text.
      const stored = JSON.stringify(row, (_key, value: unknown) => (Buffer.isBuffer(value) || value instanceof Uint8Array ? Buffer.from(value).toString('latin1') : value));
      for (const part of first.credential!.split('.')) expect(stored).not.toContain(part.slice(0, 40));

      // Before half-life: the same credential again.
      now += 3 * DAY;
      const again = (await download(t, await phoneToken(t, acme, 'phone-a'), 'phone-a')).find((item) => item.id === issued.id)!;
      expect(again.credential).toBe(first.credential);
      // Past half-life: a new one, a lifetime from now, and the stored expiry follows.
      now += 1 * DAY;
      const renewed = (await download(t, await phoneToken(t, acme, 'phone-a'), 'phone-a')).find((item) => item.id === issued.id)!;
      expect(renewed.credential).not.toBe(first.credential);
      const renewedClaims = (await verifyAsLock(renewed.credential!, trust, now)).payload;
      expect(renewedClaims.iat).toBe(Math.floor(now / 1000));
      expect(renewedClaims.exp).toBe(Math.floor(now / 1000) + LIFETIME_S);
      const after = await t.database.db.query<{ credential_expires_at: number }>('SELECT credential_expires_at FROM tickets WHERE id = $1', [issued.id]);
      expect(after.rows[0]!.credential_expires_at).toBe(renewedClaims.exp! * 1000);
    });

    it('renews a credential cached before migration 009 (its recorded expiry is the ticket\'s end) once its own half-life has passed', async () => {
      const { acme } = tenants;
      now = START + 40 * DAY;
      const token = await clientToken(t.app, acme);
      const issued = await ticket(t, token, 'back-door', 'phone-a', { beginDate: now - HOUR, endDate: now + 365 * DAY });
      const phone = async () => (await download(t, await phoneToken(t, acme, 'phone-a'), 'phone-a')).find((item) => item.id === issued.id)!;
      const first = await phone();
      // The migration sets the recorded expiry of an old-form credential to the ticket's end; greatest() keeps it.
      await t.database.db.query('UPDATE tickets SET credential_expires_at = end_date WHERE id = $1', [issued.id]);
      now += 4 * DAY;
      const renewed = await phone();
      expect(renewed.credential).not.toBe(first.credential);
      const trust = await trustOf(acme, 'back-door');
      expect((await verifyAsLock(renewed.credential!, trust, now + 2 * DAY)).payload.exp).toBe(Math.floor(now / 1000) + LIFETIME_S);
    });

    it('lists a ticket that begins beyond one lifetime without a credential, with credentialAvailableFrom, and signs it once inside', async () => {
      const { acme } = tenants;
      now = START + 20 * DAY;
      const token = await clientToken(t.app, acme);
      const beginDate = now + 30 * DAY;
      const issued = await ticket(t, token, 'back-door', 'phone-b', { beginDate, endDate: beginDate + 10 * DAY });
      const early = (await download(t, await phoneToken(t, acme, 'phone-b'), 'phone-b')).find((item) => item.id === issued.id)!;
      expect(early.credential).toBeUndefined();
      // The first whole second at which a credential signed then is valid for at least a second after nbf.
      expect(early.credentialAvailableFrom).toBe(Math.ceil(beginDate / 1000) * 1000 - LIFETIME_S * 1000 + 1000);
      expect(early.downloadDate).toBe(now);
      const { rows } = await t.database.db.query('SELECT credential_encrypted FROM tickets WHERE id = $1', [issued.id]);
      expect(rows[0]).toEqual({ credential_encrypted: null });
      now = early.credentialAvailableFrom! - 1;
      expect((await download(t, await phoneToken(t, acme, 'phone-b'), 'phone-b')).find((item) => item.id === issued.id)!.credential).toBeUndefined();
      now = early.credentialAvailableFrom!;
      const inside = (await download(t, await phoneToken(t, acme, 'phone-b'), 'phone-b')).find((item) => item.id === issued.id)!;
      expect(inside.credentialAvailableFrom).toBeUndefined();
      const claims = (await verifyAsLock(inside.credential!, await trustOf(acme, 'back-door'), Math.ceil(beginDate / 1000) * 1000)).payload;
      expect(claims.nbf).toBe(Math.ceil(beginDate / 1000));
      expect(claims.exp).toBe(Math.floor(now / 1000) + LIFETIME_S);
    });

    it('syncs only revocations of tickets whose credential may still be alive', async () => {
      const { acme } = tenants;
      now = START + 60 * DAY;
      const token = await clientToken(t.app, acme);
      const downloaded = await ticket(t, token, 'front-door', 'phone-b', { beginDate: now, endDate: now + 90 * DAY });
      const never = await ticket(t, token, 'front-door', 'phone-c', { beginDate: now + 60 * DAY, endDate: now + 90 * DAY });
      await download(t, await phoneToken(t, acme, 'phone-b'), 'phone-b');
      for (const id of [downloaded.id, never.id]) expect((await call(t, token, { method: 'DELETE', url: `/operatorapi/tickets/${id}` })).statusCode).toBe(200);
      const revokedIds = async () => (await sync(t, await lockToken(t, acme, 'front-door'), 'front-door', undefined, 1000)).revocations.map((item) => item.tokenId);
      // The never-downloaded ticket has no credential anywhere: the lock needs no revocation of it.
      expect(await revokedIds()).toContain(downloaded.id);
      expect(await revokedIds()).not.toContain(never.id);
      // Once every credential of the revoked ticket has expired, the lock no longer needs the revocation either.
      now += LIFETIME_S * 1000 + 1;
      expect(await revokedIds()).not.toContain(downloaded.id);
    });
  });

  describe('revocation lists carried by phones (docs/api-reference.md 8.3)', () => {
    it('hands each downloaded ticket its lock\'s signed list: the tenant\'s issuer, the lock, a rising serial, the revocations it needs, the key set', async () => {
      const { acme } = tenants;
      now = START + 200 * DAY;
      const token = await clientToken(t.app, acme);
      const victim = await ticket(t, token, 'back-door', 'phone-a', { beginDate: now, endDate: now + 30 * DAY });
      await ticket(t, token, 'back-door', 'phone-b', { beginDate: now, endDate: now + 30 * DAY });
      await download(t, await phoneToken(t, acme, 'phone-a'), 'phone-a');
      const trust = await trustOf(acme, 'back-door');
      const before = (await download(t, await phoneToken(t, acme, 'phone-b'), 'phone-b')).find((item) => item.securedObjectId === 'back-door' && item.status === 'VALID')!;
      const first = await revocationListClaims(before.revocationList!, trust);
      expect(first).toMatchObject({ iss: trust.issuer, aud: 'back-door', iat: Math.floor(now / 1000), keys: trust.keys });
      expect(first.revoked).not.toContain(victim.id);

      expect((await call(t, token, { method: 'DELETE', url: `/operatorapi/tickets/${victim.id}` })).statusCode).toBe(200);
      now += 1000;
      const after = (await download(t, await phoneToken(t, acme, 'phone-b'), 'phone-b')).find((item) => item.securedObjectId === 'back-door')!;
      const second = await revocationListClaims(after.revocationList!, trust);
      expect(second.serial).toBeGreaterThan(first.serial);
      expect(second.revoked).toContain(victim.id);
      // The list is signed by the tenant's key under its issuer, for that lock only: jose checks it like a lock would.
      const { protectedHeader } = await compactVerify(after.revocationList!, createLocalJWKSet(trust.keys));
      expect(protectedHeader).toMatchObject({ typ: 'revocation-list+jwt', kid: expect.any(String) });
      // Its serial matches the position a sync brings the lock to.
      const synced = await sync(t, await lockToken(t, acme, 'back-door'), 'back-door', undefined, 1000);
      expect((synced as unknown as { serial: number }).serial).toBe(second.serial);
    });

    it('never answers a list to a phone for a lock it holds no ticket for, nor another tenant\'s list', async () => {
      const { other } = tenants;
      now = START + 250 * DAY;
      const otherToken = await clientToken(t.app, other);
      await ticket(t, otherToken, 'front-door', 'intruder-phone', { beginDate: now, endDate: now + DAY });
      await ticket(t, otherToken, 'front-door', 'intruder-phone', { beginDate: now, endDate: now + 2 * DAY });
      const response = await downloadRequest(t, await phoneToken(t, other, 'intruder-phone'), 'intruder-phone');
      const items = response.json() as { securedObjectId: string; revocationList?: string }[];
      expect(items.length).toBeGreaterThan(1);
      expect(new Set(items.map((item) => item.securedObjectId))).toEqual(new Set(['front-door']));
      // One list per lock and page, on the lock's first ticket.
      const carrying = items.filter((item) => item.revocationList !== undefined);
      expect(carrying).toEqual([items[0]]);
      const trust = await trustOf(other, 'front-door');
      for (const item of carrying) {
        const claims = await revocationListClaims(item.revocationList!, trust);
        expect(claims.aud).toBe(item.securedObjectId);
        expect(claims.iss).toBe('http://issuer.test/tenants/other');
      }
    });
  });
});
