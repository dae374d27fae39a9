// Schedules expanded into UTC intervals (src/shared/schedule/expansion.ts, docs/api-reference.md 9) on fixed DST nights of
// 2026: the intervals, to the minute, against wall-clock times worked out by hand; the shape of the answer; excepted dates.
import { Temporal } from '@js-temporal/polyfill';
import { describe, expect, it } from 'vitest';
import { expandSchedule } from '../../../../src/shared/schedule/expansion.js';
import type { Schedule } from '../../../../src/shared/schedule/types.js';
import { wallClockInside } from '../../../../src/shared/schedule/wall-clock.js';
import { DAY, HOUR, at, weekly } from './fixtures.js';

/** The schedule's intervals over [from, to) as ISO pairs, easier to read in a failing test than milliseconds. */
const expand = (schedule: Schedule, zone: string, from: string, to: string): [string, string][] =>
  expandSchedule(schedule, zone, at(from), at(to)).map(([start, end]) => [new Date(start).toISOString(), new Date(end).toISOString()]);

/** The zone's offset changes within 2026, from the IANA data through Temporal itself. */
const transitions2026 = (zone: string): string[] => {
  const found: string[] = [];
  let zoned = Temporal.Instant.fromEpochMilliseconds(at('2026-01-01T00:00:00Z')).toZonedDateTimeISO(zone);
  for (;;) {
    const next = zoned.getTimeZoneTransition('next');
    if (!next || next.epochMilliseconds >= at('2027-01-01T00:00:00Z')) return found;
    found.push(next.toString());
    zoned = next;
  }
};

describe('Europe/Berlin, spring forward on Sunday 2026-03-29 (02:00 CET becomes 03:00 CEST at 01:00Z)', () => {
  const zone = 'Europe/Berlin';
  it('sees the transition where the tests assume it', () => {
    expect(transitions2026(zone)).toEqual(['2026-03-29T03:00:00+02:00[Europe/Berlin]', '2026-10-25T02:00:00+01:00[Europe/Berlin]']);
  });

  it('a window 01:00-04:00 lasts two hours that night, three the Sunday before', () => {
    const schedule = weekly(['SU'], '01:00', '04:00');
    expect(expand(schedule, zone, '2026-03-21T00:00:00Z', '2026-03-31T00:00:00Z')).toEqual([
      ['2026-03-22T00:00:00.000Z', '2026-03-22T03:00:00.000Z'],
      ['2026-03-29T00:00:00.000Z', '2026-03-29T02:00:00.000Z'],
    ]);
  });

  it('a window 02:15-02:45 lies in the gap: no wall clock shows those times, so it never opens', () => {
    expect(expand(weekly(['SU'], '02:15', '02:45'), zone, '2026-03-28T00:00:00Z', '2026-03-30T00:00:00Z')).toEqual([]);
  });

  it('a window starting in the gap opens at the transition, the first instant whose wall clock is past its start', () => {
    expect(expand(weekly(['SU'], '02:30', '03:30'), zone, '2026-03-28T00:00:00Z', '2026-03-30T00:00:00Z')).toEqual([
      ['2026-03-29T01:00:00.000Z', '2026-03-29T01:30:00.000Z'],
    ]);
  });

  it('a window ending in the gap closes at the transition', () => {
    expect(expand(weekly(['SU'], '01:30', '02:30'), zone, '2026-03-28T00:00:00Z', '2026-03-30T00:00:00Z')).toEqual([
      ['2026-03-29T00:30:00.000Z', '2026-03-29T01:00:00.000Z'],
    ]);
  });

  it('a window 22:00-06:00 starting the Saturday runs seven hours across the night', () => {
    expect(expand(weekly(['SA'], '22:00', '06:00'), zone, '2026-03-27T00:00:00Z', '2026-03-31T00:00:00Z')).toEqual([
      ['2026-03-28T21:00:00.000Z', '2026-03-29T04:00:00.000Z'],
    ]);
  });
});

