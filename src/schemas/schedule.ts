// Schemas of schedules in the lock's local time (docs/api-reference.md 9): a ticket's or access permission's `schedule`, a
// secured object's `timeZone`, and the preview's answer, for the routes that take or show them.
import { Type, type Static } from '@sinclair/typebox';
import { MAX_EXCEPTED_DATES, MAX_EXPANSION_DAYS, MAX_INSTANT, MAX_SCHEDULE_WINDOWS, WEEKDAYS } from '../shared/schedule/types.js';
import { DOCUMENTED_ENUM } from '../shared/documented-enum.js';
import { named } from './common.js';

// The shape only: types, required members and no unknown ones (a 400, docs/api-reference.md 4.3), with the limits as
// bounds on the work a request can cause. Which strings are days, times and dates is validateSchedule's (a 422 whose
// messages say what to send instead), as commands and channels are checked by the services, not by enums here.

export const ScheduleWindowSchema = named(
  'ScheduleWindow',
  Type.Object(
  {
    // validateSchedule checks the days (a 422 saying what to send); the documents list them.
    days: Type.Array(Type.String({ maxLength: 16, [DOCUMENTED_ENUM]: [...WEEKDAYS] }), {
      maxItems: WEEKDAYS.length,
      description: `The days the window starts on, each once: ${WEEKDAYS.map((day) => `\`${day}\``).join(', ')}.`,
    }),
    from: Type.String({ maxLength: 16, description: 'Opening wall-clock time, `HH:MM` (00:00 to 23:59), inclusive.' }),
    to: Type.String({
      maxLength: 16,
      description:
        'Closing wall-clock time, `HH:MM`, exclusive. At or before `from` the window crosses midnight into the next day ' +
        '(equal to `from`: 24 hours); it still belongs to the day it starts.',
    }),
  },
  { additionalProperties: false, description: 'A weekly window on the lock\'s wall clock.' },
  ),
  { days: ['MO', 'TU', 'WE', 'TH', 'FR'], from: '07:00', to: '19:00' },
);

export const ScheduleSchema = named('Schedule', Type.Object(
  {
    weekly: Type.Array(ScheduleWindowSchema, {
      maxItems: MAX_SCHEDULE_WINDOWS,
      description: `The weekly windows, 1 to ${MAX_SCHEDULE_WINDOWS}; the schedule is open in any of them.`,
    }),
    except: Type.Optional(
      Type.Array(Type.String({ maxLength: 32 }), {
        maxItems: MAX_EXCEPTED_DATES,
        description:
          `Dates \`YYYY-MM-DD\` (the lock's calendar) on which no window starts, at most ${MAX_EXCEPTED_DATES}. A window that ` +
          'would start on an excepted date does not open, not even its part after midnight.',
      }),
    ),
  },
  {
    additionalProperties: false,
    description:
      "When the ticket opens, on the lock's wall clock (its `timeZone`): an instant is inside when the local time falls in a " +
      'window on a listed day and that date is not excepted. On a spring-forward night a window can be shorter, on a ' +
      'fall-back night longer. Credentials carry it as `win`, UTC intervals, so the lock needs no time-zone rules.',
    examples: [{ weekly: [{ days: ['MO', 'TU', 'WE', 'TH', 'FR'], from: '07:00', to: '19:00' }], except: ['2026-12-24'] }],
  },
));

export type ScheduleBody = Static<typeof ScheduleSchema>;

export const TimeZoneSchema = Type.String({
  minLength: 1,
  maxLength: 64,
  description: 'The lock\'s time zone, an IANA name such as `Europe/Berlin` (default `UTC`). An unknown zone is a 422.',
  examples: ['Europe/Berlin'],
});

export const ScheduleIntervalSchema = named('ScheduleInterval', Type.Object({
  start: Type.Integer({ description: 'Start, Unix milliseconds (UTC), inclusive.' }),
  end: Type.Integer({ description: 'End, Unix milliseconds (UTC), exclusive.' }),
  localStart: Type.String({ description: "The lock's wall clock at `start`: ISO 8601 without offset, e.g. `2026-03-29T03:00:00`." }),
  localEnd: Type.String({ description: "The lock's wall clock at `end` (the first instant after the interval)." }),
  startOffset: Type.String({ description: 'The UTC offset in force at `start`, e.g. `+02:00`.' }),
  endOffset: Type.String({ description: 'The UTC offset in force at `end`.' }),
}), { start: 1774746000000, end: 1774753200000, localStart: '2026-03-29T01:00:00', localEnd: '2026-03-29T04:00:00', startOffset: '+01:00', endOffset: '+02:00' });

/** POST /operatorapi/schedules/preview (docs/api-reference.md 9): a schedule, the zone to read it in, and the range to show. */
export const SchedulePreviewRequestSchema = named('SchedulePreviewRequest', Type.Object(
  {
    timeZone: TimeZoneSchema,
    schedule: ScheduleSchema,
    from: Type.Integer({ minimum: 0, maximum: MAX_INSTANT, description: 'Start of the range, Unix milliseconds (UTC), inclusive.' }),
    to: Type.Integer({
      minimum: 0,
      maximum: MAX_INSTANT,
      description: `End of the range, Unix milliseconds (UTC), exclusive: after \`from\`, at most ${MAX_EXPANSION_DAYS} days after it.`,
    }),
  },
  {
    additionalProperties: false,
    examples: [
      {
        timeZone: 'Europe/Berlin',
        schedule: { weekly: [{ days: ['SU'], from: '01:00', to: '04:00' }] },
        from: 1774137600000,
        to: 1774828800000,
      },
    ],
  },
));

export const SchedulePreviewSchema = named('SchedulePreview', Type.Object({
  intervals: Type.Array(ScheduleIntervalSchema, {
    description: 'The UTC intervals within `[from, to)` in which the schedule is open, in order, merged where they touch.',
  }),
}), { intervals: [{ start: 1774746000000, end: 1774753200000, localStart: '2026-03-29T01:00:00', localEnd: '2026-03-29T04:00:00', startOffset: '+01:00', endOffset: '+02:00' }] });
