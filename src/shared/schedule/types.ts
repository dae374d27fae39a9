// The vocabulary of schedules in the lock's local time (docs/api-reference.md 9): their shape, the bounds on the work
// one can cause, and the instants the service handles.

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

/** A minute and a day in milliseconds: a day of UTC, or of a wall clock read as UTC (never a local day across DST). */
export const MINUTE = 60_000;
export const DAY = 86_400_000;

/** What an instant of docs/api-reference.md 7.4 is, in the words of the messages that ask for one. */
export const INSTANT_REQUIREMENT = `a whole number of Unix milliseconds from 0 to ${MAX_INSTANT}`;

/** Is the value an instant of docs/api-reference.md 7.4: a whole number of Unix milliseconds from 0 to MAX_INSTANT? */
export function isInstant(value: number): boolean {
  return Number.isSafeInteger(value) && value >= 0 && value <= MAX_INSTANT;
}

/** Throws a RangeError (a 422 for a route) naming `name` when the value is not an instant. */
export function requireInstant(name: string, value: number): void {
  if (!isInstant(value)) throw new RangeError(`${name} must be ${INSTANT_REQUIREMENT}`);
}
