// The preview's description of UTC intervals (docs/api-reference.md 9): the lock's wall-clock times and UTC offsets at
// both ends, so an operator sees what a DST night does.
import { Temporal } from '@js-temporal/polyfill';
import { offsetSegments, requireTimeZone } from './time-zones.js';
import { DAY, MAX_EXPANSION_DAYS, requireInstant } from './types.js';

/** One interval as the preview answers it (docs/api-reference.md 9). */
export interface DescribedInterval {
  /** UTC, Unix milliseconds, inclusive. */
  start: number;
  /** UTC, Unix milliseconds, exclusive. */
  end: number;
  /** The lock's wall clock at `start`: ISO 8601 local date and time without offset, e.g. `2026-03-29T03:00:00`. */
  localStart: string;
  /** The lock's wall clock at `end`, the first instant after the interval (so a window ending in a DST gap shows the time after the jump). */
  localEnd: string;
  /** The UTC offset in force at `start`, e.g. `+02:00` (`+00:00` for UTC). */
  startOffset: string;
  /** The UTC offset in force at `end`. */
  endOffset: string;
}

/**
 * The intervals with the lock's wall-clock times and UTC offsets at both ends, for the preview (docs/api-reference.md 9),
 * so an operator sees what a DST night does. Local times are ISO 8601 without offset, to the second, with
 * milliseconds only when not zero; the offsets are separate fields in `±HH:MM`.
 */
export function describeIntervals(intervals: readonly (readonly [number, number])[], timeZone: string): DescribedInterval[] {
  const zone = requireTimeZone(timeZone);
  for (const [start, end] of intervals) {
    requireInstant('interval bound', start);
    requireInstant('interval bound', end);
  }
  const wallClock = wallClockReader(zone, intervals);
  return intervals.map(([start, end]) => {
    const atStart = wallClock(start);
    const atEnd = wallClock(end);
    return { start, end, localStart: atStart.local, localEnd: atEnd.local, startOffset: atStart.offset, endOffset: atEnd.offset };
  });
}

/** The wall clock through Temporal, one conversion per instant: exact anywhere, but tens of microseconds each. */
function temporalWallClock(zone: string, instantMs: number): { local: string; offset: string } {
  const zoned = Temporal.Instant.fromEpochMilliseconds(instantMs).toZonedDateTimeISO(zone);
  return { local: zoned.toPlainDateTime().toString(), offset: zoned.offset };
}

/**
 * Reads the wall clock at the intervals' bounds from the zone's offset segments (the cached transitions the expansion
 * uses), so a preview of a year of windows (about 1,600 intervals) costs no Temporal conversion per bound. The text is
 * what Temporal writes: ISO 8601 without offset, fractional seconds without trailing zeros; `±HH:MM` offsets (with
 * seconds only for an offset that has them). Spans longer than an expansion can be, and local times a Date cannot
 * hold, are read through Temporal.
 */
function wallClockReader(zone: string, intervals: readonly (readonly [number, number])[]): (instantMs: number) => { local: string; offset: string } {
  if (intervals.length === 0) return (instantMs) => temporalWallClock(zone, instantMs);
  const from = Math.min(...intervals.map(([start]) => start));
  const to = Math.max(...intervals.map(([, end]) => end)) + 1;
  if (to - from > (MAX_EXPANSION_DAYS + 2) * DAY) return (instantMs) => temporalWallClock(zone, instantMs);
  const segments = offsetSegments(zone, from, to);
  return (instantMs) => {
    let low = 0;
    let high = segments.length - 1;
    while (low < high) {
      const middle = (low + high + 1) >> 1;
      if (segments[middle]!.start <= instantMs) low = middle;
      else high = middle - 1;
    }
    const offset = segments[low]!.offset;
    const local = new Date(instantMs + offset);
    if (Number.isNaN(local.getTime())) return temporalWallClock(zone, instantMs);
    return { local: localIso(local), offset: offsetText(offset) };
  };
}

/** A Date holding local wall-clock fields as UTC, written as Temporal writes a PlainDateTime. */
function localIso(local: Date): string {
  const iso = local.toISOString().slice(0, -1);
  const [whole, fraction] = iso.split('.') as [string, string];
  const digits = fraction.replace(/0+$/, '');
  return digits === '' ? whole : `${whole}.${digits}`;
}

/** A UTC offset in ms as Temporal writes it: `+02:00`, `-03:30`, `+00:00`; seconds only when not zero. */
function offsetText(offsetMs: number): string {
  const sign = offsetMs < 0 ? '-' : '+';
  const seconds = Math.round(Math.abs(offsetMs) / 1000);
  const pad = (n: number) => String(n).padStart(2, '0');
  const hoursAndMinutes = `${sign}${pad(Math.floor(seconds / 3600))}:${pad(Math.floor((seconds % 3600) / 60))}`;
  return seconds % 60 === 0 ? hoursAndMinutes : `${hoursAndMinutes}:${pad(seconds % 60)}`;
}
