// Schedules in the lock's local time (docs/api-reference.md 9): their validation, their expansion into the UTC intervals a
// credential's `win` carries, the reference wall-clock rule they are proved against, and the preview's description.
//
// Pure and framework-free, so the services (signing, explain), the schemas and the simulator can share it. Every UTC
// offset and every DST transition comes from the IANA time-zone database through Temporal (the @js-temporal/polyfill,
// on the runtime's ICU data); this file only adds whole days and minutes to plain calendar dates, never an offset.
import { Temporal } from '@js-temporal/polyfill';
import type { FieldError } from '../../errors.js';

/** The days a window may list, Monday first (RFC 5545's BYDAY words, docs/api-reference.md 9). */
export const WEEKDAYS = ['MO', 'TU', 'WE', 'TH', 'FR', 'SA', 'SU'] as const;
export type Weekday = (typeof WEEKDAYS)[number];

/** One weekly window: on each listed day, from `from` (inclusive) to `to` (exclusive), both `HH:MM` wall-clock times. */
export interface ScheduleWindow {
  days: Weekday[];
  from: string;
  to: string;
}

/** docs/api-reference.md 9: `{weekly: [{days, from, to}], except?: ["YYYY-MM-DD"…]}`. */
export interface Schedule {
  weekly: ScheduleWindow[];
  except?: string[];
}

/** A UTC interval `[startMs, endMs)`: the shape of one entry of a credential's `win` (src/shared/credential-check.ts). */
export type ScheduleInterval = [startMs: number, endMs: number];

/** At most this many weekly windows: four per day of the week, which no door plan we know of needs more than. */
export const MAX_SCHEDULE_WINDOWS = 28;
/** At most this many excepted dates: every day of a year. */
export const MAX_EXCEPTED_DATES = 366;
/** The longest range one expansion covers (the preview's and the explain's bound; a credential covers at most 7 days). */
export const MAX_EXPANSION_DAYS = 400;
/** The largest instant the service handles (docs/api-reference.md 7.4), also Temporal's last instant. */
export const MAX_INSTANT = 8_640_000_000_000_000;
/** The longest time-zone name accepted; the longest IANA name has 32 characters. */
const MAX_TIME_ZONE_LENGTH = 64;

const MINUTE = 60_000;
const DAY = 86_400_000;

const TIME_PATTERN = /^([01]\d|2[0-3]):([0-5]\d)$/;
const DATE_PATTERN = /^(\d{4})-(\d{2})-(\d{2})$/;
// IANA names are ASCII letters, digits, `/`, `_`, `-` and `+` ("America/Port-au-Prince", "Etc/GMT+5"), starting with a
// letter. Temporal also takes UTC offsets ("+02:00") and whole ISO strings ("2026-01-01T00:00Z" names UTC) as time
// zones; neither is an IANA name, and a fixed offset would ignore the DST rules this section exists for.
const TIME_ZONE_NAME = /^[A-Za-z][A-Za-z0-9_+\-/]*$/;

// ---------------------------------------------------------------------------------------------------------------------
// Time zones

const knownZones = new Map<string, string | null>();
const MAX_KNOWN_ZONES = 2048;

/**
 * The time zone's IANA name in its canonical spelling ("europe/berlin" → "Europe/Berlin", "utc" → "UTC"), or null when
 * it is not a name of the IANA time-zone database this runtime carries. What a route stores for `timeZone`.
 */
export function normalizeTimeZone(name: unknown): string | null {
  if (typeof name !== 'string' || name.length === 0 || name.length > MAX_TIME_ZONE_LENGTH || !TIME_ZONE_NAME.test(name)) return null;
  const known = knownZones.get(name);
  if (known !== undefined) return known;
  let id: string | null;
  try {
    id = Temporal.Instant.fromEpochMilliseconds(0).toZonedDateTimeISO(name).timeZoneId;
  } catch {
    id = null;
  }
  if (knownZones.size >= MAX_KNOWN_ZONES) knownZones.clear();
  knownZones.set(name, id);
  return id;
}

/** Is `name` a time zone of the IANA database (docs/api-reference.md 9: an unknown zone is a 422)? `UTC` is one. */
export function isTimeZone(name: unknown): name is string {
  return normalizeTimeZone(name) !== null;
}

