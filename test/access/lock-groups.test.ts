// /v1/lock-groups (docs/api-reference.md 5): create, read, page, rename, delete, members; 400/401/403/404/422, idempotency, audit;
// and /v1/securedobjects, the locks a lock group may hold.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectNothingChanged } from '../helpers/database-state.js';
import {
  accessTenant,
  auditTrail,
  expectAccessAuthChecks,
  lockGroup,
  memberUrl,
  userToken,
  v1,
  type AccessTenant,
  type LockGroupBody,
} from '../helpers/access.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { UUID_PATTERN, expectProblem, fieldsOf, lock, problemFields, walk } from '../helpers/operator.js';

describe('lock groups', () => {
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
    v1(t, f.token, { method: 'POST', url: '/v1/lock-groups', payload, headers });
  const get = (id: string, f = acme) => v1(t, f.token, { method: 'GET', url: `/v1/lock-groups/${id}` });

  async function members(tenantId: string, lockGroupId: string): Promise<string[]> {
    const { rows } = await t.database.db.query<{ secured_object_id: string }>(
      'SELECT secured_object_id FROM lock_group_objects WHERE tenant_id = $1 AND lock_group_id = $2 ORDER BY secured_object_id',
      [tenantId, lockGroupId],
    );
    return rows.map((row) => row.secured_object_id);
  }

  async function groupRow(tenantId: string, id: string) {
    const { rows } = await t.database.db.query<{ name: string; created_at: number }>(
      'SELECT name, created_at FROM lock_groups WHERE tenant_id = $1 AND id = $2',
      [tenantId, id],
    );
    return rows[0];
  }

  it('creates a lock group without locks: 201, Location, {id, name, securedObjectIds: [], creationDate}, one audit event', async () => {
    const response = await create({ name: 'Building A' }, acme, { 'x-request-id': 'create-building-a' });
    expect(response.statusCode).toBe(201);
    const body = response.json<LockGroupBody>();
    expect(body).toStrictEqual({ id: expect.stringMatching(UUID_PATTERN), name: 'Building A', securedObjectIds: [], creationDate: expect.any(Number) });
    expect(response.headers.location).toBe(`/v1/lock-groups/${body.id}`);
    expect(await groupRow(acme.tenant.tenantId, body.id)).toEqual({ name: 'Building A', created_at: body.creationDate });
    expect(await auditTrail(t, acme.tenant.tenantId, { requestId: String(response.headers['x-request-id']) })).toEqual([
      { action: 'lock_group.created', target: `lock_group:${body.id}`, actor: acme.actor, request_id: String(response.headers['x-request-id']), time: expect.any(Number) },
    ]);
    const read = await get(body.id);
    expect(read.statusCode).toBe(200);
    expect(read.json()).toStrictEqual(body);
  });

  it('creates a lock group with its locks: duplicates collapse, ids answer sorted, one membership row each, no tickets', async () => {
    const f = await accessTenant(t);
    for (const id of ['garage', 'front-door', 'cellar']) await lock(t, f.operator, id);
    const response = await create({ name: 'House', securedObjectIds: ['garage', 'front-door', 'garage', 'cellar'] }, f);
    expect(response.statusCode).toBe(201);
    const body = response.json<LockGroupBody>();
    expect(body).toStrictEqual({ id: body.id, name: 'House', securedObjectIds: ['cellar', 'front-door', 'garage'], creationDate: expect.any(Number) });
    expect(await members(f.tenant.tenantId, body.id)).toEqual(['cellar', 'front-door', 'garage']);
    expect((await get(body.id, f)).json()).toStrictEqual(body);
    const { rows } = await t.database.db.query('SELECT 1 FROM tickets WHERE tenant_id = $1', [f.tenant.tenantId]);
    expect(rows).toHaveLength(0);
  });

  it('refuses malformed bodies with 400 naming every bad field (unknown fields, > 1000 ids), changing nothing', async () => {
    await expectNothingChanged(t, async () => {
      const bad = await create({ name: '', securedObjectIds: [''], mobileDeviceIds: [] });
      expect(problemFields(bad, 400)).toEqual(['mobileDeviceIds', 'name', 'securedObjectIds[0]']);
      expect(bad.json().errors).toContainEqual({ field: 'mobileDeviceIds', message: 'is not a known field' });
      expect(problemFields(await create({ securedObjectIds: {} }), 400)).toEqual(['name', 'securedObjectIds']);
      expect(problemFields(await create({ name: ['A'], securedObjectIds: [null] }), 400)).toEqual(['name', 'securedObjectIds[0]']);
      const tooMany = await create({ name: 'campus', securedObjectIds: Array.from({ length: 1001 }, (_, i) => `lock-${i}`) });
      expect(problemFields(tooMany, 400)).toEqual(['securedObjectIds']);
      expect(tooMany.json().detail).toContain('1000');
    });
  });

  it("answers 422 for unknown locks and another tenant's locks, naming them, and creates nothing", async () => {
    const f = await accessTenant(t);
    await lock(t, f.operator, 'mine');
    await lock(t, other.operator, 'their-lock-422');
    await expectNothingChanged(t, async () => {
      const unknown = await create({ name: 'Mixed', securedObjectIds: ['mine', 'ghost', 'their-lock-422'] }, f);
      expect(problemFields(unknown, 422)).toEqual(['securedObjectIds']);
      expect(unknown.json().detail).toContain('ghost');
      expect(unknown.json().detail).toContain('their-lock-422');
      expect(unknown.json().detail).not.toMatch(/\bmine\b/);
    });
  });

  it('replays a create with the same Idempotency-Key: the first response, and nothing new', async () => {
    const f = await accessTenant(t);
    await lock(t, f.operator, 'door');
    const headers = { 'idempotency-key': 'lock-group-1' };
    const first = await create({ name: 'Doors', securedObjectIds: ['door'] }, f, headers);
    expect(first.statusCode).toBe(201);
    const count = async () => (await t.database.db.query('SELECT 1 FROM lock_groups WHERE tenant_id = $1', [f.tenant.tenantId])).rows.length;

    const again = await create({ name: 'Doors', securedObjectIds: ['door'] }, f, headers);
    expect(again.statusCode).toBe(201);
    expect(again.json()).toStrictEqual(first.json());
    expect(again.headers.location).toBe(first.headers.location);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(await count()).toBe(1);
    expect(await members(f.tenant.tenantId, first.json().id)).toEqual(['door']);
    expect((await auditTrail(t, f.tenant.tenantId, { targetPrefix: 'lock_group:' })).map((event) => event.action)).toEqual(['lock_group.created']);

    const different = await create({ name: 'Other doors' }, f, headers);
    expectProblem(different, 422);
    expect(fieldsOf(different)).toEqual(['Idempotency-Key']);
    expect(await count()).toBe(1);
  });

  it('renames a lock group: 200 with the new name, members unchanged, one audit event; bad bodies are 400', async () => {
    const f = await accessTenant(t);
    await lock(t, f.operator, 'door');
    const created = await lockGroup(t, f.token, 'Old name', ['door']);
    const renamed = await v1(t, f.token, {
      method: 'PATCH',
      url: `/v1/lock-groups/${created.id}`,
      payload: { name: 'New name' },
      headers: { 'x-request-id': 'rename-group' },
    });
    expect(renamed.statusCode).toBe(200);
    expect(renamed.json()).toStrictEqual({ ...created, name: 'New name' });
    expect((await get(created.id, f)).json()).toStrictEqual({ ...created, name: 'New name' });
    expect(await auditTrail(t, f.tenant.tenantId, { requestId: String(renamed.headers['x-request-id']) })).toEqual([
      { action: 'lock_group.renamed', target: `lock_group:${created.id}`, actor: f.actor, request_id: String(renamed.headers['x-request-id']), time: expect.any(Number) },
    ]);
    await expectNothingChanged(t, async () => {
      const patch = (payload: object) => v1(t, f.token, { method: 'PATCH', url: `/v1/lock-groups/${created.id}`, payload });
      expect(problemFields(await patch({ name: 'n'.repeat(201) }), 400)).toEqual(['name']);
      expect(problemFields(await patch({ name: 'x', securedObjectIds: [] }), 400)).toEqual(['securedObjectIds']);
    });
    expect((await groupRow(f.tenant.tenantId, created.id))?.name).toBe('New name');
  });

  it('deletes a lock group: 204, then 404; its row and memberships are gone, one audit event; the locks stay', async () => {
    const f = await accessTenant(t);
    await lock(t, f.operator, 'door');
    const created = await lockGroup(t, f.token, 'Gone', ['door']);
    const removed = await v1(t, f.token, { method: 'DELETE', url: `/v1/lock-groups/${created.id}`, headers: { 'x-request-id': 'delete-group' } });
    expect(removed.statusCode).toBe(204);
    expect(removed.body).toBe('');
    expectProblem(await get(created.id, f), 404);
    expect(await groupRow(f.tenant.tenantId, created.id)).toBeUndefined();
    expect(await members(f.tenant.tenantId, created.id)).toEqual([]);
    expect(await auditTrail(t, f.tenant.tenantId, { requestId: String(removed.headers['x-request-id']) })).toEqual([
      { action: 'lock_group.deleted', target: `lock_group:${created.id}`, actor: f.actor, request_id: String(removed.headers['x-request-id']), time: expect.any(Number) },
    ]);
    expect((await v1(t, f.operator, { method: 'GET', url: '/operatorapi/securedobjects/door' })).statusCode).toBe(200);
    await expectNothingChanged(t, async () => {
      expectProblem(await v1(t, f.token, { method: 'DELETE', url: `/v1/lock-groups/${created.id}` }), 404);
    });
  });

  it('adds and removes locks: PUT answers the group and is idempotent, DELETE answers it without the lock', async () => {
    const f = await accessTenant(t);
    await lock(t, f.operator, 'door');
    await lock(t, f.operator, 'gate');
    const created = await lockGroup(t, f.token, 'Yard', ['door']);
    const put = (headers: Record<string, string> = {}) => v1(t, f.token, { method: 'PUT', url: memberUrl('lock-groups', created.id, 'gate'), headers });

    const added = await put({ 'x-request-id': 'add-gate' });
    expect(added.statusCode).toBe(200);
    expect(added.json()).toStrictEqual({ ...created, securedObjectIds: ['door', 'gate'] });
    expect(await members(f.tenant.tenantId, created.id)).toEqual(['door', 'gate']);
    const target = `lock_group:${created.id}/secured_object:gate`;
    expect(await auditTrail(t, f.tenant.tenantId, { requestId: String(added.headers['x-request-id']) })).toEqual([
      { action: 'lock_group.lock_added', target, actor: f.actor, request_id: String(added.headers['x-request-id']), time: expect.any(Number) },
    ]);
    await expectNothingChanged(t, async () => {
      const repeat = await put();
      expect(repeat.statusCode).toBe(200);
      expect(repeat.json()).toStrictEqual(added.json());
    });

    const removed = await v1(t, f.token, { method: 'DELETE', url: memberUrl('lock-groups', created.id, 'gate'), headers: { 'x-request-id': 'remove-gate' } });
    expect(removed.statusCode).toBe(200);
    expect(removed.json()).toStrictEqual({ ...created, securedObjectIds: ['door'] });
    expect(await auditTrail(t, f.tenant.tenantId, { requestId: String(removed.headers['x-request-id']) })).toEqual([
      { action: 'lock_group.lock_removed', target, actor: f.actor, request_id: String(removed.headers['x-request-id']), time: expect.any(Number) },
    ]);
    await expectNothingChanged(t, async () => {
      expect(expectProblem(await v1(t, f.token, { method: 'DELETE', url: memberUrl('lock-groups', created.id, 'gate') }), 404).detail).toContain('gate');
      expect(expectProblem(await v1(t, f.token, { method: 'PUT', url: memberUrl('lock-groups', created.id, 'ghost') }), 404).detail).toContain('ghost');
    });
  });

  it("answers another tenant's lock groups and locks as missing (404) and changes nothing", async () => {
    const f = await accessTenant(t);
    await lock(t, f.operator, 'mine');
    await lock(t, other.operator, 'their-lock-404');
    const mine = await lockGroup(t, f.token, 'Mine', ['mine']);
    const theirs = await lockGroup(t, other.token, 'Theirs', ['their-lock-404']);
    const missing = '6f1e2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b';
    await expectNothingChanged(t, async () => {
      for (const id of [theirs.id, missing, 'not-a-uuid']) {
        expectProblem(await get(id, f), 404);
        expectProblem(await v1(t, f.token, { method: 'PATCH', url: `/v1/lock-groups/${id}`, payload: { name: 'stolen' } }), 404);
        expectProblem(await v1(t, f.token, { method: 'DELETE', url: `/v1/lock-groups/${id}` }), 404);
        expectProblem(await v1(t, f.token, { method: 'PUT', url: memberUrl('lock-groups', id, 'mine') }), 404);
        expectProblem(await v1(t, f.token, { method: 'DELETE', url: memberUrl('lock-groups', id, 'their-lock-404') }), 404);
      }
      expectProblem(await v1(t, f.token, { method: 'PUT', url: memberUrl('lock-groups', mine.id, 'their-lock-404') }), 404);
    });
    expect((await get(theirs.id, other)).json()).toStrictEqual(theirs);
    expect((await get(mine.id, f)).json()).toStrictEqual(mine);
  });

  it('pages the tenant\'s lock groups oldest first with Link rel="next"; bad limits and cursors are 400', async () => {
    const f = await accessTenant(t);
    const created: LockGroupBody[] = [];
    for (const name of ['g1', 'g2', 'g3']) created.push(await lockGroup(t, f.token, name));
    const first = await v1(t, f.token, { method: 'GET', url: '/v1/lock-groups?limit=2' });
    expect(first.headers.link).toMatch(/^<\/v1\/lock-groups\?limit=2&cursor=[A-Za-z0-9_-]+>; rel="next"$/);
    const { pages, items } = await walk<LockGroupBody>(t, f.token, '/v1/lock-groups?limit=2');
    expect(pages.map((page) => page.length)).toEqual([2, 1]);
    expect(items).toStrictEqual([...created].sort((a, b) => a.creationDate - b.creationDate || (a.id < b.id ? -1 : 1)));
    const theirs = await walk<LockGroupBody>(t, other.token, '/v1/lock-groups?limit=1000');
    for (const mine of created) expect(theirs.items.map((item) => item.id)).not.toContain(mine.id);
    for (const query of ['limit=0', 'limit=1001', 'cursor=W10', 'securedObjectId=x']) {
      expect(problemFields(await v1(t, f.token, { method: 'GET', url: `/v1/lock-groups?${query}` }), 400), query).toEqual([query.split('=')[0]]);
    }
  });

  it('needs a token of the Access API with the declared scope on every route', async () => {
    const readOnly = await userToken(t, acme, 'device-groups:read devices:read');
    const writeOnly = await userToken(t, acme, 'device-groups:write');
    const id = '6f1e2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b';
    await expectAccessAuthChecks(t, { operator: acme.operator, wrongScope: readOnly }, [
      { method: 'POST', url: '/v1/lock-groups', payload: { name: 'x' }, scope: 'device-groups:write' },
      { method: 'PATCH', url: `/v1/lock-groups/${id}`, payload: { name: 'x' }, scope: 'device-groups:write' },
      { method: 'DELETE', url: `/v1/lock-groups/${id}`, scope: 'device-groups:write' },
      { method: 'PUT', url: memberUrl('lock-groups', id, 'door'), scope: 'device-groups:write' },
      { method: 'DELETE', url: memberUrl('lock-groups', id, 'door'), scope: 'device-groups:write' },
    ]);
    await expectAccessAuthChecks(t, { operator: acme.operator, wrongScope: writeOnly }, [
      { method: 'GET', url: '/v1/lock-groups', scope: 'device-groups:read' },
      { method: 'GET', url: `/v1/lock-groups/${id}`, scope: 'device-groups:read' },
      { method: 'GET', url: '/v1/securedobjects', scope: 'devices:read' },
    ]);
  });

  describe('GET /v1/securedobjects', () => {
    it("lists only the tenant's locks, oldest first, in the Operator API's shape, with pages", async () => {
      const f = await accessTenant(t);
      for (const id of ['l1', 'l2', 'l3']) await lock(t, f.operator, id);
      await lock(t, other.operator, 'foreign-lock');
      const devicesOnly = await userToken(t, f, 'devices:read');
      const first = await v1(t, devicesOnly, { method: 'GET', url: '/v1/securedobjects?limit=2' });
      expect(first.statusCode).toBe(200);
      expect(first.headers.link).toMatch(/^<\/v1\/securedobjects\?limit=2&cursor=[A-Za-z0-9_-]+>; rel="next"$/);
      const { pages, items } = await walk(t, devicesOnly, '/v1/securedobjects?limit=2');
      expect(pages.map((page) => page.length)).toEqual([2, 1]);
      expect(items).toStrictEqual(
        ['l1', 'l2', 'l3'].map((id) => ({
          id,
          channels: ['btlespp'],
          urls: [`btlespp://LOCK-${id}/7d8a0c1e-4b7f-4d5e-9a41-3c2b1f0e9d8c`],
          creationTime: expect.any(Number),
          timeZone: 'UTC',
        })),
      );
      expect(items).toStrictEqual((await v1(t, f.operator, { method: 'GET', url: '/operatorapi/securedobjects' })).json());
      expect(problemFields(await v1(t, devicesOnly, { method: 'GET', url: '/v1/securedobjects?cursor=x' }), 400)).toEqual(['cursor']);
    });
  });
});
