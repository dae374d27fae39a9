// Schedules end to end (docs/api-reference.md 9, 4.3, 5, 6.3): a ticket's or access permission's schedule in the lock's
// zone reaches the door as `win`, the lock opens only inside a window, the explain endpoint names the next one, DST
// moves the windows' UTC instants; bad schedules are 422s that change nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LockSimulator } from '../../src/simulator/lock-simulator.js';
import { accessTenant, grant, join, lockGroup, permissionBody, resident, v1, type AccessTenant } from '../helpers/access.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { download, lockTrust, payloadOf, phoneToken } from '../helpers/device.js';
import { clientToken } from '../helpers/oauth.js';
import { call, device, expectProblem, HOUR, issueTicket, lock } from '../helpers/operator.js';

const DAY = 24 * HOUR;
/** Monday 2026-03-23, 09:00Z = 10:00 in Berlin (CET, +01:00); Berlin moves to CEST (+02:00) on Sunday 2026-03-29. */
const MONDAY = Date.UTC(2026, 2, 23, 9);
const WEEKDAYS_8_TO_12 = { weekly: [{ days: ['MO', 'TU', 'WE', 'TH', 'FR'], from: '08:00', to: '12:00' }] };

describe('schedules in the lock\'s local time', () => {
  let t: TestApp;
  let now = MONDAY;
  let fixture: AccessTenant;

  const countTickets = async () =>
    (await t.database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM tickets WHERE tenant_id = $1', [fixture.tenant.tenantId])).rows[0]!.n;
  const countPermissions = async () =>
    (await t.database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM access_permissions WHERE tenant_id = $1', [fixture.tenant.tenantId])).rows[0]!.n;
  const schedulesOf = async (accessPermissionId: string) =>
    (
      await t.database.db.query<{ mobile_device_id: string; secured_object_id: string; schedule: unknown }>(
        `SELECT mobile_device_id, secured_object_id, schedule FROM tickets
          WHERE tenant_id = $1 AND access_permission_id = $2 ORDER BY mobile_device_id, secured_object_id`,
        [fixture.tenant.tenantId, accessPermissionId],
      )
    ).rows;

  beforeAll(async () => {
    t = await buildTestApp({}, { clock: () => now });
    fixture = await accessTenant(t, 'schedules');
    for (const id of ['front-door', 'back-door', 'garage']) await lock(t, fixture.operator, id);
    for (const id of ['phone-a', 'phone-b', 'phone-c', 'phone-d']) await device(t, fixture.operator, id);
    // The zone is set with SQL: the secured object's timeZone API is not part of this change.
    await t.database.db.query(`UPDATE secured_objects SET time_zone = 'Europe/Berlin' WHERE tenant_id = $1`, [fixture.tenant.tenantId]);
  });
  afterAll(async () => {
    await t.close();
  });

  it('opens inside a window and denies outside it, explains the next window, and renews across the DST change', async () => {
    now = MONDAY;
    const issued = await issueTicket(t, fixture.operator, {
      securedObjectId: 'front-door',
      mobileDeviceId: 'phone-a',
      beginDate: now - HOUR,
      endDate: now + 30 * DAY,
      commands: ['open'],
      channels: ['btlespp'],
      schedule: WEEKDAYS_8_TO_12,
    });
    expect(issued.statusCode, issued.body).toBe(201);
    const ticket = issued.json();
    expect(ticket.schedule).toEqual(WEEKDAYS_8_TO_12);
    expect((await call(t, fixture.operator, { method: 'GET', url: `/operatorapi/tickets/${ticket.id}` })).json().schedule).toEqual(WEEKDAYS_8_TO_12);

    const phone = await phoneToken(t, fixture.tenant, 'phone-a');
    const [first] = await download(t, phone, 'phone-a');
    // From nbf (Monday 08:55Z: the ticket began at 08:00Z, but nbf is iat minus five minutes, docs/security-cases.md
    // H54) to exp (a week after iat): 08:00–12:00 Berlin is 07:00Z–11:00Z before the change, 06:00Z–10:00Z after it.
    expect(payloadOf(first!.credential).win).toEqual([
      [Date.UTC(2026, 2, 23, 8, 55), Date.UTC(2026, 2, 23, 11)],
      [Date.UTC(2026, 2, 24, 7), Date.UTC(2026, 2, 24, 11)],
      [Date.UTC(2026, 2, 25, 7), Date.UTC(2026, 2, 25, 11)],
      [Date.UTC(2026, 2, 26, 7), Date.UTC(2026, 2, 26, 11)],
      [Date.UTC(2026, 2, 27, 7), Date.UTC(2026, 2, 27, 11)],
      [Date.UTC(2026, 2, 30, 6), Date.UTC(2026, 2, 30, 9)],
    ]);

    const door = new LockSimulator(await lockTrust(t, fixture.tenant, 'front-door'));
    expect(await door.decide(first!.credential, 'open', Date.UTC(2026, 2, 23, 10, 59))).toEqual({ decision: 'open', reason: 'ok', ticketId: ticket.id });
    expect(await door.decide(first!.credential, 'open', Date.UTC(2026, 2, 23, 11))).toEqual({ decision: 'deny', reason: 'outside-schedule', ticketId: ticket.id });
    // Saturday: no window.
    expect(await door.decide(first!.credential, 'open', Date.UTC(2026, 2, 28, 9))).toMatchObject({ decision: 'deny', reason: 'outside-schedule' });

    // The explain endpoint (docs/api-reference.md 8.6) says so, with the next window: Tuesday 08:00 Berlin.
    const explained = await call(t, fixture.operator, {
      method: 'GET',
      url: `/operatorapi/access-checks?mobileDeviceId=phone-a&securedObjectId=front-door&at=${Date.UTC(2026, 2, 23, 12)}`,
    });
    expect(explained.statusCode, explained.body).toBe(200);
    expect(explained.json()).toMatchObject({
      decision: 'deny',
      reasons: [{ code: 'outside-schedule', nextWindowStart: Date.UTC(2026, 2, 24, 7) }],
    });

    // Friday, past half-life: the download renews the credential, whose windows cross Sunday's change.
    now = Date.UTC(2026, 2, 27, 9);
    const [renewed] = await download(t, await phoneToken(t, fixture.tenant, 'phone-a'), 'phone-a');
    expect(renewed!.credential).not.toBe(first!.credential);
    const win = payloadOf(renewed!.credential).win as [number, number][];
    // It starts at nbf, five minutes before iat (docs/security-cases.md H54), inside Friday's window.
    expect(win).toEqual([
      [Date.UTC(2026, 2, 27, 8, 55), Date.UTC(2026, 2, 27, 11)],
      [Date.UTC(2026, 2, 30, 6), Date.UTC(2026, 2, 30, 10)],
      [Date.UTC(2026, 2, 31, 6), Date.UTC(2026, 2, 31, 10)],
      [Date.UTC(2026, 3, 1, 6), Date.UTC(2026, 3, 1, 10)],
      [Date.UTC(2026, 3, 2, 6), Date.UTC(2026, 3, 2, 10)],
      [Date.UTC(2026, 3, 3, 6), Date.UTC(2026, 3, 3, 9)],
    ]);
    // Monday after the change: 08:30 CEST (06:30Z) opens, 12:30 CEST (10:30Z) does not; 07:30 CEST (05:30Z) neither.
    expect(await door.decide(renewed!.credential, 'open', Date.UTC(2026, 2, 30, 6, 30))).toMatchObject({ decision: 'open' });
    expect(await door.decide(renewed!.credential, 'open', Date.UTC(2026, 2, 30, 10, 30))).toMatchObject({ decision: 'deny', reason: 'outside-schedule' });
    expect(await door.decide(renewed!.credential, 'open', Date.UTC(2026, 2, 30, 5, 30))).toMatchObject({ decision: 'deny', reason: 'outside-schedule' });
  });

  it('answers 422 with the schedule\'s field errors, or when it never opens within the validity, and changes nothing', async () => {
    now = MONDAY;
    const ticketsBefore = await countTickets();
    const permissionsBefore = await countPermissions();
    const base = { securedObjectId: 'front-door', mobileDeviceId: 'phone-b', beginDate: now, endDate: now + DAY, commands: ['open'], channels: ['btlespp'] };
    const bad = { weekly: [{ days: ['MO', 'XX'], from: '25:00', to: '12:00' }], except: ['2026-02-30'] };

    const refused = expectProblem(await issueTicket(t, fixture.operator, { ...base, schedule: bad }), 422);
    const fields = refused.errors!.map((error) => error.field);
    expect(fields).toEqual(expect.arrayContaining(['schedule.weekly[0].days[1]', 'schedule.weekly[0].from', 'schedule.except[0]']));
    expect(fields.every((field) => field.startsWith('schedule.'))).toBe(true);
    // An empty weekly list would never open.
    expect(expectProblem(await issueTicket(t, fixture.operator, { ...base, schedule: { weekly: [] } }), 422).errors).toEqual([
      { field: 'schedule.weekly', message: expect.stringMatching(/never open/) },
    ]);
    // Valid, but valid only over the weekend in the lock's zone (Saturday 00:00 to Sunday 20:00 Berlin).
    const weekend = { beginDate: Date.UTC(2026, 2, 27, 23), endDate: Date.UTC(2026, 2, 29, 18) };
    expect(expectProblem(await issueTicket(t, fixture.operator, { ...base, ...weekend, schedule: WEEKDAYS_8_TO_12 }), 422).errors).toEqual([
      { field: 'schedule', message: "the schedule never opens within the ticket's validity" },
    ]);
    // A malformed schedule is a 400 (schema).
    expect((await issueTicket(t, fixture.operator, { ...base, schedule: { weekly: [], always: true } })).statusCode).toBe(400);

    const who = await resident(t, fixture.token, 'Bob', ['phone-b']);
    const where = await lockGroup(t, fixture.token, 'Front', ['front-door']);
    const body = permissionBody(t, who.id, where.id);
    const refusedGrant = expectProblem(await grant(t, fixture.token, { ...body, schedule: bad }), 422);
    expect(refusedGrant.errors!.map((error) => error.field)).toEqual(fields);
    expect(expectProblem(await grant(t, fixture.token, { ...body, ...weekend, schedule: WEEKDAYS_8_TO_12 }), 422).errors).toEqual([
      { field: 'schedule', message: "the schedule never opens within the ticket's validity" },
    ]);
    expect((await grant(t, fixture.token, { ...body, schedule: { weekly: 'always' } })).statusCode).toBe(400);

    expect(await countTickets()).toBe(ticketsBefore);
    expect(await countPermissions()).toBe(permissionsBefore);
  });

  it('copies an access permission\'s schedule to every ticket it makes, and to the tickets of new members', async () => {
    now = MONDAY;
    const who = await resident(t, fixture.token, 'Carol', ['phone-c']);
    const where = await lockGroup(t, fixture.token, 'Doors', ['front-door', 'back-door']);
    const granted = await grant(t, fixture.token, { ...permissionBody(t, who.id, where.id, { endDate: now + 30 * DAY }), schedule: WEEKDAYS_8_TO_12 });
    expect(granted.statusCode, granted.body).toBe(201);
    const permission = granted.json();
    expect(permission).toMatchObject({ tokenCount: 2, schedule: WEEKDAYS_8_TO_12 });
    expect((await v1(t, fixture.token, { method: 'GET', url: `/v1/access-permissions/${permission.id}` })).json().schedule).toEqual(WEEKDAYS_8_TO_12);
    expect((await schedulesOf(permission.id)).map((row) => row.schedule)).toEqual([WEEKDAYS_8_TO_12, WEEKDAYS_8_TO_12]);

    // A new device of the resident and a new lock of the group: their tickets carry the schedule too.
    await join(t, fixture.token, 'residents', who.id, 'phone-d');
    await join(t, fixture.token, 'lock-groups', where.id, 'garage');
    const rows = await schedulesOf(permission.id);
    expect(rows.map((row) => `${row.mobile_device_id}|${row.secured_object_id}`)).toEqual([
      'phone-c|back-door',
      'phone-c|front-door',
      'phone-c|garage',
      'phone-d|back-door',
      'phone-d|front-door',
      'phone-d|garage',
    ]);
    for (const row of rows) expect(row.schedule).toEqual(WEEKDAYS_8_TO_12);

    // A permission without a schedule makes tickets without one (NULL, absent on the wire).
    const plain = await grant(t, fixture.token, permissionBody(t, who.id, where.id));
    expect(plain.statusCode, plain.body).toBe(201);
    expect(plain.json()).not.toHaveProperty('schedule');
    expect((await schedulesOf(plain.json().id)).every((row) => row.schedule === null)).toBe(true);
    const [downloaded] = (await download(t, await phoneToken(t, fixture.tenant, 'phone-d'), 'phone-d')).filter((item) => item.securedObjectId === 'garage');
    expect(downloaded).toBeDefined();
  });

  it('carries each ticket\'s own schedule (or none) through concurrent creates written as one batch', async () => {
    now = MONDAY;
    const evenings = { weekly: [{ days: ['SA', 'SU'], from: '18:00', to: '02:00' }], except: ['2026-03-29'] };
    const schedules = Array.from({ length: 12 }, (_, i) => [WEEKDAYS_8_TO_12, undefined, evenings][i % 3]);
    const responses = await Promise.all(
      schedules.map((schedule) =>
        issueTicket(t, fixture.operator, {
          securedObjectId: 'garage',
          mobileDeviceId: 'phone-b',
          beginDate: now,
          endDate: now + 30 * DAY,
          commands: ['open'],
          channels: ['btlespp'],
          ...(schedule ? { schedule } : {}),
        }),
      ),
    );
    const { rows } = await t.database.db.query<{ id: string; schedule: unknown }>(
      'SELECT id, schedule FROM tickets WHERE tenant_id = $1 AND id = ANY ($2::uuid[])',
      [fixture.tenant.tenantId, responses.map((response) => response.json().id as string)],
    );
    const stored = new Map(rows.map((row) => [row.id, row.schedule]));
    responses.forEach((response, index) => {
      expect(response.statusCode, response.body).toBe(201);
      const body = response.json();
      if (schedules[index] === undefined) {
        expect(body).not.toHaveProperty('schedule');
        expect(stored.get(body.id)).toBeNull();
      } else {
        expect(body.schedule).toEqual(schedules[index]);
        expect(stored.get(body.id)).toEqual(schedules[index]);
      }
    });
  });

  it('answers a repeated POST /tickets with a schedule and the same Idempotency-Key with the first answer, issuing once', async () => {
    now = MONDAY;
    const body = { securedObjectId: 'back-door', mobileDeviceId: 'phone-b', beginDate: now, endDate: now + DAY, commands: ['open'], channels: ['btlespp'], schedule: WEEKDAYS_8_TO_12 };
    const before = await countTickets();
    const first = await issueTicket(t, fixture.operator, body, { 'idempotency-key': 'schedule-once' });
    const again = await issueTicket(t, fixture.operator, body, { 'idempotency-key': 'schedule-once' });
    expect(first.statusCode, first.body).toBe(201);
    expect(again.statusCode).toBe(201);
    expect(again.json()).toEqual(first.json());
    expect(first.json().schedule).toEqual(WEEKDAYS_8_TO_12);
    expect(await countTickets()).toBe(before + 1);
  });
  it('re-signs a lock\'s scheduled credentials in its new time zone on the next download, and leaves the others as they were', async () => {
    now = MONDAY;
    // A token of this moment: the tests before moved the clock past the fixture's.
    const operator = await clientToken(t.app, fixture.tenant);
    await lock(t, operator, 'side-door');
    await device(t, operator, 'phone-z');
    const zone = (timeZone: string) => call(t, operator, { method: 'PATCH', url: '/operatorapi/securedobjects/side-door', payload: { timeZone } });
    expect((await zone('Europe/Berlin')).statusCode).toBe(200);
    const body = { securedObjectId: 'side-door', mobileDeviceId: 'phone-z', beginDate: now - HOUR, endDate: now + 30 * DAY, commands: ['open'], channels: ['btlespp'] };
    const scheduled = (await issueTicket(t, operator, { ...body, schedule: WEEKDAYS_8_TO_12 })).json();
    const plain = (await issueTicket(t, operator, body)).json();
    const phone = await phoneToken(t, fixture.tenant, 'phone-z');
    const credentialOf = (tickets: { id: string; credential?: string }[], id: string) => tickets.find((item) => item.id === id)!.credential!;
    const before = await download(t, phone, 'phone-z');
    // Berlin: Monday 08:00–12:00 CET is 07:00Z–11:00Z (the first window starts at nbf, 08:00Z).
    expect((payloadOf(credentialOf(before, scheduled.id)).win as number[][])[1]).toEqual([Date.UTC(2026, 2, 24, 7), Date.UTC(2026, 2, 24, 11)]);

    now += 10 * 60_000;
    expect((await zone('America/New_York')).statusCode).toBe(200);
    const after = await download(t, phone, 'phone-z');
    // New York (EDT since 8 March, -04:00): Tuesday 08:00–12:00 is 12:00Z–16:00Z.
    expect(credentialOf(after, scheduled.id)).not.toBe(credentialOf(before, scheduled.id));
    expect(payloadOf(credentialOf(after, scheduled.id)).win as number[][]).toContainEqual([Date.UTC(2026, 2, 24, 12), Date.UTC(2026, 2, 24, 16)]);
    // A ticket without a schedule has nothing in the lock's zone: its credential is handed out again unchanged.
    expect(credentialOf(after, plain.id)).toBe(credentialOf(before, plain.id));
  });
});
