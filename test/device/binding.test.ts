// Who reaches what on the Device API (docs/api-reference.md 3.4, 3.5, 3.7): bound clients reach only their device or lock, the
// audience deviceapi, scopes; and the removed interfaces of the Device API (docs/api-reference.md 4.4: SDK 2.x, lockserver/binary).
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { expectNothingChanged } from '../helpers/database-state.js';
import { downloadRequest, syncRequest } from '../helpers/device.js';
import { bearer, clientToken, createClient, createTenant, type TenantFixture } from '../helpers/oauth.js';
import { call, device, expectProblem, lock, ticket } from '../helpers/operator.js';

const SUNSET_2018_01_01 = 'Mon, 01 Jan 2018 00:00:00 GMT';
const SUNSET_2018_04_01 = 'Sun, 01 Apr 2018 00:00:00 GMT';

let t: TestApp;
let acme: TenantFixture;
let operator: string;

beforeAll(async () => {
  t = await buildTestApp({ BCRYPT_COST: '4' });
  acme = await createTenant(t.app, 'acme');
  operator = await clientToken(t.app, acme);
});
afterAll(async () => {
  await t.close();
});

/** A token of a new client of `tenant` with `scopes` and the binding. */
async function tokenOf(tenant: TenantFixture, scopes: string[], binding: { mobileDeviceId?: string; securedObjectId?: string } = {}) {
  return clientToken(t.app, await createClient(t.app, tenant, scopes, binding));
}

