// Schemas of the tenant's event log (docs/api-reference.md 10): an event as the feed answers it and a webhook delivers it.
import { Type } from '@sinclair/typebox';
import { EVENT_TYPES } from '../shared/event-types.js';
import { defaultsOptional, named, PAGE_PARAMETERS } from './common.js';

export const EventSchema = named(
  'Event',
  Type.Object({
    id: Type.String({
      format: 'uuid',
      description: "The event's id: the `webhook-id` it is delivered under, the same on every retry and replay.",
    }),
    type: Type.Unsafe<string>({
      type: 'string',
      enum: [...EVENT_TYPES],
      description:
        'What happened, e.g. `ticket.created` (docs/api-reference.md 10). The same as the audit view\'s `action`: the audit view ' +
        'is a projection of this log.',
    }),
    sequence: Type.Integer({
      minimum: 1,
      description: "The event's number in its tenant's sequence: 1, 2, 3, ... in commit order, without gaps (the audit view's `id`).",
    }),
    time: Type.Integer({ description: 'When, Unix milliseconds.' }),
    data: Type.Record(Type.String(), Type.Unknown(), {
      description:
        'The ids the change touched, e.g. `{ticketIds, accessPermissionId}` for `ticket.created` by a grant, or ' +
        '`{residentId, mobileDeviceId}` for `resident.device_added`. A change that makes or revokes many tickets writes ' +
        'one event per 1,000 of them, each with its `ticketIds`.',
    }),
    requestId: Type.Optional(
      Type.String({ description: 'The id the server gave the request that made the change (its `X-Request-Id` answer).' }),
    ),
  }),
  {
    id: '1f2e3d4c-5b6a-4978-8e9f-0a1b2c3d4e5f',
    type: 'ticket.created',
    sequence: 42,
    time: 1767225600000,
    data: { ticketIds: ['0b4f5b9e-3f3a-4c56-9a41-3c2b1f0e9d8c'] },
    requestId: '5d6e7f80-91a2-4b3c-8d4e-5f6a7b8c9d0e',
  },
);

export const EventsQuery = defaultsOptional(
  Type.Object(
    {
      after: Type.Integer({
        minimum: 0,
        maximum: 9007199254740991,
        default: 0,
        description: 'Only events with a higher `sequence`: the last one a client has seen (0: from the oldest kept).',
      }),
      types: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 2000,
          description: 'Comma-separated event types; only these. An unknown type is refused (400).',
        }),
      ),
      limit: PAGE_PARAMETERS.limit,
    },
    { additionalProperties: false },
  ),
);
