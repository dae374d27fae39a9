// Schedules attacked (docs/api-reference.md 9, 4.1, 5, 6.3): a credential signed while its lock's zone changes, the
// schedule each membership change copies, a zone change in another tenant, and absurd schedules and zone names at
// the routes: 4xx with field errors, never a 500, never a write.
import { Temporal } from '@js-temporal/polyfill';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDownloadService } from '../../src/services/download.service.js';
import { noMetrics } from '../../src/services/domain-metrics.js';
import { LockSimulator } from '../../src/simulator/lock-simulator.js';
import type { CredentialService } from '../../src/services/credential.service.js';
import { accessTenant, grant, join, lockGroup, permissionBody, resident, type AccessTenant } from '../helpers/access.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { download, lockTrust, payloadOf, phoneToken } from '../helpers/device.js';
import { call, device, expectProblem, HOUR, issueTicket, lock } from '../helpers/operator.js';

const DAY = 24 * HOUR;
/** Monday 2026-03-23, 09:00Z: Berlin is on CET (+01:00), New York on EDT (-04:00). */
const MONDAY = Date.UTC(2026, 2, 23, 9);
const WEEKDAYS_8_TO_12 = { weekly: [{ days: ['MO', 'TU', 'WE', 'TH', 'FR'], from: '08:00', to: '12:00' }] };
const NIGHTS = { weekly: [{ days: ['SA', 'SU'], from: '22:00', to: '06:00' }] };
/** Tuesday 08:00–12:00 in each zone, as UTC. */
const TUESDAY_IN = {
  'Europe/Berlin': [Date.UTC(2026, 2, 24, 7), Date.UTC(2026, 2, 24, 11)],
  'America/New_York': [Date.UTC(2026, 2, 24, 12), Date.UTC(2026, 2, 24, 16)],
};