describe('Device API binding, audience and scopes', () => {
  let other: TenantFixture;
  const tickets: Record<string, string> = {};

  beforeAll(async () => {
    other = await createTenant(t.app, 'other');
    const otherOperator = await clientToken(t.app, other);
    for (const id of ['lock-x', 'lock-y']) await lock(t, operator, id);
    for (const id of ['phone-a', 'phone-b']) await device(t, operator, id);
    for (const [lockId, phoneId] of [
      ['lock-x', 'phone-a'],
      ['lock-y', 'phone-a'],
      ['lock-x', 'phone-b'],
    ]) {
      tickets[`${lockId}|${phoneId}`] = (await ticket(t, operator, lockId!, phoneId!)).id;
    }
    await lock(t, otherOperator, 'their-lock');
    await device(t, otherOperator, 'their-phone');
    tickets['their-lock|their-phone'] = (await ticket(t, otherOperator, 'their-lock', 'their-phone')).id;
  });

  it('a client bound to device A downloads A\'s tickets only: B answers 404, and it may not sync (403)', async () => {
    const token = await tokenOf(acme, ['tokens:download', 'sync'], { mobileDeviceId: 'phone-a' });
    const own = await downloadRequest(t, token, 'phone-a');
    expect(own.statusCode, own.body).toBe(200);
    expect(own.json().map((item: { id: string }) => item.id).sort()).toEqual([tickets['lock-x|phone-a'], tickets['lock-y|phone-a']].sort());

    await expectNothingChanged(t, async () => {
      const foreign = await downloadRequest(t, token, 'phone-b');
      expect(expectProblem(foreign, 404).detail).toContain('phone-b');
      expect(foreign.body).not.toContain(tickets['lock-x|phone-b']!);
      // Another tenant's device answers exactly as a missing one.
      const theirs = await downloadRequest(t, token, 'their-phone');
      const missing = await downloadRequest(t, token, 'no-such-phone');
      expectProblem(theirs, 404);
      expectProblem(missing, 404);
      expect(theirs.json().title).toBe(missing.json().title);
      expect(expectProblem(await syncRequest(t, token, 'lock-x'), 403).detail).toMatch(/bound/);
    });
    // The refused download stamped nothing.
    const { rows } = await t.database.db.query<{ downloaded_at: number | null }>('SELECT downloaded_at FROM tickets WHERE id = $1', [tickets['lock-x|phone-b']]);
    expect(rows[0]!.downloaded_at).toBeNull();
  });

  it('an unbound client with tokens:download answers 403: downloads need a device-bound client', async () => {
    const token = await tokenOf(acme, ['tokens:download']);
    for (const id of ['phone-a', 'their-phone']) {
      const response = await downloadRequest(t, token, id);
      expect(expectProblem(response, 403).detail).toContain('bound to the mobile device');
      expect(response.body).not.toContain(tickets['lock-x|phone-a']!);
    }
  });

  it('a client bound to lock X syncs X only: another lock answers 404, and it may not download (403)', async () => {
    const token = await tokenOf(acme, ['sync', 'tokens:download'], { securedObjectId: 'lock-x' });
    const own = await syncRequest(t, token, 'lock-x');
    expect(own.statusCode, own.body).toBe(200);
    expect(own.json().tokens.map((item: { id: string }) => item.id).sort()).toEqual([tickets['lock-x|phone-a'], tickets['lock-x|phone-b']].sort());
    const foreign = await syncRequest(t, token, 'lock-y');
    expect(expectProblem(foreign, 404).detail).toContain('lock-y');
    expect(foreign.body).not.toContain(tickets['lock-y|phone-a']!);
    expectProblem(await syncRequest(t, token, 'their-lock'), 404);
    expect(expectProblem(await downloadRequest(t, token, 'phone-a'), 403).detail).toMatch(/bound/);
  });

  it('an unbound client with sync syncs every lock of its tenant; another tenant\'s lock answers as a missing one', async () => {
    const token = await tokenOf(acme, ['sync']);
    for (const [id, expected] of [
      ['lock-x', [tickets['lock-x|phone-a'], tickets['lock-x|phone-b']]],
      ['lock-y', [tickets['lock-y|phone-a']]],
    ] as const) {
      const response = await syncRequest(t, token, id);
      expect(response.statusCode, response.body).toBe(200);
      expect(response.json().tokens.map((item: { id: string }) => item.id).sort()).toEqual([...expected].sort());
    }
    const theirs = await syncRequest(t, token, 'their-lock');
    const missing = await syncRequest(t, token, 'no-such-lock');
    expect(expectProblem(theirs, 404).title).toBe(expectProblem(missing, 404).title);
    expect(theirs.body).not.toContain(tickets['their-lock|their-phone']!);
  });

  it('is the download and sync services\' own rule, so every caller of download and sync keeps to the binding (docs/api-reference.md 3.7)', async () => {
    const { downloads, lockSyncs } = t.app.services;
    const context = { tenantId: acme.tenantId, actor: 'client:test', requestId: null };
    await expectNothingChanged(t, async () => {
      await expect(downloads.download(context, { clientId: 'c', mobileDeviceId: 'phone-a' }, 'phone-b', 10)).rejects.toMatchObject({ status: 404, detail: 'No mobile device phone-b.' });
      await expect(downloads.download(context, { clientId: 'c' }, 'phone-a', 10)).rejects.toMatchObject({ status: 403, detail: expect.stringContaining('bound to the mobile device') });
      await expect(downloads.download(context, { clientId: 'c', securedObjectId: 'lock-x' }, 'phone-a', 10)).rejects.toMatchObject({ status: 403, detail: expect.stringMatching(/bound/) });
      await expect(lockSyncs.sync(acme.tenantId, { clientId: 'c', securedObjectId: 'lock-x' }, 'lock-y', 10)).rejects.toMatchObject({ status: 404, detail: 'No secured object lock-y.' });
      await expect(lockSyncs.sync(acme.tenantId, { clientId: 'c', mobileDeviceId: 'phone-a' }, 'lock-x', 10)).rejects.toMatchObject({ status: 403, detail: expect.stringMatching(/bound/) });
    });
    const { rows } = await t.database.db.query<{ downloaded_at: number | null }>('SELECT downloaded_at FROM tickets WHERE id = $1', [tickets['lock-x|phone-b']]);
    expect(rows[0]!.downloaded_at).toBeNull();
    const unbound = await lockSyncs.sync(acme.tenantId, { clientId: 'c' }, 'lock-y', 10);
    expect(unbound.tokens.map((item) => item.id)).toEqual([tickets['lock-y|phone-a']]);
  });

  it('gives bound clients the audience deviceapi only: the Operator API refuses their tokens with 401', async () => {
    const bound = await tokenOf(acme, ['tokens:download', 'tokens:read'], { mobileDeviceId: 'phone-a' });
    expect(decodeJwt(bound).aud).toBe('deviceapi');
    const boundLock = await tokenOf(acme, ['sync', 'devices:read'], { securedObjectId: 'lock-x' });
    expect(decodeJwt(boundLock).aud).toBe('deviceapi');
    for (const [token, url] of [
      [bound, '/operatorapi/tickets'],
      [boundLock, '/operatorapi/securedobjects/lock-x'],
    ] as const) {
      const response = await call(t, token, { method: 'GET', url });
      expectProblem(response, 401);
      expect(response.headers['www-authenticate']).toBe('Bearer realm="operatorapi", error="invalid_token", error_description="the access token is for another API"');
    }

    // An unbound client with a device scope gets both audiences; without one, the Operator API's only.
    const unbound = await tokenOf(acme, ['sync', 'tokens:read']);
    expect(decodeJwt(unbound).aud).toEqual(['operatorapi', 'deviceapi']);
    expect((await call(t, unbound, { method: 'GET', url: '/operatorapi/tickets' })).statusCode).toBe(200);
    expect(decodeJwt(operator).aud).toBe('operatorapi');
    const management = await syncRequest(t, operator, 'lock-x');
    expectProblem(management, 401);
    expect(management.headers['www-authenticate']).toBe('Bearer realm="deviceapi", error="invalid_token", error_description="the access token is for another API"');
  });

  it('answers 403 with the needed scope in WWW-Authenticate, and 401 without a token', async () => {
    const syncOnly = await tokenOf(acme, ['sync'], { securedObjectId: 'lock-x' });
    const downloadOnly = await tokenOf(acme, ['tokens:download'], { mobileDeviceId: 'phone-a' });
    for (const [response, scope] of [
      [await downloadRequest(t, syncOnly, 'phone-a'), 'tokens:download'],
      [await syncRequest(t, downloadOnly, 'lock-x'), 'sync'],
    ] as const) {
      expect(expectProblem(response, 403).detail).toContain(scope);
      expect(response.headers['www-authenticate']).toBe(`Bearer realm="deviceapi", error="insufficient_scope", scope="${scope}"`);
    }
    for (const url of ['/deviceapi/mobiledevices/phone-a/tickets', '/deviceapi/securedobjects/lock-x/sync']) {
      const response = await t.app.inject({ url });
      expectProblem(response, 401);
      expect(response.headers['www-authenticate']).toBe('Bearer realm="deviceapi"');
    }
  });
});

