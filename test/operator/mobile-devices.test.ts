// /operatorapi/mobiledevices (docs/api-reference.md 4.2): register, read, page, remove (revoking tickets); scope, tenant, audit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { expectNothingChanged } from '../helpers/database-state.js';
import { clientToken, createClient, createTenant, type TenantFixture } from '../helpers/oauth.js';
import { twoTenants } from '../helpers/tenants.js';
import {
  UUID_PATTERN,
  auditEvents,
  call,
  device,
  expectAuthChecks,
  expectProblem,
  fieldsOf,
  lock,
  problemFields,
  registerDevice,
  ticket,
  walk,
} from '../helpers/operator.js';

describe('mobile devices', () => {
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

  const get = (id: string, auth = token) => call(t, auth, { method: 'GET', url: `/operatorapi/mobiledevices/${id}` });
  const remove = (id: string, auth = token) => call(t, auth, { method: 'DELETE', url: `/operatorapi/mobiledevices/${id}` });

  async function row(tenantId: string, id: string) {
    const { rows } = await t.database.db.query<{ name: string | null; created_at: number }>(
      'SELECT name, created_at FROM mobile_devices WHERE tenant_id = $1 AND id = $2',
      [tenantId, id],
    );
    return rows[0];
  }

  it('registers a device with id and name: 201, Location, {id, name, creationTime}, one row, one audit event', async () => {
    const response = await registerDevice(t, token, { id: 'phone-alice-1', name: "Alice's phone" }, { 'x-request-id': 'register-alice' });
    expect(response.statusCode).toBe(201);
    const body = response.json();
    expect(body).toStrictEqual({ id: 'phone-alice-1', name: "Alice's phone", creationTime: expect.any(Number) });
    expect(response.headers.location).toBe('/operatorapi/mobiledevices/phone-alice-1');
    expect(await row(acme.tenantId, 'phone-alice-1')).toEqual({ name: "Alice's phone", created_at: body.creationTime });
    expect(await auditEvents(t, { target: 'mobile_device:phone-alice-1' })).toEqual([
      {
        tenant_id: acme.tenantId,
        time: body.creationTime,
        actor: `client:${acme.clientId}`,
        action: 'mobile_device.created',
        target: 'mobile_device:phone-alice-1',
        request_id: String(response.headers['x-request-id']),
      },
    ]);
    const read = await get('phone-alice-1');
    expect(read.statusCode).toBe(200);
    expect(read.json()).toStrictEqual(body);
  });

  it('makes an id when none is given; without a name the name is absent, never null', async () => {
    const response = await registerDevice(t, token, {});
    expect(response.statusCode).toBe(201);
    const body = response.json();
    expect(body.id).toMatch(UUID_PATTERN);
    expect(body).toStrictEqual({ id: body.id, creationTime: expect.any(Number) });
    expect(response.headers.location).toBe(`/operatorapi/mobiledevices/${body.id}`);
    expect(await row(acme.tenantId, body.id)).toEqual({ name: null, created_at: body.creationTime });

    const read = (await get(body.id)).json();
    expect(read).toStrictEqual(body);
    expect(read).not.toHaveProperty('name');
    const listed = (await walk(t, token, '/operatorapi/mobiledevices?limit=1000')).items.find((item) => item.id === body.id);
    expect(listed).toStrictEqual(body);
  });

  it('answers 409 for an id in use and changes nothing; the same id is free in another tenant', async () => {
    await device(t, token, 'shared-id', 'first');
    await expectNothingChanged(t, async () => {
      expect(expectProblem(await registerDevice(t, token, { id: 'shared-id', name: 'second' }), 409).detail).toContain('shared-id');
    });
    expect((await row(acme.tenantId, 'shared-id'))?.name).toBe('first');
    expect((await registerDevice(t, otherToken, { id: 'shared-id', name: 'theirs' })).statusCode).toBe(201);
    expect((await row(acme.tenantId, 'shared-id'))?.name).toBe('first');
    expect((await row(other.tenantId, 'shared-id'))?.name).toBe('theirs');
  });

  it('refuses malformed bodies with 400 naming every bad field, changing nothing', async () => {
    await expectNothingChanged(t, async () => {
      const bad = await registerDevice(t, token, { id: 'has space', name: '', owner: 'alice' });
      expect(problemFields(bad, 400)).toEqual(['id', 'name', 'owner']);
      expect(bad.json().errors).toContainEqual({ field: 'owner', message: 'is not a known field' });
      expect(problemFields(await registerDevice(t, token, { id: 42, name: null }), 400)).toEqual(['id', 'name']);
      expect(problemFields(await registerDevice(t, token, { id: 'x'.repeat(129), name: 'n'.repeat(201) }), 400)).toEqual(['id', 'name']);
      expect(problemFields(await registerDevice(t, token, { id: '..' }), 400)).toEqual(['id']);
      const array = await t.app.inject({
        method: 'POST',
        url: '/operatorapi/mobiledevices',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        payload: '[]',
      });
      expectProblem(array, 400);
      const broken = await t.app.inject({
        method: 'POST',
        url: '/operatorapi/mobiledevices',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        payload: '{"id": ',
      });
      expectProblem(broken, 400);
    });
  });

  it('pages the tenant\'s devices oldest first with Link rel="next"; bad limits and cursors are 400', async () => {
    const tenant = await createTenant(t.app, 'paging');
    const pageToken = await clientToken(t.app, tenant);
    const ids = ['d1', 'd2', 'd3', 'd4'];
    for (const id of ids) await device(t, pageToken, id, `device ${id}`);

    const first = await call(t, pageToken, { method: 'GET', url: '/operatorapi/mobiledevices?limit=3' });
    expect(first.headers.link).toMatch(/^<\/operatorapi\/mobiledevices\?limit=3&cursor=[A-Za-z0-9_-]+>; rel="next"$/);
    const { pages, items } = await walk(t, pageToken, '/operatorapi/mobiledevices?limit=3');
    expect(pages.map((page) => page.length)).toEqual([3, 1]);
    expect(items).toStrictEqual(ids.map((id) => ({ id, name: `device ${id}`, creationTime: expect.any(Number) })));
    expect((await walk(t, otherToken, '/operatorapi/mobiledevices?limit=1000')).items.map((item) => item.id)).not.toContain('d1');

    for (const query of ['limit=0', 'limit=1001', 'limit=-1', 'cursor=W10', 'name=d1']) {
      const response = await call(t, pageToken, { method: 'GET', url: `/operatorapi/mobiledevices?${query}` });
      expectProblem(response, 400);
      expect(fieldsOf(response)).toEqual([query.split('=')[0]]);
    }
  });

  it("answers another tenant's device as missing (404) and leaves it and its tickets unchanged", async () => {
    await device(t, otherToken, 'their-phone');
    await lock(t, otherToken, 'their-door');
    const theirTicket = await ticket(t, otherToken, 'their-door', 'their-phone');
    await expectNothingChanged(t, async () => {
      expectProblem(await get('their-phone'), 404);
      expectProblem(await remove('their-phone'), 404);
      expectProblem(await get('no-such-phone'), 404);
      expectProblem(await remove('no-such-phone'), 404);
    });
    expect((await get('their-phone', otherToken)).statusCode).toBe(200);
    expect((await call(t, otherToken, { method: 'GET', url: `/operatorapi/tickets/${theirTicket.id}` })).json()).toMatchObject({
      status: 'VALID',
    });
  });

  it('removes a device: 204, every ticket issued to it becomes REVOKED, with one audit event per change', async () => {
    await device(t, token, 'lost-phone');
    await device(t, token, 'kept-phone');
    await lock(t, token, 'door-1');
    await lock(t, token, 'door-2');
    const first = await ticket(t, token, 'door-1', 'lost-phone');
    const second = await ticket(t, token, 'door-2', 'lost-phone');
    const kept = await ticket(t, token, 'door-1', 'kept-phone');

    const removed = await call(t, token, { method: 'DELETE', url: '/operatorapi/mobiledevices/lost-phone', headers: { 'x-request-id': 'remove-lost' } });
    expect(removed.statusCode).toBe(204);
    expect(removed.body).toBe('');
    expect(await row(acme.tenantId, 'lost-phone')).toBeUndefined();
    expectProblem(await get('lost-phone'), 404);

    const { rows } = await t.database.db.query<{ id: string; revoked_at: number | null }>(
      'SELECT id, revoked_at FROM tickets WHERE id = ANY($1::uuid[])',
      [[first.id, second.id, kept.id]],
    );
    const revokedAt = Object.fromEntries(rows.map((r) => [r.id, r.revoked_at]));
    expect(revokedAt[first.id]).toEqual(expect.any(Number));
    expect(revokedAt[second.id]).toBe(revokedAt[first.id]);
    expect(revokedAt[kept.id]).toBeNull();

    const listed = await walk<{ id: string; status: string; revocationDate?: number }>(t, token, '/operatorapi/tickets?mobileDeviceId=lost-phone');
    expect(listed.items.map((item) => [item.id, item.status, item.revocationDate])).toEqual([
      [first.id, 'REVOKED', revokedAt[first.id]],
      [second.id, 'REVOKED', revokedAt[first.id]],
    ]);

    const events = await auditEvents(t, { requestId: String(removed.headers['x-request-id']) });
    expect(events.map((event) => [event.action, event.target]).sort()).toEqual(
      [
        ['mobile_device.deleted', 'mobile_device:lost-phone'],
        // Its tickets' revocations in one chunk (docs/api-reference.md 10), under the removed row.
        ['ticket.revoked', 'mobile_device:lost-phone'],
      ].sort(),
    );
    const { rows: chunk } = await t.database.db.query<{ ids: string[] }>(
      `SELECT data -> 'ticketIds' AS ids FROM audit_events WHERE request_id = $1 AND action = 'ticket.revoked'`,
      [String(removed.headers['x-request-id'])],
    );
    expect(chunk[0]!.ids.sort()).toEqual([first.id, second.id].sort());
    for (const event of events) expect(event.actor).toBe(`client:${acme.clientId}`);

    // The id is free again; the new device does not inherit the old one's tickets as VALID.
    await expectNothingChanged(t, async () => {
      expectProblem(await remove('lost-phone'), 404);
    });
    await device(t, token, 'lost-phone');
    const again = await walk<{ status: string }>(t, token, '/operatorapi/tickets?mobileDeviceId=lost-phone&status=VALID');
    expect(again.items).toEqual([]);
  });

  it('needs a token (401) and devices:read or devices:write (403)', async () => {
    const limited = await clientToken(t.app, await createClient(t.app, acme, ['tokens:read', 'audit:read']));
    await expectAuthChecks(t, limited, [
      { method: 'POST', url: '/operatorapi/mobiledevices', payload: { id: 'x' }, scope: 'devices:write' },
      { method: 'GET', url: '/operatorapi/mobiledevices', scope: 'devices:read' },
      { method: 'GET', url: '/operatorapi/mobiledevices/phone-alice-1', scope: 'devices:read' },
      { method: 'DELETE', url: '/operatorapi/mobiledevices/phone-alice-1', scope: 'devices:write' },
    ]);
    const reader = await clientToken(t.app, await createClient(t.app, acme, ['devices:read']));
    expect((await get('phone-alice-1', reader)).statusCode).toBe(200);
    await expectNothingChanged(t, async () => {
      expectProblem(await registerDevice(t, reader, { id: 'by-reader' }), 403);
      expectProblem(await remove('phone-alice-1', reader), 403);
    });
  });
});
