// The door, end to end (docs/api-reference.md 11, docs/lock-integration.md 4, docs/security-cases.md H58): a phone key
// registered with a proof, a token got with private_key_jwt and no secret, a download of bound credentials, the
// reference lock's hello, the phone's proof and the lock's decision; a copied credential refused; a replaced key
// refused by an online lock after one sync and by an offline one after one visit; the lock's receipt relayed and
// believed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LockSimulator, type SyncAnswer } from '../../src/simulator/lock-simulator.js';
import { PhoneSimulator, type DownloadedToken } from '../../src/simulator/phone-simulator.js';
import { es256KeyPair, privateJwk, type Es256KeyPair } from '../../src/simulator/es256.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { download, lockKeysToken, lockToken, trustWith } from '../helpers/device.js';
import { clientAssertion, registerKey } from '../helpers/holder-keys.js';
import { bearer, clientToken, createClient, createTenant, type TenantFixture } from '../helpers/oauth.js';
import { device, HOUR, lock, ticket } from '../helpers/operator.js';

const START = Date.UTC(2026, 2, 2, 9, 0, 0);

describe('the door, end to end, with keys on every side', () => {
  let t: TestApp;
  let now = START;
  let tenant: TenantFixture;
  let operator: string;

  /** A lock with its own key registered by its installer, provisioned from its trust answer. */
  async function provisionLock(id: string): Promise<LockSimulator> {
    const key = es256KeyPair();
    await registerKey(t, await lockKeysToken(t, tenant, id), 'securedobjects', id, key);
    const trust = await trustWith(t, await lockToken(t, tenant, id), id);
    expect(trust).toMatchObject({ keyThumbprint: key.thumbprint, holderBinding: 'optional' });
    return new LockSimulator(trust as never, { key: privateJwk(key) });
  }

  /** A phone whose key is registered through its bound client; answers the client id and the phone. */
  async function enrolPhone(id: string): Promise<{ clientId: string; key: Es256KeyPair; phone: PhoneSimulator }> {
    const key = es256KeyPair();
    const client = await createClient(t.app, tenant, ['tokens:download'], { mobileDeviceId: id });
    await registerKey(t, await clientToken(t.app, client), 'mobiledevices', id, key);
    return { clientId: client.clientId, key, phone: new PhoneSimulator({ key: privateJwk(key) }) };
  }

  /** A token by private_key_jwt (RFC 7523 2.2): no secret, an assertion signed by the phone's key. */
  async function tokenByKey(clientId: string, key: Es256KeyPair): Promise<string> {
    const seconds = Math.floor(now / 1000);
    const response = await t.app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: clientId,
        client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
        client_assertion: clientAssertion(key, clientId, `${t.config.PUBLIC_URL}/oauth/token`, {
          iat: seconds,
          exp: seconds + 60,
        }),
      }).toString(),
    });
    expect(response.statusCode, response.body).toBe(200);
    return response.json().access_token as string;
  }

  async function downloadInto(phone: PhoneSimulator, token: string, id: string): Promise<DownloadedToken[]> {
    const tokens = (await download(t, token, id)) as unknown as DownloadedToken[];
    phone.store(tokens);
    return tokens;
  }

  async function sync(simulator: LockSimulator, id: string): Promise<void> {
    const token = await lockToken(t, tenant, id);
    await simulator.sync(async (cursor) => {
      const response = await t.app.inject({ url: `/deviceapi/securedobjects/${id}/sync${cursor ? `?cursor=${encodeURIComponent(cursor)}` : ''}`, headers: bearer(token) });
      expect(response.statusCode, response.body).toBe(200);
      return { answer: response.json() as SyncAnswer, more: String(response.headers.link ?? '').includes('rel="next"') };
    });
  }

  /** What the operator sees of a lock's propagation (docs/api-reference.md 8.4). */
  async function pendingKeyRevocations(id: string): Promise<number> {
    const response = await t.app.inject({ url: `/operatorapi/securedobjects/${id}`, headers: bearer(operator) });
    expect(response.statusCode, response.body).toBe(200);
    return response.json().pendingKeyRevocations as number;
  }

  /** One session at the door: hello, the phone's answer, the lock's decision. */
  async function atTheDoor(simulator: LockSimulator, phone: PhoneSimulator, lockId: string) {
    const hello = simulator.hello(now);
    const shown = phone.present(lockId, hello, 'open', now);
    if (!('presentation' in shown)) throw new Error(`the phone showed nothing: ${shown.refused}`);
    if (shown.presentation.revocationList) await simulator.applyRevocationList(shown.presentation.revocationList);
    return { presentation: shown.presentation, decision: await simulator.decide(shown.presentation.credential, 'open', now, 'btlespp', shown.presentation.proof) };
  }

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4' }, { clock: () => now });
    tenant = await createTenant(t.app, 'door-e2e');
    operator = await clientToken(t.app, tenant);
    for (const id of ['front', 'back']) await lock(t, operator, id);
    for (const id of ['alice', 'bob']) await device(t, operator, id);
    for (const [lockId, phoneId] of [['front', 'alice'], ['back', 'alice'], ['back', 'bob']] as const) {
      await ticket(t, operator, lockId, phoneId, { beginDate: now, endDate: now + 30 * 24 * HOUR });
    }
  });
  afterAll(async () => {
    await t.close();
  });

  it('opens for the phone that holds the key, refuses a copy, and refuses a replaced key after one sync or one visit', async () => {
    const front = await provisionLock('front');
    const back = await provisionLock('back');
    const alice = await enrolPhone('alice');
    const bob = await enrolPhone('bob');

    // A token with no secret, a download of bound credentials that carry the lock's key.
    const tokens = await downloadInto(alice.phone, await tokenByKey(alice.clientId, alice.key), 'alice');
    const frontToken = tokens.find((item) => item.securedObjectId === 'front')!;
    expect(JSON.parse(Buffer.from(frontToken.credential!.split('.')[1]!, 'base64url').toString())).toMatchObject({ cnf: { jkt: alice.key.thumbprint } });
    expect(frontToken.lockKey).toEqual(front.publicKey);

    // The lock opens for the phone holding the key.
    const opened = await atTheDoor(front, alice.phone, 'front');
    expect(opened.decision).toMatchObject({ decision: 'open', reason: 'ok' });
    expect(opened.presentation.proof).not.toBeNull();

    // The same credential on another phone (another key): its proof does not match cnf.jkt.
    const thief = new PhoneSimulator();
    thief.store(tokens);
    expect((await atTheDoor(front, thief, 'front')).decision).toMatchObject({ decision: 'deny', reason: 'key-mismatch' });
    // The copy shown with no proof at all.
    front.hello(now);
    expect(await front.decide(frontToken.credential!, 'open', now, 'btlespp', null)).toMatchObject({ decision: 'deny', reason: 'bad-proof' });

    // Alice's phone gets a new key: the old one is revoked at every lock. Her old phone's credentials stay bound to it.
    const oldPhone = alice.phone;
    now += 60_000;
    const replacement = es256KeyPair();
    await registerKey(t, await tokenByKey(alice.clientId, alice.key), 'mobiledevices', 'alice', replacement);
    // Both locks have a key revocation to learn.
    expect(await pendingKeyRevocations('front')).toBe(1);
    expect(await pendingKeyRevocations('back')).toBe(1);
    // Online: one sync, and the old key's credential is refused.
    await sync(front, 'front');
    expect(front.isKeyRevoked(alice.key.thumbprint)).toBe(true);
    expect((await atTheDoor(front, oldPhone, 'front')).decision).toMatchObject({ decision: 'deny', reason: 'key-revoked' });
    // Its next sync acknowledges it (docs/api-reference.md 8.4).
    now += 60_000;
    await sync(front, 'front');
    expect(await pendingKeyRevocations('front')).toBe(0);
    // Offline: the back door learns it from the list the next visitor carries (bob's fresh download).
    expect((await atTheDoor(back, oldPhone, 'back')).decision).toMatchObject({ decision: 'open' });
    await downloadInto(bob.phone, await tokenByKey(bob.clientId, bob.key), 'bob');
    expect((await atTheDoor(back, bob.phone, 'back')).decision).toMatchObject({ decision: 'open', reason: 'ok' });
    expect(back.isKeyRevoked(alice.key.thumbprint)).toBe(true);
    expect((await atTheDoor(back, oldPhone, 'back')).decision).toMatchObject({ decision: 'deny', reason: 'key-revoked' });

    // The new key downloads credentials bound to it, and opens again.
    const renewed = new PhoneSimulator({ key: privateJwk(replacement) });
    await downloadInto(renewed, await tokenByKey(alice.clientId, replacement), 'alice');
    expect((await atTheDoor(front, renewed, 'front')).decision).toMatchObject({ decision: 'open', reason: 'ok' });
    // The old key no longer authenticates its client.
    const refused = await t.app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: alice.clientId,
        client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
        client_assertion: clientAssertion(alice.key, alice.clientId, `${t.config.PUBLIC_URL}/oauth/token`, {
          iat: Math.floor(now / 1000),
          exp: Math.floor(now / 1000) + 60,
        }),
      }).toString(),
    });
    expect(refused.statusCode).toBe(401);

    // The back door's receipt, relayed by bob, is the lock's word: its entries are stored signed, in its numbering.
    bob.phone.takeReceipt('back', back.receipt(now));
    const [relay] = bob.phone.receiptUploads();
    const uploaded = await t.app.inject({
      method: 'POST',
      url: '/deviceapi/mobiledevices/bob/accesslog',
      headers: bearer(await tokenByKey(bob.clientId, bob.key)),
      payload: relay,
    });
    expect(uploaded.statusCode, uploaded.body).toBe(200);
    expect(uploaded.json()).toMatchObject({ accepted: 3, duplicates: 0, gaps: [] });
    // The receipt's appliedSerial is the lock's word: it has applied the key revocation.
    expect(await pendingKeyRevocations('back')).toBe(0);
    const { rows } = await t.database.db.query<{ reason: string; signed: boolean; via: string }>(
      `SELECT reason, signed, via FROM access_log_entries WHERE tenant_id = $1 AND secured_object_id = 'back' ORDER BY entry_no`,
      [tenant.tenantId],
    );
    expect(rows).toEqual([
      { reason: 'ok', signed: true, via: 'bob' },
      { reason: 'ok', signed: true, via: 'bob' },
      { reason: 'key-revoked', signed: true, via: 'bob' },
    ]);
  });
});
