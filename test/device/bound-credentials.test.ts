// Bound credentials and the holder-binding policy (docs/api-reference.md 11.2): cnf.jkt exactly for a device with a key,
// lockKey exactly for a lock with one, the key's bound_until raised by each download, and the tenant's policy or a lock's
// own reaching the lock through its trust, its sync and the revocation lists phones carry.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { accessToken, changeCounter, download, lockKeysToken, lockToken, payloadOf, phoneToken, sync, trustWith, verifyCredential } from '../helpers/device.js';
import { newKeyPair, registerKey } from '../helpers/holder-keys.js';
import { bearer, clientToken, createClient } from '../helpers/oauth.js';
import { call, device, expectAuthChecks, expectProblem, HOUR, ticket } from '../helpers/operator.js';
import { twoTenants, type TwoTenants } from '../helpers/tenants.js';

const START = Date.UTC(2026, 3, 6, 8, 0, 0);

describe('bound credentials and the holder-binding policy', () => {
  let t: TestApp;
  let now = START;
  let tenants: TwoTenants;
  let operator: string;

  beforeAll(async () => {
    t = await buildTestApp({}, { clock: () => now });
    tenants = await twoTenants(t, {
      acme: { locks: ['keyed-door', 'plain-door'], devices: ['keyed-phone', 'plain-phone'] },
      other: { locks: ['keyed-door'] },
    });
  });
  afterAll(() => t.close());
  beforeEach(async () => {
    now += HOUR;
    operator = await clientToken(t.app, tenants.acme);
  });

  const settings = (token: string, payload?: object) =>
    call(t, token, payload === undefined ? { method: 'GET', url: '/operatorapi/settings' } : { method: 'PATCH', url: '/operatorapi/settings', payload });

  it('binds credentials to the device key exactly when the device has one, and hands out lockKey exactly when the lock has one', async () => {
    const phone = newKeyPair();
    const door = newKeyPair();
    const keyedPhone = await phoneToken(t, tenants.acme, 'keyed-phone');
    const plainPhone = await phoneToken(t, tenants.acme, 'plain-phone');
    await registerKey(t, keyedPhone, 'mobiledevices', 'keyed-phone', phone);
    await registerKey(t, await lockKeysToken(t, tenants.acme, 'keyed-door'), 'securedobjects', 'keyed-door', door);
    for (const deviceId of ['keyed-phone', 'plain-phone']) {
      for (const lockId of ['keyed-door', 'plain-door']) await ticket(t, operator, lockId, deviceId, { endDate: now + 30 * 24 * HOUR });
    }

    const keyed = await download(t, keyedPhone, 'keyed-phone');
    const plain = await download(t, plainPhone, 'plain-phone');
    for (const item of [...keyed, ...plain]) {
      const claims = await verifyCredential(t, tenants.acme, item.credential, { securedObjectId: item.securedObjectId, at: now });
      if (item.mobileDeviceId === 'keyed-phone') expect(claims.cnf, item.id).toEqual({ jkt: phone.thumbprint });
      else expect(claims, item.id).not.toHaveProperty('cnf');
      const withKey = item as typeof item & { lockKey?: object };
      if (item.securedObjectId === 'keyed-door') expect(withKey.lockKey, item.id).toEqual(door.publicKey);
      else expect(withKey, item.id).not.toHaveProperty('lockKey');
    }
    // The key's revocation must reach the locks as long as its latest bound credential lives: raised by the download.
    const { rows } = await t.database.db.query<{ id: string; key_bound_until: number | null }>(
      'SELECT id, key_bound_until FROM mobile_devices WHERE tenant_id = $1 AND id = ANY ($2::text[]) ORDER BY id',
      [tenants.acme.tenantId, ['keyed-phone', 'plain-phone']],
    );
    const latest = Math.max(...keyed.map((item) => (payloadOf(item.credential).exp as number) * 1000));
    expect(rows.map((row) => [row.id, row.key_bound_until === null ? null : Number(row.key_bound_until)])).toEqual([
      ['keyed-phone', latest],
      ['plain-phone', null],
    ]);
  });

  it('a phone that registers a key after downloading gets its stored credentials signed anew, bound to the key', async () => {
    await device(t, operator, 'late-phone');
    const token = await phoneToken(t, tenants.acme, 'late-phone');
    await ticket(t, operator, 'plain-door', 'late-phone', { endDate: now + 30 * 24 * HOUR });
    const [unbound] = await download(t, token, 'late-phone');
    expect(payloadOf(unbound!.credential)).not.toHaveProperty('cnf');
    // Reused while nothing changed.
    expect((await download(t, token, 'late-phone'))[0]!.credential).toBe(unbound!.credential);
    const pair = newKeyPair();
    await registerKey(t, token, 'mobiledevices', 'late-phone', pair);
    const [bound] = await download(t, token, 'late-phone');
    expect(bound!.credential).not.toBe(unbound!.credential);
    expect(payloadOf(bound!.credential).cnf).toEqual({ jkt: pair.thumbprint });
  });

  it('writes a token card for a resident whose phone has a key with credentials bound to no key: a card cannot prove one', async () => {
    await device(t, operator, 'card-phone');
    const phoneClient = await phoneToken(t, tenants.acme, 'card-phone');
    const pair = newKeyPair();
    await registerKey(t, phoneClient, 'mobiledevices', 'card-phone', pair);
    await ticket(t, operator, 'plain-door', 'card-phone', { endDate: now + 30 * 24 * HOUR });
    const writer = await accessToken(t, tenants.acme, ['device-groups:write', 'nfc-token-writer']);
    const created = await t.app.inject({ method: 'POST', url: '/v1/residents', headers: bearer(writer), payload: { name: 'Card holder', mobileDeviceIds: ['card-phone'] } });
    expect(created.statusCode, created.body).toBe(201);
    const card = await t.app.inject({ url: `/v1/residents/${created.json().id}/token-card?version=2`, headers: bearer(writer) });
    expect(card.statusCode, card.body).toBe(200);
    const { credentials } = JSON.parse(Buffer.from(card.json().cardData, 'base64').toString('utf8')) as { credentials: string[] };
    expect(credentials).toHaveLength(1);
    expect(payloadOf(credentials[0]!)).not.toHaveProperty('cnf');
    // The phone's own download is bound to its key again.
    const [phoneCopy] = await download(t, phoneClient, 'card-phone');
    expect(payloadOf(phoneCopy!.credential).cnf).toEqual({ jkt: pair.thumbprint });
  });

  describe('GET and PATCH /operatorapi/settings', () => {
    it('answers optional until changed; required reaches the trust, the next sync (a new cursor) and the next revocation list', async () => {
      expect((await settings(operator)).json()).toMatchObject({ holderBinding: 'optional' });
      const doorToken = await lockToken(t, tenants.acme, 'plain-door');
      const before = await sync(t, doorToken, 'plain-door');
      expect(before.holderBinding).toBe('optional');
      expect(await trustWith(t, doorToken, 'plain-door')).toMatchObject({ holderBinding: 'optional', serial: await changeCounter(t, tenants.acme.tenantId) });
      const phone = await phoneToken(t, tenants.acme, 'plain-phone');
      const listBefore = payloadOf((await download(t, phone, 'plain-phone')).find((item) => item.securedObjectId === 'plain-door')!.revocationList!);
      expect(listBefore.holderBinding).toBe('optional');

      const changed = await settings(operator, { holderBinding: 'required' });
      expect(changed.statusCode, changed.body).toBe(200);
      expect(changed.json()).toMatchObject({ holderBinding: 'required' });
      expect((await settings(operator)).json()).toMatchObject({ holderBinding: 'required' });

      const trust = await trustWith(t, doorToken, 'plain-door');
      expect(trust).toMatchObject({ holderBinding: 'required', serial: await changeCounter(t, tenants.acme.tenantId) });
      const after = await sync(t, doorToken, 'plain-door', before.cursor);
      expect(after).toMatchObject({ tokens: [], revocations: [], revokedKeys: [], holderBinding: 'required' });
      expect(after.cursor).not.toBe(before.cursor);
      expect(after.serial).toBeGreaterThan(before.serial);
      expect(await sync(t, doorToken, 'plain-door', after.cursor)).toMatchObject({ cursor: after.cursor, holderBinding: 'required' });
      const listAfter = payloadOf((await download(t, phone, 'plain-phone')).find((item) => item.securedObjectId === 'plain-door')!.revocationList!);
      expect(listAfter).toMatchObject({ holderBinding: 'required' });
      expect(listAfter.serial as number).toBeGreaterThan(listBefore.serial as number);
      // Another tenant's locks keep their own policy.
      expect((await settings(await clientToken(t.app, tenants.other))).json()).toMatchObject({ holderBinding: 'optional' });
      expect(await trustWith(t, await lockToken(t, tenants.other, 'keyed-door'), 'keyed-door')).toMatchObject({ holderBinding: 'optional' });
      const { rows } = await t.database.db.query<{ action: string }>(
        "SELECT action FROM audit_events WHERE tenant_id = $1 AND action = 'settings.updated'",
        [tenants.acme.tenantId],
      );
      expect(rows).toHaveLength(1);
      expect((await settings(operator, { holderBinding: 'optional' })).json()).toMatchObject({ holderBinding: 'optional' });
    });

    it('refuses a bad body with 400 and changes nothing; needs settings:manage, which tenant create gives', async () => {
      for (const payload of [{ holderBinding: 'sometimes' }, {}, { holderBinding: 'required', retention: 1 }, { holderBinding: null }]) {
        expectProblem(await settings(operator, payload), 400);
      }
      expect((await settings(operator)).json()).toMatchObject({ holderBinding: 'optional' });
      const reader = await clientToken(t.app, await createClient(t.app, tenants.acme, ['devices:read']));
      await expectAuthChecks(t, reader, [
        { method: 'GET', url: '/operatorapi/settings', scope: 'settings:manage' },
        { method: 'PATCH', url: '/operatorapi/settings', payload: { holderBinding: 'required' }, scope: 'settings:manage' },
      ]);
    });
  });

  describe('a lock\'s own policy: PATCH /operatorapi/securedobjects/{id} holderBinding', () => {
    it('overrides the tenant\'s for that lock only, reaches its trust, sync and lists, and null gives the tenant\'s back', async () => {
      const doorToken = await lockToken(t, tenants.acme, 'plain-door');
      const before = await sync(t, doorToken, 'plain-door');
      expect(before.holderBinding).toBe('optional');
      const patch = (payload: object, id = 'plain-door', token = operator) => call(t, token, { method: 'PATCH', url: `/operatorapi/securedobjects/${id}`, payload });

      const patched = await patch({ holderBinding: 'required' });
      expect(patched.statusCode, patched.body).toBe(200);
      expect(patched.json()).toMatchObject({ id: 'plain-door', holderBinding: 'required', timeZone: 'UTC' });
      expect((await call(t, operator, { method: 'GET', url: '/operatorapi/securedobjects/plain-door' })).json()).toMatchObject({ holderBinding: 'required' });
      expect(await trustWith(t, doorToken, 'plain-door')).toMatchObject({ holderBinding: 'required' });
      const after = await sync(t, doorToken, 'plain-door', before.cursor);
      expect(after).toMatchObject({ holderBinding: 'required' });
      expect(after.cursor).not.toBe(before.cursor);
      const phone = await phoneToken(t, tenants.acme, 'plain-phone');
      const lists = new Map((await download(t, phone, 'plain-phone')).filter((item) => item.revocationList).map((item) => [item.securedObjectId, payloadOf(item.revocationList!)]));
      expect(lists.get('plain-door')).toMatchObject({ holderBinding: 'required' });
      expect(lists.get('keyed-door')).toMatchObject({ holderBinding: 'optional' });
      expect(await trustWith(t, await lockToken(t, tenants.acme, 'keyed-door'), 'keyed-door')).toMatchObject({ holderBinding: 'optional' });

      const cleared = await patch({ holderBinding: null });
      expect(cleared.statusCode, cleared.body).toBe(200);
      expect(cleared.json()).not.toHaveProperty('holderBinding');
      expect(await trustWith(t, doorToken, 'plain-door')).toMatchObject({ holderBinding: 'optional' });
      expect((await sync(t, doorToken, 'plain-door', after.cursor)).holderBinding).toBe('optional');

      // A bad value is a 400 and changes nothing; another tenant's lock answers as missing.
      expectProblem(await patch({ holderBinding: 'always' }), 400);
      expectProblem(await patch({ holderBinding: 'required' }, 'plain-door', await clientToken(t.app, tenants.other)), 404);
      expect((await call(t, operator, { method: 'GET', url: '/operatorapi/securedobjects/plain-door' })).json()).not.toHaveProperty('holderBinding');
    });
  });
});