function requireTimeZone(name: string): string {
  const zone = normalizeTimeZone(name);
  if (zone === null) throw new RangeError(`${JSON.stringify(name)} is not an IANA time zone; use a name such as Europe/Berlin or UTC`);
  return zone;
}

/** One UTC year of a zone: the offset at its first instant and every change of offset within it. */
interface ZoneYear {
  offsetAtStart: number;
  transitions: { at: number; offset: number }[];
}

// Finding a transition costs Temporal a search over the ICU data (0.5 to 20 ms), so each zone-year is looked up once
// and kept: a few hundred zones times a few years is a few thousand small entries. Cleared whole when full, which a
// process only reaches by being asked about thousands of zone-years.
const zoneYears = new Map<string, ZoneYear>();
const MAX_ZONE_YEARS = 4096;

function zoneYear(zone: string, year: number): ZoneYear {
  const key = `${zone} ${year}`;
  const cached = zoneYears.get(key);
  if (cached) return cached;
  const start = Math.max(utcYearStart(year), -MAX_INSTANT);
  const end = Math.min(utcYearStart(year + 1), MAX_INSTANT);
  let at = Temporal.Instant.fromEpochMilliseconds(start).toZonedDateTimeISO(zone);
  const entry: ZoneYear = { offsetAtStart: at.offsetNanoseconds / 1e6, transitions: [] };
  for (;;) {
    const next = at.getTimeZoneTransition('next');
    if (!next || next.epochMilliseconds >= end) break;
    entry.transitions.push({ at: next.epochMilliseconds, offset: next.offsetNanoseconds / 1e6 });
    at = next;
  }
  if (zoneYears.size >= MAX_ZONE_YEARS) zoneYears.clear();
  zoneYears.set(key, entry);
  return entry;
}

/** The first instant of a UTC calendar year (setUTCFullYear, as Date.UTC maps years 0 to 99 to 1900 to 1999). */
function utcYearStart(year: number): number {
  const date = new Date(0);
  date.setUTCFullYear(year, 0, 1);
  return date.getTime();
}

/** A stretch `[start, end)` of instants over which the zone's UTC offset (ms, local minus UTC) does not change. */
interface OffsetSegment {
  start: number;
  end: number;
  offset: number;
}

/** `[from, to)` cut at the zone's transitions into segments of constant offset. */
function offsetSegments(zone: string, from: number, to: number): OffsetSegment[] {
  const firstYear = new Date(from).getUTCFullYear();
  const lastYear = new Date(to - 1).getUTCFullYear();
  const first = zoneYear(zone, firstYear);
  let offset = first.offsetAtStart;
  for (const transition of first.transitions) if (transition.at <= from) offset = transition.offset;
  const segments: OffsetSegment[] = [];
  let start = from;
  for (let year = firstYear; year <= lastYear; year++) {
    for (const transition of zoneYear(zone, year).transitions) {
      if (transition.at <= from) continue;
      if (transition.at >= to) break;
      segments.push({ start, end: transition.at, offset });
      start = transition.at;
      offset = transition.offset;
    }
  }
  segments.push({ start, end: to, offset });
  return segments;
}

// ---------------------------------------------------------------------------------------------------------------------
// Validation

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const isLeapYear = (year: number): boolean => (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
const daysInMonth = (year: number, month: number): number => (month === 2 && isLeapYear(year) ? 29 : DAYS_IN_MONTH[month - 1]!);
const MONTH_NAMES = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];

const WINDOW_SHAPE = '{days: ["MO"…"SU"], from: "HH:MM", to: "HH:MM"}';
const TIME_ADVICE = 'use HH:MM with two digits each, from 00:00 to 23:59 (a window that ends at midnight has to "00:00")';

// The checks below build a field's path only when they report it: signing expands (and so validates) a schedule per
// credential, and a schedule of hundreds of valid dates must not cost hundreds of strings each time.

/** Why the value is not an `HH:MM` time, or null. */
function timeProblem(value: unknown): string | null {
  if (typeof value !== 'string') return `must be a time of day as a string "HH:MM"; ${TIME_ADVICE}`;
  if (!TIME_PATTERN.test(value)) return `${JSON.stringify(value)} is not a time of day; ${TIME_ADVICE}`;
  return null;
}