describe('removed interfaces of the Device API', () => {
  let phone: string;
  let lockSync: string;
  let issued: string;

  beforeAll(async () => {
    await lock(t, operator, 'door');
    await device(t, operator, 'phone');
    issued = (await ticket(t, operator, 'door', 'phone')).id;
    phone = await tokenOf(acme, ['tokens:download'], { mobileDeviceId: 'phone' });
    lockSync = await tokenOf(acme, ['sync'], { securedObjectId: 'door' });
  });

  it.each(['2.1.0', '2', '2.9', ' 2.0.1'])('X-SDK-Version: %s answers 410 naming SDK 3.0 or later, with Sunset, on every route', async (version) => {
    for (const [url, token] of [
      ['/deviceapi/mobiledevices/phone/tickets', phone],
      ['/deviceapi/securedobjects/door/sync', lockSync],
    ] as const) {
      for (const headers of [{ ...bearer(token), 'x-sdk-version': version }, { 'x-sdk-version': version }]) {
        const response = await t.app.inject({ url, headers });
        const problem = expectProblem(response, 410);
        expect(problem.detail).toContain('Mobile SDK 2.x was removed on 01.04.2018');
        expect(problem.detail).toContain('SDK 3.0 or later');
        expect(response.headers.sunset).toBe(SUNSET_2018_04_01);
        expect(response.headers.deprecation).toBeUndefined();
      }
    }
    // Refused before anything happened: the ticket was not downloaded.
    const { rows } = await t.database.db.query<{ downloaded_at: number | null }>('SELECT downloaded_at FROM tickets WHERE id = $1', [issued]);
    expect(rows[0]!.downloaded_at).toBeNull();
  });

  it.each(['3.2', '3.0.0', '20.1', '10'])('X-SDK-Version: %s passes', async (version) => {
    const response = await t.app.inject({ url: '/deviceapi/mobiledevices/phone/tickets', headers: { ...bearer(phone), 'x-sdk-version': version } });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toHaveLength(1);
  });

  it('GET /deviceapi/tickets/lockserver/binary answers 410 naming the sync endpoint, with Sunset and the successor link', async () => {
    for (const headers of [{}, bearer(lockSync)]) {
      const response = await t.app.inject({ url: '/deviceapi/tickets/lockserver/binary', headers });
      const problem = expectProblem(response, 410);
      expect(problem.detail).toContain('removed on 01.01.2018');
      expect(problem.detail).toContain('GET /deviceapi/securedobjects/{id}/sync');
      expect(response.headers.sunset).toBe(SUNSET_2018_01_01);
      expect(response.headers.link).toBe('</deviceapi/apidocs/index.html>; rel="successor-version"');
    }
  });
});
