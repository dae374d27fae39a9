// What the schedule unit tests share: instants written as ISO text, and schedules of one weekly window.
import type { Schedule, Weekday } from '../../../../src/shared/schedule/types.js';

export const DAY = 86_400_000;
export const HOUR = 3_600_000;

/** The instant an ISO text names, in Unix milliseconds; a typo in a test fails loudly rather than as NaN. */
export const at = (iso: string): number => {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) throw new Error(`bad test instant ${iso}`);
  return ms;
};

/** A schedule of one window on the given days, with the excepted dates when given. */
export const weekly = (days: Weekday[], from: string, to: string, except?: string[]): Schedule => ({
  weekly: [{ days, from, to }],
  ...(except ? { except } : {}),
});
