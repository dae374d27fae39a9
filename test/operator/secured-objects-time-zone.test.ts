// A lock's time zone (docs/api-reference.md 9, 4.1): set on create or with PATCH, answered on every read, audited.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { expectNothingChanged } from '../helpers/database-state.js';
import { clientToken, createClient, type TenantFixture } from '../helpers/oauth.js';
import { twoTenants } from '../helpers/tenants.js';
import { LOCK_UUID, auditEvents, call, expectAuthChecks, expectProblem, problemFields, registerLock } from '../helpers/operator.js';

describe('secured object time zone', () => {
  let t: TestApp;
  let acme: TenantFixture;
  let other: TenantFixture;
  let token: string;
  let otherToken: string;

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4' });
    ({ acme, other, token, otherToken } = await twoTenants(t));
  });
  afterAll(async () => {
    await t.close();
  });

  const body = (id: string, extra: object = {}) => ({ id, channels: ['btlespp'], localName: `LOCK-${id}`, uuid: LOCK_UUID, ...extra });
  const get = (id: string, auth = token) => call(t, auth, { method: 'GET', url: `/operatorapi/securedobjects/${id}` });
  const patch = (id: string, payload: object, auth = token, headers: Record<string, string> = {}) =>
    call(t, auth, { method: 'PATCH', url: `/operatorapi/securedobjects/${id}`, payload, headers });

  async function storedZone(tenantId: string, id: string): Promise<string | undefined> {
    const { rows } = await t.database.db.query<{ time_zone: string }>('SELECT time_zone FROM secured_objects WHERE tenant_id = $1 AND id = $2', [
      tenantId,
      id,
    ]);
    return rows[0]?.time_zone;
  }

  it('defaults to UTC: the create answer, GET one and the list all carry timeZone', async () => {
    const created = await registerLock(t, token, body('plain'));
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json()).toStrictEqual({
      id: 'plain',
      channels: ['btlespp'],
      urls: [`btlespp://LOCK-plain/${LOCK_UUID}`],
      creationTime: expect.any(Number),
      timeZone: 'UTC',
    });
    expect(await storedZone(acme.tenantId, 'plain')).toBe('UTC');
    expect((await get('plain')).json()).toMatchObject({ id: 'plain', timeZone: 'UTC' });
    const list = await call(t, token, { method: 'GET', url: '/operatorapi/securedobjects' });
    expect(list.json()).toContainEqual(expect.objectContaining({ id: 'plain', timeZone: 'UTC' }));
  });

  it('stores a zone sent on create in its canonical spelling', async () => {
    const created = await registerLock(t, token, body('berlin', { timeZone: 'europe/berlin' }));
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json().timeZone).toBe('Europe/Berlin');
    expect(await storedZone(acme.tenantId, 'berlin')).toBe('Europe/Berlin');
    expect((await get('berlin')).json().timeZone).toBe('Europe/Berlin');

    const utc = await registerLock(t, token, body('lower-utc', { timeZone: 'utc' }));
    expect(utc.json().timeZone).toBe('UTC');
  });

  it('refuses an unknown zone or a UTC offset on create with a 422 naming timeZone, and registers nothing', async () => {
    await expectNothingChanged(t, async () => {
      for (const timeZone of ['Mars/Olympus_Mons', '+02:00', 'Europe/Berlin ', 'CET-1CEST']) {
        const response = await registerLock(t, token, body('nowhere', { timeZone }));
        expect(problemFields(response, 422), timeZone).toEqual(['timeZone']);
        expect(response.json().errors[0].message).toContain('Europe/Berlin');
      }
      const offset = await registerLock(t, token, body('nowhere', { timeZone: '+02:00' }));
      expect(offset.json().errors[0].message).toMatch(/offset/);
      // Both reasons at once: a bad channel and a bad zone.
      const both = await registerLock(t, token, body('nowhere', { timeZone: 'Nowhere/City', channels: ['smoke'] }));
      expect(problemFields(both, 422)).toEqual(['channels[0]', 'timeZone']);
      // The wrong type or an empty string is malformed: 400.
      expect(problemFields(await registerLock(t, token, body('nowhere', { timeZone: 2 })), 400)).toEqual(['timeZone']);
      expect(problemFields(await registerLock(t, token, body('nowhere', { timeZone: '' })), 400)).toEqual(['timeZone']);
    });
    expect(await storedZone(acme.tenantId, 'nowhere')).toBeUndefined();
  });

  it('PATCH sets the zone: 200 with the lock as GET answers it, the row changed, one audit event in the same request', async () => {
    await registerLock(t, token, body('moving'));
    const response = await patch('moving', { timeZone: 'america/new_york' }, token, { 'x-request-id': 'move-zone' });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toStrictEqual((await get('moving')).json());
    expect(response.json()).toMatchObject({ id: 'moving', timeZone: 'America/New_York', pendingRevocations: 0, clockDrift: false });
    expect(await storedZone(acme.tenantId, 'moving')).toBe('America/New_York');
    const events = await auditEvents(t, { target: 'secured_object:moving' });
    expect(events.map((event) => event.action)).toEqual(['secured_object.created', 'secured_object.updated']);
    expect(events[1]).toMatchObject({
      tenant_id: acme.tenantId,
      actor: `client:${acme.clientId}`,
      request_id: response.headers['x-request-id'],
      time: expect.any(Number),
    });

    // Back to UTC.
    expect((await patch('moving', { timeZone: 'UTC' })).json().timeZone).toBe('UTC');
    expect(await storedZone(acme.tenantId, 'moving')).toBe('UTC');
  });

  it('PATCH with an Idempotency-Key answers a retry again without a second change', async () => {
    await registerLock(t, token, body('retried'));
    const key = { 'idempotency-key': 'zone-retried-1' };
    const first = await patch('retried', { timeZone: 'Asia/Tokyo' }, token, key);
    expect(first.statusCode, first.body).toBe(200);
    const again = await patch('retried', { timeZone: 'Asia/Tokyo' }, token, key);
    expect(again.statusCode).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json()).toStrictEqual(first.json());
    expect((await auditEvents(t, { target: 'secured_object:retried' })).map((event) => event.action)).toEqual([
      'secured_object.created',
      'secured_object.updated',
    ]);
    // The same key with another body is refused.
    expectProblem(await patch('retried', { timeZone: 'Europe/Paris' }, token, key), 422);
    expect(await storedZone(acme.tenantId, 'retried')).toBe('Asia/Tokyo');
  });

  it('PATCH refuses an unknown zone (422), a malformed body (400) and changes nothing', async () => {
    await registerLock(t, token, body('steady', { timeZone: 'Europe/Berlin' }));
    const before = await auditEvents(t, { target: 'secured_object:steady' });
    await expectNothingChanged(t, async () => {
      for (const timeZone of ['Europe/Atlantis', '+01:00', 'GMT+1 ']) {
        const response = await patch('steady', { timeZone });
        expect(problemFields(response, 422), timeZone).toEqual(['timeZone']);
        expect(response.json().detail).toContain('Europe/Berlin');
      }
      expectProblem(await patch('steady', {}), 400);
      expect(problemFields(await patch('steady', { timeZone: 'UTC', localName: 'x' }), 400)).toContain('localName');
      expect(problemFields(await patch('steady', { timeZone: null }), 400)).toEqual(['timeZone']);
      expect(problemFields(await patch('steady', { timeZone: 'x'.repeat(65) }), 400)).toEqual(['timeZone']);
      const notJson = await t.app.inject({
        method: 'PATCH',
        url: '/operatorapi/securedobjects/steady',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'text/plain' },
        payload: 'UTC',
      });
      expectProblem(notJson, 415);
    });
    expect(await storedZone(acme.tenantId, 'steady')).toBe('Europe/Berlin');
    expect(await auditEvents(t, { target: 'secured_object:steady' })).toEqual(before);
  });

  it("PATCH answers 404 for an unknown id and for another tenant's lock, which stays as it was", async () => {
    await registerLock(t, otherToken, body('theirs', { timeZone: 'Europe/Lisbon' }));
    expectProblem(await patch('no-such-lock', { timeZone: 'UTC' }), 404);
    const foreign = await patch('theirs', { timeZone: 'UTC' });
    expectProblem(foreign, 404);
    expect(foreign.body).not.toContain(other.tenantId);
    expect(await storedZone(other.tenantId, 'theirs')).toBe('Europe/Lisbon');
    expect((await auditEvents(t, { target: 'secured_object:theirs' })).map((event) => event.action)).toEqual(['secured_object.created']);
    expect((await get('theirs', otherToken)).json().timeZone).toBe('Europe/Lisbon');
  });

  it('PATCH needs a token (401) and devices:write (403)', async () => {
    await registerLock(t, token, body('guarded', { timeZone: 'Europe/Rome' }));
    const reader = await clientToken(t.app, await createClient(t.app, acme, ['devices:read', 'tokens:read']));
    await expectAuthChecks(t, reader, [
      { method: 'PATCH', url: '/operatorapi/securedobjects/guarded', payload: { timeZone: 'UTC' }, scope: 'devices:write' },
    ]);
    expect(await storedZone(acme.tenantId, 'guarded')).toBe('Europe/Rome');
    expect((await auditEvents(t, { target: 'secured_object:guarded' })).map((event) => event.action)).toEqual(['secured_object.created']);
  });
});
