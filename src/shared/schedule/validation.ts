// Whether a value is a schedule (docs/api-reference.md 9), and every reason it is not, as the field errors of a 422.
import type { FieldError } from '../../errors.js';
import { MAX_EXCEPTED_DATES, MAX_SCHEDULE_WINDOWS, WEEKDAYS, type Schedule } from './types.js';

const TIME_PATTERN = /^([01]\d|2[0-3]):([0-5]\d)$/;
const DATE_PATTERN = /^(\d{4})-(\d{2})-(\d{2})$/;

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