describe('Europe/Berlin, fall back on Sunday 2026-10-25 (03:00 CEST becomes 02:00 CET at 01:00Z)', () => {
  const zone = 'Europe/Berlin';
  it('a window 01:00-04:00 lasts four hours: the repeated hour counts twice', () => {
    expect(expand(weekly(['SU'], '01:00', '04:00'), zone, '2026-10-24T00:00:00Z', '2026-10-26T00:00:00Z')).toEqual([
      ['2026-10-24T23:00:00.000Z', '2026-10-25T03:00:00.000Z'],
    ]);
  });

  it('a window 02:15-02:45 inside the repeated hour opens on both passes: two intervals', () => {
    expect(expand(weekly(['SU'], '02:15', '02:45'), zone, '2026-10-24T00:00:00Z', '2026-10-26T00:00:00Z')).toEqual([
      ['2026-10-25T00:15:00.000Z', '2026-10-25T00:45:00.000Z'],
      ['2026-10-25T01:15:00.000Z', '2026-10-25T01:45:00.000Z'],
    ]);
  });

  it('a window 02:00-03:00 is the whole repeated hour twice, in one piece', () => {
    expect(expand(weekly(['SU'], '02:00', '03:00'), zone, '2026-10-24T00:00:00Z', '2026-10-26T00:00:00Z')).toEqual([
      ['2026-10-25T00:00:00.000Z', '2026-10-25T02:00:00.000Z'],
    ]);
  });

  it('a window 22:00-06:00 starting the Saturday runs nine hours across the night', () => {
    expect(expand(weekly(['SA'], '22:00', '06:00'), zone, '2026-10-23T00:00:00Z', '2026-10-27T00:00:00Z')).toEqual([
      ['2026-10-24T20:00:00.000Z', '2026-10-25T05:00:00.000Z'],
    ]);
  });
});

describe('America/New_York (2026-03-08 and 2026-11-01)', () => {
  const zone = 'America/New_York';
  it('sees the transitions where the tests assume them', () => {
    expect(transitions2026(zone)).toEqual(['2026-03-08T03:00:00-04:00[America/New_York]', '2026-11-01T01:00:00-05:00[America/New_York]']);
  });

  it('a window 01:00-04:00 lasts two hours in March and four in November', () => {
    const schedule = weekly(['SU'], '01:00', '04:00');
    expect(expand(schedule, zone, '2026-03-07T00:00:00Z', '2026-03-09T00:00:00Z')).toEqual([['2026-03-08T06:00:00.000Z', '2026-03-08T08:00:00.000Z']]);
    expect(expand(schedule, zone, '2026-10-31T00:00:00Z', '2026-11-02T00:00:00Z')).toEqual([['2026-11-01T05:00:00.000Z', '2026-11-01T09:00:00.000Z']]);
  });

  it('a window inside the repeated 01:00-02:00 opens twice; inside the skipped 02:00-03:00 never', () => {
    expect(expand(weekly(['SU'], '01:15', '01:45'), zone, '2026-10-31T00:00:00Z', '2026-11-02T00:00:00Z')).toEqual([
      ['2026-11-01T05:15:00.000Z', '2026-11-01T05:45:00.000Z'],
      ['2026-11-01T06:15:00.000Z', '2026-11-01T06:45:00.000Z'],
    ]);
    expect(expand(weekly(['SU'], '02:15', '02:45'), zone, '2026-03-07T00:00:00Z', '2026-03-09T00:00:00Z')).toEqual([]);
  });
});

