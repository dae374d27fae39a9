// The reference rule for schedules (docs/api-reference.md 9): is one instant inside, read straight from the lock's wall
// clock. Slow, and built from nothing of expansion.ts, so the tests can prove the expansion against it.
import { Temporal } from '@js-temporal/polyfill';
import { requireTimeZone } from './time-zones.js';
import { validateSchedule } from './validation.js';
import { MINUTE, WEEKDAYS, requireInstant, type Schedule, type Weekday } from './types.js';

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
