// Membership stays true (docs/api-reference.md 5): members joining get their tickets, members leaving lose exactly the tickets
// their group's permissions gave them, deletions revoke; tickets made through the Operator API are never touched.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  accessTenant,
  auditTrail,
  join,
  leave,
  live,
  lockGroup,
  pairsOf,
  permission,
  product,
  resident,
  revoked,
  ticketRows,
  v1,
  type AccessTenant,
  type PermissionBody,
  type TicketRow,
} from '../helpers/access.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { device, expectProblem, lock, ticket, type TicketBody } from '../helpers/operator.js';

describe('membership stays true', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4' });
  });
  afterAll(async () => {
    await t.close();
  });

  async function register(f: AccessTenant, devices: string[], locks: string[]) {
    for (const id of devices) await device(t, f.operator, id);
    for (const id of locks) await lock(t, f.operator, id);
  }

  const tokenCount = async (f: AccessTenant, id: string) =>
    (await v1(t, f.token, { method: 'GET', url: `/v1/access-permissions/${id}` })).json<PermissionBody>().tokenCount;

  /** The ticket as the Operator API shows it. */
  const operatorTicket = async (f: AccessTenant, id: string) =>
    (await v1(t, f.operator, { method: 'GET', url: `/operatorapi/tickets/${id}` })).json<TicketBody>();

  const byId = (rows: TicketRow[]) => Object.fromEntries(rows.map((row) => [row.id, row]));

  it('a device joining a resident gets a ticket for every lock its permissions reach, and only those', async () => {
    const f = await accessTenant(t);
    await register(f, ['old-phone', 'new-phone'], ['a1', 'a2', 'a3', 'b1', 'b2', 'c1']);
    const r = await resident(t, f.token, 'Ann', ['old-phone']);
    const a = await lockGroup(t, f.token, 'A', ['a1', 'a2', 'a3']);
    const b = await lockGroup(t, f.token, 'B', ['b1', 'b2']);
    await lockGroup(t, f.token, 'C (no permission)', ['c1']);
    const toA = await permission(t, f.token, r.id, a.id, { commands: ['open'] });
    const toB = await permission(t, f.token, r.id, b.id, { commands: ['tokn', 'open'] });
    expect([toA.tokenCount, toB.tokenCount]).toEqual([3, 2]);

    const joined = await v1(t, f.token, { method: 'PUT', url: `/v1/residents/${r.id}/mobiledevices/new-phone`, headers: { 'x-request-id': 'join' } });
    expect(joined.statusCode).toBe(200);
    expect(joined.json().mobileDeviceIds).toEqual(['new-phone', 'old-phone']);

    const mine = await ticketRows(t, f.tenant.tenantId, { mobileDeviceId: 'new-phone' });
    expect(mine).toHaveLength(5);
    expect(pairsOf(mine)).toEqual(product(['new-phone'], ['a1', 'a2', 'a3', 'b1', 'b2']));
    for (const row of mine) {
      const from = row.secured_object_id.startsWith('a') ? toA : toB;
      expect(row).toMatchObject({ access_permission_id: from.id, revoked_at: null, begin_date: from.beginDate, end_date: from.endDate, commands: from.commands });
    }
    expect([await tokenCount(f, toA.id), await tokenCount(f, toB.id)]).toEqual([6, 4]);
    expect(await ticketRows(t, f.tenant.tenantId)).toHaveLength(10);
    // The tickets the membership made in one chunk (docs/api-reference.md 10), then the membership's own event.
    expect((await auditTrail(t, f.tenant.tenantId, { requestId: String(joined.headers['x-request-id']) })).map((event) => event.action)).toEqual([
      'ticket.created',
      'resident.device_added',
    ]);

    // Joining again changes nothing: no new tickets, no event.
    const before = await ticketRows(t, f.tenant.tenantId);
    expect((await join(t, f.token, 'residents', r.id, 'new-phone')).mobileDeviceIds).toEqual(['new-phone', 'old-phone']);
    expect(await ticketRows(t, f.tenant.tenantId)).toEqual(before);
    expect((await auditTrail(t, f.tenant.tenantId, { targetPrefix: `resident:${r.id}/` })).map((event) => event.action)).toEqual([
      'ticket.created',
      'resident.device_added',
    ]);
  });

  it("a device leaving a resident loses exactly that resident's permission tickets; its other tickets stay VALID", async () => {
    const f = await accessTenant(t);
    await register(f, ['shared-phone', 'ann-card', 'ben-phone'], ['door', 'gate', 'garage']);
    const ann = await resident(t, f.token, 'Ann', ['shared-phone', 'ann-card']);
    const ben = await resident(t, f.token, 'Ben', ['shared-phone', 'ben-phone']);
    const house = await lockGroup(t, f.token, 'House', ['door', 'gate']);
    const annGrant = await permission(t, f.token, ann.id, house.id);
    const benGrant = await permission(t, f.token, ben.id, house.id);
    const direct = await ticket(t, f.operator, 'door', 'shared-phone');
    const directOther = await ticket(t, f.operator, 'garage', 'shared-phone');

    const before = byId(await ticketRows(t, f.tenant.tenantId));
    const left = await v1(t, f.token, { method: 'DELETE', url: `/v1/residents/${ann.id}/mobiledevices/shared-phone`, headers: { 'x-request-id': 'leave' } });
    expect(left.statusCode).toBe(200);
    expect(left.json().mobileDeviceIds).toEqual(['ann-card']);

    const after = await ticketRows(t, f.tenant.tenantId);
    const changed = after.filter((row) => row.revoked_at !== before[row.id]!.revoked_at);
    // Exactly Ann's two tickets for the shared phone, revoked at one time.
    expect(pairsOf(changed)).toEqual(product(['shared-phone'], ['door', 'gate']));
    for (const row of changed) expect(row).toMatchObject({ access_permission_id: annGrant.id, revoked_at: changed[0]!.revoked_at });
    expect(changed[0]!.revoked_at).toEqual(expect.any(Number));
    expect(after).toHaveLength(Object.keys(before).length);
    // Ben's permission still covers the shared phone; Ann's card keeps its tickets; the direct tickets stay VALID.
    expect(pairsOf(live(await ticketRows(t, f.tenant.tenantId, { accessPermissionId: benGrant.id })))).toEqual(
      product(['ben-phone', 'shared-phone'], ['door', 'gate']),
    );
    expect(pairsOf(live(await ticketRows(t, f.tenant.tenantId, { accessPermissionId: annGrant.id })))).toEqual(product(['ann-card'], ['door', 'gate']));
    expect((await operatorTicket(f, direct.id)).status).toBe('VALID');
    expect((await operatorTicket(f, directOther.id)).status).toBe('VALID');
    const revokedTicket = await operatorTicket(f, changed[0]!.id);
    expect(revokedTicket).toMatchObject({ status: 'REVOKED', revocationDate: changed[0]!.revoked_at, accessPermissionId: annGrant.id });
    expect([await tokenCount(f, annGrant.id), await tokenCount(f, benGrant.id)]).toEqual([2, 4]);
    expect((await auditTrail(t, f.tenant.tenantId, { requestId: String(left.headers['x-request-id']) })).map((event) => [event.action, event.target])).toEqual([
      ['ticket.revoked', `resident:${ann.id}/mobile_device:shared-phone`],
      ['resident.device_removed', `resident:${ann.id}/mobile_device:shared-phone`],
    ]);
  });

  it('a lock joining a lock group gets a ticket for every device its permissions reach; leaving revokes exactly those', async () => {
    const f = await accessTenant(t);
    await register(f, ['p1', 'p2', 'p3', 'outsider'], ['door', 'new-lock']);
    const r1 = await resident(t, f.token, 'R1', ['p1', 'p2']);
    const r2 = await resident(t, f.token, 'R2', ['p3']);
    await resident(t, f.token, 'No permission', ['outsider']);
    const g = await lockGroup(t, f.token, 'G', ['door']);
    const other = await lockGroup(t, f.token, 'Other group', ['new-lock']);
    const g1 = await permission(t, f.token, r1.id, g.id);
    const g2 = await permission(t, f.token, r2.id, g.id);
    const viaOtherGroup = await permission(t, f.token, r1.id, other.id);
    const direct = await ticket(t, f.operator, 'new-lock', 'p3');

    expect((await join(t, f.token, 'lock-groups', g.id, 'new-lock')).securedObjectIds).toEqual(['door', 'new-lock']);
    const rows = (await ticketRows(t, f.tenant.tenantId)).filter((row) => row.secured_object_id === 'new-lock' && row.access_permission_id !== viaOtherGroup.id);
    // p1, p2 through g1 and p3 through g2, plus the direct ticket of p3.
    expect(rows.map((row) => `${row.mobile_device_id}|${row.access_permission_id ?? 'direct'}`).sort()).toEqual(
      [`p1|${g1.id}`, `p2|${g1.id}`, `p3|${g2.id}`, 'p3|direct'].sort(),
    );
    expect([await tokenCount(f, g1.id), await tokenCount(f, g2.id)]).toEqual([4, 2]);

    // Idempotent.
    const snapshot = await ticketRows(t, f.tenant.tenantId);
    await join(t, f.token, 'lock-groups', g.id, 'new-lock');
    expect(await ticketRows(t, f.tenant.tenantId)).toEqual(snapshot);

    expect((await leave(t, f.token, 'lock-groups', g.id, 'new-lock')).securedObjectIds).toEqual(['door']);
    const after = await ticketRows(t, f.tenant.tenantId);
    const newlyRevoked = after.filter((row) => row.revoked_at !== null);
    expect(newlyRevoked.map((row) => `${row.mobile_device_id}|${row.secured_object_id}|${row.access_permission_id}`).sort()).toEqual(
      [`p1|new-lock|${g1.id}`, `p2|new-lock|${g1.id}`, `p3|new-lock|${g2.id}`].sort(),
    );
    // The same lock stays reachable through the other group, and directly.
    expect(pairsOf(live(await ticketRows(t, f.tenant.tenantId, { accessPermissionId: viaOtherGroup.id })))).toEqual(product(['p1', 'p2'], ['new-lock']));
    expect((await operatorTicket(f, direct.id)).status).toBe('VALID');
    expect([await tokenCount(f, g1.id), await tokenCount(f, g2.id)]).toEqual([2, 1]);
  });

  it('a device removed and added again gets new tickets; the revoked ones stay revoked', async () => {
    const f = await accessTenant(t);
    await register(f, ['phone'], ['l1', 'l2']);
    const r = await resident(t, f.token, 'R', ['phone']);
    const g = await lockGroup(t, f.token, 'G', ['l1', 'l2']);
    const p = await permission(t, f.token, r.id, g.id);
    const first = await ticketRows(t, f.tenant.tenantId);

    await leave(t, f.token, 'residents', r.id, 'phone');
    expect(await tokenCount(f, p.id)).toBe(0);
    await join(t, f.token, 'residents', r.id, 'phone');
    expect(await tokenCount(f, p.id)).toBe(2);

    const rows = await ticketRows(t, f.tenant.tenantId, { accessPermissionId: p.id });
    expect(rows).toHaveLength(4);
    expect(revoked(rows).map((row) => row.id).sort()).toEqual(first.map((row) => row.id).sort());
    expect(pairsOf(live(rows))).toEqual(product(['phone'], ['l1', 'l2']));
    for (const row of live(rows)) expect(first.map((old) => old.id)).not.toContain(row.id);
    for (const old of first) expect((await operatorTicket(f, old.id)).status).toBe('REVOKED');

    // The same for a lock.
    await leave(t, f.token, 'lock-groups', g.id, 'l2');
    await join(t, f.token, 'lock-groups', g.id, 'l2');
    const again = await ticketRows(t, f.tenant.tenantId, { accessPermissionId: p.id });
    expect(again).toHaveLength(5);
    expect(pairsOf(live(again))).toEqual(product(['phone'], ['l1', 'l2']));
    expect(revoked(again)).toHaveLength(3);
  });

  it('removing a device through the Operator API removes it from its residents and revokes its tickets', async () => {
    const f = await accessTenant(t);
    await register(f, ['lost', 'kept'], ['l1', 'l2']);
    const r1 = await resident(t, f.token, 'R1', ['lost', 'kept']);
    const r2 = await resident(t, f.token, 'R2', ['lost']);
    const g = await lockGroup(t, f.token, 'G', ['l1', 'l2']);
    const p1 = await permission(t, f.token, r1.id, g.id);
    const p2 = await permission(t, f.token, r2.id, g.id);
    await ticket(t, f.operator, 'l1', 'lost');

    expect((await v1(t, f.operator, { method: 'DELETE', url: '/operatorapi/mobiledevices/lost' })).statusCode).toBe(204);
    expect((await v1(t, f.token, { method: 'GET', url: `/v1/residents/${r1.id}` })).json().mobileDeviceIds).toEqual(['kept']);
    expect((await v1(t, f.token, { method: 'GET', url: `/v1/residents/${r2.id}` })).json().mobileDeviceIds).toEqual([]);
    const lost = await ticketRows(t, f.tenant.tenantId, { mobileDeviceId: 'lost' });
    expect(lost).toHaveLength(5);
    expect(live(lost)).toEqual([]);
    expect(pairsOf(live(await ticketRows(t, f.tenant.tenantId, { mobileDeviceId: 'kept' })))).toEqual(product(['kept'], ['l1', 'l2']));
    expect([await tokenCount(f, p1.id), await tokenCount(f, p2.id)]).toEqual([2, 0]);

    // A device registered again under the same id is a new device: it is in no resident and gets nothing.
    await device(t, f.operator, 'lost');
    expect((await v1(t, f.token, { method: 'GET', url: `/v1/residents/${r2.id}` })).json().mobileDeviceIds).toEqual([]);
    expect(live(await ticketRows(t, f.tenant.tenantId, { mobileDeviceId: 'lost' }))).toEqual([]);
    // Until it joins again.
    await join(t, f.token, 'residents', r2.id, 'lost');
    expect(pairsOf(live(await ticketRows(t, f.tenant.tenantId, { mobileDeviceId: 'lost' })))).toEqual(product(['lost'], ['l1', 'l2']));
  });

  it('removing a lock through the Operator API removes it from its lock groups and revokes its tickets', async () => {
    const f = await accessTenant(t);
    await register(f, ['phone'], ['broken', 'fine']);
    const r = await resident(t, f.token, 'R', ['phone']);
    const g = await lockGroup(t, f.token, 'G', ['broken', 'fine']);
    const p = await permission(t, f.token, r.id, g.id);
    expect((await v1(t, f.operator, { method: 'DELETE', url: '/operatorapi/securedobjects/broken' })).statusCode).toBe(204);
    expect((await v1(t, f.token, { method: 'GET', url: `/v1/lock-groups/${g.id}` })).json().securedObjectIds).toEqual(['fine']);
    expect(pairsOf(live(await ticketRows(t, f.tenant.tenantId)))).toEqual(['phone|fine']);
    expect(await tokenCount(f, p.id)).toBe(1);
  });

  it('deleting a resident revokes its permissions\' tickets and deletes the permissions; nothing else is touched', async () => {
    const f = await accessTenant(t);
    await register(f, ['p1', 'p2', 'p3'], ['l1', 'l2']);
    const doomed = await resident(t, f.token, 'Doomed', ['p1', 'p2']);
    const stays = await resident(t, f.token, 'Stays', ['p2', 'p3']);
    const g1 = await lockGroup(t, f.token, 'G1', ['l1', 'l2']);
    const g2 = await lockGroup(t, f.token, 'G2', ['l2']);
    const gone = [await permission(t, f.token, doomed.id, g1.id), await permission(t, f.token, doomed.id, g2.id)];
    const kept = await permission(t, f.token, stays.id, g1.id);
    const direct = await ticket(t, f.operator, 'l1', 'p1');

    const removed = await v1(t, f.token, { method: 'DELETE', url: `/v1/residents/${doomed.id}`, headers: { 'x-request-id': 'delete-resident' } });
    expect(removed.statusCode).toBe(204);
    for (const p of gone) {
      expectProblem(await v1(t, f.token, { method: 'GET', url: `/v1/access-permissions/${p.id}` }), 404);
      const rows = await ticketRows(t, f.tenant.tenantId, { accessPermissionId: p.id });
      expect(rows.length).toBeGreaterThan(0);
      expect(live(rows)).toEqual([]);
    }
    expect(pairsOf(live(await ticketRows(t, f.tenant.tenantId, { accessPermissionId: kept.id })))).toEqual(product(['p2', 'p3'], ['l1', 'l2']));
    expect((await operatorTicket(f, direct.id)).status).toBe('VALID');
    const { rows } = await t.database.db.query('SELECT 1 FROM access_permissions WHERE tenant_id = $1', [f.tenant.tenantId]);
    expect(rows).toHaveLength(1);
    expect((await auditTrail(t, f.tenant.tenantId, { requestId: String(removed.headers['x-request-id']) })).map((event) => [event.action, event.target]).sort()).toEqual(
      [
        ['access_permission.deleted', `access_permission:${gone[0]!.id}`],
        ['access_permission.deleted', `access_permission:${gone[1]!.id}`],
        ['ticket.revoked', `resident:${doomed.id}`],
        ['resident.deleted', `resident:${doomed.id}`],
      ].sort(),
    );
    expect((await v1(t, f.token, { method: 'GET', url: `/v1/access-permissions?residentId=${doomed.id}` })).json()).toEqual([]);
  });

  it('deleting a lock group revokes its permissions\' tickets and deletes the permissions; nothing else is touched', async () => {
    const f = await accessTenant(t);
    await register(f, ['p1', 'p2'], ['l1', 'l2', 'l3']);
    const r = await resident(t, f.token, 'R', ['p1', 'p2']);
    const doomed = await lockGroup(t, f.token, 'Doomed', ['l1', 'l2']);
    const stays = await lockGroup(t, f.token, 'Stays', ['l2', 'l3']);
    const gone = await permission(t, f.token, r.id, doomed.id);
    const kept = await permission(t, f.token, r.id, stays.id);
    const direct = await ticket(t, f.operator, 'l1', 'p2');

    const removed = await v1(t, f.token, { method: 'DELETE', url: `/v1/lock-groups/${doomed.id}`, headers: { 'x-request-id': 'delete-group' } });
    expect(removed.statusCode).toBe(204);
    expectProblem(await v1(t, f.token, { method: 'GET', url: `/v1/access-permissions/${gone.id}` }), 404);
    const rows = await ticketRows(t, f.tenant.tenantId, { accessPermissionId: gone.id });
    expect(rows).toHaveLength(4);
    expect(live(rows)).toEqual([]);
    expect(pairsOf(live(await ticketRows(t, f.tenant.tenantId, { accessPermissionId: kept.id })))).toEqual(product(['p1', 'p2'], ['l2', 'l3']));
    expect((await operatorTicket(f, direct.id)).status).toBe('VALID');
    expect((await auditTrail(t, f.tenant.tenantId, { requestId: String(removed.headers['x-request-id']) })).map((event) => [event.action, event.target])).toEqual([
      ['ticket.revoked', `lock_group:${doomed.id}`],
      ['access_permission.deleted', `access_permission:${gone.id}`],
      ['lock_group.deleted', `lock_group:${doomed.id}`],
    ]);
  });

  it('deleting a permission revokes every ticket it made, including those later members got', async () => {
    const f = await accessTenant(t);
    await register(f, ['p1', 'p2'], ['l1', 'l2']);
    const r = await resident(t, f.token, 'R', ['p1']);
    const g = await lockGroup(t, f.token, 'G', ['l1']);
    const p = await permission(t, f.token, r.id, g.id);
    await join(t, f.token, 'residents', r.id, 'p2');
    await join(t, f.token, 'lock-groups', g.id, 'l2');
    expect(await tokenCount(f, p.id)).toBe(4);

    expect((await v1(t, f.token, { method: 'DELETE', url: `/v1/access-permissions/${p.id}` })).statusCode).toBe(204);
    const rows = await ticketRows(t, f.tenant.tenantId);
    expect(pairsOf(rows)).toEqual(product(['p1', 'p2'], ['l1', 'l2']));
    expect(live(rows)).toEqual([]);
    // The groups keep their members, and a later member gets nothing from the deleted permission.
    await device(t, f.operator, 'p3');
    await join(t, f.token, 'residents', r.id, 'p3');
    expect(await ticketRows(t, f.tenant.tenantId, { mobileDeviceId: 'p3' })).toEqual([]);
  });

  it('tickets made through the Operator API are never touched by membership rules, nor do they stand in for a permission', async () => {
    const f = await accessTenant(t);
    await register(f, ['phone'], ['door']);
    // The direct ticket exists before the device and lock are grouped.
    const direct = await ticket(t, f.operator, 'door', 'phone');
    const r = await resident(t, f.token, 'R', ['phone']);
    const g = await lockGroup(t, f.token, 'G', ['door']);
    const p = await permission(t, f.token, r.id, g.id);
    // The permission makes its own ticket for the same pair.
    expect(p.tokenCount).toBe(1);
    const [own] = await ticketRows(t, f.tenant.tenantId, { accessPermissionId: p.id });
    expect(own!.id).not.toBe(direct.id);
    expect((await operatorTicket(f, direct.id))).not.toHaveProperty('accessPermissionId');

    // Revoking the direct ticket leaves the permission's ticket alone.
    const revokedDirect = await v1(t, f.operator, { method: 'DELETE', url: `/operatorapi/tickets/${direct.id}` });
    expect(revokedDirect.json().status).toBe('REVOKED');
    expect((await operatorTicket(f, own!.id)).status).toBe('VALID');

    // A second direct ticket survives leaving, joining, deleting the permission and both groups.
    const second = await ticket(t, f.operator, 'door', 'phone');
    await leave(t, f.token, 'residents', r.id, 'phone');
    await join(t, f.token, 'residents', r.id, 'phone');
    await leave(t, f.token, 'lock-groups', g.id, 'door');
    await join(t, f.token, 'lock-groups', g.id, 'door');
    expect((await v1(t, f.token, { method: 'DELETE', url: `/v1/access-permissions/${p.id}` })).statusCode).toBe(204);
    const p2 = await permission(t, f.token, r.id, g.id);
    expect((await v1(t, f.token, { method: 'DELETE', url: `/v1/residents/${r.id}` })).statusCode).toBe(204);
    expect((await v1(t, f.token, { method: 'DELETE', url: `/v1/lock-groups/${g.id}` })).statusCode).toBe(204);
    const secondNow = await operatorTicket(f, second.id);
    expect(secondNow).toMatchObject({ id: second.id, status: 'VALID' });
    expect(secondNow).not.toHaveProperty('revocationDate');
    const rows = await ticketRows(t, f.tenant.tenantId);
    expect(live(rows).map((row) => row.id)).toEqual([second.id]);
    expect(rows.filter((row) => row.access_permission_id === p2.id)).toHaveLength(1);
  });
});
