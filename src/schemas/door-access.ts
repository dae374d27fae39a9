// Schemas of "who can open this door" (docs/api-reference.md 13).
import { Type } from '@sinclair/typebox';
import { defaultsOptional, Millis, named, PageLimit } from './common.js';
import { ScheduleSchema } from './schedule.js';

export const DoorAccessQuery = defaultsOptional(
  Type.Object(
    {
      at: Type.Optional(Millis('The instant asked about, Unix milliseconds (docs/api-reference.md 7.4\'s range). Default: now.')),
      limit: PageLimit,
      cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'Opaque cursor from the `Link: rel="next"` header.' })),
    },
    { additionalProperties: false },
  ),
);

export const DoorAccessSchema = named(
  'DoorAccess',
  Type.Object(
    {
      mobileDeviceId: Type.String({ description: 'The phone whose credential opens the door.' }),
      residentId: Type.Optional(
        Type.String({ description: 'The resident: the access permission\'s for a granted ticket, else one the phone belongs to. Absent: none.' }),
      ),
      residentName: Type.Optional(Type.String({ description: 'The resident\'s name.' })),
      tokenId: Type.String({ description: 'The ticket.' }),
      accessPermissionId: Type.Optional(Type.String({ description: 'The access permission that made the ticket; absent for a direct ticket.' })),
      beginDate: Type.Integer({ description: 'The ticket\'s start, Unix milliseconds.' }),
      endDate: Type.Integer({ description: 'The ticket\'s end, Unix milliseconds.' }),
      schedule: Type.Optional(ScheduleSchema),
      nextWindow: Type.Optional(
        Type.Object(
          {
            start: Type.Integer({ description: 'UTC milliseconds.' }),
            end: Type.Integer({ description: 'UTC milliseconds: when the door stops opening for this ticket until its next window.' }),
          },
          { description: 'With a schedule: the window, read in the lock\'s time zone, that lets the ticket open at `at`.' },
        ),
      ),
      keyBound: Type.Boolean({ description: 'The phone has a registered key: its credential is bound to it (docs/api-reference.md 11.2).' }),
      override: Type.Optional(Type.Literal(true, { description: 'The ticket opens during a lockdown too (docs/api-reference.md 15); absent otherwise.' })),
    },
    { additionalProperties: false },
  ),
  {
    mobileDeviceId: 'phone-alice',
    residentId: '5b0c7f4e-2d1a-4c3b-9e8f-7a6b5c4d3e2f',
    residentName: 'Alice',
    tokenId: '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d',
    accessPermissionId: '1f2e3d4c-5b6a-4978-8877-665544332211',
    beginDate: 1767225600000,
    endDate: 1798761600000,
    schedule: { weekly: [{ days: ['MO', 'TU', 'WE', 'TH', 'FR'], from: '07:00', to: '19:00' }] },
    nextWindow: { start: 1767337200000, end: 1767380400000 },
    keyBound: true,
  },
);
