// The reference wall-clock rule (src/shared/schedule/wall-clock.ts, docs/api-reference.md 9) on a DST night, to the
// millisecond, against the expanded intervals; the property test (test/property/) proves the two agree everywhere.
import { describe, expect, it } from 'vitest';
import { expandSchedule } from '../../../../src/shared/schedule/expansion.js';
import { wallClockInside } from '../../../../src/shared/schedule/wall-clock.js';
import { at, weekly } from './fixtures.js';

/** Whether the intervals hold the instant, the way a lock reads `win`. */
const holds = (intervals: [number, number][], instant: number): boolean => intervals.some(([start, end]) => start <= instant && instant < end);

describe('wallClockInside on the DST nights, to the millisecond', () => {
  it('agrees with the expanded edges of a Berlin fall-back window', () => {
    const schedule = weekly(['SU'], '02:15', '02:45');
    const zone = 'Europe/Berlin';
    const intervals = expandSchedule(schedule, zone, at('2026-10-24T00:00:00Z'), at('2026-10-26T00:00:00Z'));
    for (const instant of [at('2026-10-25T00:14:59.999Z'), at('2026-10-25T00:15:00Z'), at('2026-10-25T00:44:59.999Z'), at('2026-10-25T00:45:00Z'), at('2026-10-25T01:00:00Z'), at('2026-10-25T01:15:00Z'), at('2026-10-25T01:45:00Z')]) {
      expect(wallClockInside(schedule, zone, instant), new Date(instant).toISOString()).toBe(holds(intervals, instant));
    }
    expect(wallClockInside(schedule, zone, at('2026-10-25T01:15:00Z'))).toBe(true);
    expect(wallClockInside(schedule, zone, at('2026-10-25T01:45:00Z'))).toBe(false);
  });
});