describe('Australia/Lord_Howe: a DST shift of 30 minutes', () => {
  const zone = 'Australia/Lord_Howe';
  it('finds its 2026 transitions with the library: 2026-04-05 02:00 back to 01:30, 2026-10-04 02:00 on to 02:30', () => {
    expect(transitions2026(zone)).toEqual(['2026-04-05T01:30:00+10:30[Australia/Lord_Howe]', '2026-10-04T02:30:00+11:00[Australia/Lord_Howe]']);
  });

  it('in April a window 01:00-03:00 lasts two and a half hours, and one inside the repeated half hour opens twice', () => {
    expect(expand(weekly(['SU'], '01:00', '03:00'), zone, '2026-04-03T00:00:00Z', '2026-04-06T00:00:00Z')).toEqual([
      ['2026-04-04T14:00:00.000Z', '2026-04-04T16:30:00.000Z'],
    ]);
    expect(expand(weekly(['SU'], '01:40', '01:50'), zone, '2026-04-03T00:00:00Z', '2026-04-06T00:00:00Z')).toEqual([
      ['2026-04-04T14:40:00.000Z', '2026-04-04T14:50:00.000Z'],
      ['2026-04-04T15:10:00.000Z', '2026-04-04T15:20:00.000Z'],
    ]);
  });

  it('in October a window 02:00-03:00 lasts half an hour, one inside the gap never opens, one half in it opens at the transition', () => {
    const range = ['2026-10-02T00:00:00Z', '2026-10-05T00:00:00Z'] as const;
    expect(expand(weekly(['SU'], '02:00', '03:00'), zone, ...range)).toEqual([['2026-10-03T15:30:00.000Z', '2026-10-03T16:00:00.000Z']]);
    expect(expand(weekly(['SU'], '02:10', '02:20'), zone, ...range)).toEqual([]);
    expect(expand(weekly(['SU'], '02:15', '02:45'), zone, ...range)).toEqual([['2026-10-03T15:30:00.000Z', '2026-10-03T15:45:00.000Z']]);
  });
});

describe('America/Santiago: southern hemisphere, DST changes at midnight', () => {
  const zone = 'America/Santiago';
  it('finds its 2026 transitions: back on 2026-04-05 at 00:00 (to 23:00 the Saturday), on at 2026-09-06 00:00 (to 01:00)', () => {
    expect(transitions2026(zone)).toEqual(['2026-04-04T23:00:00-04:00[America/Santiago]', '2026-09-06T01:00:00-03:00[America/Santiago]']);
  });

  it('a Saturday window 22:00-02:00 lasts five hours in April and three in September', () => {
    const schedule = weekly(['SA'], '22:00', '02:00');
    expect(expand(schedule, zone, '2026-04-03T00:00:00Z', '2026-04-07T00:00:00Z')).toEqual([['2026-04-05T01:00:00.000Z', '2026-04-05T06:00:00.000Z']]);
    expect(expand(schedule, zone, '2026-09-04T00:00:00Z', '2026-09-08T00:00:00Z')).toEqual([['2026-09-06T02:00:00.000Z', '2026-09-06T05:00:00.000Z']]);
  });

  it('on the night without a midnight, a Sunday window from 00:00 opens at the transition, 01:00', () => {
    expect(expand(weekly(['SU'], '00:00', '03:00'), zone, '2026-09-04T00:00:00Z', '2026-09-08T00:00:00Z')).toEqual([
      ['2026-09-06T04:00:00.000Z', '2026-09-06T06:00:00.000Z'],
    ]);
  });

  it('a Saturday window 23:30-23:45 on the April night opens twice: the hour before midnight repeats', () => {
    expect(expand(weekly(['SA'], '23:30', '23:45'), zone, '2026-04-03T00:00:00Z', '2026-04-07T00:00:00Z')).toEqual([
      ['2026-04-05T02:30:00.000Z', '2026-04-05T02:45:00.000Z'],
      ['2026-04-05T03:30:00.000Z', '2026-04-05T03:45:00.000Z'],
    ]);
  });
});

describe('Australia/Sydney: southern hemisphere, DST from October to April', () => {
  it('a Sunday window 01:00-04:00 lasts four hours on 2026-04-05 and two on 2026-10-04', () => {
    const schedule = weekly(['SU'], '01:00', '04:00');
    // April: 03:00 AEDT (+11) becomes 02:00 AEST (+10); October: 02:00 AEST becomes 03:00 AEDT.
    expect(expand(schedule, 'Australia/Sydney', '2026-04-03T00:00:00Z', '2026-04-06T00:00:00Z')).toEqual([
      ['2026-04-04T14:00:00.000Z', '2026-04-04T18:00:00.000Z'],
    ]);
    expect(expand(schedule, 'Australia/Sydney', '2026-10-02T00:00:00Z', '2026-10-05T00:00:00Z')).toEqual([
      ['2026-10-03T15:00:00.000Z', '2026-10-03T17:00:00.000Z'],
    ]);
  });
});

