// Schemas of tickets (docs/api-reference.md 4.3, 8.4): as requested, as answered, and the filters of their lists and of revocations.
import { Type } from '@sinclair/typebox';
import { ChannelSchema, CommandSchema, defaultsOptional, Millis, named, PAGE_PARAMETERS, RequestedChannel, RequestedCommand } from './common.js';
import { ScheduleSchema } from './schedule.js';

export const NewTicketSchema = named(
  'NewTicket',
  Type.Object(
    {
      securedObjectId: Type.String({ minLength: 1, maxLength: 128, description: 'The lock the ticket opens.' }),
      mobileDeviceId: Type.String({ minLength: 1, maxLength: 128, description: 'The device the ticket is issued to.' }),
      beginDate: Millis('Start of validity, Unix milliseconds (0: since 1970).'),
      endDate: Millis('End of validity (exclusive), Unix milliseconds; must be in the future.'),
      commands: Type.Array(RequestedCommand, {
        maxItems: 8,
        description: 'Permitted commands: `tokn`, `open`, `clos`.',
      }),
      channels: Type.Array(RequestedChannel, {
        maxItems: 8,
        description: 'Channels the ticket may be used over; each must be supported by the lock.',
      }),
      schedule: Type.Optional(ScheduleSchema),
      override: Type.Optional(
        Type.Boolean({
          description:
            '`true`: the ticket opens during a lockdown (docs/api-reference.md 15); its credentials carry `ovr: true`. Only a ' +
            'caller holding `lockdown:manage` may set it (`403` otherwise).',
        }),
      ),
    },
    {
      additionalProperties: false,
      examples: [
        {
          securedObjectId: 'front-door',
          mobileDeviceId: 'phone-alice-1',
          beginDate: 1767225600000,
          endDate: 1798761600000,
          commands: ['open'],
          channels: ['btlespp'],
        },
      ],
    },
  ),
);

export const TicketStatusSchema = named(
  'TicketStatus',
  Type.Union([Type.Literal('VALID'), Type.Literal('REVOKED'), Type.Literal('EXPIRED')], {
    description: '`VALID`, `REVOKED` (revocationDate set) or `EXPIRED` (endDate passed, not revoked).',
  }),
  'VALID',
);

/** The example ticket of the documents: the same one in every answer that shows a ticket. */
export const TICKET_EXAMPLE = {
  id: '0b4f5b9e-3f3a-4c56-9a41-3c2b1f0e9d8c',
  securedObjectId: 'front-door',
  mobileDeviceId: 'phone-alice-1',
  beginDate: 1767225600000,
  endDate: 1798761600000,
  creationDate: 1767225600000,
  commands: ['open' as const],
  channels: ['btlespp' as const],
  status: 'VALID' as const,
};

export const TicketSchema = named(
  'Ticket',
  Type.Object({
    id: Type.String({ description: 'The ticket id.' }),
    securedObjectId: Type.String(),
    mobileDeviceId: Type.String(),
    beginDate: Type.Integer({ description: 'Start of validity, Unix milliseconds.' }),
    endDate: Type.Integer({ description: 'End of validity (exclusive), Unix milliseconds.' }),
    creationDate: Type.Integer({ description: 'Creation time, Unix milliseconds.' }),
    commands: Type.Array(CommandSchema, { description: 'Permitted commands.' }),
    channels: Type.Array(ChannelSchema, { description: 'Channels the ticket may be used over.' }),
    status: TicketStatusSchema,
    revocationDate: Type.Optional(Type.Integer({ description: 'When it was revoked; absent while not revoked.' })),
    downloadDate: Type.Optional(Type.Integer({ description: 'When the device first downloaded it; absent before.' })),
    accessPermissionId: Type.Optional(Type.String({ description: 'The Access API permission that made it, if any.' })),
    schedule: Type.Optional(ScheduleSchema),
    revocationAppliedTime: Type.Optional(
      Type.Integer({
        description:
          'When its lock applied its revocation (docs/api-reference.md 8.4): the lock synced past it or reported a serial at or ' +
          'above it, Unix milliseconds. Absent while not revoked, while the lock has not applied it yet, and for a revocation ' +
          'the lock never needed (the ticket was never downloaded).',
      }),
    ),
    override: Type.Optional(
      Type.Literal(true, { description: 'The ticket opens during a lockdown (docs/api-reference.md 15); absent on ordinary tickets.' }),
    ),
  }),
  TICKET_EXAMPLE,
);

export const TicketQuery = defaultsOptional(
  Type.Object(
    {
      mobileDeviceId: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: 'Only this device\'s tickets.' })),
      securedObjectId: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: 'Only this lock\'s tickets.' })),
      status: Type.Optional(TicketStatusSchema),
      ...PAGE_PARAMETERS,
    },
    { additionalProperties: false },
  ),
);

export const RevocationQuery = defaultsOptional(
  Type.Object(
    {
      applied: Type.Optional(
        // An enum of the two words rather than a boolean: a 400 then names the allowed values.
        Type.Unsafe<'true' | 'false'>({
          type: 'string',
          enum: ['true', 'false'],
          description:
            '`false`: revocations their lock has not applied yet while a credential may still be alive there (the doors ' +
            'that may still open for a revoked phone); `true`: applied; absent: both.',
        }),
      ),
      securedObjectId: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: 'Only this lock\'s revocations (a deleted lock\'s too).' })),
      residentId: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 128,
          description:
            'Only the resident\'s: tickets of its mobile devices and of its access permissions, as ' +
            '`POST /v1/residents/{id}/revocations` revokes them. An unknown id lists nothing.',
        }),
      ),
      ...PAGE_PARAMETERS,
    },
    { additionalProperties: false },
  ),
);
