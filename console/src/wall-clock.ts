// An instant on a lock's wall clock (docs/api-reference.md 9): the API answers UTC milliseconds; the console shows them
// in the lock's time zone, so an operator reads what the lock does. Imports nothing, so the browser test formats its
// expected text with the same function.

/** An instant on the lock's wall clock: `Mon 2026-11-30 19:00` in `timeZone` (an IANA name the lock carries). */
export function lockTime(ms: number, timeZone: string): string {
  const parts = new Intl.DateTimeFormat('en-GB', {
    timeZone,
    weekday: 'short',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
  }).formatToParts(new Date(ms));
  const part = (type: Intl.DateTimeFormatPartTypes) => parts.find((candidate) => candidate.type === type)?.value ?? '';
  return `${part('weekday')} ${part('year')}-${part('month')}-${part('day')} ${part('hour')}:${part('minute')}`;
}
