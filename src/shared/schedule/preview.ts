// Schedules for the Operator API (docs/api-reference.md 9): a lock's time zone as a route takes it, and the preview.
import { UnprocessableError, detailWithReasons, type FieldError } from '../../errors.js';
import { describeIntervals, type DescribedInterval } from './description.js';
import { expandSchedule } from './expansion.js';
import { normalizeTimeZone } from './time-zones.js';
import { DAY, INSTANT_REQUIREMENT, MAX_EXPANSION_DAYS, isInstant, type Schedule } from './types.js';
import { validateSchedule } from './validation.js';

/**
 * The time zone's canonical IANA name, or the reason it is none as the `errors` of a 422 (docs/api-reference.md 9: an
 * unknown zone is `422`). A UTC offset is refused with the rest: a fixed offset ignores the daylight-saving rules a
 * schedule is read by.
 */
export function checkTimeZone(field: string, value: unknown): { zone: string; errors: [] } | { zone: null; errors: FieldError[] } {
  const zone = normalizeTimeZone(value);
  if (zone !== null) return { zone, errors: [] };
  const shown = typeof value === 'string' ? JSON.stringify(value.slice(0, 64)) : 'the value';
  const offset = typeof value === 'string' && /^[+-]\d{1,2}(:?\d{2})?$/.test(value);
  return {
    zone: null,
    errors: [
      {
        field,
        message:
          `${shown} is not a time zone of the IANA database; send its name, such as Europe/Berlin, America/New_York or UTC` +
          (offset ? ' (a UTC offset does not follow daylight saving time, the zone\'s name does)' : ''),
      },
    ],
  };
}

export interface SchedulePreviewRequest {
  timeZone: string;
  /** Any value: the schema checks its shape only, validateSchedule the rest (a 422). */
  schedule: unknown;
  /** Unix milliseconds, inclusive. */
  from: number;
  /** Unix milliseconds, exclusive. */
  to: number;
}

export interface SchedulePreview {
  intervals: DescribedInterval[];
}

/** Why `[from, to)` cannot be previewed: empty, outside docs/api-reference.md 7.4's instants, or longer than the module expands. */
function rangeErrors(from: number, to: number): FieldError[] {
  const errors: FieldError[] = [];
  for (const [field, value] of [
    ['from', from],
    ['to', to],
  ] as const) {
    if (!isInstant(value)) errors.push({ field, message: `must be ${INSTANT_REQUIREMENT}` });
  }
  if (errors.length > 0) return errors;
  if (from >= to) errors.push({ field: 'to', message: 'must be after from' });
  else if (to - from > MAX_EXPANSION_DAYS * DAY) {
    errors.push({ field: 'to', message: `is more than ${MAX_EXPANSION_DAYS} days after from; preview at most ${MAX_EXPANSION_DAYS} days at once` });
  }
  return errors;
}

/**
 * The preview (docs/api-reference.md 9): the UTC intervals `[from, to)` in which the schedule is open on the zone's wall
 * clock, each with its local times and offsets, in order. Every reason the request cannot be answered is one 422
 * naming its fields. The work is bounded by the module's limits: at most MAX_EXPANSION_DAYS days of at most
 * MAX_SCHEDULE_WINDOWS windows a week.
 */
export function previewSchedule(request: SchedulePreviewRequest): SchedulePreview {
  const zone = checkTimeZone('timeZone', request.timeZone);
  const errors = [...validateSchedule(request.schedule, 'schedule'), ...zone.errors, ...rangeErrors(request.from, request.to)];
  if (errors.length > 0 || zone.zone === null) throw new UnprocessableError(detailWithReasons('The schedule cannot be previewed', errors), errors);
  const schedule = request.schedule as Schedule; // validateSchedule found nothing
  let intervals;
  try {
    intervals = describeIntervals(expandSchedule(schedule, zone.zone, request.from, request.to), zone.zone);
  } catch (error) {
    // The checks above are the module's own, so this is not expected; a RangeError is still the client's input, a 422.
    if (!(error instanceof RangeError)) throw error;
    const reason = [{ field: 'schedule', message: error.message }];
    throw new UnprocessableError(detailWithReasons('The schedule cannot be previewed', reason), reason);
  }
  return { intervals };
}