describe('schedules attacked', () => {
  let t: TestApp;
  let now = MONDAY;
  let a: AccessTenant;
  let b: AccessTenant;

  const setZone = (fixture: AccessTenant, id: string, timeZone: unknown) =>
    call(t, fixture.operator, { method: 'PATCH', url: `/operatorapi/securedobjects/${id}`, payload: { timeZone } });
  const scheduledTicket = async (fixture: AccessTenant, securedObjectId: string, mobileDeviceId: string, schedule: object = WEEKDAYS_8_TO_12) => {
    const issued = await issueTicket(t, fixture.operator, {
      securedObjectId,
      mobileDeviceId,
      beginDate: now - HOUR,
      endDate: now + 30 * DAY,
      commands: ['open'],
      channels: ['btlespp'],
      schedule,
    });
    expect(issued.statusCode, issued.body).toBe(201);
    return issued.json() as { id: string };
  };
  /** Whether the ticket's stored credential is handed out again as it is (a zone change marks it to sign anew). */
  const storedCredentialOf = async (fixture: AccessTenant, ticketId: string) =>
    (
      await t.database.db.query<{ stored: boolean }>('SELECT credential_kid IS NOT NULL AS stored FROM tickets WHERE tenant_id = $1 AND id = $2', [
        fixture.tenant.tenantId,
        ticketId,
      ])
    ).rows[0]!.stored;
  const winOf = (tickets: { id: string; credential?: string }[], id: string) => payloadOf(tickets.find((item) => item.id === id)!.credential!).win as number[][];

  /**
   * A download overtaken by a PATCH of the lock's zone: the PATCH commits after the download read the tickets (with
   * their zone and any stored credential) and before it signs, stores and answers them.
   */
  const racingDownload = async (fixture: AccessTenant, mobileDeviceId: string, patch: () => Promise<unknown>) => {
    const { credentials } = t.app.services;
    let raced = false;
    const overtaken: CredentialService = {
      ...credentials,
      // Read after the tickets and before any credential is signed or reused.
      async keySet(tenantId) {
        const keys = await credentials.keySet(tenantId);
        if (!raced) {
          raced = true;
          await patch();
        }
        return keys;
      },
    };
    const downloads = createDownloadService({ db: t.database.db, clock: () => now, credentials: overtaken, metrics: noMetrics });
    const page = await downloads.download({ tenantId: fixture.tenant.tenantId, actor: 'client:racing', requestId: null }, { clientId: 'racing', mobileDeviceId }, mobileDeviceId, 50);
    expect(raced).toBe(true);
    return page.items;
  };

  beforeAll(async () => {
    t = await buildTestApp({}, { clock: () => now });
    a = await accessTenant(t, 'schedules-a');
    b = await accessTenant(t, 'schedules-b');
    for (const fixture of [a, b]) {
      for (const id of ['front-door', 'side-door', 'race-door']) await lock(t, fixture.operator, id);
      for (const id of ['phone-a', 'phone-b', 'phone-r']) await device(t, fixture.operator, id);
    }
  });
  afterAll(async () => {
    await t.close();
  });

  it('never hands out or keeps a credential signed in the old zone when a PATCH of the zone overtakes the download', async () => {
    now = MONDAY;
    expect((await setZone(a, 'race-door', 'Europe/Berlin')).statusCode).toBe(200);
    const first = await scheduledTicket(a, 'race-door', 'phone-r');
    // The first download signs in Berlin; New York is committed before the download stores it.
    const raced = await racingDownload(a, 'phone-r', async () => expect((await setZone(a, 'race-door', 'America/New_York')).statusCode).toBe(200));
    expect(winOf(raced, first.id)).toContainEqual(TUESDAY_IN['America/New_York']);
    expect(winOf(raced, first.id)).not.toContainEqual(TUESDAY_IN['Europe/Berlin']);
    // The next download hands out what is stored: New York's windows too.
    const next = await download(t, await phoneToken(t, a.tenant, 'phone-r'), 'phone-r');
    expect(winOf(next, first.id)).toContainEqual(TUESDAY_IN['America/New_York']);

    // A stored credential (New York) read with the tickets, then the zone goes back to Berlin before the answer.
    now += 10 * 60_000;
    const reused = await racingDownload(a, 'phone-r', async () => expect((await setZone(a, 'race-door', 'Europe/Berlin')).statusCode).toBe(200));
    expect(winOf(reused, first.id)).toContainEqual(TUESDAY_IN['Europe/Berlin']);
    expect(winOf((await download(t, await phoneToken(t, a.tenant, 'phone-r'), 'phone-r')), first.id)).toContainEqual(TUESDAY_IN['Europe/Berlin']);
  });

  it("a credential a phone holds when its lock's zone changes keeps its old windows at most one credential lifetime", async () => {
    now = MONDAY;
    expect((await setZone(b, 'front-door', 'Europe/Berlin')).statusCode).toBe(200);
    const held = await scheduledTicket(b, 'front-door', 'phone-a');
    const phone = await phoneToken(t, b.tenant, 'phone-a');
    const credential = (await download(t, phone, 'phone-a')).find((item) => item.id === held.id)!.credential!;
    expect((await setZone(b, 'front-door', 'America/New_York')).statusCode).toBe(200);

    // The lock decides offline on what the phone holds: Tuesday 08:30 Berlin still opens, 08:30 New York does not.
    const door = new LockSimulator(await lockTrust(t, b.tenant, 'front-door'));
    expect(await door.decide(credential, 'open', Date.UTC(2026, 2, 24, 7, 30))).toMatchObject({ decision: 'open' });
    expect(await door.decide(credential, 'open', Date.UTC(2026, 2, 24, 12, 30))).toMatchObject({ decision: 'deny', reason: 'outside-schedule' });
    // The bound: the credential lives at most CREDENTIAL_MAX_LIFETIME (docs/api-reference.md 8.2), and no window outlives it.
    const { iat, exp, win } = payloadOf(credential) as { iat: number; exp: number; win: number[][] };
    expect(exp - iat).toBeLessThanOrEqual(t.config.CREDENTIAL_MAX_LIFETIME);
    expect(Math.max(...win.map(([, end]) => end!))).toBeLessThanOrEqual(exp * 1000);
    expect(await door.decide(credential, 'open', exp * 1000)).toMatchObject({ decision: 'deny', reason: 'expired' });
    // The phone's next download already carries New York's windows.
    expect(winOf(await download(t, phone, 'phone-a'), held.id)).toContainEqual(TUESDAY_IN['America/New_York']);
  });

  it('explain judges the credential the phone still holds after a zone change, not "no credential", until the next download replaces it', async () => {
    now = MONDAY;
    await lock(t, a.operator, 'explain-door');
    expect((await setZone(a, 'explain-door', 'Europe/Berlin')).statusCode).toBe(200);
    const held = await scheduledTicket(a, 'explain-door', 'phone-a');
    const phone = await phoneToken(t, a.tenant, 'phone-a');
    await download(t, phone, 'phone-a');
    expect((await setZone(a, 'explain-door', 'America/New_York')).statusCode).toBe(200);
    const explain = async (at: number) => {
      const response = await call(t, a.operator, {
        method: 'GET',
        url: `/operatorapi/access-checks?mobileDeviceId=phone-a&securedObjectId=explain-door&at=${at}&command=open&channel=btlespp`,
      });
      expect(response.statusCode, response.body).toBe(200);
      return response.json() as { decision: string; reasons: { code: string; nextWindowStart?: number }[] };
    };
    // Tuesday 07:30Z is 08:30 in Berlin: the credential the phone holds opens the door, as the lock would.
    expect(await explain(Date.UTC(2026, 2, 24, 7, 30))).toMatchObject({ decision: 'allow' });
    // The next download hands out New York's windows, and the explain follows.
    expect(winOf(await download(t, phone, 'phone-a'), held.id)).toContainEqual(TUESDAY_IN['America/New_York']);
    expect(await explain(Date.UTC(2026, 2, 24, 7, 30))).toMatchObject({
      decision: 'deny',
      reasons: [{ code: 'outside-schedule', nextWindowStart: TUESDAY_IN['America/New_York'][0] }],
    });
  });

  it("a zone change re-signs only its own tenant's credentials: another tenant's lock with the same id keeps its stored one", async () => {
    now = MONDAY;
    const ours = await scheduledTicket(a, 'side-door', 'phone-b');
    const theirs = await scheduledTicket(b, 'side-door', 'phone-b');
    const before = await download(t, await phoneToken(t, b.tenant, 'phone-b'), 'phone-b');
    await download(t, await phoneToken(t, a.tenant, 'phone-b'), 'phone-b');
    expect(await storedCredentialOf(a, ours.id)).toBe(true);

    expect((await setZone(a, 'side-door', 'America/New_York')).statusCode).toBe(200);
    expect(await storedCredentialOf(a, ours.id)).toBe(false);
    expect(await storedCredentialOf(b, theirs.id)).toBe(true);
    const after = await download(t, await phoneToken(t, b.tenant, 'phone-b'), 'phone-b');
    const credentialOf = (tickets: { id: string; credential?: string }[]) => tickets.find((item) => item.id === theirs.id)!.credential;
    expect(credentialOf(after)).toBe(credentialOf(before));
    expect(winOf(after, theirs.id)[1]).toEqual([Date.UTC(2026, 2, 24, 8), Date.UTC(2026, 2, 24, 12)]); // still UTC
  });

  it("copies each permission's own schedule when a device joins a resident or a lock joins a group that two permissions share", async () => {
    now = MONDAY;
    const who = await resident(t, a.token, 'Shared', ['phone-a']);
    const where = await lockGroup(t, a.token, 'Shared', ['front-door']);
    const days = (await grant(t, a.token, { ...permissionBody(t, who.id, where.id, { endDate: now + 30 * DAY }), schedule: WEEKDAYS_8_TO_12 })).json();
    const nights = (await grant(t, a.token, { ...permissionBody(t, who.id, where.id, { endDate: now + 30 * DAY }), schedule: NIGHTS })).json();
    const always = (await grant(t, a.token, permissionBody(t, who.id, where.id, { endDate: now + 30 * DAY }))).json();
    await join(t, a.token, 'residents', who.id, 'phone-b');
    await join(t, a.token, 'lock-groups', where.id, 'side-door');
    const { rows } = await t.database.db.query<{ access_permission_id: string; mobile_device_id: string; secured_object_id: string; schedule: unknown }>(
      `SELECT access_permission_id, mobile_device_id, secured_object_id, schedule FROM tickets
        WHERE tenant_id = $1 AND access_permission_id = ANY ($2::uuid[]) AND revoked_at IS NULL`,
      [a.tenant.tenantId, [days.id, nights.id, always.id]],
    );
    // Two devices × two locks for each permission, each ticket with its own permission's schedule (or none).
    expect(rows).toHaveLength(12);
    const expected = new Map<string, unknown>([
      [days.id, WEEKDAYS_8_TO_12],
      [nights.id, NIGHTS],
      [always.id, null],
    ]);
    for (const row of rows) expect(row.schedule, `${row.mobile_device_id}|${row.secured_object_id}`).toEqual(expected.get(row.access_permission_id));
    // Tenant B has locks and devices with the same ids and got nothing.
    const { rows: other } = await t.database.db.query('SELECT 1 FROM tickets WHERE tenant_id = $1 AND access_permission_id IS NOT NULL', [b.tenant.tenantId]);
    expect(other).toHaveLength(0);
  });

  it("a scheduled grant over locks in many zones signs and expands nothing per ticket; each download reads the schedule in its own lock's zone", async () => {
    now = MONDAY;
    const zones = ['Pacific/Kiritimati', 'Asia/Kathmandu', 'Australia/Lord_Howe', 'America/St_Johns', 'Pacific/Pago_Pago', 'Europe/Berlin', 'UTC', 'Asia/Tehran'];
    const locks = zones.map((_, index) => `zoned-${index}`);
    for (const id of locks) await lock(t, a.operator, id);
    for (const [index, zone] of zones.entries()) expect((await setZone(a, locks[index]!, zone)).statusCode).toBe(200);
    const who = await resident(t, a.token, 'Zoned', ['phone-r']);
    const where = await lockGroup(t, a.token, 'Zoned', locks);
    const granted = await grant(t, a.token, { ...permissionBody(t, who.id, where.id, { endDate: now + 30 * DAY }), schedule: WEEKDAYS_8_TO_12 });
    expect(granted.statusCode, granted.body).toBe(201);
    expect(granted.json().tokenCount).toBe(zones.length);
    // Nothing is signed at grant time (the credentials are signed on download): no per-ticket work but the copy.
    const { rows } = await t.database.db.query<{ signed: number }>(
      'SELECT count(*) FILTER (WHERE credential_encrypted IS NOT NULL)::int AS signed FROM tickets WHERE tenant_id = $1 AND access_permission_id = $2',
      [a.tenant.tenantId, granted.json().id],
    );
    expect(rows[0]!.signed).toBe(0);
    const downloaded = (await download(t, await phoneToken(t, a.tenant, 'phone-r'), 'phone-r')).filter((item) => locks.includes(item.securedObjectId));
    expect(downloaded).toHaveLength(zones.length);
    for (const item of downloaded) {
      const zone = zones[locks.indexOf(item.securedObjectId)]!;
      // Tuesday 24 March 08:00 on that lock's wall clock, whatever the zone's offset (Kathmandu +05:45, St John's -02:30).
      const opens = (payloadOf(item.credential!).win as number[][]).map(([start]) => start);
      const tuesday = Temporal.PlainDateTime.from('2026-03-24T08:00').toZonedDateTime(zone).epochMilliseconds;
      expect(opens, zone).toContain(tuesday);
    }
  });

  it('answers absurd schedules with a 400 or a 422 naming the fields, never a 500, and writes nothing', async () => {
    now = MONDAY;
    const countTickets = async () =>
      (await t.database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM tickets WHERE tenant_id = $1', [a.tenant.tenantId])).rows[0]!.n;
    const before = await countTickets();
    const base = { securedObjectId: 'front-door', mobileDeviceId: 'phone-a', beginDate: now, endDate: now + DAY, commands: ['open'], channels: ['btlespp'] };
    const window = (from: string, to: string, days = ['MO']) => ({ days, from, to });
    const schemaErrors: unknown[] = [
      null, // no schedule is "no member", never null: a null must not pass for "always"
      'always',
      { weekly: Array.from({ length: 29 }, () => window('08:00', '09:00')) },
      { weekly: [window('08:00', '09:00', ['MO', 'TU', 'WE', 'TH', 'FR', 'SA', 'SU', 'MO'])] },
      { weekly: [{ ...window('08:00', '09:00'), zone: 'UTC' }] },
      { weekly: [window('08:00', '09:00')], timeZone: 'UTC' },
      { weekly: [window('x'.repeat(10_000), '09:00')] },
      { weekly: [window('08:00', '09:00')], except: Array.from({ length: 367 }, () => '2026-01-01') },
    ];
    for (const schedule of schemaErrors) {
      const response = await issueTicket(t, a.operator, { ...base, schedule });
      expect(response.statusCode, JSON.stringify(schedule).slice(0, 80)).toBe(400);
    }
    const domainErrors: [unknown, string][] = [
      [{ weekly: [window('08:00', '09:00', ['MO', 'MO'])] }, 'schedule.weekly[0].days[1]'],
      [{ weekly: [window('08:00', '09:00', [])] }, 'schedule.weekly[0].days'],
      [{ weekly: [window('08:00', '09:00', ['mo'])] }, 'schedule.weekly[0].days[0]'],
      [{ weekly: [window('08:00:00', '09:00')] }, 'schedule.weekly[0].from'],
      [{ weekly: [window('08:00', '25:00')] }, 'schedule.weekly[0].to'],
      [{ weekly: [window('08:00', '24:00')] }, 'schedule.weekly[0].to'],
      [{ weekly: [window('8:00', '09:00')] }, 'schedule.weekly[0].from'],
      [{ weekly: [window('08:00', '09:00')], except: ['2026-02-29'] }, 'schedule.except[0]'],
      [{ weekly: [window('08:00', '09:00')], except: ['../../etc/passwd'] }, 'schedule.except[0]'],
    ];
    for (const [schedule, field] of domainErrors) {
      const problem = expectProblem(await issueTicket(t, a.operator, { ...base, schedule }), 422);
      expect(problem.errors!.map((error) => error.field), JSON.stringify(schedule)).toContain(field);
    }
    // `from` equal to `to` is a 24-hour window, and the same window listed twice is harmless: both are taken.
    const allDay = await issueTicket(t, a.operator, { ...base, schedule: { weekly: [window('08:00', '08:00', ['MO']), window('08:00', '08:00', ['MO'])] } });
    expect(allDay.statusCode, allDay.body).toBe(201);
    expect(await countTickets()).toBe(before + 1);
  });

  it('takes IANA names in any spelling and links, refuses paths, offsets and long strings (422 or 400), and keeps the zone on refusal', async () => {
    now = MONDAY;
    expect((await setZone(a, 'front-door', 'Europe/Berlin')).statusCode).toBe(200);
    const accepted: [string, string][] = [
      ['utc', 'UTC'],
      ['Etc/GMT+5', 'Etc/GMT+5'],
      ['europe/berlin', 'Europe/Berlin'],
      ['US/Eastern', 'US/Eastern'],
    ];
    for (const [sent, stored] of accepted) {
      const response = await setZone(a, 'front-door', sent);
      expect(response.statusCode, sent).toBe(200);
      expect(response.json().timeZone).toBe(stored);
    }
    // Etc/GMT+5 is five hours west of Greenwich (POSIX signs): Tuesday 08:00 there is 13:00Z.
    expect((await setZone(a, 'front-door', 'Etc/GMT+5')).statusCode).toBe(200);
    const preview = await call(t, a.operator, {
      method: 'POST',
      url: '/operatorapi/schedules/preview',
      payload: { timeZone: 'Etc/GMT+5', schedule: WEEKDAYS_8_TO_12, from: Date.UTC(2026, 2, 24), to: Date.UTC(2026, 2, 25) },
    });
    expect(preview.json().intervals[0]).toMatchObject({ start: Date.UTC(2026, 2, 24, 13), startOffset: '-05:00' });

    for (const sent of ['../../etc/passwd', 'Europe/Berlin ', '+02:00', 'Z', 'Factory', '', 'Europe/../Berlin', 'x'.repeat(64)]) {
      const response = await setZone(a, 'front-door', sent);
      expect([400, 422], sent).toContain(response.statusCode);
      if (response.statusCode === 422) expect(expectProblem(response, 422).errors!.map((error) => error.field)).toEqual(['timeZone']);
    }
    for (const sent of ['x'.repeat(65), 'x'.repeat(100_000), 5, null, ['UTC']]) {
      expect((await setZone(a, 'front-door', sent)).statusCode, String(sent).slice(0, 20)).toBe(400);
    }
    const zone = await t.database.db.query<{ time_zone: string }>('SELECT time_zone FROM secured_objects WHERE tenant_id = $1 AND id = $2', [a.tenant.tenantId, 'front-door']);
    expect(zone.rows[0]!.time_zone).toBe('Etc/GMT+5');
  });
});