describe('UTC and the shape of the answer', () => {
  it('working days 08:00-18:00 over a week, clipped to the range', () => {
    const schedule = weekly(['MO', 'TU', 'WE', 'TH', 'FR'], '08:00', '18:00');
    // 2026-06-01 is a Monday; the range starts in Monday's window and ends in the next Monday's.
    expect(expand(schedule, 'UTC', '2026-06-01T12:00:00Z', '2026-06-08T09:00:00Z')).toEqual([
      ['2026-06-01T12:00:00.000Z', '2026-06-01T18:00:00.000Z'],
      ['2026-06-02T08:00:00.000Z', '2026-06-02T18:00:00.000Z'],
      ['2026-06-03T08:00:00.000Z', '2026-06-03T18:00:00.000Z'],
      ['2026-06-04T08:00:00.000Z', '2026-06-04T18:00:00.000Z'],
      ['2026-06-05T08:00:00.000Z', '2026-06-05T18:00:00.000Z'],
      ['2026-06-08T08:00:00.000Z', '2026-06-08T09:00:00.000Z'],
    ]);
  });

  it('`to` equal to `from` is a 24-hour window; windows that touch or overlap are merged', () => {
    expect(expand(weekly(['MO'], '12:00', '12:00'), 'UTC', '2026-06-01T00:00:00Z', '2026-06-03T00:00:00Z')).toEqual([
      ['2026-06-01T12:00:00.000Z', '2026-06-02T12:00:00.000Z'],
    ]);
    const touching: Schedule = {
      weekly: [
        { days: ['MO'], from: '08:00', to: '12:00' },
        { days: ['MO'], from: '12:00', to: '14:00' },
        { days: ['MO'], from: '13:00', to: '16:00' },
      ],
    };
    expect(expand(touching, 'UTC', '2026-06-01T00:00:00Z', '2026-06-02T00:00:00Z')).toEqual([['2026-06-01T08:00:00.000Z', '2026-06-01T16:00:00.000Z']]);
    const always = weekly(['MO', 'TU', 'WE', 'TH', 'FR', 'SA', 'SU'], '00:00', '00:00');
    expect(expand(always, 'Europe/Berlin', '2026-03-25T00:00:00Z', '2026-04-01T00:00:00Z')).toEqual([['2026-03-25T00:00:00.000Z', '2026-04-01T00:00:00.000Z']]);
  });

  it('a cross-midnight window that started before the range is found and clipped', () => {
    expect(expand(weekly(['SU'], '22:00', '06:00'), 'UTC', '2026-06-01T03:00:00Z', '2026-06-01T12:00:00Z')).toEqual([
      ['2026-06-01T03:00:00.000Z', '2026-06-01T06:00:00.000Z'],
    ]);
  });

  it('an empty range has no intervals; a range over 400 days, bounds outside docs/api-reference.md 7.4, an unknown zone or a non-schedule are refused', () => {
    const schedule = weekly(['MO'], '08:00', '18:00');
    expect(expandSchedule(schedule, 'UTC', at('2026-06-02T00:00:00Z'), at('2026-06-01T00:00:00Z'))).toEqual([]);
    expect(expandSchedule(schedule, 'UTC', 0, 400 * DAY)).toHaveLength(57);
    expect(() => expandSchedule(schedule, 'UTC', 0, 400 * DAY + 1)).toThrow(RangeError);
    expect(() => expandSchedule(schedule, 'UTC', -1, DAY)).toThrow(RangeError);
    expect(() => expandSchedule(schedule, 'UTC', 0.5, DAY)).toThrow(RangeError);
    expect(() => expandSchedule(schedule, 'UTC', 8_640_000_000_000_000 - DAY, 8_640_000_000_000_001)).toThrow(RangeError);
    expect(() => expandSchedule(schedule, 'Mars/Olympus_Mons', 0, DAY)).toThrow(/not an IANA time zone/);
    expect(() => expandSchedule(weekly(['MO'], '24:00', '08:00'), 'UTC', 0, DAY)).toThrow(/schedule\.weekly\[0\]\.from/);
  });

  it('answers for the schedule as it is now, whatever was expanded before (the compiled schedules are kept by content)', () => {
    const schedule: Schedule = weekly(['MO'], '08:00', '18:00');
    const range = ['2026-06-01T00:00:00Z', '2026-06-02T00:00:00Z'] as const;
    expect(expand(schedule, 'UTC', ...range)).toEqual([['2026-06-01T08:00:00.000Z', '2026-06-01T18:00:00.000Z']]);
    schedule.weekly[0]!.to = '12:00';
    schedule.except = ['2026-06-01'];
    expect(expand(schedule, 'UTC', ...range)).toEqual([]);
    delete schedule.except;
    expect(expand(schedule, 'UTC', ...range)).toEqual([['2026-06-01T08:00:00.000Z', '2026-06-01T12:00:00.000Z']]);
    schedule.weekly[0]!.to = '25:00';
    expect(() => expand(schedule, 'UTC', ...range)).toThrow(RangeError);
    expect(() => expand(schedule, 'UTC', ...range)).toThrow(RangeError);
  });

  it('works up to the last instant of docs/api-reference.md 7.4, in a zone east of UTC', () => {
    const last = 8_640_000_000_000_000;
    const intervals = expandSchedule(weekly(['MO', 'TU', 'WE', 'TH', 'FR', 'SA', 'SU'], '08:00', '18:00'), 'Pacific/Kiritimati', last - 7 * DAY, last);
    // Seven whole days of a daily 10-hour window hold 70 hours, wherever the range starts.
    expect(intervals.reduce((sum, [start, end]) => sum + end - start, 0)).toBe(70 * HOUR);
    expect(intervals.at(-1)![1]).toBeLessThanOrEqual(last);
  });
});