/** Why the value is not a `YYYY-MM-DD` calendar date, or null. */
function dateProblem(value: unknown): string | null {
  if (typeof value !== 'string') return 'must be a date as a string "YYYY-MM-DD"';
  const match = DATE_PATTERN.exec(value);
  if (!match) return `${JSON.stringify(value)} is not a date; use YYYY-MM-DD, e.g. 2026-12-24`;
  const year = Number(match[1]);
  const month = Number(match[2]);
  const day = Number(match[3]);
  if (month < 1 || month > 12) return `${value} has no month ${match[2]}; use a month from 01 to 12`;
  const last = daysInMonth(year, month);
  if (day < 1 || day > last) return `${value} is not in the calendar: ${MONTH_NAMES[month - 1]} ${year} has days 01 to ${last}`;
  return null;
}

function windowErrors(field: string, window: unknown): FieldError[] {
  if (!isRecord(window)) return [{ field, message: `must be a window ${WINDOW_SHAPE}` }];
  const errors: FieldError[] = [];
  for (const key of Object.keys(window)) {
    if (key !== 'days' && key !== 'from' && key !== 'to') errors.push({ field: `${field}.${key}`, message: 'is not a window field; send only days, from and to' });
  }
  const { days } = window;
  if (!Array.isArray(days)) {
    errors.push({ field: `${field}.days`, message: `must be an array of days, each one of ${WEEKDAYS.join(', ')}` });
  } else if (days.length === 0) {
    errors.push({ field: `${field}.days`, message: `is empty; list at least one of ${WEEKDAYS.join(', ')}` });
  } else if (days.length > WEEKDAYS.length) {
    errors.push({ field: `${field}.days`, message: `lists ${days.length} days; list each of ${WEEKDAYS.join(', ')} at most once` });
  } else {
    let seen = 0; // one bit per weekday
    for (let index = 0; index < days.length; index++) {
      const day: unknown = days[index];
      const weekday = (WEEKDAYS as readonly unknown[]).indexOf(day);
      if (weekday < 0) {
        errors.push({ field: `${field}.days[${index}]`, message: `${JSON.stringify(day)} is not a day; use one of ${WEEKDAYS.join(', ')} (upper case)` });
      } else if (seen & (1 << weekday)) {
        errors.push({ field: `${field}.days[${index}]`, message: `${day as string} is listed twice in this window; list each day once` });
      }
      if (weekday >= 0) seen |= 1 << weekday;
    }
  }
  for (const key of ['from', 'to'] as const) {
    const problem = timeProblem(window[key]);
    if (problem) errors.push({ field: `${field}.${key}`, message: problem });
  }
  return errors;
}

/**
 * Every reason the value is not a schedule (docs/api-reference.md 9), as the `errors` of a 422 problem (src/errors.ts:
 * UnprocessableError with detailWithReasons), with fields as paths under `field`; empty when it is one. Each message
 * says what to send instead. Limits: 1 to MAX_SCHEDULE_WINDOWS windows, each with 1 to 7 distinct days; at most
 * MAX_EXCEPTED_DATES distinct, real calendar dates.
 */
