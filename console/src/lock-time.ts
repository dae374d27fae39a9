// A schedule's windows on a lock's wall clock (docs/api-reference.md 9): written in the lock's time zone, shown as the
// lock reads them. An instant is formatted in that zone by wall-clock.ts.
import type { Schemas } from './api.ts';

const DAY_NAMES: Record<string, string> = { MO: 'Mon', TU: 'Tue', WE: 'Wed', TH: 'Thu', FR: 'Fri', SA: 'Sat', SU: 'Sun' };
const WEEK = ['MO', 'TU', 'WE', 'TH', 'FR', 'SA', 'SU'];

/** `Mon–Fri` for a run of three or more days in week order, else the days listed: `Sat, Sun`. */
function daysText(days: string[]): string {
  const ordered = [...days].sort((a, b) => WEEK.indexOf(a) - WEEK.indexOf(b));
  const indexes = ordered.map((day) => WEEK.indexOf(day));
  const consecutive = indexes.every((index, position) => position === 0 || index === indexes[position - 1]! + 1);
  if (ordered.length === 7) return 'Every day';
  if (consecutive && ordered.length >= 3) return `${DAY_NAMES[ordered[0]!] ?? ordered[0]}–${DAY_NAMES[ordered.at(-1)!] ?? ordered.at(-1)}`;
  return ordered.map((day) => DAY_NAMES[day] ?? day).join(', ');
}

/** A schedule's windows as the lock reads them: `Mon–Fri 07:00–19:00; Sat 10:00–14:00; except 2026-12-24`. */
export function scheduleWindows(schedule: Schemas['Schedule']): string {
  const windows = schedule.weekly.map((window) => {
    const overnight = window.to <= window.from ? ' (to the next day)' : '';
    return `${daysText(window.days)} ${window.from}–${window.to}${overnight}`;
  });
  const except = schedule.except && schedule.except.length > 0 ? [`except ${schedule.except.join(', ')}`] : [];
  return [...windows, ...except].join('; ');
}
