// The proof that expandSchedule is docs/api-reference.md 9's rule: for random schedules, zones and ranges around the DST
// transitions of 2026, an instant lies in the expanded intervals exactly when wallClockInside (the reference's sentence,
// read directly) says the schedule is open. Seeded, so a failure repeats; fast-check shrinks it to a small case.
import { Temporal } from '@js-temporal/polyfill';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { expandSchedule } from '../../src/shared/schedule/expansion.js';
import { WEEKDAYS, type Schedule, type ScheduleInterval } from '../../src/shared/schedule/types.js';
import { wallClockInside } from '../../src/shared/schedule/wall-clock.js';

const SEED = 20260329;
const RUNS = 2500;
const DAY = 86_400_000;
const MINUTE = 60_000;

// The zones of the example tests and more with their own kind of transition: a 30-minute DST (Lord Howe), DST at
// midnight (Santiago, Havana), southern-hemisphere summers (Santiago, Sydney, Chatham at +12:45), a negative DST
// around Ramadan (Casablanca), half-hour zones with (St John's) and without DST (Kolkata), none at all (UTC, Tokyo).
const ZONES = [
  'Europe/Berlin',
  'America/New_York',
  'Australia/Lord_Howe',
  'America/Santiago',
  'Australia/Sydney',
  'UTC',
  'Europe/London',
  'America/Havana',
  'Africa/Casablanca',
  'America/St_Johns',
  'Pacific/Chatham',
  'Asia/Kolkata',
  'Asia/Tokyo',
] as const;

/** Each zone's 2026 transitions (from the library), New Year's Eve (the zone-years meet) and, for zones without any, two ordinary dates. */
const ANCHORS: Record<string, number[]> = Object.fromEntries(
  ZONES.map((zone) => {
    const found: number[] = [];
    let zoned = Temporal.Instant.fromEpochMilliseconds(Date.UTC(2026, 0, 1)).toZonedDateTimeISO(zone);
    for (;;) {
      const next = zoned.getTimeZoneTransition('next');
      if (!next || next.epochMilliseconds >= Date.UTC(2027, 0, 1)) break;
      found.push(next.epochMilliseconds);
      zoned = next;
    }
    return [zone, [...(found.length > 0 ? found : [Date.UTC(2026, 2, 29), Date.UTC(2026, 9, 25)]), Date.UTC(2026, 11, 31, 12)]];
  }),
);

const hhmm = (minutes: number): string => `${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`;

// Times cluster where transitions happen (around midnight to 03:00) and on quarter hours, so windows start and end in
// gaps and repeated hours often; the rest of the day is drawn too.
const time = fc.oneof(
  fc.record({ hour: fc.integer({ min: 0, max: 3 }), quarter: fc.integer({ min: 0, max: 3 }) }).map(({ hour, quarter }) => hour * 60 + quarter * 15),
  fc.record({ hour: fc.integer({ min: 21, max: 23 }), quarter: fc.integer({ min: 0, max: 3 }) }).map(({ hour, quarter }) => hour * 60 + quarter * 15),
  fc.integer({ min: 0, max: 24 * 60 - 1 }),
);

const window = fc
  .record({
    days: fc.subarray([...WEEKDAYS], { minLength: 1 }),
    from: time,
    // Equal (24 hours), after (same day) or before (across midnight) `from`, all three often.
    to: fc.oneof(time, fc.constant(-1)),
  })
  .map(({ days, from, to }) => ({ days, from: hhmm(from), to: hhmm(to === -1 ? from : to) }));

