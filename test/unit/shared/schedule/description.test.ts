// The preview's description of intervals (src/shared/schedule/description.ts, docs/api-reference.md 9): wall-clock times
// and offsets at both ends, exactly as Temporal writes them.
import { Temporal } from '@js-temporal/polyfill';
import { describe, expect, it } from 'vitest';
import { describeIntervals } from '../../../../src/shared/schedule/description.js';
import { expandSchedule } from '../../../../src/shared/schedule/expansion.js';
import { HOUR, at, weekly } from './fixtures.js';

describe('describeIntervals (the preview, docs/api-reference.md 9)', () => {
  it('shows the wall clock and the offset at both ends of a spring-forward window', () => {
    const zone = 'Europe/Berlin';
    const intervals = expandSchedule(weekly(['SU'], '01:00', '04:00'), zone, at('2026-03-28T00:00:00Z'), at('2026-03-30T00:00:00Z'));
    expect(describeIntervals(intervals, zone)).toEqual([
      {
        start: at('2026-03-29T00:00:00Z'),
        end: at('2026-03-29T02:00:00Z'),
        localStart: '2026-03-29T01:00:00',
        localEnd: '2026-03-29T04:00:00',
        startOffset: '+01:00',
        endOffset: '+02:00',
      },
    ]);
  });

  it('shows both passes of a fall-back window, a half-hour offset, UTC as +00:00 and milliseconds only when there are some', () => {
    const intervals = expandSchedule(weekly(['SU'], '02:15', '02:45'), 'Europe/Berlin', at('2026-10-24T00:00:00Z'), at('2026-10-26T00:00:00Z'));
    expect(describeIntervals(intervals, 'Europe/Berlin').map((i) => [i.localStart, i.startOffset, i.localEnd, i.endOffset])).toEqual([
      ['2026-10-25T02:15:00', '+02:00', '2026-10-25T02:45:00', '+02:00'],
      ['2026-10-25T02:15:00', '+01:00', '2026-10-25T02:45:00', '+01:00'],
    ]);
    expect(describeIntervals([[at('2026-04-04T14:00:00Z'), at('2026-04-04T16:30:00.250Z')]], 'Australia/Lord_Howe')).toEqual([
      {
        start: at('2026-04-04T14:00:00Z'),
        end: at('2026-04-04T16:30:00.250Z'),
        localStart: '2026-04-05T01:00:00',
        localEnd: '2026-04-05T03:00:00.25',
        startOffset: '+11:00',
        endOffset: '+10:30',
      },
    ]);
    expect(describeIntervals([[0, HOUR]], 'UTC')[0]).toMatchObject({ localStart: '1970-01-01T00:00:00', startOffset: '+00:00' });
  });

  it('refuses an unknown zone', () => {
    expect(() => describeIntervals([[0, HOUR]], 'Europe/Atlantis')).toThrow(RangeError);
  });

  it('writes exactly what Temporal writes, read from the cached offset segments, across a year of every kind of zone', () => {
    // The preview reads the wall clock from the expansion's offset segments rather than one Temporal conversion per
    // bound (a year of windows is about 1,600 intervals): both must give the same text at every bound.
    const zones = ['Europe/Berlin', 'America/New_York', 'Australia/Lord_Howe', 'America/Santiago', 'Asia/Kathmandu', 'Africa/Monrovia', 'UTC'];
    let seed = 20261124;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (const zone of zones) {
      const from = zone === 'Africa/Monrovia' ? at('1971-06-01T00:00:00Z') : at('2026-01-01T00:00:00Z');
      const intervals: [number, number][] = Array.from({ length: 200 }, (_, i) => {
        const start = from + i * 43 * HOUR + Math.floor(random() * HOUR);
        return [start, start + 1 + Math.floor(random() * 30 * HOUR)];
      });
      const described = describeIntervals(intervals, zone);
      const temporal = (instant: number) => {
        const zoned = Temporal.Instant.fromEpochMilliseconds(instant).toZonedDateTimeISO(zone);
        return [zoned.toPlainDateTime().toString(), zoned.offset];
      };
      expect(described.map((i) => [i.localStart, i.startOffset, i.localEnd, i.endOffset])).toEqual(
        intervals.map(([start, end]) => [...temporal(start), ...temporal(end)]),
      );
    }
  });
});
