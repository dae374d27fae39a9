// /v1/residents (docs/api-reference.md 5): create, read, page, rename, delete, members; 400/401/403/404/422, idempotency, audit;
// and /v1/mobiledevices, the devices a resident may hold.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectNothingChanged } from '../helpers/database-state.js';
import {
  accessTenant,
  auditTrail,
  expectAccessAuthChecks,
  memberUrl,
  resident,
  userToken,
  v1,
  type AccessTenant,
  type ResidentBody,
} from '../helpers/access.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { UUID_PATTERN, device, expectProblem, fieldsOf, problemFields, walk } from '../helpers/operator.js';

describe('residents', () => {
  let t: TestApp;
  let acme: AccessTenant;
  let other: AccessTenant;

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4' });
    acme = await accessTenant(t, 'acme');
    other = await accessTenant(t, 'other');
  });
  afterAll(async () => {
    await t.close();
  });

  const create = (payload: object, f = acme, headers: Record<string, string> = {}) =>
    v1(t, f.token, { method: 'POST', url: '/v1/residents', payload, headers });
  const get = (id: string, f = acme) => v1(t, f.token, { method: 'GET', url: `/v1/residents/${id}` });

  async function members(tenantId: string, residentId: string): Promise<string[]> {
    const { rows } = await t.database.db.query<{ mobile_device_id: string }>(
      'SELECT mobile_device_id FROM resident_devices WHERE tenant_id = $1 AND resident_id = $2 ORDER BY mobile_device_id',
      [tenantId, residentId],
    );
    return rows.map((row) => row.mobile_device_id);
  }

  async function residentRow(tenantId: string, id: string) {
    const { rows } = await t.database.db.query<{ name: string; created_at: number }>(
      'SELECT name, created_at FROM residents WHERE tenant_id = $1 AND id = $2',
      [tenantId, id],
    );
    return rows[0];
  }

  it('creates a resident without devices: 201, Location, {id, name, mobileDeviceIds: [], creationDate}, one audit event', async () => {
    const response = await create({ name: 'Alice Example' }, acme, { 'x-request-id': 'create-alice' });
    expect(response.statusCode).toBe(201);
    const body = response.json<ResidentBody>();
    expect(body).toStrictEqual({ id: expect.stringMatching(UUID_PATTERN), name: 'Alice Example', mobileDeviceIds: [], creationDate: expect.any(Number) });
    expect(response.headers.location).toBe(`/v1/residents/${body.id}`);
    expect(await residentRow(acme.tenant.tenantId, body.id)).toEqual({ name: 'Alice Example', created_at: body.creationDate });
    expect(await auditTrail(t, acme.tenant.tenantId, { requestId: String(response.headers['x-request-id']) })).toEqual([
      { action: 'resident.created', target: `resident:${body.id}`, actor: acme.actor, request_id: String(response.headers['x-request-id']), time: expect.any(Number) },
    ]);

    const read = await get(body.id);
    expect(read.statusCode).toBe(200);
    expect(read.json()).toStrictEqual(body);
  });

  it('creates a resident with its devices: duplicates collapse, ids answer sorted, one membership row each', async () => {
    const f = await accessTenant(t);
    for (const id of ['phone-b', 'card-a', 'watch-c']) await device(t, f.operator, id);
    const response = await create({ name: 'Bob', mobileDeviceIds: ['phone-b', 'card-a', 'phone-b', 'watch-c'] }, f);
    expect(response.statusCode).toBe(201);
    const body = response.json<ResidentBody>();
    expect(body).toStrictEqual({ id: body.id, name: 'Bob', mobileDeviceIds: ['card-a', 'phone-b', 'watch-c'], creationDate: expect.any(Number) });
    expect(await members(f.tenant.tenantId, body.id)).toEqual(['card-a', 'phone-b', 'watch-c']);
    expect((await get(body.id, f)).json()).toStrictEqual(body);
    // Creating a group makes no tickets by itself.
    const { rows } = await t.database.db.query('SELECT 1 FROM tickets WHERE tenant_id = $1', [f.tenant.tenantId]);
    expect(rows).toHaveLength(0);
  });

  it('refuses malformed bodies with 400 naming every bad field (unknown fields, > 1000 ids), changing nothing', async () => {
    await expectNothingChanged(t, async () => {
      const bad = await create({ name: '', mobileDeviceIds: [''], colour: 'blue' });
      expect(problemFields(bad, 400)).toEqual(['colour', 'mobileDeviceIds[0]', 'name']);
      expect(bad.json().errors).toContainEqual({ field: 'colour', message: 'is not a known field' });
      expect(problemFields(await create({ mobileDeviceIds: 'phone' }), 400)).toEqual(['mobileDeviceIds', 'name']);
      expect(problemFields(await create({ name: 42, mobileDeviceIds: [7, 'x'.repeat(129)] }), 400)).toEqual([
        'mobileDeviceIds[0]',
        'mobileDeviceIds[1]',
        'name',
      ]);
      expect(problemFields(await create({ name: 'n'.repeat(201) }), 400)).toEqual(['name']);
      const tooMany = await create({ name: 'crowd', mobileDeviceIds: Array.from({ length: 1001 }, (_, i) => `device-${i}`) });
      expect(problemFields(tooMany, 400)).toEqual(['mobileDeviceIds']);
      expect(tooMany.json().detail).toContain('1000');
      const notJson = await t.app.inject({
        method: 'POST',
        url: '/v1/residents',
        headers: { authorization: `Bearer ${acme.token}`, 'content-type': 'application/json' },
        payload: '{"name": ',
      });
      expectProblem(notJson, 400);
      const text = await t.app.inject({
        method: 'POST',
        url: '/v1/residents',
        headers: { authorization: `Bearer ${acme.token}`, 'content-type': 'text/plain' },
        payload: 'Alice',
      });
      expectProblem(text, 415);
    });
  });

  it('accepts exactly 1000 device ids', async () => {
    const f = await accessTenant(t);
    const ids = Array.from({ length: 1000 }, (_, i) => `device-${String(i).padStart(4, '0')}`);
    await t.database.db.query(
      'INSERT INTO mobile_devices (tenant_id, id, name, created_at) SELECT $1, id, NULL, 0 FROM unnest($2::text[]) AS d (id)',
      [f.tenant.tenantId, ids],
    );
    const response = await create({ name: 'a thousand devices', mobileDeviceIds: ids }, f);
    expect(response.statusCode, response.body).toBe(201);
    expect(response.json().mobileDeviceIds).toEqual(ids);
    expect(await members(f.tenant.tenantId, response.json().id)).toHaveLength(1000);
  });

  it("answers 422 for unknown devices and another tenant's devices, naming them, and creates nothing", async () => {
    const f = await accessTenant(t);
    await device(t, f.operator, 'mine');
    await device(t, other.operator, 'theirs');
    await expectNothingChanged(t, async () => {
      const unknown = await create({ name: 'Carol', mobileDeviceIds: ['mine', 'ghost', 'theirs'] }, f);
      expect(problemFields(unknown, 422)).toEqual(['mobileDeviceIds']);
      expect(unknown.json().detail).toContain('ghost');
      expect(unknown.json().detail).toContain('theirs');
      expect(unknown.json().detail).not.toContain('mine');
    });
  });

  it('replays a create with the same Idempotency-Key: the first response, and nothing new', async () => {
    const f = await accessTenant(t);
    await device(t, f.operator, 'phone');
    const headers = { 'idempotency-key': 'resident-dave-1' };
    const first = await create({ name: 'Dave', mobileDeviceIds: ['phone'] }, f, headers);
    expect(first.statusCode).toBe(201);
    const count = async () => (await t.database.db.query('SELECT 1 FROM residents WHERE tenant_id = $1', [f.tenant.tenantId])).rows.length;
    expect(await count()).toBe(1);

    const again = await create({ mobileDeviceIds: ['phone'], name: 'Dave' }, f, headers);
    expect(again.statusCode).toBe(201);
    expect(again.json()).toStrictEqual(first.json());
    expect(again.headers.location).toBe(first.headers.location);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(await count()).toBe(1);
    expect((await auditTrail(t, f.tenant.tenantId, { targetPrefix: 'resident:' })).map((event) => event.action)).toEqual(['resident.created']);

    const different = await create({ name: 'Eve' }, f, headers);
    expectProblem(different, 422);
    expect(fieldsOf(different)).toEqual(['Idempotency-Key']);
    expect(await count()).toBe(1);
  });

  it('renames a resident: 200 with the new name, members unchanged, one audit event; bad bodies are 400', async () => {
    const f = await accessTenant(t);
    await device(t, f.operator, 'phone');
    const created = await resident(t, f.token, 'Frank', ['phone']);
    const renamed = await v1(t, f.token, {
      method: 'PATCH',
      url: `/v1/residents/${created.id}`,
      payload: { name: 'Frank Example' },
      headers: { 'x-request-id': 'rename-frank' },
    });
    expect(renamed.statusCode).toBe(200);
    expect(renamed.json()).toStrictEqual({ ...created, name: 'Frank Example' });
    expect((await get(created.id, f)).json()).toStrictEqual({ ...created, name: 'Frank Example' });
    expect(await auditTrail(t, f.tenant.tenantId, { requestId: String(renamed.headers['x-request-id']) })).toEqual([
      { action: 'resident.renamed', target: `resident:${created.id}`, actor: f.actor, request_id: String(renamed.headers['x-request-id']), time: expect.any(Number) },
    ]);

    await expectNothingChanged(t, async () => {
      const patch = (payload: object) => v1(t, f.token, { method: 'PATCH', url: `/v1/residents/${created.id}`, payload });
      expect(problemFields(await patch({}), 400)).toEqual(['name']);
      expect(problemFields(await patch({ name: '' }), 400)).toEqual(['name']);
      expect(problemFields(await patch({ name: 'x', mobileDeviceIds: [] }), 400)).toEqual(['mobileDeviceIds']);
    });
    expect((await residentRow(f.tenant.tenantId, created.id))?.name).toBe('Frank Example');
  });

  it('deletes a resident: 204, then 404; its row and memberships are gone, one audit event; again → 404', async () => {
    const f = await accessTenant(t);
    await device(t, f.operator, 'phone');
    const created = await resident(t, f.token, 'Gina', ['phone']);
    const removed = await v1(t, f.token, { method: 'DELETE', url: `/v1/residents/${created.id}`, headers: { 'x-request-id': 'delete-gina' } });
    expect(removed.statusCode).toBe(204);
    expect(removed.body).toBe('');
    expectProblem(await get(created.id, f), 404);
    expect(await residentRow(f.tenant.tenantId, created.id)).toBeUndefined();
    expect(await members(f.tenant.tenantId, created.id)).toEqual([]);
    expect(await auditTrail(t, f.tenant.tenantId, { requestId: String(removed.headers['x-request-id']) })).toEqual([
      { action: 'resident.deleted', target: `resident:${created.id}`, actor: f.actor, request_id: String(removed.headers['x-request-id']), time: expect.any(Number) },
    ]);
    // The device itself stays registered.
    expect((await v1(t, f.operator, { method: 'GET', url: '/operatorapi/mobiledevices/phone' })).statusCode).toBe(200);
    await expectNothingChanged(t, async () => {
      expectProblem(await v1(t, f.token, { method: 'DELETE', url: `/v1/residents/${created.id}` }), 404);
    });
  });

  it('adds and removes devices: PUT answers the resident and is idempotent, DELETE answers it without the device', async () => {
    const f = await accessTenant(t);
    await device(t, f.operator, 'phone');
    await device(t, f.operator, 'card');
    const created = await resident(t, f.token, 'Hank', ['card']);
    const put = (headers: Record<string, string> = {}) => v1(t, f.token, { method: 'PUT', url: memberUrl('residents', created.id, 'phone'), headers });

    const added = await put({ 'x-request-id': 'add-phone' });
    expect(added.statusCode).toBe(200);
    expect(added.json()).toStrictEqual({ ...created, mobileDeviceIds: ['card', 'phone'] });
    expect(await members(f.tenant.tenantId, created.id)).toEqual(['card', 'phone']);
    const target = `resident:${created.id}/mobile_device:phone`;
    expect(await auditTrail(t, f.tenant.tenantId, { requestId: String(added.headers['x-request-id']) })).toEqual([
      { action: 'resident.device_added', target, actor: f.actor, request_id: String(added.headers['x-request-id']), time: expect.any(Number) },
    ]);

    await expectNothingChanged(t, async () => {
      const repeat = await put({ 'x-request-id': 'add-phone-again' });
      expect(repeat.statusCode).toBe(200);
      expect(repeat.json()).toStrictEqual(added.json());
    });

    const removed = await v1(t, f.token, { method: 'DELETE', url: memberUrl('residents', created.id, 'phone'), headers: { 'x-request-id': 'remove-phone' } });
    expect(removed.statusCode).toBe(200);
    expect(removed.json()).toStrictEqual({ ...created, mobileDeviceIds: ['card'] });
    expect(await members(f.tenant.tenantId, created.id)).toEqual(['card']);
    expect(await auditTrail(t, f.tenant.tenantId, { requestId: String(removed.headers['x-request-id']) })).toEqual([
      { action: 'resident.device_removed', target, actor: f.actor, request_id: String(removed.headers['x-request-id']), time: expect.any(Number) },
    ]);

    await expectNothingChanged(t, async () => {
      // Not a member (any more), or no such device: 404.
      expect(expectProblem(await v1(t, f.token, { method: 'DELETE', url: memberUrl('residents', created.id, 'phone') }), 404).detail).toContain('phone');
      expect(expectProblem(await v1(t, f.token, { method: 'PUT', url: memberUrl('residents', created.id, 'ghost') }), 404).detail).toContain('ghost');
    });
  });

  it("answers another tenant's residents and devices as missing (404) and changes nothing", async () => {
    const f = await accessTenant(t);
    await device(t, f.operator, 'mine');
    await device(t, other.operator, 'theirs-404');
    const mine = await resident(t, f.token, 'Mine', ['mine']);
    const theirs = await resident(t, other.token, 'Theirs', ['theirs-404']);
    const missing = '6f1e2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b';

    await expectNothingChanged(t, async () => {
      for (const id of [theirs.id, missing, 'not-a-uuid']) {
        expectProblem(await get(id, f), 404);
        expectProblem(await v1(t, f.token, { method: 'PATCH', url: `/v1/residents/${id}`, payload: { name: 'stolen' } }), 404);
        expectProblem(await v1(t, f.token, { method: 'DELETE', url: `/v1/residents/${id}` }), 404);
        expectProblem(await v1(t, f.token, { method: 'PUT', url: memberUrl('residents', id, 'mine') }), 404);
        expectProblem(await v1(t, f.token, { method: 'DELETE', url: memberUrl('residents', id, 'theirs-404') }), 404);
      }
      // Their device cannot join my resident, and mine is not a member of theirs.
      expectProblem(await v1(t, f.token, { method: 'PUT', url: memberUrl('residents', mine.id, 'theirs-404') }), 404);
      expectProblem(await v1(t, other.token, { method: 'DELETE', url: memberUrl('residents', theirs.id, 'mine') }), 404);
    });
    expect((await get(theirs.id, other)).json()).toStrictEqual(theirs);
    expect((await get(mine.id, f)).json()).toStrictEqual(mine);
  });

  it('pages the tenant\'s residents oldest first with Link rel="next"; bad limits and cursors are 400', async () => {
    const f = await accessTenant(t);
    const created: ResidentBody[] = [];
    for (const name of ['r1', 'r2', 'r3', 'r4', 'r5']) created.push(await resident(t, f.token, name));

    const first = await v1(t, f.token, { method: 'GET', url: '/v1/residents?limit=2' });
    expect(first.statusCode).toBe(200);
    expect(first.headers.link).toMatch(/^<\/v1\/residents\?limit=2&cursor=[A-Za-z0-9_-]+>; rel="next"$/);
    const { pages, items } = await walk<ResidentBody>(t, f.token, '/v1/residents?limit=2');
    expect(pages.map((page) => page.length)).toEqual([2, 2, 1]);
    const byAge = [...created].sort((a, b) => a.creationDate - b.creationDate || (a.id < b.id ? -1 : 1));
    expect(items).toStrictEqual(byAge);
    const all = await v1(t, f.token, { method: 'GET', url: '/v1/residents' });
    expect(all.headers.link).toBeUndefined();
    expect(all.json()).toStrictEqual(byAge);

    const theirs = await walk<ResidentBody>(t, other.token, '/v1/residents?limit=1000');
    for (const mine of created) expect(theirs.items.map((item) => item.id)).not.toContain(mine.id);

    for (const query of ['limit=0', 'limit=1001', 'limit=two', 'cursor=W10', 'cursor=not-base64!', 'name=r1']) {
      const response = await v1(t, f.token, { method: 'GET', url: `/v1/residents?${query}` });
      expect(problemFields(response, 400), query).toEqual([query.split('=')[0]]);
    }
  });

  it('needs a token of the Access API with the declared scope on every route', async () => {
    const readOnly = await userToken(t, acme, 'device-groups:read devices:read');
    const writeOnly = await userToken(t, acme, 'device-groups:write');
    const id = '6f1e2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b';
    const write = 'device-groups:write';
    const read = 'device-groups:read';
    await expectAccessAuthChecks(t, { operator: acme.operator, wrongScope: readOnly }, [
      { method: 'POST', url: '/v1/residents', payload: { name: 'x' }, scope: write },
      { method: 'PATCH', url: `/v1/residents/${id}`, payload: { name: 'x' }, scope: write },
      { method: 'DELETE', url: `/v1/residents/${id}`, scope: write },
      { method: 'PUT', url: memberUrl('residents', id, 'phone'), scope: write },
      { method: 'DELETE', url: memberUrl('residents', id, 'phone'), scope: write },
    ]);
    await expectAccessAuthChecks(t, { operator: acme.operator, wrongScope: writeOnly }, [
      { method: 'GET', url: '/v1/residents', scope: read },
      { method: 'GET', url: `/v1/residents/${id}`, scope: read },
      { method: 'GET', url: '/v1/mobiledevices', scope: 'devices:read' },
    ]);
  });

  describe('GET /v1/mobiledevices', () => {
    it("lists only the tenant's devices, oldest first, in the Operator API's shape, with pages", async () => {
      const f = await accessTenant(t);
      await device(t, f.operator, 'd1', 'first');
      await device(t, f.operator, 'd2');
      await device(t, f.operator, 'd3', 'third');
      await device(t, other.operator, 'foreign');
      const devicesOnly = await userToken(t, f, 'devices:read');

      const first = await v1(t, devicesOnly, { method: 'GET', url: '/v1/mobiledevices?limit=2' });
      expect(first.statusCode).toBe(200);
      expect(first.headers.link).toMatch(/^<\/v1\/mobiledevices\?limit=2&cursor=[A-Za-z0-9_-]+>; rel="next"$/);
      const { pages, items } = await walk(t, devicesOnly, '/v1/mobiledevices?limit=2');
      expect(pages.map((page) => page.length)).toEqual([2, 1]);
      expect(items).toStrictEqual([
        { id: 'd1', name: 'first', creationTime: expect.any(Number) },
        { id: 'd2', creationTime: expect.any(Number) },
        { id: 'd3', name: 'third', creationTime: expect.any(Number) },
      ]);
      const operatorView = await v1(t, f.operator, { method: 'GET', url: '/operatorapi/mobiledevices' });
      expect(items).toStrictEqual(operatorView.json());
      expect(problemFields(await v1(t, devicesOnly, { method: 'GET', url: '/v1/mobiledevices?limit=0' }), 400)).toEqual(['limit']);
    });
  });
});