export function validateSchedule(value: unknown, field = 'schedule'): FieldError[] {
  if (!isRecord(value)) return [{ field, message: `must be an object {weekly: [${WINDOW_SHAPE}…], except?: ["YYYY-MM-DD"…]}` }];
  const errors: FieldError[] = [];
  for (const key of Object.keys(value)) {
    if (key !== 'weekly' && key !== 'except') errors.push({ field: `${field}.${key}`, message: 'is not a schedule field; send only weekly and except' });
  }
  const { weekly, except } = value;
  if (!Array.isArray(weekly)) {
    errors.push({ field: `${field}.weekly`, message: `must be an array of windows ${WINDOW_SHAPE}` });
  } else if (weekly.length === 0) {
    errors.push({
      field: `${field}.weekly`,
      message: `is empty, so the schedule would never open; send at least one window ${WINDOW_SHAPE}, or no schedule for access at any time`,
    });
  } else if (weekly.length > MAX_SCHEDULE_WINDOWS) {
    errors.push({
      field: `${field}.weekly`,
      message: `holds ${weekly.length} windows; send at most ${MAX_SCHEDULE_WINDOWS} (windows with the same times can share one entry with several days)`,
    });
  } else {
    for (let index = 0; index < weekly.length; index++) {
      errors.push(...windowErrors(`${field}.weekly[${index}]`, weekly[index]));
    }
  }
  if (except !== undefined) {
    if (!Array.isArray(except)) {
      errors.push({ field: `${field}.except`, message: 'must be an array of dates "YYYY-MM-DD"' });
    } else if (except.length > MAX_EXCEPTED_DATES) {
      errors.push({
        field: `${field}.except`,
        message: `holds ${except.length} dates; send at most ${MAX_EXCEPTED_DATES} (only dates within the ticket's validity matter)`,
      });
    } else {
      const seen = new Set<unknown>();
      for (let index = 0; index < except.length; index++) {
        const date: unknown = except[index];
        const problem = dateProblem(date);
        if (problem) errors.push({ field: `${field}.except[${index}]`, message: problem });
        else if (seen.has(date)) errors.push({ field: `${field}.except[${index}]`, message: `${date as string} is listed twice; list each date once` });
        seen.add(date);
      }
    }
  }
  return errors;
}

/** Is the value a schedule (validateSchedule finds nothing)? */
export function isSchedule(value: unknown): value is Schedule {
  return validateSchedule(value).length === 0;
}

// ---------------------------------------------------------------------------------------------------------------------
// Expansion

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

function requireInstant(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0 || value > MAX_INSTANT) {
    throw new RangeError(`${name} must be a whole number of Unix milliseconds from 0 to ${MAX_INSTANT}`);
  }
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

// ---------------------------------------------------------------------------------------------------------------------
// The reference rule

/**
 * Is the schedule open at the instant, on the wall clock of `timeZone`? docs/api-reference.md 9's sentence, read directly:
 * "an instant is inside when the lock's wall-clock time at that instant falls in a window on a listed day (the day
 * the window starts), and the date is not excepted". The local date and time come from Temporal for that one
 * instant; nothing of expandSchedule's construction is shared, so the tests can prove one against the other.
 * Slow (a Temporal conversion per call): for tests, explain and single questions, never for signing.
 */
export function wallClockInside(schedule: Schedule, timeZone: string, instantMs: number): boolean {
  requireInstant('instant', instantMs);
  const zone = requireTimeZone(timeZone);
  const errors = validateSchedule(schedule);
  if (errors.length > 0) throw new RangeError(`Not a schedule: ${errors[0]!.field}: ${errors[0]!.message}`);
  const wallClock = Temporal.Instant.fromEpochMilliseconds(instantMs).toZonedDateTimeISO(zone).toPlainDateTime();
  const today = wallClock.toPlainDate();
  const yesterday = today.subtract({ days: 1 });
  // The wall-clock time of day and the windows' times, in milliseconds since local midnight.
  const time = wallClock.hour * 3_600_000 + wallClock.minute * MINUTE + wallClock.second * 1000 + wallClock.millisecond;
  const timeOf = (hhmm: string): number => (Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5))) * MINUTE;
  const excepted = new Set(schedule.except ?? []);
  const dayWord = (date: Temporal.PlainDate): Weekday => WEEKDAYS[date.dayOfWeek - 1]!;
  return schedule.weekly.some((window) => {
    const { days } = window;
    const from = timeOf(window.from);
    const to = timeOf(window.to);
    const crossesMidnight = to <= from;
    // A window that starts today: from `from` until `to`, or until midnight when it crosses it.
    const startedToday =
      days.includes(dayWord(today)) && !excepted.has(today.toString()) && time >= from && (crossesMidnight || time < to);
    // A window that started yesterday and crosses midnight: today until `to`. It is yesterday's window, so
    // yesterday's day and date decide.
    const startedYesterday = crossesMidnight && days.includes(dayWord(yesterday)) && !excepted.has(yesterday.toString()) && time < to;
    return startedToday || startedYesterday;
  });
}

// ---------------------------------------------------------------------------------------------------------------------
// Description for the preview

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
