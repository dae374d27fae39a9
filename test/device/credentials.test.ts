// Ticket credentials (docs/api-reference.md 6.3, 8.1, 8.2): the compact JWS's header and claims under the tenant's issuer,
// verification against the tenant's key set by kid, per-tenant ticket keys apart from the access-token key, and
// neither kind of JWT accepted as the other.
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LockSimulator } from '../../src/simulator/lock-simulator.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { accessToken, download, issuerOf, jwks, lockTrust, payloadOf, phoneToken, verifyCredential } from '../helpers/device.js';
import { bearer, clientToken, createClient, createTenant, type TenantFixture } from '../helpers/oauth.js';
import { twoTenants } from '../helpers/tenants.js';
import { HOUR, device, expectProblem, lock, ticket } from '../helpers/operator.js';

const DAY = 24 * HOUR;
/** JWK members that hold private key material (RFC 7518 6.2.2, 6.3.2, 6.4; RFC 8037 2). */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];

describe('ticket credentials', () => {
  let now = Date.UTC(2026, 2, 3, 8, 30, 0, 0);
  let t: TestApp;
  let acme: TenantFixture;
  let other: TenantFixture;
  let operator: string;
  let otherOperator: string;

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4' }, { clock: () => now });
    ({ acme, other, token: operator, otherToken: otherOperator } = await twoTenants(t, {
      acme: { locks: ['door'], devices: ['phone'] },
      other: { locks: ['their-door'], devices: ['their-phone'] },
    }));
  });
  afterAll(async () => {
    await t.close();
  });

  it('has header {alg, kid, typ: "ticket+jwt"} and the payload of docs/api-reference.md 6.3 under the tenant\'s issuer, its seconds inside the exact milliseconds', async () => {
    // Dates that are not whole seconds: nbf rounds up and exp down, so the JWT window never widens the ticket's
    // (docs/api-reference.md 8.2; RFC 7519 4.1.4: not accepted on or after exp).
    const beginDate = now - 1500;
    const endDate = now + DAY + 1;
    const issued = await ticket(t, operator, 'door', 'phone', { beginDate, endDate, commands: ['open', 'clos', 'open'], channels: ['btlespp'] });
    const [downloaded] = await download(t, await phoneToken(t, acme, 'phone'), 'phone');
    expect(downloaded!.id).toBe(issued.id);
    const credential = downloaded!.credential;

    const header = decodeProtectedHeader(credential);
    expect(header).toEqual({ alg: 'EdDSA', kid: expect.any(String), typ: 'ticket+jwt' });
    expect(payloadOf(credential)).toEqual({
      // docs/api-reference.md 8.1: the tenant's own issuer, never the server's bare PUBLIC_URL.
      iss: 'http://issuer.test/tenants/acme',
      jti: issued.id,
      sub: 'phone',
      aud: 'door',
      nbf: Math.ceil(beginDate / 1000),
      exp: Math.floor(endDate / 1000),
      beginDate,
      endDate,
      cmd: ['open', 'clos'],
      chn: ['btlespp'],
      iat: Math.floor(now / 1000),
    });
    expect(issuerOf(t, acme)).toBe('http://issuer.test/tenants/acme');
  });

  it('lasts at most CREDENTIAL_MAX_LIFETIME past iat when the ticket lasts longer (docs/api-reference.md 8.2)', async () => {
    await device(t, operator, 'phone-long');
    const issued = await ticket(t, operator, 'door', 'phone-long', { beginDate: now - 1500, endDate: now + 30 * DAY });
    const [downloaded] = await download(t, await phoneToken(t, acme, 'phone-long'), 'phone-long');
    expect(downloaded!.id).toBe(issued.id);
    const payload = payloadOf(downloaded!.credential);
    expect(t.config.CREDENTIAL_MAX_LIFETIME).toBe(604800);
    expect(payload).toMatchObject({ iat: Math.floor(now / 1000), exp: Math.floor(now / 1000) + t.config.CREDENTIAL_MAX_LIFETIME, endDate: now + 30 * DAY });
  });

  it('verifies with jose against the public key the tenant\'s key set publishes under its kid', async () => {
    await device(t, operator, 'phone-verify');
    await ticket(t, operator, 'door', 'phone-verify');
    const [downloaded] = await download(t, await phoneToken(t, acme, 'phone-verify'), 'phone-verify');
    const credential = downloaded!.credential;
    // The key set a lock of the tenant is provisioned with (docs/api-reference.md 8.1); the trust endpoint answers it until
    // GET /tenants/{tenant}/jwks.json is served.
    const keys = (await lockTrust(t, acme, 'door')).keys as JSONWebKeySet;
    const { kid } = decodeProtectedHeader(credential);
    const published = keys.keys.filter((key) => key.kid === kid);
    expect(published).toEqual([{ kty: 'OKP', crv: 'Ed25519', x: expect.any(String), kid, alg: 'EdDSA', use: 'sig' }]);

    const payload = await verifyCredential(t, acme, credential, { securedObjectId: 'door', at: now });
    expect(payload.jti).toBe(downloaded!.id);
    // A credential is for one lock: another audience does not verify.
    await expect(
      jwtVerify(credential, createLocalJWKSet(keys), { audience: 'gate', typ: 'ticket+jwt', currentDate: new Date(now) }),
    ).rejects.toThrow(/aud/);
    // Without the key the tenant's key set publishes, nothing verifies.
    const others = { keys: keys.keys.filter((key) => key.kid !== kid) };
    await expect(jwtVerify(credential, createLocalJWKSet(others), { currentDate: new Date(now) })).rejects.toThrow();
  });

  it('publishes no private key member in any key set: the access-token JWKS and each tenant\'s ticket keys', async () => {
    await download(t, await phoneToken(t, other, 'their-phone'), 'their-phone');
    const response = await t.app.inject({ url: '/.well-known/jwks.json' });
    expect(response.statusCode).toBe(200);
    expect(response.body).not.toMatch(/"d"\s*:/);
    const sets = [
      (response.json() as { keys: Record<string, unknown>[] }).keys,
      (await lockTrust(t, acme, 'door')).keys.keys as Record<string, unknown>[],
      (await lockTrust(t, other, 'their-door')).keys.keys as Record<string, unknown>[],
    ];
    for (const keys of sets) {
      expect(keys.length).toBeGreaterThanOrEqual(1);
      for (const key of keys) {
        for (const member of PRIVATE_MEMBERS) expect(key, `${String(key.kid)}.${member}`).not.toHaveProperty(member);
      }
    }
  });

  it('signs with a per-tenant ticket key, apart from the access-token key and from every other tenant\'s', async () => {
    await ticket(t, otherOperator, 'their-door', 'their-phone');
    const phone = await phoneToken(t, acme, 'phone');
    const [ours] = await download(t, phone, 'phone');
    const [theirs] = await download(t, await phoneToken(t, other, 'their-phone'), 'their-phone');
    const ourKid = decodeProtectedHeader(ours!.credential).kid;
    const theirKid = decodeProtectedHeader(theirs!.credential).kid;
    const accessKid = decodeProtectedHeader(phone).kid;
    expect(decodeProtectedHeader(phone).typ).toBe('at+jwt');
    expect(new Set([ourKid, theirKid, accessKid]).size).toBe(3);
    // Each tenant's key set holds its own ticket keys only (docs/api-reference.md 8.1); the access-token key is in the
    // server's JWKS.
    const ourKeys = (await lockTrust(t, acme, 'door')).keys as JSONWebKeySet;
    const theirKeys = (await lockTrust(t, other, 'their-door')).keys as JSONWebKeySet;
    expect(ourKeys.keys.map((key) => key.kid)).toContain(ourKid);
    expect(theirKeys.keys.map((key) => key.kid)).toContain(theirKid);
    for (const kid of [theirKid, accessKid]) expect(ourKeys.keys.map((key) => key.kid)).not.toContain(kid);
    for (const kid of [ourKid, accessKid]) expect(theirKeys.keys.map((key) => key.kid)).not.toContain(kid);
    expect((await jwks(t)).keys.map((key) => key.kid)).toContain(accessKid);

    const { rows } = await t.database.db.query<{ kid: string; tenant_id: string | null; purpose: string }>(
      'SELECT kid, tenant_id, purpose FROM signing_keys WHERE kid = ANY ($1::text[]) ORDER BY purpose, tenant_id',
      [[ourKid, theirKid, accessKid]],
    );
    expect(rows).toEqual(
      expect.arrayContaining([
        { kid: accessKid, tenant_id: null, purpose: 'access_token' },
        { kid: ourKid, tenant_id: acme.tenantId, purpose: 'ticket' },
        { kid: theirKid, tenant_id: other.tenantId, purpose: 'ticket' },
      ]),
    );
    // The other tenant's public key does not verify our credential.
    const theirsOnly = { keys: theirKeys.keys.filter((key) => key.kid === theirKid).map((key) => ({ ...key, kid: ourKid })) };
    await expect(jwtVerify(ours!.credential, createLocalJWKSet(theirsOnly), { currentDate: new Date(now) })).rejects.toThrow();
  });

  it('keeps issued credentials verifiable after the tenant\'s ticket key rotates; new ones use the new key once its announcement ends', async () => {
    const lifetime = t.config.CREDENTIAL_MAX_LIFETIME * 1000;
    await device(t, operator, 'phone-rotation');
    await ticket(t, operator, 'door', 'phone-rotation', { endDate: now + 30 * DAY });
    const token = await phoneToken(t, acme, 'phone-rotation');
    const [before] = await download(t, token, 'phone-rotation');
    const oldKid = decodeProtectedHeader(before!.credential).kid;
    const { kid: newKid, activatesAt } = await t.app.services.ticketKeys.rotate(acme.tenantId);
    expect(newKid).not.toBe(oldKid);
    // docs/api-reference.md 8.1: the new key is published at once and signs one credential lifetime later, so locks that
    // are never online learn it from a visiting phone before any credential needs it.
    expect(activatesAt).toBe(now + lifetime);
    expect((await lockTrust(t, acme, 'door')).keys.keys.map((key) => key.kid)).toEqual(expect.arrayContaining([oldKid, newKid]));
    const later = await ticket(t, operator, 'door', 'phone-rotation', { endDate: now + 30 * DAY });
    const during = await download(t, token, 'phone-rotation');
    expect(during.find((item) => item.id === before!.id)!.credential).toBe(before!.credential);
    expect(decodeProtectedHeader(during.find((item) => item.id === later.id)!.credential).kid).toBe(oldKid);

    const start = now;
    try {
      now = activatesAt;
      // The access tokens of the start have expired by now.
      const fresh = await ticket(t, await clientToken(t.app, acme), 'door', 'phone-rotation', { endDate: now + DAY });
      const after = await download(t, await phoneToken(t, acme, 'phone-rotation'), 'phone-rotation');
      const freshCredential = after.find((item) => item.id === fresh.id)!.credential;
      expect(decodeProtectedHeader(freshCredential).kid).toBe(newKid);
      await verifyCredential(t, acme, freshCredential, { securedObjectId: 'door', at: now });
      // The retired key stays published: what it signed verifies until its own exp, one lifetime after its iat.
      await verifyCredential(t, acme, before!.credential, { securedObjectId: 'door', at: now - 1000 });
    } finally {
      now = start;
    }
  });

  /**
   * Runs `action` while a reload of the ticket keys is in flight: its read happened first, its answer arrives 300 ms
   * later (a slow database, or the periodic refresh of another instance's keys landing at the wrong moment).
   */
  async function duringSlowKeyReload<T>(action: () => Promise<T>): Promise<T> {
    const db = t.database.db;
    const query = db.query;
    let slowed = false;
    db.query = (async (text: string, params?: readonly unknown[]) => {
      const result = await query.call(db, text, params);
      if (!slowed && text.includes('FROM signing_keys') && params?.[0] === 'ticket') {
        slowed = true;
        await new Promise((resolve) => setTimeout(resolve, 300));
      }
      return result;
    }) as typeof query;
    try {
      const refresh = t.app.services.ticketKeys.reload();
      const result = await action();
      await refresh;
      expect(slowed).toBe(true);
      return result;
    } finally {
      db.query = query;
    }
  }

  it('makes a tenant\'s first ticket key and signs with it even while a key reload is in flight', async () => {
    const fresh = await createTenant(t.app, 'fresh');
    const freshOperator = await clientToken(t.app, fresh);
    await lock(t, freshOperator, 'door');
    await device(t, freshOperator, 'phone');
    await ticket(t, freshOperator, 'door', 'phone');
    const token = await phoneToken(t, fresh, 'phone');

    // The reload in flight read before the key existed: joining it would leave the new key unknown (500).
    const response = await duringSlowKeyReload(() => t.app.inject({ url: '/deviceapi/mobiledevices/phone/tickets', headers: bearer(token) }));
    expect(response.statusCode, response.body).toBe(200);
    await verifyCredential(t, fresh, response.json()[0].credential, { securedObjectId: 'door', at: now });
  });

  it('signs with an emergency-rotated key at once even while a key reload is in flight', async () => {
    await device(t, operator, 'phone-rotated-late');
    const token = await phoneToken(t, acme, 'phone-rotated-late');
    // An emergency rotation signs at once (docs/api-reference.md 8.1); a normal one waits out its announcement.
    const { kid } = await duringSlowKeyReload(() => t.app.services.ticketKeys.rotate(acme.tenantId, { emergency: true }));
    await ticket(t, operator, 'door', 'phone-rotated-late');
    const [downloaded] = await download(t, token, 'phone-rotated-late');
    expect(decodeProtectedHeader(downloaded!.credential).kid).toBe(kid);
  });

  it('refuses a credential presented as a Bearer token with 401 on every API', async () => {
    await ticket(t, operator, 'door', 'phone');
    const [downloaded] = await download(t, await phoneToken(t, acme, 'phone'), 'phone');
    const credential = downloaded!.credential;
    for (const [url, realm] of [
      ['/operatorapi/tickets', 'operatorapi'],
      ['/operatorapi/securedobjects/door', 'operatorapi'],
      ['/v1/residents', 'accessapi'],
      ['/deviceapi/mobiledevices/phone/tickets', 'deviceapi'],
      ['/deviceapi/securedobjects/door/sync', 'deviceapi'],
    ] as const) {
      const response = await t.app.inject({ url, headers: bearer(credential) });
      expectProblem(response, 401);
      // Signed with a ticket key, which no access token is: to an API it reads as a bad signature.
      expect(response.headers['www-authenticate'], url).toBe(
        `Bearer realm="${realm}", error="invalid_token", error_description="the access token signature does not verify"`,
      );
    }
    // Introspection does not take it for an access token either (RFC 7662: inactive).
    const management = await createClient(t.app, acme, ['tokens:read']);
    const introspected = await t.app.inject({
      method: 'POST',
      url: '/oauth/introspect',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ token: credential, client_id: management.clientId, client_secret: management.clientSecret }).toString(),
    });
    expect(introspected.statusCode, introspected.body).toBe(200);
    expect(introspected.json()).toEqual({ active: false });
  });

  it('is never confused with an access token by a lock: the simulator refuses every access token', async () => {
    const lockSimulator = new LockSimulator({ securedObjectId: 'door', issuer: 'http://issuer.test', keys: await jwks(t), maxCredentialLifetime: 604_800 });
    const management = await clientToken(t.app, acme);
    const deviceToken = await phoneToken(t, acme, 'phone');
    const userToken = await accessToken(t, acme, ['devices:read']);
    for (const token of [management, deviceToken, userToken]) {
      expect(await lockSimulator.decide(token, 'open', now)).toEqual({ decision: 'deny', reason: 'malformed' });
    }
  });
});
