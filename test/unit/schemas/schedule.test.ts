// The schedule schemas (src/schemas/schedule.ts): the shape a route checks (a 400) before validateSchedule says what
// to send (a 422, docs/api-reference.md 9).
import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import { ScheduleSchema, TimeZoneSchema } from '../../../src/schemas/schedule.js';
import { MAX_EXCEPTED_DATES, MAX_SCHEDULE_WINDOWS } from '../../../src/shared/schedule/types.js';
import { validateSchedule } from '../../../src/shared/schedule/validation.js';

describe('ScheduleSchema (the shape a route checks before validateSchedule)', () => {
  it('takes every well-typed schedule, leaving days, times and dates to validateSchedule (a 422 that says what to send)', () => {
    expect(Value.Check(ScheduleSchema, { weekly: [{ days: ['MO'], from: '08:00', to: '18:00' }], except: ['2026-12-24'] })).toBe(true);
    expect(Value.Check(ScheduleSchema, { weekly: [{ days: ['Mo'], from: '24:00', to: '7:5' }], except: ['2026-02-30'] })).toBe(true);
    expect(validateSchedule({ weekly: [{ days: ['Mo'], from: '24:00', to: '7:5' }], except: ['2026-02-30'] })).toHaveLength(4);
  });

  it('refuses unknown members, wrong types, missing members and more items than the limits (a 400)', () => {
    const window = { days: ['MO'], from: '08:00', to: '18:00' };
    for (const bad of [
      { weekly: [window], timeZone: 'UTC' },
      { weekly: [{ ...window, note: 'x' }] },
      { weekly: [{ ...window, from: 800 }] },
      { weekly: [{ days: ['MO'], from: '08:00' }] },
      { except: ['2026-12-24'] },
      { weekly: Array.from({ length: MAX_SCHEDULE_WINDOWS + 1 }, () => window) },
      { weekly: [{ ...window, days: ['MO', 'TU', 'WE', 'TH', 'FR', 'SA', 'SU', 'MO'] }] },
      { weekly: [window], except: Array.from({ length: MAX_EXCEPTED_DATES + 1 }, () => '2026-12-24') },
    ]) {
      expect(Value.Check(ScheduleSchema, bad), JSON.stringify(bad).slice(0, 80)).toBe(false);
    }
    expect(Value.Check(TimeZoneSchema, 'Europe/Berlin')).toBe(true);
    expect(Value.Check(TimeZoneSchema, '')).toBe(false);
  });
});
