// docs/api-reference.md 13: the console's two calls. GET /operatorapi/securedobjects/{id}/access (who can open this
// door at a time, schedules in the lock's time zone) and POST /v1/residents/{id}/revocations (revoke everywhere), with
// GET /operatorapi/revocations?residentId= following the revocations to the doors.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { accessTenant, lockGroup, permission, resident, userToken, v1, expectAccessAuthChecks, type AccessTenant } from '../helpers/access.js';
import { download, phoneToken } from '../helpers/device.js';
import { clientToken, createClient } from '../helpers/oauth.js';
import { call, device, expectAuthChecks, expectProblem, HOUR, LOCK_UUID, ticket, walk } from '../helpers/operator.js';

const DAY = 24 * HOUR;

interface DoorAccessItem {
  mobileDeviceId: string;
  residentId?: string;
  residentName?: string;
  tokenId: string;
  accessPermissionId?: string;
  beginDate: number;
  endDate: number;
  schedule?: unknown;
  nextWindow?: { start: number; end: number };
  keyBound: boolean;
}

/** The next Monday 00:00 UTC at least two days after `now`. */
function nextMonday(now: number): number {
  const day = new Date(Math.floor(now / DAY) * DAY + 2 * DAY);
  const untilMonday = (8 - day.getUTCDay()) % 7;
  return day.getTime() + untilMonday * DAY;
}

