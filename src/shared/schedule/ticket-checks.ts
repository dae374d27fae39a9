// The checks a ticket's or access permission's schedule passes before anything is written (docs/api-reference.md 9, 4.3, 5).
import type { FieldError } from '../../errors.js';
import { expandSchedule } from './expansion.js';
import { DAY, MAX_EXPANSION_DAYS, type Schedule } from './types.js';
import { validateSchedule } from './validation.js';

/** validateSchedule's field errors for an optional `schedule` (none when it is absent). */
export function scheduleErrors(schedule: unknown): FieldError[] {
  return schedule === undefined ? [] : validateSchedule(schedule, 'schedule');
}

/**
 * The 422 reason when a valid schedule never opens within the validity `[beginDate, endDate)` in one of the lock zones
 * given (a ticket's lock, or every distinct zone of a lock group's locks: a lock there would get tickets that never
 * open), else null. The span starts at the later of beginDate and now (a window already past opens nothing, and a
 * ticket's endDate is in the future) and covers at most MAX_EXPANSION_DAYS, so one check costs at most that many days
 * of expansion per zone: a schedule whose except dates close it for longer than that is accepted, its credentials
 * carrying `win: []` until it opens.
 */
export function neverOpensError(
  schedule: Schedule,
  timeZones: readonly string[],
  validity: { beginDate: number; endDate: number },
  now: number,
): FieldError | null {
  const from = Math.max(validity.beginDate, now);
  const to = Math.min(validity.endDate, from + MAX_EXPANSION_DAYS * DAY);
  const closed = timeZones.filter((zone) => expandSchedule(schedule, zone, from, to).length === 0);
  if (closed.length === 0) return null;
  const where = timeZones.length > 1 ? ` at the locks in ${closed.slice(0, 5).join(', ')}` : '';
  return { field: 'schedule', message: `the schedule never opens within the ticket's validity${where}` };
}
