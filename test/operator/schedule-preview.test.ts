// POST /operatorapi/schedules/preview (docs/api-reference.md 9): a schedule's UTC intervals on a lock's wall clock, DST nights included.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_EXPANSION_DAYS, MAX_INSTANT } from '../../src/shared/schedule/types.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { expectNothingChanged } from '../helpers/database-state.js';
import { clientToken, createClient, createTenant, type TenantFixture } from '../helpers/oauth.js';
import { HOUR, call, expectAuthChecks, problemFields } from '../helpers/operator.js';

const DAY = 24 * HOUR;
const at = (iso: string) => Date.parse(iso);

describe('schedule preview', () => {
  let t: TestApp;
  let acme: TenantFixture;
  let reader: string;

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4' });
    acme = await createTenant(t.app, 'acme');
    // tokens:read only: the scope the preview declares.
    reader = await clientToken(t.app, await createClient(t.app, acme, ['tokens:read']));
  });
  afterAll(async () => {
    await t.close();
  });

  const preview = (payload: object, token: string | null = reader) => call(t, token, { method: 'POST', url: '/operatorapi/schedules/preview', payload });

  async function intervals(payload: object) {
    const response = await preview(payload);
    expect(response.statusCode, response.body).toBe(200);
    return response.json().intervals as { start: number; end: number; localStart: string; localEnd: string; startOffset: string; endOffset: string }[];
  }

  const sundayNight = { weekly: [{ days: ['SU'], from: '01:00', to: '04:00' }] };

  it('shows the Berlin spring-forward night: a window 01:00–04:00 lasts two hours, +01:00 → +02:00', async () => {
    const result = await intervals({ timeZone: 'Europe/Berlin', schedule: sundayNight, from: at('2026-03-28T00:00:00Z'), to: at('2026-03-30T00:00:00Z') });
    expect(result).toStrictEqual([
      {
        start: at('2026-03-29T00:00:00Z'),
        end: at('2026-03-29T02:00:00Z'),
        localStart: '2026-03-29T01:00:00',
        localEnd: '2026-03-29T04:00:00',
        startOffset: '+01:00',
        endOffset: '+02:00',
      },
    ]);
    expect(result[0]!.end - result[0]!.start).toBe(2 * HOUR);
  });

  it('shows a window inside the skipped hour as never opening', async () => {
    const gap = { weekly: [{ days: ['SU'], from: '02:15', to: '02:45' }] };
    expect(await intervals({ timeZone: 'Europe/Berlin', schedule: gap, from: at('2026-03-28T00:00:00Z'), to: at('2026-03-30T00:00:00Z') })).toEqual([]);
    // The week before, the same window opens for its half hour.
    expect(await intervals({ timeZone: 'Europe/Berlin', schedule: gap, from: at('2026-03-21T00:00:00Z'), to: at('2026-03-23T00:00:00Z') })).toEqual([
      expect.objectContaining({ start: at('2026-03-22T01:15:00Z'), end: at('2026-03-22T01:45:00Z'), startOffset: '+01:00', endOffset: '+01:00' }),
    ]);
  });

  it('shows the Berlin fall-back night: the same window lasts four hours, +02:00 → +01:00', async () => {
    const result = await intervals({ timeZone: 'Europe/Berlin', schedule: sundayNight, from: at('2026-10-24T00:00:00Z'), to: at('2026-10-26T00:00:00Z') });
    expect(result).toStrictEqual([
      {
        start: at('2026-10-24T23:00:00Z'),
        end: at('2026-10-25T03:00:00Z'),
        localStart: '2026-10-25T01:00:00',
        localEnd: '2026-10-25T04:00:00',
        startOffset: '+02:00',
        endOffset: '+01:00',
      },
    ]);
    expect(result[0]!.end - result[0]!.start).toBe(4 * HOUR);
  });

  it('reads the zone in any spelling the IANA database knows, and UTC as +00:00', async () => {
    const lower = await intervals({ timeZone: 'europe/berlin', schedule: sundayNight, from: at('2026-03-28T00:00:00Z'), to: at('2026-03-30T00:00:00Z') });
    expect(lower[0]).toMatchObject({ start: at('2026-03-29T00:00:00Z'), startOffset: '+01:00' });
    const utc = await intervals({ timeZone: 'UTC', schedule: sundayNight, from: at('2026-03-28T00:00:00Z'), to: at('2026-03-30T00:00:00Z') });
    expect(utc).toStrictEqual([
      {
        start: at('2026-03-29T01:00:00Z'),
        end: at('2026-03-29T04:00:00Z'),
        localStart: '2026-03-29T01:00:00',
        localEnd: '2026-03-29T04:00:00',
        startOffset: '+00:00',
        endOffset: '+00:00',
      },
    ]);
  });

  const fridayNight = { weekly: [{ days: ['FR'], from: '22:00', to: '06:00' }] };
  const week = { from: at('2026-01-05T00:00:00Z'), to: at('2026-01-12T00:00:00Z') };

  it('shows a window across midnight as one interval into the next day, clipped to the range', async () => {
    const friday = {
      start: at('2026-01-09T21:00:00Z'),
      end: at('2026-01-10T05:00:00Z'),
      localStart: '2026-01-09T22:00:00',
      localEnd: '2026-01-10T06:00:00',
      startOffset: '+01:00',
      endOffset: '+01:00',
    };
    expect(await intervals({ timeZone: 'Europe/Berlin', schedule: fridayNight, ...week })).toStrictEqual([friday]);
    // A range that starts after midnight shows the rest of Friday's window.
    expect(
      await intervals({ timeZone: 'Europe/Berlin', schedule: fridayNight, from: at('2026-01-09T23:00:00Z'), to: at('2026-01-10T12:00:00Z') }),
    ).toStrictEqual([{ ...friday, start: at('2026-01-09T23:00:00Z'), localStart: '2026-01-10T00:00:00' }]);
  });

  it('leaves out excepted dates; a window belongs to the day it starts', async () => {
    const workdays = { weekly: [{ days: ['MO', 'TU', 'WE', 'TH', 'FR'], from: '09:00', to: '17:00' }], except: ['2026-12-24', '2026-12-25'] };
    const result = await intervals({ timeZone: 'UTC', schedule: workdays, from: at('2026-12-21T00:00:00Z'), to: at('2026-12-28T00:00:00Z') });
    expect(result.map((interval) => interval.localStart)).toEqual(['2026-12-21T09:00:00', '2026-12-22T09:00:00', '2026-12-23T09:00:00']);
    expect(result.every((interval) => interval.end - interval.start === 8 * HOUR)).toBe(true);

    // Friday excepted: its window does not open, not even after midnight. Saturday excepted: Friday's window still runs into it.
    expect(await intervals({ timeZone: 'Europe/Berlin', schedule: { ...fridayNight, except: ['2026-01-09'] }, ...week })).toEqual([]);
    expect(await intervals({ timeZone: 'Europe/Berlin', schedule: { ...fridayNight, except: ['2026-01-10'] }, ...week })).toEqual([
      expect.objectContaining({ localStart: '2026-01-09T22:00:00', localEnd: '2026-01-10T06:00:00' }),
    ]);
  });

  it(`answers a ${MAX_EXPANSION_DAYS}-day range of the most windows a schedule may have`, async () => {
    const slots = ['00:00', '02:00', '04:00', '06:00'];
    const weekly = ['MO', 'TU', 'WE', 'TH', 'FR', 'SA', 'SU'].flatMap((day) => slots.map((from) => ({ days: [day], from, to: `${from.slice(0, 1)}${Number(from[1]) + 1}:00` })));
    expect(weekly).toHaveLength(28);
    const from = at('2026-01-01T00:00:00Z');
    const result = await intervals({ timeZone: 'Europe/Berlin', schedule: { weekly }, from, to: from + MAX_EXPANSION_DAYS * DAY });
    expect(result.length).toBeGreaterThan(4 * (MAX_EXPANSION_DAYS - 1));
    expect(result.every((interval, index) => index === 0 || interval.start > result[index - 1]!.end)).toBe(true);
  });

  it('answers 422 naming every bad field of the schedule, the zone and the range, and changes nothing', async () => {
    const range = { from: at('2026-03-28T00:00:00Z'), to: at('2026-03-30T00:00:00Z') };
    await expectNothingChanged(t, async () => {
      expect(problemFields(await preview({ timeZone: 'UTC', schedule: { weekly: [] }, ...range }), 422)).toEqual(['schedule.weekly']);
      const badValues = await preview({
        timeZone: 'UTC',
        schedule: { weekly: [{ days: ['XX'], from: '25:00', to: '07:00' }], except: ['2026-02-30'] },
        ...range,
      });
      expect(problemFields(badValues, 422)).toEqual(['schedule.except[0]', 'schedule.weekly[0].days[0]', 'schedule.weekly[0].from']);
      for (const timeZone of ['Mars/Olympus_Mons', '+02:00', 'UTC+2']) {
        const response = await preview({ timeZone, schedule: sundayNight, ...range });
        expect(problemFields(response, 422), timeZone).toEqual(['timeZone']);
        expect(response.json().errors[0].message).toContain('Europe/Berlin');
      }
      expect(problemFields(await preview({ timeZone: 'UTC', schedule: sundayNight, from: range.from, to: range.from }), 422)).toEqual(['to']);
      expect(problemFields(await preview({ timeZone: 'UTC', schedule: sundayNight, from: range.to, to: range.from }), 422)).toEqual(['to']);
      const tooLong = await preview({ timeZone: 'UTC', schedule: sundayNight, from: range.from, to: range.from + MAX_EXPANSION_DAYS * DAY + 1 });
      expect(problemFields(tooLong, 422)).toEqual(['to']);
      expect(tooLong.json().errors[0].message).toContain(`${MAX_EXPANSION_DAYS} days`);
      // The whole range of instants: a 422, never the module's RangeError as a 500.
      expect(problemFields(await preview({ timeZone: 'Europe/Berlin', schedule: sundayNight, from: 0, to: MAX_INSTANT }), 422)).toEqual(['to']);
      // Every reason at once.
      const all = await preview({ timeZone: 'Nowhere/City', schedule: { weekly: [] }, from: range.to, to: range.from });
      expect(problemFields(all, 422)).toEqual(['schedule.weekly', 'timeZone', 'to']);
      expect(all.json().detail).toMatch(/^The schedule cannot be previewed: /);
    });
  });

  it('answers 400 for a malformed request', async () => {
    const good = { timeZone: 'UTC', schedule: sundayNight, from: at('2026-03-28T00:00:00Z'), to: at('2026-03-30T00:00:00Z') };
    await expectNothingChanged(t, async () => {
      expect(problemFields(await preview({ ...good, extra: 1 }), 400)).toContain('extra');
      expect(problemFields(await preview({ ...good, schedule: { weekly: [{ days: ['SU'], from: '01:00', to: '02:00', at: 'x' }] } }), 400)).toContain(
        'schedule.weekly[0].at',
      );
      const { schedule: _omitted, ...withoutSchedule } = good;
      expect(problemFields(await preview(withoutSchedule), 400)).toContain('schedule');
      expect(problemFields(await preview({ ...good, from: -1 }), 400)).toEqual(['from']);
      expect(problemFields(await preview({ ...good, from: 1.5 }), 400)).toEqual(['from']);
      expect(problemFields(await preview({ ...good, to: MAX_INSTANT + 1 }), 400)).toEqual(['to']);
      expect(problemFields(await preview({ ...good, timeZone: '' }), 400)).toEqual(['timeZone']);
    });
  });

  it('needs a token (401) and tokens:read (403)', async () => {
    const devicesOnly = await clientToken(t.app, await createClient(t.app, acme, ['devices:read', 'devices:write']));
    await expectAuthChecks(t, devicesOnly, [
      {
        method: 'POST',
        url: '/operatorapi/schedules/preview',
        payload: { timeZone: 'UTC', schedule: sundayNight, from: 0, to: DAY },
        scope: 'tokens:read',
      },
    ]);
  });
});
