// Membership stays true under concurrency (docs/api-reference.md 5): grants, joins and leaves racing each other end with exactly
// one live ticket per (permission, device, lock). Real interleaving on PostgreSQL; PGlite serialises transactions,
// and the same assertions hold there.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  accessTenant,
  auditTrail,
  grant,
  live,
  lockGroup,
  memberUrl,
  pairsOf,
  permission,
  permissionBody,
  product,
  resident,
  ticketRows,
  v1,
  type AccessTenant,
  type PermissionBody,
} from '../helpers/access.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { device, lock } from '../helpers/operator.js';

const ROUNDS = 3;

describe('membership under concurrency', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4' });
  });
  afterAll(async () => {
    await t.close();
  });

  const ids = (prefix: string, count: number) => Array.from({ length: count }, (_, i) => `${prefix}-${i}`);

  async function register(f: AccessTenant, devices: string[], locks: string[]) {
    for (const id of devices) await device(t, f.operator, id);
    for (const id of locks) await lock(t, f.operator, id);
  }

  /** The permission's live tickets are exactly devices × locks: none missing, none twice; tokenCount agrees. */
  async function expectComplete(f: AccessTenant, permissionId: string, devices: string[], locks: string[]) {
    const rows = live(await ticketRows(t, f.tenant.tenantId, { accessPermissionId: permissionId }));
    expect(pairsOf(rows)).toEqual(product(devices, locks));
    const read = await v1(t, f.token, { method: 'GET', url: `/v1/access-permissions/${permissionId}` });
    expect(read.json<PermissionBody>().tokenCount).toBe(devices.length * locks.length);
  }

  it('devices joining a resident while a permission for it is granted all end up with every ticket, once', async () => {
    const f = await accessTenant(t);
    const locks = ids('lock', 4);
    await register(f, [], locks);
    const g = await lockGroup(t, f.token, 'G', locks);
    for (let round = 0; round < ROUNDS; round++) {
      const first = `r${round}-first`;
      const joining = ids(`r${round}-phone`, 12);
      await register(f, [first, ...joining], []);
      const r = await resident(t, f.token, `R${round}`, [first]);
      const puts = joining.map((id) => v1(t, f.token, { method: 'PUT', url: memberUrl('residents', r.id, id) }));
      // The grant in the middle of the joins, so some commit before it and some after.
      const responses = await Promise.all([...puts.slice(0, 6), grant(t, f.token, permissionBody(t, r.id, g.id)), ...puts.slice(6)]);
      for (const response of responses) expect(response.statusCode, response.body).toBeLessThan(300);
      const granted = responses[6]!.json<PermissionBody>();
      expect(granted.tokenCount).toBeGreaterThanOrEqual(locks.length);

      await expectComplete(f, granted.id, [first, ...joining], locks);
      const members = (await v1(t, f.token, { method: 'GET', url: `/v1/residents/${r.id}` })).json().mobileDeviceIds;
      expect(members).toEqual([first, ...joining].sort());
    }
  });

  it('concurrent duplicate PUTs of the same device make one membership, one set of tickets, one audit event', async () => {
    const f = await accessTenant(t);
    const locks = ids('lock', 3);
    await register(f, ['phone', 'other'], locks);
    const r = await resident(t, f.token, 'R', ['other']);
    const g = await lockGroup(t, f.token, 'G', locks);
    const p = await permission(t, f.token, r.id, g.id);

    const responses = await Promise.all(
      Array.from({ length: 10 }, () => v1(t, f.token, { method: 'PUT', url: memberUrl('residents', r.id, 'phone') })),
    );
    for (const response of responses) {
      expect(response.statusCode, response.body).toBe(200);
      expect(response.json().mobileDeviceIds).toEqual(['other', 'phone']);
    }
    const { rows } = await t.database.db.query('SELECT 1 FROM resident_devices WHERE tenant_id = $1 AND mobile_device_id = $2', [
      f.tenant.tenantId,
      'phone',
    ]);
    expect(rows).toHaveLength(1);
    expect(await ticketRows(t, f.tenant.tenantId, { mobileDeviceId: 'phone' })).toHaveLength(3);
    await expectComplete(f, p.id, ['other', 'phone'], locks);
    expect((await auditTrail(t, f.tenant.tenantId, { targetPrefix: `resident:${r.id}/` })).map((event) => event.action)).toEqual([
      'ticket.created',
      'resident.device_added',
    ]);

    // The same for locks.
    await lock(t, f.operator, 'late-lock');
    const lockPuts = await Promise.all(
      Array.from({ length: 10 }, () => v1(t, f.token, { method: 'PUT', url: memberUrl('lock-groups', g.id, 'late-lock') })),
    );
    for (const response of lockPuts) expect(response.statusCode, response.body).toBe(200);
    await expectComplete(f, p.id, ['other', 'phone'], [...locks, 'late-lock']);
  });

  it('locks joining a lock group while a permission for it is granted end up complete and duplicate-free', async () => {
    const f = await accessTenant(t);
    const devices = ids('phone', 3);
    await register(f, devices, []);
    const r = await resident(t, f.token, 'R', devices);
    for (let round = 0; round < ROUNDS; round++) {
      const first = `r${round}-door`;
      const joining = ids(`r${round}-lock`, 10);
      await register(f, [], [first, ...joining]);
      const g = await lockGroup(t, f.token, `G${round}`, [first]);
      const puts = joining.map((id) => v1(t, f.token, { method: 'PUT', url: memberUrl('lock-groups', g.id, id) }));
      const responses = await Promise.all([...puts.slice(0, 5), grant(t, f.token, permissionBody(t, r.id, g.id)), ...puts.slice(5)]);
      for (const response of responses) expect(response.statusCode, response.body).toBeLessThan(300);
      await expectComplete(f, responses[5]!.json<PermissionBody>().id, devices, [first, ...joining]);
    }
  });

  // Each join locks only its own group, so without more a device joining R and a lock joining G at once each miss
  // the other's uncommitted row and the pair gets no ticket. The tenant's change counter (change-log.repo.ts), taken
  // first by every ticket-writing transaction, serialises them; on PostgreSQL this test fails without it.
  it('devices and locks joining both sides of an existing permission at once miss no pair', async () => {
    const f = await accessTenant(t);
    for (let round = 0; round < ROUNDS; round++) {
      const devices = ids(`r${round}-phone`, 6);
      const locks = ids(`r${round}-lock`, 6);
      await register(f, devices, locks);
      const r = await resident(t, f.token, `R${round}`, [devices[0]!]);
      const g = await lockGroup(t, f.token, `G${round}`, [locks[0]!]);
      const p = await permission(t, f.token, r.id, g.id);
      const requests = devices.slice(1).flatMap((d, i) => [
        v1(t, f.token, { method: 'PUT', url: memberUrl('residents', r.id, d) }),
        v1(t, f.token, { method: 'PUT', url: memberUrl('lock-groups', g.id, locks[i + 1]!) }),
      ]);
      for (const response of await Promise.all(requests)) expect(response.statusCode, response.body).toBe(200);
      await expectComplete(f, p.id, devices, locks);
    }
  });

  it('devices leaving while others join and a permission is granted: live tickets are exactly the final members × locks', async () => {
    const f = await accessTenant(t);
    const locks = ids('lock', 3);
    const staying = ids('stay', 4);
    const leaving = ids('leave', 4);
    const joining = ids('join', 4);
    await register(f, [...staying, ...leaving, ...joining], locks);
    const r = await resident(t, f.token, 'R', [...staying, ...leaving]);
    const g = await lockGroup(t, f.token, 'G', locks);
    const earlier = await permission(t, f.token, r.id, g.id);

    const requests = [
      ...leaving.map((d) => v1(t, f.token, { method: 'DELETE', url: memberUrl('residents', r.id, d) })),
      grant(t, f.token, permissionBody(t, r.id, g.id, { commands: ['tokn'] })),
      ...joining.map((d) => v1(t, f.token, { method: 'PUT', url: memberUrl('residents', r.id, d) })),
    ];
    const responses = await Promise.all(requests);
    for (const response of responses) expect(response.statusCode, response.body).toBeLessThan(300);
    const later = responses[leaving.length]!.json<PermissionBody>();

    for (const p of [earlier.id, later.id]) await expectComplete(f, p, [...staying, ...joining], locks);
    for (const d of leaving) expect(live(await ticketRows(t, f.tenant.tenantId, { mobileDeviceId: d }))).toEqual([]);
  });

  it('a device removed through the Operator API while a permission is granted keeps no live ticket', async () => {
    const f = await accessTenant(t);
    const locks = ids('lock', 3);
    await register(f, [], locks);
    const g = await lockGroup(t, f.token, 'G', locks);
    for (let round = 0; round < ROUNDS; round++) {
      const devices = ids(`r${round}-phone`, 4);
      await register(f, devices, []);
      const r = await resident(t, f.token, `R${round}`, devices);
      const [removed, granted] = await Promise.all([
        v1(t, f.operator, { method: 'DELETE', url: `/operatorapi/mobiledevices/${devices[0]}` }),
        grant(t, f.token, permissionBody(t, r.id, g.id)),
      ]);
      expect(removed.statusCode, removed.body).toBe(204);
      expect(granted.statusCode, granted.body).toBe(201);
      expect(live(await ticketRows(t, f.tenant.tenantId, { mobileDeviceId: devices[0]! }))).toEqual([]);
      await expectComplete(f, granted.json<PermissionBody>().id, devices.slice(1), locks);
    }
  });

  it('concurrent grants for the same groups each get their full set; a shared Idempotency-Key makes one grant', async () => {
    const f = await accessTenant(t);
    const devices = ids('phone', 3);
    const locks = ids('lock', 3);
    await register(f, devices, locks);
    const r = await resident(t, f.token, 'R', devices);
    const g = await lockGroup(t, f.token, 'G', locks);
    const body = permissionBody(t, r.id, g.id);

    const grants = await Promise.all(Array.from({ length: 5 }, () => grant(t, f.token, body)));
    for (const response of grants) expect(response.statusCode, response.body).toBe(201);
    const grantIds = grants.map((response) => response.json<PermissionBody>().id);
    expect(new Set(grantIds).size).toBe(5);
    for (const id of grantIds) await expectComplete(f, id, devices, locks);

    const keyed = await Promise.all(Array.from({ length: 5 }, () => grant(t, f.token, body, { 'idempotency-key': 'one-grant' })));
    // The first creates; the others replay it, or answer 409 while it still runs.
    for (const response of keyed) expect([201, 409], response.body).toContain(response.statusCode);
    const created = keyed.filter((response) => response.statusCode === 201).map((response) => response.json<PermissionBody>());
    expect(new Set(created.map((item) => item.id)).size).toBe(1);
    const { rows } = await t.database.db.query('SELECT id FROM access_permissions WHERE tenant_id = $1', [f.tenant.tenantId]);
    expect(rows).toHaveLength(6);
    expect(await ticketRows(t, f.tenant.tenantId)).toHaveLength(6 * 9);
  });
});
