// Schedules expanded into the UTC intervals a credential's `win` carries and the preview shows (docs/api-reference.md 9).
//
// Pure and framework-free, so the services (signing, explain) and the simulator can share it. The offsets come from
// time-zones.ts; this file only adds whole days and minutes to plain calendar dates, never an offset.
import { offsetSegments, requireTimeZone } from './time-zones.js';
import { validateSchedule } from './validation.js';
import { DAY, MAX_EXPANSION_DAYS, MINUTE, WEEKDAYS, requireInstant, type Schedule, type ScheduleInterval } from './types.js';

/** A schedule read once for expansion: for each weekday (0 = Monday) its windows in minutes, and the excepted days. */
interface CompiledSchedule {
  windows: [from: number, to: number][][];
  except: Set<number>;
}

const minutesOf = (time: string): number => Number(time.slice(0, 2)) * 60 + Number(time.slice(3, 5));

/**
 * Days since 1970-01-01 of a valid `YYYY-MM-DD` in the proleptic Gregorian calendar: calendar arithmetic on a plain
 * date, no time zone involved (the days-from-civil count of March-based years, 400-year eras of 146097 days).
 */
function epochDay(date: string): number {
  const month = Number(date.slice(5, 7));
  const year = Number(date.slice(0, 4)) - (month <= 2 ? 1 : 0);
  const era = Math.floor(year / 400);
  const yearOfEra = year - era * 400;
  const dayOfYear = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + Number(date.slice(8, 10)) - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146097 + dayOfEra - 719468;
}

/** 1970-01-01 was a Thursday: weekday index 3 with Monday as 0. */
const weekdayOf = (epochDayNumber: number): number => (((epochDayNumber + 3) % 7) + 7) % 7;

function compile(schedule: Schedule): CompiledSchedule {
  const errors = validateSchedule(schedule);
  if (errors.length > 0) throw new RangeError(`Not a schedule: ${errors.map((error) => `${error.field}: ${error.message}`).join('; ')}`);
  const windows: [number, number][][] = WEEKDAYS.map(() => []);
  for (const window of schedule.weekly) {
    const from = minutesOf(window.from);
    const to = minutesOf(window.to);
    for (const day of window.days) windows[WEEKDAYS.indexOf(day)]!.push([from, to]);
  }
  return { windows, except: new Set((schedule.except ?? []).map(epochDay)) };
}

// Signing reads the same few schedules again and again (an access permission's tickets share one), and validating a
// schedule of hundreds of excepted dates costs more than expanding it, so the compiled form is kept by its JSON text:
// the text costs about a fifth of the validation. Bounded like the zone-years; cleared whole when full.
const compiledSchedules = new Map<string, CompiledSchedule>();
const MAX_COMPILED_SCHEDULES = 256;

function compiled(schedule: Schedule): CompiledSchedule {
  let key: string | undefined;
  try {
    key = JSON.stringify(schedule);
  } catch {
    key = undefined; // not JSON (a cycle, a BigInt): certainly not a schedule, and compile says why
  }
  if (typeof key !== 'string') return compile(schedule);
  const cached = compiledSchedules.get(key);
  if (cached) return cached;
  const result = compile(schedule);
  if (compiledSchedules.size >= MAX_COMPILED_SCHEDULES) compiledSchedules.clear();
  compiledSchedules.set(key, result);
  return result;
}

/** Sorted, with intervals that overlap or touch merged into one. Sorts its argument in place. */
function mergeIntervals(intervals: ScheduleInterval[]): ScheduleInterval[] {
  intervals.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const merged: ScheduleInterval[] = [];
  for (const interval of intervals) {
    const last = merged[merged.length - 1];
    if (last && interval[0] <= last[1]) last[1] = Math.max(last[1], interval[1]);
    else merged.push([interval[0], interval[1]]);
  }
  return merged;
}

/**
 * The UTC intervals `[startMs, endMs)` within `[fromMs, toMs)` in which the schedule is open on the wall clock of
 * `timeZone` (docs/api-reference.md 9): sorted, merged where they touch or overlap, clipped to the range. What a credential
 * carries as `win` (clipped to its validity) and what the preview shows.
 *
 * Exact by construction: the range is cut at the zone's transitions into segments of constant UTC offset, and within
 * a segment the wall clock is UTC plus that offset, so the local window [D from, D' to) is the instants
 * [D from − offset, D' to − offset) clipped to the segment. Hence a window on a spring-forward night is shorter (a
 * start inside the gap opens at the transition, a window inside the gap never opens), and on a fall-back night
 * longer (a window inside the repeated hour opens on both passes). A window belongs to the day it starts: its day
 * is listed and that date is not excepted, even for the part after midnight.
 *
 * Throws a RangeError (a 422 for a route) for an unknown zone, a value that is not a schedule, bounds that are not
 * instants of docs/api-reference.md 7.4, or a range longer than MAX_EXPANSION_DAYS. An empty range has no intervals.
 */
export function expandSchedule(schedule: Schedule, timeZone: string, fromMs: number, toMs: number): ScheduleInterval[] {
  requireInstant('from', fromMs);
  requireInstant('to', toMs);
  if (toMs - fromMs > MAX_EXPANSION_DAYS * DAY) throw new RangeError(`A schedule is expanded over at most ${MAX_EXPANSION_DAYS} days at once`);
  const zone = requireTimeZone(timeZone);
  const { windows, except } = compiled(schedule);
  if (toMs <= fromMs) return [];
  const intervals: ScheduleInterval[] = [];
  for (const { start, end, offset } of offsetSegments(zone, fromMs, toMs)) {
    // The wall clock runs from start + offset to end + offset within the segment. A window that started the local
    // day before can reach into it (a window lasts at most 24 wall-clock hours), so the days start one earlier.
    const firstDay = Math.floor((start + offset) / DAY) - 1;
    const lastDay = Math.floor((end - 1 + offset) / DAY);
    for (let day = firstDay; day <= lastDay; day++) {
      if (except.has(day)) continue;
      for (const [from, to] of windows[weekdayOf(day)]!) {
        const localStart = day * DAY + from * MINUTE;
        const localEnd = (to > from ? day : day + 1) * DAY + to * MINUTE;
        const intervalStart = Math.max(localStart - offset, start);
        const intervalEnd = Math.min(localEnd - offset, end);
        if (intervalStart < intervalEnd) intervals.push([intervalStart, intervalEnd]);
      }
    }
  }
  return mergeIntervals(intervals);
}
