// Every reason validateSchedule gives (src/shared/schedule/validation.ts, docs/api-reference.md 9), each saying what to send.
import { describe, expect, it } from 'vitest';
import { MAX_EXCEPTED_DATES, MAX_SCHEDULE_WINDOWS, type Schedule, type Weekday } from '../../../../src/shared/schedule/types.js';
import { validateSchedule } from '../../../../src/shared/schedule/validation.js';
import { DAY, weekly } from './fixtures.js';

describe('validateSchedule', () => {
  const valid: Schedule = {
    weekly: [
      { days: ['MO', 'TU', 'WE', 'TH', 'FR'], from: '07:00', to: '19:00' },
      { days: ['SA'], from: '22:00', to: '06:00' },
      { days: ['SU'], from: '00:00', to: '00:00' },
    ],
    except: ['2026-12-24', '2028-02-29'],
  };
  const errorsOf = (value: unknown) => validateSchedule(value);
  const only = (value: unknown) => {
    const errors = errorsOf(value);
    expect(errors).toHaveLength(1);
    return errors[0]!;
  };

  it('accepts a valid schedule, with or without except', () => {
    expect(errorsOf(valid)).toEqual([]);
    expect(errorsOf({ weekly: valid.weekly })).toEqual([]);
    expect(errorsOf({ ...valid, weekly: Array.from({ length: MAX_SCHEDULE_WINDOWS }, () => valid.weekly[0]) })).toEqual([]);
  });

  it('refuses a value that is not a schedule object, and unknown members', () => {
    expect(only(null)).toMatchObject({ field: 'schedule', message: expect.stringContaining('must be an object') });
    expect(only([])).toMatchObject({ field: 'schedule' });
    expect(only({ ...valid, timeZone: 'UTC' })).toEqual({ field: 'schedule.timeZone', message: 'is not a schedule field; send only weekly and except' });
    expect(only({ weekly: [{ ...valid.weekly[0], note: 'x' }] })).toMatchObject({ field: 'schedule.weekly[0].note' });
    expect(validateSchedule(null, 'body.schedule')[0]!.field).toBe('body.schedule');
  });

  it('refuses a missing or empty weekly, and more than the limit of windows', () => {
    expect(only({})).toMatchObject({ field: 'schedule.weekly', message: expect.stringContaining('must be an array of windows') });
    expect(only({ weekly: [] })).toMatchObject({ field: 'schedule.weekly', message: expect.stringContaining('send at least one window') });
    expect(only({ weekly: Array.from({ length: MAX_SCHEDULE_WINDOWS + 1 }, () => valid.weekly[0]) })).toMatchObject({
      field: 'schedule.weekly',
      message: expect.stringContaining(`send at most ${MAX_SCHEDULE_WINDOWS}`),
    });
    expect(only({ weekly: ['MO 08:00-18:00'] })).toMatchObject({ field: 'schedule.weekly[0]', message: expect.stringContaining('must be a window') });
  });

  it('refuses bad, duplicate, missing and empty days', () => {
    expect(only(weekly(['MO', 'Mo' as Weekday], '08:00', '18:00'))).toEqual({
      field: 'schedule.weekly[0].days[1]',
      message: '"Mo" is not a day; use one of MO, TU, WE, TH, FR, SA, SU (upper case)',
    });
    expect(only(weekly(['MONDAY' as Weekday], '08:00', '18:00')).field).toBe('schedule.weekly[0].days[0]');
    expect(only(weekly(['MO', 'TU', 'MO'], '08:00', '18:00'))).toEqual({
      field: 'schedule.weekly[0].days[2]',
      message: 'MO is listed twice in this window; list each day once',
    });
    expect(only(weekly([], '08:00', '18:00'))).toEqual({ field: 'schedule.weekly[0].days', message: 'is empty; list at least one of MO, TU, WE, TH, FR, SA, SU' });
    expect(only({ weekly: [{ from: '08:00', to: '18:00' }] }).field).toBe('schedule.weekly[0].days');
    expect(only(weekly(['MO', 'TU', 'WE', 'TH', 'FR', 'SA', 'SU', 'MO'], '08:00', '18:00')).message).toContain('lists 8 days');
    // The same day in two windows is two windows on that day, not a duplicate.
    expect(errorsOf({ weekly: [{ days: ['MO'], from: '08:00', to: '12:00' }, { days: ['MO'], from: '14:00', to: '18:00' }] })).toEqual([]);
  });

  it('refuses times that are not HH:MM from 00:00 to 23:59, saying what to send', () => {
    for (const bad of ['24:00', '7:5', '12:60', '7:05', '07:5', '07:05:00', ' 07:05', '', '-1:00']) {
      expect(only(weekly(['MO'], bad, '18:00')), bad).toEqual({
        field: 'schedule.weekly[0].from',
        message: `${JSON.stringify(bad)} is not a time of day; use HH:MM with two digits each, from 00:00 to 23:59 (a window that ends at midnight has to "00:00")`,
      });
    }
    expect(only({ weekly: [{ days: ['MO'], from: '08:00', to: 1800 }] })).toMatchObject({ field: 'schedule.weekly[0].to', message: expect.stringContaining('as a string') });
    expect(only({ weekly: [{ days: ['MO'], from: '08:00' }] }).field).toBe('schedule.weekly[0].to');
  });

  it('refuses bad, impossible and duplicate dates, and more than the limit', () => {
    const withExcept = (except: unknown) => ({ weekly: valid.weekly, except });
    expect(only(withExcept(['2026-02-30']))).toEqual({
      field: 'schedule.except[0]',
      message: '2026-02-30 is not in the calendar: February 2026 has days 01 to 28',
    });
    expect(only(withExcept(['2027-02-29'])).message).toContain('February 2027 has days 01 to 28');
    expect(only(withExcept(['2026-04-31'])).message).toContain('April 2026 has days 01 to 30');
    expect(only(withExcept(['2026-13-01']))).toEqual({ field: 'schedule.except[0]', message: '2026-13-01 has no month 13; use a month from 01 to 12' });
    expect(only(withExcept(['2026-00-10'])).message).toContain('has no month 00');
    expect(only(withExcept(['2026-01-00'])).message).toContain('January 2026 has days 01 to 31');
    expect(only(withExcept(['24.12.2026']))).toEqual({ field: 'schedule.except[0]', message: '"24.12.2026" is not a date; use YYYY-MM-DD, e.g. 2026-12-24' });
    expect(only(withExcept(['2026-1-5'])).field).toBe('schedule.except[0]');
    expect(only(withExcept([20261224])).message).toContain('as a string');
    expect(only(withExcept(['2026-12-24', '2026-12-25', '2026-12-24']))).toEqual({
      field: 'schedule.except[2]',
      message: '2026-12-24 is listed twice; list each date once',
    });
    expect(only(withExcept('2026-12-24')).field).toBe('schedule.except');
    const tooMany = Array.from({ length: MAX_EXCEPTED_DATES + 1 }, (_, day) => new Date(Date.UTC(2026, 0, 1) + day * DAY).toISOString().slice(0, 10));
    expect(only(withExcept(tooMany)).message).toContain(`send at most ${MAX_EXCEPTED_DATES}`);
    expect(errorsOf(withExcept(tooMany.slice(0, MAX_EXCEPTED_DATES)))).toEqual([]);
  });

  it('reports every error at once', () => {
    const errors = errorsOf({ weekly: [{ days: ['XX', 'MO', 'MO'], from: '24:00', to: '7:5' }], except: ['2026-02-30'] });
    expect(errors.map((error) => error.field)).toEqual([
      'schedule.weekly[0].days[0]',
      'schedule.weekly[0].days[2]',
      'schedule.weekly[0].from',
      'schedule.weekly[0].to',
      'schedule.except[0]',
    ]);
  });
});