describe('docs/api-reference.md 13: who can open this door, and revoke a resident everywhere', () => {
  let t: TestApp;
  let acme: AccessTenant;
  let other: AccessTenant;
  let monday: number;
  let alice: { id: string };
  let bob: { id: string };
  const tickets: Record<string, string> = {};

  const access = (lockId: string, query = '', token = acme.operator) =>
    call(t, token, { method: 'GET', url: `/operatorapi/securedobjects/${lockId}/access${query}` });

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4' });
    acme = await accessTenant(t, 'door');
    other = await accessTenant(t, 'door-other');
    const now = t.app.services.clock();
    monday = nextMonday(now);
    // A lock in Helsinki (UTC+2 in winter, +3 in summer): its schedules are read on its wall clock.
    const created = await call(t, acme.operator, {
      method: 'POST',
      url: '/operatorapi/securedobjects',
      payload: { id: 'front', channels: ['btlespp'], localName: 'FRONT', uuid: LOCK_UUID, timeZone: 'Europe/Helsinki' },
    });
    expect(created.statusCode, created.body).toBe(201);
    const side = await call(t, acme.operator, {
      method: 'POST',
      url: '/operatorapi/securedobjects',
      payload: { id: 'side', channels: ['btlespp'], localName: 'SIDE', uuid: LOCK_UUID },
    });
    expect(side.statusCode).toBe(201);
    for (const id of ['phone-a1', 'phone-a2', 'phone-b', 'phone-c']) await device(t, acme.operator, id);
    alice = await resident(t, acme.token, 'Alice', ['phone-a1', 'phone-a2']);
    bob = await resident(t, acme.token, 'Bob', ['phone-b']);
    const doors = await lockGroup(t, acme.token, 'Doors', ['front', 'side']);
    const span = { beginDate: now, endDate: monday + 14 * DAY };
    // Alice: every day, at any hour. Bob: Mondays 09:00–17:00 Helsinki time.
    const alicePermission = await permission(t, acme.token, alice.id, doors.id, span);
    tickets.alicePermission = alicePermission.id;
    const bobPermission = await permission(t, acme.token, bob.id, doors.id, {
      ...span,
      schedule: { weekly: [{ days: ['MO'], from: '09:00', to: '17:00' }] },
    });
    tickets.bobPermission = bobPermission.id;
    // A direct ticket of Alice's second phone, and one of a phone in no resident; one already revoked; one expired.
    tickets.direct = (await ticket(t, acme.operator, 'front', 'phone-a2', span)).id;
    tickets.loner = (await ticket(t, acme.operator, 'front', 'phone-c', span)).id;
    const gone = await ticket(t, acme.operator, 'front', 'phone-c', span);
    expect((await call(t, acme.operator, { method: 'DELETE', url: `/operatorapi/tickets/${gone.id}` })).statusCode).toBe(200);
    tickets.gone = gone.id;
    tickets.later = (await ticket(t, acme.operator, 'front', 'phone-c', { beginDate: monday + 8 * DAY, endDate: monday + 9 * DAY })).id;
    // The other tenant has a lock with the same id.
    await call(t, other.operator, {
      method: 'POST',
      url: '/operatorapi/securedobjects',
      payload: { id: 'front', channels: ['btlespp'], localName: 'FRONT', uuid: LOCK_UUID },
    });
  });
  afterAll(async () => {
    await t.close();
  });

  it('lists the tickets that open at `at`, the schedule read on the lock\'s wall clock', async () => {
    // Monday 10:00 in Helsinki is 08:00 or 07:00 UTC: Bob's window is open.
    const at = monday + 8 * HOUR;
    const response = await access('front', `?at=${at}`);
    expect(response.statusCode, response.body).toBe(200);
    const items = response.json() as DoorAccessItem[];
    expect(items.map((item) => item.mobileDeviceId).sort()).toEqual(['phone-a1', 'phone-a2', 'phone-a2', 'phone-b', 'phone-c']);
    const bobs = items.find((item) => item.mobileDeviceId === 'phone-b')!;
    expect(bobs).toMatchObject({ residentId: bob.id, residentName: 'Bob', accessPermissionId: tickets.bobPermission, keyBound: false });
    expect(bobs.schedule).toEqual({ weekly: [{ days: ['MO'], from: '09:00', to: '17:00' }] });
    expect(bobs.nextWindow!.start).toBeLessThanOrEqual(at);
    expect(bobs.nextWindow!.end).toBeGreaterThan(at);
    expect(bobs.nextWindow!.end - bobs.nextWindow!.start).toBe(8 * HOUR);
    const direct = items.find((item) => item.tokenId === tickets.direct)!;
    expect(direct).toMatchObject({ mobileDeviceId: 'phone-a2', residentId: alice.id, residentName: 'Alice' });
    expect(direct).not.toHaveProperty('accessPermissionId');
    expect(direct).not.toHaveProperty('nextWindow');
    const loner = items.find((item) => item.tokenId === tickets.loner)!;
    expect(loner).not.toHaveProperty('residentId');
    expect(items.map((item) => item.tokenId)).not.toContain(tickets.gone);
    expect(items.map((item) => item.tokenId)).not.toContain(tickets.later);
  });

  it('leaves out a ticket whose schedule is closed at `at`, and one outside its dates', async () => {
    // Monday 20:00 in Helsinki: after Bob's window; Tuesday: not a Bob day.
    for (const at of [monday + 18 * HOUR, monday + DAY + 8 * HOUR]) {
      const items = (await access('front', `?at=${at}`)).json() as DoorAccessItem[];
      expect(items.map((item) => item.mobileDeviceId)).not.toContain('phone-b');
      expect(items.map((item) => item.mobileDeviceId)).toContain('phone-a1');
    }
    const later = (await access('front', `?at=${monday + 8 * DAY + HOUR}`)).json() as DoorAccessItem[];
    expect(later.map((item) => item.tokenId)).toContain(tickets.later);
    // Default: now.
    const now = (await access('front')).json() as DoorAccessItem[];
    expect(now.map((item) => item.tokenId)).toContain(tickets.loner);
  });

  it('marks a ticket that opens during a lockdown too (override, docs/api-reference.md 15)', async () => {
    const manager = await clientToken(t.app, await createClient(t.app, acme.tenant, ['tokens:create', 'lockdown:manage']));
    await device(t, acme.operator, 'phone-guard');
    const now = t.app.services.clock();
    const created = await call(t, manager, {
      method: 'POST',
      url: '/operatorapi/tickets',
      payload: { securedObjectId: 'front', mobileDeviceId: 'phone-guard', beginDate: now, endDate: now + DAY, commands: ['open'], channels: ['btlespp'], override: true },
    });
    expect(created.statusCode, created.body).toBe(201);
    const items = (await access('front', `?at=${now + HOUR}&limit=1000`)).json() as (DoorAccessItem & { override?: boolean })[];
    expect(items.find((item) => item.tokenId === created.json().id)).toMatchObject({ mobileDeviceId: 'phone-guard', override: true });
    expect(items.filter((item) => item.tokenId !== created.json().id).every((item) => item.override === undefined)).toBe(true);
  });

  it('pages with Link: rel="next", across tickets the schedule leaves out', async () => {
    const at = monday + 18 * HOUR;
    const whole = (await access('front', `?at=${at}`)).json() as DoorAccessItem[];
    const { items, pages } = await walk<DoorAccessItem>(t, acme.operator, `/operatorapi/securedobjects/front/access?at=${at}&limit=1`);
    expect(items.map((item) => item.tokenId)).toEqual(whole.map((item) => item.tokenId));
    expect(pages.length).toBeGreaterThanOrEqual(whole.length);
  });

  it('answers 404 for an unknown lock and for another tenant\'s, 400 for bad input, 401 and 403', async () => {
    expectProblem(await access('nowhere'), 404);
    // The other tenant's lock has the same id: acme's answer is about acme's lock, the other tenant sees none of it.
    const theirs = await access('front', `?at=${monday + 8 * HOUR}`, other.operator);
    expect(theirs.statusCode).toBe(200);
    expect(theirs.json()).toEqual([]);
    expectProblem(await access('side', '', other.operator), 404);
    expectProblem(await access('front', '?at=-1'), 400);
    expectProblem(await access('front', '?at=soon'), 400);
    expectProblem(await access('front', '?limit=0'), 400);
    expectProblem(await access('front', '?cursor=nonsense'), 400);
    expectProblem(await access('front', '?extra=1'), 400);
    const wrongScope = await clientToken(t.app, await createClient(t.app, acme.tenant, ['devices:read']));
    await expectAuthChecks(t, wrongScope, [{ method: 'GET', url: '/operatorapi/securedobjects/front/access', scope: 'tokens:read' }]);
  });

  it('revokes every valid ticket of every device of the resident, direct and granted, in one go', async () => {
    // Alice's phones download first, so the locks need the revocations (docs/api-reference.md 8.2).
    for (const phone of ['phone-a1', 'phone-a2']) await download(t, await phoneToken(t, acme.tenant, phone), phone);
    const { rows: before } = await t.database.db.query<{ id: string }>(
      `SELECT id FROM tickets WHERE tenant_id = $1 AND revoked_at IS NULL AND mobile_device_id IN ('phone-a1', 'phone-a2') ORDER BY created_at, id`,
      [acme.tenant.tenantId],
    );
    expect(before.length).toBe(5);
    const response = await v1(t, acme.token, { method: 'POST', url: `/v1/residents/${alice.id}/revocations` });
    expect(response.statusCode, response.body).toBe(200);
    const body = response.json() as { revoked: number; tokenIds: string[] };
    expect(body.revoked).toBe(5);
    expect(body.tokenIds).toEqual(before.map((row) => row.id));
    expect(body.tokenIds).toContain(tickets.direct);
    // In the database: all revoked at one instant, with one change-log position; nobody else's touched.
    const { rows } = await t.database.db.query<{ revoked_at: number | null; change_seq: number; mobile_device_id: string }>(
      'SELECT revoked_at, change_seq, mobile_device_id FROM tickets WHERE tenant_id = $1 AND id = ANY ($2::uuid[])',
      [acme.tenant.tenantId, body.tokenIds],
    );
    expect(new Set(rows.map((row) => row.revoked_at)).size).toBe(1);
    expect(new Set(rows.map((row) => row.change_seq)).size).toBe(1);
    const { rows: others } = await t.database.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM tickets WHERE tenant_id = $1 AND revoked_at IS NULL AND mobile_device_id IN ('phone-b', 'phone-c')`,
      [acme.tenant.tenantId],
    );
    expect(others[0]!.n).toBe(4);
    // Audited as single revocations are: ticket.revoked with the ids, under the resident.
    const { rows: events } = await t.database.db.query<{ action: string; target: string; data: { ticketIds: string[] } }>(
      "SELECT action, target, data FROM audit_events WHERE tenant_id = $1 AND target = $2 AND action = 'ticket.revoked'",
      [acme.tenant.tenantId, `resident:${alice.id}`],
    );
    expect(events).toHaveLength(1);
    expect(events[0]!.data.ticketIds).toEqual(body.tokenIds);
    // Nobody with Alice's phones can open the front door any more.
    const now = (await access('front')).json() as DoorAccessItem[];
    expect(now.map((item) => item.mobileDeviceId)).not.toContain('phone-a1');
    // The propagation of exactly those: pending at both locks until they sync.
    const pending = await walk<{ id: string }>(t, acme.operator, `/operatorapi/revocations?applied=false&residentId=${alice.id}`);
    expect(pending.items.map((item) => item.id).sort()).toEqual([...body.tokenIds].sort());
    const bobsPending = await call(t, acme.operator, { method: 'GET', url: `/operatorapi/revocations?applied=false&residentId=${bob.id}` });
    expect(bobsPending.json()).toEqual([]);
    const nonsense = await call(t, acme.operator, { method: 'GET', url: '/operatorapi/revocations?residentId=not-a-uuid' });
    expect(nonsense.statusCode).toBe(200);
    expect(nonsense.json()).toEqual([]);
    // Again: nothing more to revoke.
    const again = await v1(t, acme.token, { method: 'POST', url: `/v1/residents/${alice.id}/revocations` });
    expect(again.json()).toEqual({ revoked: 0, tokenIds: [] });
  });

  it('answers 404 for an unknown or another tenant\'s resident, 401 and 403, and changes nothing then', async () => {
    const theirs = await resident(t, other.token, 'Olga');
    const { rows: before } = await t.database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM tickets WHERE revoked_at IS NOT NULL');
    expectProblem(await v1(t, acme.token, { method: 'POST', url: `/v1/residents/${theirs.id}/revocations` }), 404);
    expectProblem(await v1(t, acme.token, { method: 'POST', url: '/v1/residents/00000000-0000-4000-8000-000000000000/revocations' }), 404);
    expectProblem(await v1(t, acme.token, { method: 'POST', url: '/v1/residents/not-a-uuid/revocations' }), 404);
    const { rows: after } = await t.database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM tickets WHERE revoked_at IS NOT NULL');
    expect(after[0]!.n).toBe(before[0]!.n);
    const wrongScope = await userToken(t, acme, 'device-groups:read');
    await expectAccessAuthChecks(t, { operator: acme.operator, wrongScope }, [
      { method: 'POST', url: `/v1/residents/${bob.id}/revocations`, scope: 'access-permissions:write' },
    ]);
  });
});
