// The schedule checks a ticket or access permission passes before it is written (docs/api-reference.md 9, 4.3, 5).
import { describe, expect, it } from 'vitest';
import { neverOpensError, scheduleErrors } from '../../../../src/shared/schedule/ticket-checks.js';
import type { Schedule } from '../../../../src/shared/schedule/types.js';

const DAY = 86_400_000;
const weekdays: Schedule = { weekly: [{ days: ['MO', 'TU', 'WE', 'TH', 'FR'], from: '08:00', to: '12:00' }] };
/** Saturday 2026-03-28 00:00 to Sunday 2026-03-29 20:00 in Berlin (+01:00, then +02:00). */
const weekend = { beginDate: Date.UTC(2026, 2, 27, 23), endDate: Date.UTC(2026, 2, 29, 18) };

describe('scheduleErrors', () => {
  it('is empty for no schedule and for a valid one, and names each bad field under schedule.', () => {
    expect(scheduleErrors(undefined)).toEqual([]);
    expect(scheduleErrors(weekdays)).toEqual([]);
    expect(scheduleErrors({ weekly: [{ days: ['XX'], from: '8', to: '12:00' }] }).map((error) => error.field)).toEqual([
      'schedule.weekly[0].days[0]',
      'schedule.weekly[0].from',
    ]);
  });
});

describe('neverOpensError', () => {
  it('refuses a schedule that opens at no instant of the validity in the lock\'s zone', () => {
    expect(neverOpensError(weekdays, ['Europe/Berlin'], weekend, weekend.beginDate - DAY)).toEqual({
      field: 'schedule',
      message: "the schedule never opens within the ticket's validity",
    });
    // One more hour into Monday in Berlin (07:00Z is 09:00 CEST): it opens.
    expect(neverOpensError(weekdays, ['Europe/Berlin'], { ...weekend, endDate: Date.UTC(2026, 2, 30, 7) }, weekend.beginDate)).toBeNull();
  });

  it('checks from now on when the validity began earlier, at most MAX_EXPANSION_DAYS far', () => {
    // Valid since Monday, but the windows already passed: from Friday noon Berlin on, none before Sunday evening.
    const now = Date.UTC(2026, 2, 27, 11);
    expect(neverOpensError(weekdays, ['Europe/Berlin'], { beginDate: Date.UTC(2026, 2, 23), endDate: weekend.endDate }, now)).not.toBeNull();
    // A validity of centuries is checked over its first 400 days only (and opens in them).
    expect(neverOpensError(weekdays, ['UTC'], { beginDate: 0, endDate: 8_640_000_000_000_000 }, now)).toBeNull();
  });

  it('names the zones of a lock group in which the schedule never opens', () => {
    // Friday 23:00Z to Sunday 23:30Z: Monday 08:00 comes in Tokyo (Sunday 23:00Z) but not in Berlin (Monday 06:00Z).
    const validity = { beginDate: Date.UTC(2026, 2, 27, 23), endDate: Date.UTC(2026, 2, 29, 23, 30) };
    expect(neverOpensError(weekdays, ['Asia/Tokyo'], validity, 0)).toBeNull();
    expect(neverOpensError(weekdays, ['Asia/Tokyo', 'Europe/Berlin'], validity, 0)).toEqual({
      field: 'schedule',
      message: "the schedule never opens within the ticket's validity at the locks in Europe/Berlin",
    });
  });
});