describe('excepted dates', () => {
  const zone = 'Europe/Berlin';
  // 2026-06-13 is a Saturday; Berlin is on CEST (+02:00).
  const nights: Schedule = { weekly: [{ days: ['SA', 'SU'], from: '22:00', to: '06:00' }], except: ['2026-06-13'] };

  it("an excepted Saturday's night window does not open, not even on Sunday morning; Sunday's own window does", () => {
    expect(expand(nights, zone, '2026-06-12T00:00:00Z', '2026-06-16T00:00:00Z')).toEqual([['2026-06-14T20:00:00.000Z', '2026-06-15T04:00:00.000Z']]);
    expect(wallClockInside(nights, zone, at('2026-06-14T01:00:00Z'))).toBe(false); // Sunday 03:00
    expect(wallClockInside(nights, zone, at('2026-06-14T21:00:00Z'))).toBe(true); // Sunday 23:00
    expect(wallClockInside(nights, zone, at('2026-06-15T03:59:59.999Z'))).toBe(true); // Monday 05:59:59.999
    expect(wallClockInside(nights, zone, at('2026-06-15T04:00:00Z'))).toBe(false); // Monday 06:00
  });

  it('the week after, both nights open', () => {
    expect(expand(nights, zone, '2026-06-19T00:00:00Z', '2026-06-23T00:00:00Z')).toEqual([
      ['2026-06-20T20:00:00.000Z', '2026-06-21T04:00:00.000Z'],
      ['2026-06-21T20:00:00.000Z', '2026-06-22T04:00:00.000Z'],
    ]);
  });

  it("an excepted Sunday keeps Saturday's window running into Sunday morning", () => {
    const sundayOff: Schedule = { ...nights, except: ['2026-06-14'] };
    expect(expand(sundayOff, zone, '2026-06-12T00:00:00Z', '2026-06-16T00:00:00Z')).toEqual([['2026-06-13T20:00:00.000Z', '2026-06-14T04:00:00.000Z']]);
  });

  it("the date is the lock's: an excepted date in Sydney is not the UTC date", () => {
    // Monday 2026-06-15 08:00-18:00 in Sydney (+10:00) is 2026-06-14T22:00Z to 2026-06-15T08:00Z.
    const schedule = weekly(['MO'], '08:00', '18:00', ['2026-06-15']);
    expect(expand(schedule, 'Australia/Sydney', '2026-06-13T00:00:00Z', '2026-06-17T00:00:00Z')).toEqual([]);
    expect(expand({ ...schedule, except: ['2026-06-14'] }, 'Australia/Sydney', '2026-06-13T00:00:00Z', '2026-06-17T00:00:00Z')).toEqual([
      ['2026-06-14T22:00:00.000Z', '2026-06-15T08:00:00.000Z'],
    ]);
  });
});
