// Phone and lock keys (docs/api-reference.md 11.1, 11.4): nonces, registration with a proof of possession and each of
// its refusals, replacing a phone key (the old one revoked at every lock), the operator's removals, and a device's
// deletion taking its key with it.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { countEvents, download, lockKeysToken, lockToken, payloadOf, phoneToken, sync, trustWith } from '../helpers/device.js';
import { keyProof, newKeyPair, nonceFor, nonceRequest, putKey, registerKey, signJws, type HolderKeyPair } from '../helpers/holder-keys.js';
import { bearer, clientToken, createClient } from '../helpers/oauth.js';
import { call, device, expectAuthChecks, expectProblem, HOUR, lock, ticket } from '../helpers/operator.js';
import { twoTenants, type TwoTenants } from '../helpers/tenants.js';

const START = Date.UTC(2026, 2, 2, 9, 0, 0);

describe('phone and lock keys', () => {
  let t: TestApp;
  let now = START;
  let tenants: TwoTenants;
  let operator: string;

  beforeAll(async () => {
    t = await buildTestApp({}, { clock: () => now });
    tenants = await twoTenants(t, { acme: { locks: ['door'], devices: ['phone'] }, other: { locks: ['door'], devices: ['phone'] } });
    operator = tenants.token;
  });
  afterAll(() => t.close());
  beforeEach(async () => {
    now += HOUR;
    // Each test an hour later: the operators' tokens of the hour before have expired.
    operator = await clientToken(t.app, tenants.acme);
    tenants.otherToken = await clientToken(t.app, tenants.other);
  });

  async function deviceKeyRow(mobileDeviceId: string, tenantId = tenants.acme.tenantId) {
    const { rows } = await t.database.db.query<{ public_key: unknown; key_thumbprint: string | null; key_bound_until: number | null }>(
      'SELECT public_key, key_thumbprint, key_bound_until FROM mobile_devices WHERE tenant_id = $1 AND id = $2',
      [tenantId, mobileDeviceId],
    );
    return rows[0]!;
  }

  async function revokedKeys(tenantId = tenants.acme.tenantId) {
    const { rows } = await t.database.db.query<{ key_thumbprint: string; mobile_device_id: string; bound_until: number; change_seq: number }>(
      'SELECT key_thumbprint, mobile_device_id, bound_until, change_seq FROM revoked_device_keys WHERE tenant_id = $1 ORDER BY change_seq',
      [tenantId],
    );
    return rows.map((row) => ({ ...row, bound_until: Number(row.bound_until), change_seq: Number(row.change_seq) }));
  }

  describe('POST /deviceapi/nonces', () => {
    it('answers a fresh single-use nonce bound to the asking client, valid 5 minutes', async () => {
      const token = await phoneToken(t, tenants.acme, 'phone');
      const response = await nonceRequest(t, token);
      expect(response.statusCode, response.body).toBe(200);
      expect(response.headers['cache-control']).toBe('no-store');
      const { nonce } = response.json() as { nonce: string };
      expect(nonce).toMatch(/^[A-Za-z0-9_-]{22,}$/);
      expect(await nonceFor(t, token)).not.toBe(nonce);
      const { rows } = await t.database.db.query<{ tenant_id: string; expires_at: number }>(
        'SELECT tenant_id, expires_at FROM key_proof_nonces WHERE nonce = $1',
        [nonce],
      );
      expect(rows.map((row) => ({ tenant: row.tenant_id, expiresAt: Number(row.expires_at) }))).toEqual([{ tenant: tenants.acme.tenantId, expiresAt: now + 300_000 }]);
    });

    it('needs keys:register and a bound client: 401 without a token, 403 otherwise', async () => {
      expectProblem(await t.app.inject({ method: 'POST', url: '/deviceapi/nonces' }), 401);
      const client = await createClient(t.app, tenants.acme, ['tokens:download'], { mobileDeviceId: 'phone' });
      const narrowed = await nonceRequest(t, await clientToken(t.app, client, 'tokens:download'));
      expectProblem(narrowed, 403);
      expect(narrowed.headers['www-authenticate']).toContain('scope="keys:register"');
      // An unbound client holding the scope has no key of its own to register.
      const unbound = await clientToken(t.app, await createClient(t.app, tenants.acme, ['keys:register', 'sync']));
      expectProblem(await nonceRequest(t, unbound), 403);
    });

    it('sweeps expired nonces, and only those, per tenant', async () => {
      const token = await phoneToken(t, tenants.acme, 'phone');
      const old = await nonceFor(t, token);
      now += 10 * 60_000;
      const fresh = await nonceFor(t, token);
      expect(await t.app.services.holderKeys.prune()).toBeGreaterThanOrEqual(1);
      const { rows } = await t.database.db.query<{ nonce: string }>('SELECT nonce FROM key_proof_nonces WHERE nonce = ANY ($1::text[])', [[old, fresh]]);
      expect(rows.map((row) => row.nonce)).toEqual([fresh]);
    });
  });

  describe('PUT /deviceapi/mobiledevices/{id}/key', () => {
    it('registers the phone key: the thumbprint answered and shown to the operator, audited, the nonce used up', async () => {
      await device(t, operator, 'p-new');
      const token = await phoneToken(t, tenants.acme, 'p-new');
      const pair = newKeyPair();
      const nonce = await nonceFor(t, token);
      const response = await putKey(t, token, 'mobiledevices', 'p-new', { publicKey: pair.publicKey, proof: keyProof(t, pair, nonce) });
      expect(response.statusCode, response.body).toBe(200);
      expect(response.json()).toEqual({ keyThumbprint: pair.thumbprint, keyRegisteredTime: now });
      const read = await call(t, operator, { method: 'GET', url: '/operatorapi/mobiledevices/p-new' });
      expect(read.json()).toMatchObject({ id: 'p-new', keyThumbprint: pair.thumbprint, keyRegisteredTime: now });
      const listed = await call(t, operator, { method: 'GET', url: '/operatorapi/mobiledevices?limit=1000' });
      expect((listed.json() as { id: string; keyThumbprint?: string }[]).find((item) => item.id === 'p-new')?.keyThumbprint).toBe(pair.thumbprint);
      expect(await deviceKeyRow('p-new')).toMatchObject({ public_key: pair.publicKey, key_thumbprint: pair.thumbprint, key_bound_until: null });
      expect(await countEvents(t, tenants.acme.tenantId, 'mobile_device.key_registered', 'mobile_device:p-new')).toBe(1);
      // Used up: the same proof again is refused.
      const again = await putKey(t, token, 'mobiledevices', 'p-new', { publicKey: newKeyPair().publicKey, proof: keyProof(t, pair, nonce) });
      expect(expectProblem(again, 400).detail).toMatch(/nonce is unknown, used already/);
      // The same key with a new proof changes nothing.
      expect(await registerKey(t, token, 'mobiledevices', 'p-new', pair)).toEqual({ keyThumbprint: pair.thumbprint, keyRegisteredTime: now });
      expect(await countEvents(t, tenants.acme.tenantId, 'mobile_device.key_registered', 'mobile_device:p-new')).toBe(1);
    });

    it('refuses a proof that does not show possession of this key for this service now, with a detail naming why', async () => {
      await device(t, operator, 'p-refused');
      const token = await phoneToken(t, tenants.acme, 'p-refused');
      const otherClientToken = await phoneToken(t, tenants.acme, 'p-refused');
      const pair = newKeyPair();
      const attempt = async (proof: (nonce: string) => string, publicKey: object = pair.publicKey) =>
        putKey(t, token, 'mobiledevices', 'p-refused', { publicKey, proof: proof(await nonceFor(t, token)) });
      const cases: [string, () => Promise<Awaited<ReturnType<typeof attempt>>>, RegExp][] = [
        ['wrong aud', () => attempt((nonce) => keyProof(t, pair, nonce, { payload: { aud: 'https://elsewhere.example' } })), /aud must be exactly http:\/\/issuer\.test/],
        ['stale iat', () => attempt((nonce) => keyProof(t, pair, nonce, { payload: { iat: Math.floor(now / 1000) - 301 } })), /iat is more than 5 minutes/],
        ['iat ahead', () => attempt((nonce) => keyProof(t, pair, nonce, { payload: { iat: Math.floor(now / 1000) + 120 } })), /iat is more than 5 minutes/],
        ['wrong typ', () => attempt((nonce) => keyProof(t, pair, nonce, { header: { typ: 'JWT' } })), /typ "key-proof\+jwt"/],
        ['signed by another key', () => attempt((nonce) => keyProof(t, pair, nonce, { signer: newKeyPair().privateKey })), /signature does not verify/],
        [
          'alg none',
          () =>
            attempt((nonce) => {
              const [, payload] = keyProof(t, pair, nonce).split('.');
              return `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'key-proof+jwt' })).toString('base64url')}.${payload}.`;
            }),
          /must be signed with ES256/,
        ],
        ['not a JWS', () => attempt(() => 'not.a-jws'), /not a compact JWS/],
        ['no nonce', () => attempt(() => signJws(pair.privateKey, { alg: 'ES256', typ: 'key-proof+jwt' }, { aud: t.config.PUBLIC_URL, iat: Math.floor(now / 1000) })), /no nonce/],
        ['another client\'s nonce', async () => putKey(t, token, 'mobiledevices', 'p-refused', { publicKey: pair.publicKey, proof: keyProof(t, pair, await nonceFor(t, otherClientToken)) }), /issued to another client/],
        ['a key with more members', () => attempt((nonce) => keyProof(t, pair, nonce), { ...pair.publicKey, kid: 'k1' }), /may hold only kty, crv, x and y/],
        ['a key off the curve', () => attempt((nonce) => keyProof(t, pair, nonce), { ...pair.publicKey, y: pair.publicKey.x }), /not a point on P-256/],
      ];
      for (const [name, send, detail] of cases) {
        const response = await send();
        expect(response.statusCode, `${name}: ${response.body}`).toBe(400);
        expect(expectProblem(response, 400).detail, name).toMatch(detail);
      }
      // Nothing registered, nothing audited.
      expect(await deviceKeyRow('p-refused')).toMatchObject({ public_key: null, key_thumbprint: null });
      expect(await countEvents(t, tenants.acme.tenantId, 'mobile_device.key_registered', 'mobile_device:p-refused')).toBe(0);
      // Another client's nonce is still that client's to use.
      const theirs = await nonceFor(t, otherClientToken);
      expectProblem(await putKey(t, token, 'mobiledevices', 'p-refused', { publicKey: pair.publicKey, proof: keyProof(t, pair, theirs) }), 400);
      const used = await putKey(t, otherClientToken, 'mobiledevices', 'p-refused', { publicKey: pair.publicKey, proof: keyProof(t, pair, theirs) });
      expect(used.statusCode, used.body).toBe(200);
    });

    it('refuses an expired nonce (5 minutes) and a private key member (422), and a malformed body (400)', async () => {
      await device(t, operator, 'p-expired');
      const token = await phoneToken(t, tenants.acme, 'p-expired');
      const pair = newKeyPair();
      const nonce = await nonceFor(t, token);
      now += 300_001;
      const expired = await putKey(t, token, 'mobiledevices', 'p-expired', { publicKey: pair.publicKey, proof: keyProof(t, pair, nonce) });
      expect(expectProblem(expired, 400).detail).toMatch(/nonce expired/);
      const { d } = pair.privateKey.export({ format: 'jwk' });
      const leaked = await putKey(t, token, 'mobiledevices', 'p-expired', {
        publicKey: { ...pair.publicKey, d },
        proof: keyProof(t, pair, await nonceFor(t, token)),
      });
      expect(expectProblem(leaked, 422).detail).toMatch(/private key member \(d\)/);
      expectProblem(await putKey(t, token, 'mobiledevices', 'p-expired', { proof: 'x' }), 400);
      expectProblem(await putKey(t, token, 'mobiledevices', 'p-expired', { publicKey: pair.publicKey, proof: 'x', extra: 1 }), 400);
      expect(await deviceKeyRow('p-expired')).toMatchObject({ key_thumbprint: null });
    });

    it('reaches only the client\'s own device: another id is 404, a lock\'s client 403, another scope 403, no token 401', async () => {
      await device(t, operator, 'p-mine');
      await device(t, operator, 'p-neighbour');
      const token = await phoneToken(t, tenants.acme, 'p-mine');
      const pair = newKeyPair();
      const body = async (nonceToken: string) => ({ publicKey: pair.publicKey, proof: keyProof(t, pair, await nonceFor(t, nonceToken)) });
      expectProblem(await putKey(t, token, 'mobiledevices', 'p-neighbour', await body(token)), 404);
      // The other tenant's device of the same id is not this client's either.
      const otherToken = await phoneToken(t, tenants.other, 'phone');
      expectProblem(await putKey(t, otherToken, 'mobiledevices', 'p-mine', await body(otherToken)), 404);
      const lockClient = await lockKeysToken(t, tenants.acme, 'door');
      expectProblem(await putKey(t, lockClient, 'mobiledevices', 'p-mine', await body(lockClient)), 403);
      const narrowed = await clientToken(t.app, await createClient(t.app, tenants.acme, ['tokens:download'], { mobileDeviceId: 'p-mine' }), 'tokens:download');
      expectProblem(await putKey(t, narrowed, 'mobiledevices', 'p-mine', await body(token)), 403);
      expectProblem(await t.app.inject({ method: 'PUT', url: '/deviceapi/mobiledevices/p-mine/key', payload: await body(token) }), 401);
      expect(await deviceKeyRow('p-mine')).toMatchObject({ key_thumbprint: null });
      expect(await deviceKeyRow('phone', tenants.other.tenantId)).toMatchObject({ key_thumbprint: null });
    });

    it('replaces the key and revokes the old one at every lock: sync and revocation lists carry it, it cannot come back', async () => {
      await device(t, operator, 'p-replaced');
      const token = await phoneToken(t, tenants.acme, 'p-replaced');
      const first = newKeyPair();
      await registerKey(t, token, 'mobiledevices', 'p-replaced', first);
      await ticket(t, operator, 'door', 'p-replaced', { endDate: now + 30 * 24 * HOUR });
      const [held] = await download(t, token, 'p-replaced');
      const boundUntil = (payloadOf(held!.credential).exp as number) * 1000;
      expect((await deviceKeyRow('p-replaced')).key_bound_until).toBe(boundUntil);
      const doorToken = await lockToken(t, tenants.acme, 'door');
      const before = await sync(t, doorToken, 'door');
      expect(before.revokedKeys).toEqual([]);

      const second = newKeyPair();
      await registerKey(t, token, 'mobiledevices', 'p-replaced', second);
      expect(await revokedKeys()).toContainEqual(expect.objectContaining({ key_thumbprint: first.thumbprint, mobile_device_id: 'p-replaced', bound_until: boundUntil }));
      expect(await countEvents(t, tenants.acme.tenantId, 'mobile_device.key_revoked', 'mobile_device:p-replaced')).toBe(1);
      const after = await sync(t, doorToken, 'door', before.cursor);
      expect(after.revokedKeys).toEqual([{ jkt: first.thumbprint, revocationDate: now }]);
      expect(after.serial).toBeGreaterThan(before.serial);
      expect(after.cursor).not.toBe(before.cursor);
      // Applied: the next sync has nothing new.
      expect((await sync(t, doorToken, 'door', after.cursor)).revokedKeys).toEqual([]);
      // The revocation list a phone carries to the door, and the trust a new lock starts from, name it too.
      const [renewed] = await download(t, token, 'p-replaced');
      expect(payloadOf(renewed!.revocationList!)).toMatchObject({ revokedKeys: [first.thumbprint] });
      expect(payloadOf(renewed!.credential).cnf).toEqual({ jkt: second.thumbprint });
      expect((await trustWith(t, doorToken, 'door')).revokedKeys).toEqual([first.thumbprint]);
      // A revoked key is never registered again, by this device or another; nor is a key another device holds.
      await device(t, operator, 'p-thief');
      const thief = await phoneToken(t, tenants.acme, 'p-thief');
      for (const pair of [first, second]) {
        const refused = await putKey(t, thief, 'mobiledevices', 'p-thief', { publicKey: pair.publicKey, proof: keyProof(t, pair, await nonceFor(t, thief)) });
        expect(expectProblem(refused, 409).detail).toMatch(pair === first ? /revoked/ : /another mobile device/);
      }
      expect(await deviceKeyRow('p-thief')).toMatchObject({ key_thumbprint: null });
    });

    it('a sync cut at limit carries each key revocation once, in change-log order between the ticket changes', async () => {
      await lock(t, operator, 'paged-door');
      await device(t, operator, 'p-paged');
      const token = await phoneToken(t, tenants.acme, 'p-paged');
      const doorToken = await lockToken(t, tenants.acme, 'paged-door');
      const start = await sync(t, doorToken, 'paged-door');
      const revoked: string[] = [];
      for (let round = 0; round < 3; round += 1) {
        const pair = newKeyPair();
        await registerKey(t, token, 'mobiledevices', 'p-paged', pair);
        await ticket(t, operator, 'paged-door', 'p-paged', { endDate: now + 30 * 24 * HOUR });
        await ticket(t, operator, 'paged-door', 'p-paged', { endDate: now + 30 * 24 * HOUR });
        await download(t, token, 'p-paged');
        revoked.push(pair.thumbprint);
      }
      await registerKey(t, token, 'mobiledevices', 'p-paged', newKeyPair());
      let cursor = start.cursor;
      const seen: string[] = [];
      let tokens = 0;
      for (let page = 0; page < 20; page += 1) {
        const answer = await sync(t, doorToken, 'paged-door', cursor, 1);
        seen.push(...answer.revokedKeys.map((key) => key.jkt));
        tokens += answer.tokens.length;
        if (answer.cursor === cursor) break;
        cursor = answer.cursor;
      }
      expect(tokens).toBe(6);
      expect(seen).toEqual(revoked);
    });

    it('a download racing a key replacement never hands out a credential bound to the old key beyond its revocation', async () => {
      for (let round = 0; round < 4; round += 1) {
        const id = `p-race-${round}`;
        await device(t, operator, id);
        const token = await phoneToken(t, tenants.acme, id);
        const old = newKeyPair();
        await registerKey(t, token, 'mobiledevices', id, old);
        for (let n = 0; n < 3; n += 1) await ticket(t, operator, 'door', id, { endDate: now + 30 * 24 * HOUR });
        const replacement = newKeyPair();
        const proof = keyProof(t, replacement, await nonceFor(t, token));
        const [downloaded, replaced] = await Promise.all([
          t.app.inject({ url: `/deviceapi/mobiledevices/${id}/tickets`, headers: bearer(token) }),
          putKey(t, token, 'mobiledevices', id, { publicKey: replacement.publicKey, proof }),
        ]);
        expect(downloaded.statusCode, downloaded.body).toBe(200);
        expect(replaced.statusCode, replaced.body).toBe(200);
        const boundToOld = (downloaded.json() as { credential: string }[])
          .map((item) => payloadOf(item.credential))
          .filter((claims) => (claims.cnf as { jkt?: string } | undefined)?.jkt === old.thumbprint);
        if (boundToOld.length === 0) continue;
        // Whatever went out bound to the old key is refused at every lock until it expires.
        const revocation = (await revokedKeys()).find((row) => row.key_thumbprint === old.thumbprint);
        expect(revocation, `round ${round}`).toBeDefined();
        for (const claims of boundToOld) expect(revocation!.bound_until).toBeGreaterThanOrEqual((claims.exp as number) * 1000);
      }
    });

    it('replacing a key never bound to a live credential leaves nothing on the locks\' lists', async () => {
      await device(t, operator, 'p-unbound');
      const token = await phoneToken(t, tenants.acme, 'p-unbound');
      const first = newKeyPair();
      await registerKey(t, token, 'mobiledevices', 'p-unbound', first);
      await registerKey(t, token, 'mobiledevices', 'p-unbound', newKeyPair());
      expect((await revokedKeys()).map((row) => row.key_thumbprint)).not.toContain(first.thumbprint);
      expect(await countEvents(t, tenants.acme.tenantId, 'mobile_device.key_revoked', 'mobile_device:p-unbound')).toBe(1);
    });
  });

  describe('the operator revoking a phone key', () => {
    it('DELETE /operatorapi/mobiledevices/{id}/key revokes it at every lock, audited; the device downloads unbound credentials', async () => {
      await device(t, operator, 'p-lost');
      const token = await phoneToken(t, tenants.acme, 'p-lost');
      const pair = newKeyPair();
      await registerKey(t, token, 'mobiledevices', 'p-lost', pair);
      await ticket(t, operator, 'door', 'p-lost', { endDate: now + 30 * 24 * HOUR });
      await download(t, token, 'p-lost');
      const doorToken = await lockToken(t, tenants.acme, 'door');
      const before = await sync(t, doorToken, 'door');

      const response = await call(t, operator, { method: 'DELETE', url: '/operatorapi/mobiledevices/p-lost/key' });
      expect(response.statusCode, response.body).toBe(204);
      expect(await deviceKeyRow('p-lost')).toMatchObject({ public_key: null, key_thumbprint: null });
      expect((await call(t, operator, { method: 'GET', url: '/operatorapi/mobiledevices/p-lost' })).json()).not.toHaveProperty('keyThumbprint');
      expect((await sync(t, doorToken, 'door', before.cursor)).revokedKeys).toEqual([{ jkt: pair.thumbprint, revocationDate: now }]);
      expect(await countEvents(t, tenants.acme.tenantId, 'mobile_device.key_revoked', 'mobile_device:p-lost')).toBe(1);
      const [unbound] = await download(t, token, 'p-lost');
      expect(payloadOf(unbound!.credential)).not.toHaveProperty('cnf');
      // Nothing left to revoke; another tenant's device answers as missing.
      expectProblem(await call(t, operator, { method: 'DELETE', url: '/operatorapi/mobiledevices/p-lost/key' }), 404);
      expectProblem(await call(t, tenants.otherToken, { method: 'DELETE', url: '/operatorapi/mobiledevices/p-lost/key' }), 404);
    });

    it('needs devices:write: 401 without a token, 403 with another scope', async () => {
      const reader = await clientToken(t.app, await createClient(t.app, tenants.acme, ['devices:read']));
      await expectAuthChecks(t, reader, [
        { method: 'DELETE', url: '/operatorapi/mobiledevices/phone/key', scope: 'devices:write' },
        { method: 'DELETE', url: '/operatorapi/securedobjects/door/key', scope: 'devices:write' },
      ]);
    });

    it('deleting a device revokes its key at every lock in the same transaction', async () => {
      await device(t, operator, 'p-gone');
      const token = await phoneToken(t, tenants.acme, 'p-gone');
      const pair = newKeyPair();
      await registerKey(t, token, 'mobiledevices', 'p-gone', pair);
      await ticket(t, operator, 'door', 'p-gone', { endDate: now + 30 * 24 * HOUR });
      await download(t, token, 'p-gone');
      const doorToken = await lockToken(t, tenants.acme, 'door');
      const before = await sync(t, doorToken, 'door');
      expect((await call(t, operator, { method: 'DELETE', url: '/operatorapi/mobiledevices/p-gone' })).statusCode).toBe(204);
      expect(await revokedKeys()).toContainEqual(expect.objectContaining({ key_thumbprint: pair.thumbprint, mobile_device_id: 'p-gone' }));
      const after = await sync(t, doorToken, 'door', before.cursor);
      expect(after.revokedKeys).toEqual([{ jkt: pair.thumbprint, revocationDate: now }]);
      expect(after.revocations).toHaveLength(1);
    });

    it('another tenant\'s device keeps its key when this tenant deletes its own of the same id', async () => {
      const otherPhone = await phoneToken(t, tenants.other, 'phone');
      const pair = newKeyPair();
      await registerKey(t, otherPhone, 'mobiledevices', 'phone', pair);
      expect((await call(t, operator, { method: 'DELETE', url: '/operatorapi/mobiledevices/phone' })).statusCode).toBe(204);
      expect(await deviceKeyRow('phone', tenants.other.tenantId)).toMatchObject({ key_thumbprint: pair.thumbprint });
      expect(await revokedKeys(tenants.other.tenantId)).toEqual([]);
    });
  });

  describe('lock keys', () => {
    let pair: HolderKeyPair;

    it('PUT /deviceapi/securedobjects/{id}/key registers the lock key once; another key is 409 until the operator removes it', async () => {
      await lock(t, operator, 'gate');
      const token = await lockKeysToken(t, tenants.acme, 'gate');
      pair = newKeyPair();
      expect(await registerKey(t, token, 'securedobjects', 'gate', pair)).toEqual({ keyThumbprint: pair.thumbprint, keyRegisteredTime: now });
      expect((await call(t, operator, { method: 'GET', url: '/operatorapi/securedobjects/gate' })).json()).toMatchObject({ keyThumbprint: pair.thumbprint });
      expect(await trustWith(t, token, 'gate')).toMatchObject({ keyThumbprint: pair.thumbprint });
      expect(await countEvents(t, tenants.acme.tenantId, 'secured_object.key_registered', 'secured_object:gate')).toBe(1);
      // The same key again changes nothing; another is refused, naming what the operator does.
      expect(await registerKey(t, token, 'securedobjects', 'gate', pair)).toMatchObject({ keyThumbprint: pair.thumbprint });
      const swap = newKeyPair();
      const refused = await putKey(t, token, 'securedobjects', 'gate', { publicKey: swap.publicKey, proof: keyProof(t, swap, await nonceFor(t, token)) });
      expect(expectProblem(refused, 409).detail).toMatch(/DELETE \/operatorapi\/securedobjects\/gate\/key/);

      const removed = await call(t, operator, { method: 'DELETE', url: '/operatorapi/securedobjects/gate/key' });
      expect(removed.statusCode, removed.body).toBe(204);
      expect(await countEvents(t, tenants.acme.tenantId, 'secured_object.key_removed', 'secured_object:gate')).toBe(1);
      expect((await call(t, operator, { method: 'GET', url: '/operatorapi/securedobjects/gate' })).json()).not.toHaveProperty('keyThumbprint');
      expect(await trustWith(t, token, 'gate')).not.toHaveProperty('keyThumbprint');
      expectProblem(await call(t, operator, { method: 'DELETE', url: '/operatorapi/securedobjects/gate/key' }), 404);
      expect(await registerKey(t, token, 'securedobjects', 'gate', swap)).toMatchObject({ keyThumbprint: swap.thumbprint });
    });

    it('reaches only the lock\'s own client: another lock 404, a phone\'s client 403, another tenant\'s lock untouched', async () => {
      await lock(t, operator, 'side');
      const sideToken = await lockKeysToken(t, tenants.acme, 'side');
      const key = newKeyPair();
      const body = async (nonceToken: string) => ({ publicKey: key.publicKey, proof: keyProof(t, key, await nonceFor(t, nonceToken)) });
      expectProblem(await putKey(t, sideToken, 'securedobjects', 'door', await body(sideToken)), 404);
      const phone = await phoneToken(t, tenants.acme, 'p-mine');
      expectProblem(await putKey(t, phone, 'securedobjects', 'side', await body(phone)), 403);
      expectProblem(await call(t, tenants.otherToken, { method: 'DELETE', url: '/operatorapi/securedobjects/gate/key' }), 404);
      expect((await call(t, operator, { method: 'GET', url: '/operatorapi/securedobjects/gate' })).json()).toHaveProperty('keyThumbprint');
      const { rows } = await t.database.db.query('SELECT 1 FROM secured_objects WHERE key_thumbprint IS NOT NULL AND tenant_id = $1', [tenants.other.tenantId]);
      expect(rows).toHaveLength(0);
      // A deleted lock's client only syncs (docs/api-reference.md 4.1): its token holding keys:register stops working.
      const prepared = await body(sideToken);
      expect((await call(t, operator, { method: 'DELETE', url: '/operatorapi/securedobjects/side' })).statusCode).toBe(204);
      await t.app.services.revocations.refresh();
      expectProblem(await putKey(t, sideToken, 'securedobjects', 'side', prepared), 401);
    });
  });

  it('bound clients hold keys:register whatever they were made with', async () => {
    const phoneClient = await createClient(t.app, tenants.acme, ['tokens:download'], { mobileDeviceId: 'p-mine' });
    const lockClient = await createClient(t.app, tenants.acme, ['sync'], { securedObjectId: 'door' });
    const unbound = await createClient(t.app, tenants.acme, ['tokens:read']);
    const scopesOf = async (clientId: string) =>
      ((await call(t, operator, { method: 'GET', url: `/operatorapi/oauthclients/${clientId}` })).json() as { scopes: string[] }).scopes;
    expect(await scopesOf(phoneClient.clientId)).toEqual(['tokens:download', 'keys:register']);
    expect(await scopesOf(lockClient.clientId)).toEqual(['sync', 'keys:register']);
    expect(await scopesOf(unbound.clientId)).toEqual(['tokens:read']);
    const created = await call(t, operator, {
      method: 'POST',
      url: '/operatorapi/oauthclients',
      payload: { name: 'phone app', scopes: ['tokens:download'], mobileDeviceId: 'p-mine' },
    });
    expect(created.json()).toMatchObject({ scopes: ['tokens:download', 'keys:register'] });
    expect((await t.app.inject({ url: '/deviceapi/securedobjects/door/trust', headers: bearer(await clientToken(t.app, lockClient)) })).statusCode).toBe(200);
  });
});