const scenario = fc
  .record({
    zone: fc.constantFrom(...ZONES),
    anchorIndex: fc.nat(),
    // The range starts up to 4 days before or after a transition and lasts up to 9 days. Mostly drawn evenly: the
    // default bias towards small and extreme values would make most ranges a few milliseconds long.
    startShift: fc.noBias(fc.integer({ min: -4 * DAY, max: 4 * DAY })),
    length: fc.oneof({ arbitrary: fc.noBias(fc.integer({ min: 1, max: 9 * DAY })), weight: 9 }, { arbitrary: fc.integer({ min: 1, max: 9 * DAY }), weight: 1 }),
    weekly: fc.array(window, { minLength: 1, maxLength: 4 }),
    exceptShifts: fc.uniqueArray(fc.integer({ min: -2, max: 10 }), { maxLength: 3 }),
    // Fractions of the range, in millionths, evenly drawn (biased draws would repeat the same few).
    probes: fc.array(fc.noBias(fc.integer({ min: 0, max: 999_999 })), { minLength: 12, maxLength: 12 }),
  })
  .map(({ zone, anchorIndex, startShift, length, weekly, exceptShifts, probes }) => {
    const anchors = ANCHORS[zone]!;
    const from = anchors[anchorIndex % anchors.length]! + startShift;
    // Excepted dates near the range, as the lock's calendar reads them, so they matter.
    const firstLocalDate = Temporal.Instant.fromEpochMilliseconds(from).toZonedDateTimeISO(zone).toPlainDate();
    const except = exceptShifts.map((shift) => firstLocalDate.add({ days: shift }).toString());
    const schedule: Schedule = { weekly, ...(except.length > 0 ? { except } : {}) };
    return { zone, schedule, from, to: from + length, probes };
  });

const holds = (intervals: ScheduleInterval[], instant: number): boolean => intervals.some(([start, end]) => start <= instant && instant < end);

describe('expandSchedule against the wall-clock rule', () => {
  it(`agrees with wallClockInside at random instants and at every interval edge ±1 ms (${RUNS} seeded cases)`, () => {
    let checked = 0;
    fc.assert(
      fc.property(scenario, ({ zone, schedule, from, to, probes }) => {
        const intervals = expandSchedule(schedule, zone, from, to);
        // The shape: within the range, non-empty, sorted, and neither touching nor overlapping (they were merged).
        intervals.forEach(([start, end], index) => {
          expect(start).toBeGreaterThanOrEqual(from);
          expect(end).toBeLessThanOrEqual(to);
          expect(start).toBeLessThan(end);
          if (index > 0) expect(start).toBeGreaterThan(intervals[index - 1]![1]);
        });
        const instants = new Set<number>([from, to - 1, ...probes.map((probe) => from + Math.floor((probe / 1_000_000) * (to - from)))]);
        for (const [start, end] of intervals) for (const edge of [start - 1, start, start + 1, end - 1, end, end + 1]) instants.add(edge);
        for (const instant of instants) {
          if (instant < from || instant >= to) continue;
          checked += 1;
          const expected = wallClockInside(schedule, zone, instant);
          if (holds(intervals, instant) !== expected) {
            throw new Error(`at ${new Date(instant).toISOString()} in ${zone}: intervals say ${!expected}, the wall clock ${expected}`);
          }
        }
      }),
      { seed: SEED, numRuns: RUNS },
    );
    expect(checked).toBeGreaterThan(RUNS * 18);
  });

  it('agrees every five minutes across the 2026 transition nights of every zone, for a schedule of night and gap windows', () => {
    const schedule: Schedule = {
      weekly: [
        { days: ['SA'], from: '22:00', to: '06:00' },
        { days: ['SU', 'MO', 'TU', 'WE', 'TH', 'FR'], from: '01:45', to: '02:40' },
        { days: ['SU'], from: '23:30', to: '00:15' },
        { days: ['SA', 'SU'], from: '00:00', to: '00:30' },
      ],
    };
    for (const zone of ZONES) {
      for (const anchor of ANCHORS[zone]!) {
        const from = anchor - DAY;
        const to = anchor + DAY;
        const intervals = expandSchedule(schedule, zone, from, to);
        for (let instant = from; instant < to; instant += 5 * MINUTE) {
          expect(holds(intervals, instant), `${zone} ${new Date(instant).toISOString()}`).toBe(wallClockInside(schedule, zone, instant));
        }
      }
    }
  });
});
