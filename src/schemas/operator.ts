// Schemas of the Operator API's resources (docs/api-reference.md 4): secured objects, mobile devices, tickets, audit events.
import { Type } from '@sinclair/typebox';
import { defaultsOptional } from './query.js';
import { ScheduleSchema, TimeZoneSchema } from './schedule.js';
import { EVENT_TYPES } from '../shared/event-types.js';
import { CHANNELS, COMMANDS, REMOVED_NFC_CHANNEL } from '../shared/vocabulary.js';
import { DOCUMENTED_ENUM } from '../shared/documented-enum.js';
import { named } from './named.js';

/**
 * Operator-chosen ids: URL-safe unreserved characters (RFC 3986 2.3), 1 to 128 of them, but not `.` or `..`: clients
 * remove those dot segments from a path (RFC 3986 5.2.4), so `/securedobjects/..` could never be reached.
 */
export const ID_PATTERN = '^(?!\\.\\.?$)[A-Za-z0-9._~-]{1,128}$';
const Millis = (description: string) => Type.Integer({ minimum: 0, maximum: 8640000000000000, description });

/** The channels an answer may name: `nfccard` only where an operator revived it (docs/service-overview.md 9). */
const ANSWERED_CHANNELS = [...CHANNELS, REMOVED_NFC_CHANNEL];

/** A command in an answer: only the service's documented commands are ever stored (docs/service-overview.md 2.2). */
export const CommandSchema = named(
  'Command',
  Type.Unsafe<string>({ type: 'string', enum: [...COMMANDS], description: 'A command: `tokn`, `open` or `clos` (docs/service-overview.md 2.2).' }),
  'open',
);

/** A channel in an answer. */
export const ChannelSchema = named(
  'Channel',
  Type.Unsafe<string>({
    type: 'string',
    enum: ANSWERED_CHANNELS,
    description: 'A channel: `btlespp` (Bluetooth LE); `nfccard` (removed on 01.02.2018) only where an operator revived it.',
  }),
  'btlespp',
);

/**
 * A command or channel in a request: the documents list the allowed values, but the schema does not check them: the
 * services do, with a 422 naming the allowed ones beside every other invalid field (docs/api-reference.md 4.3).
 */
const RequestedCommand = Type.String({ maxLength: 16, [DOCUMENTED_ENUM]: [...COMMANDS] });
const RequestedChannel = Type.String({ maxLength: 32, [DOCUMENTED_ENUM]: ANSWERED_CHANNELS });

export const ObjectIdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 256, description: 'The id.' }) });

export const NewSecuredObjectSchema = named(
  'NewSecuredObject',
  Type.Object(
    {
      id: Type.Optional(Type.String({ pattern: ID_PATTERN, description: 'Your id for the lock; the server makes one when absent.' })),
      channels: Type.Array(RequestedChannel, {
        maxItems: 8,
        description: 'Channels the lock supports: `btlespp` (Bluetooth LE). `nfccard` was removed on 01.02.2018.',
      }),
      localName: Type.String({
        minLength: 1,
        maxLength: 64,
        pattern: '^[^/\\s]+$',
        description: 'The Bluetooth LE local name (no `/`, no white space).',
      }),
      uuid: Type.String({
        pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$',
        description: 'The Bluetooth LE service UUID.',
      }),
      timeZone: Type.Optional(TimeZoneSchema),
    },
    {
      additionalProperties: false,
      examples: [{ id: 'front-door', channels: ['btlespp'], localName: 'LOCK-0042', uuid: '7d8a0c1e-4b7f-4d5e-9a41-3c2b1f0e9d8c' }],
    },
  ),
);

export const SecuredObjectSchema = named(
  'SecuredObject',
  Type.Object({
    id: Type.String({ description: 'The secured object id.' }),
    channels: Type.Array(ChannelSchema, { description: 'Channels the lock supports.' }),
    urls: Type.Array(Type.String(), { description: 'One address per channel: `btlespp://<localName>/<uuid>` (docs/service-overview.md 2.1).' }),
    creationTime: Type.Integer({ description: 'Creation time, Unix milliseconds.' }),
    timeZone: Type.String({
      description: 'The IANA time zone the lock\'s schedules are read in (docs/api-reference.md 9), in its canonical spelling; `UTC` unless set.',
      examples: ['Europe/Berlin'],
    }),
  }),
  {
    id: 'front-door',
    channels: ['btlespp'],
    urls: ['btlespp://LOCK-0042/7d8a0c1e-4b7f-4d5e-9a41-3c2b1f0e9d8c'],
    creationTime: 1767225600000,
    timeZone: 'Europe/Berlin',
  },
);

/** PATCH /operatorapi/securedobjects/{id} (docs/api-reference.md 9): the fields to change, at least one. */
export const SecuredObjectChangesSchema = named(
  'SecuredObjectChanges',
  Type.Object(
    { timeZone: Type.Optional(TimeZoneSchema) },
    { additionalProperties: false, minProperties: 1, examples: [{ timeZone: 'Europe/Berlin' }] },
  ),
);

// docs/api-reference.md 8.4, 8.5: the single-lock read adds how far the backend's truth has reached the lock. The list and
// the create answer stay without it, so a page of locks costs no count per lock.
export const SecuredObjectDetailSchema = named(
  'SecuredObjectDetail',
  Type.Composite([
    SecuredObjectSchema,
    Type.Object({
      lastSeenTime: Type.Optional(
        Type.Integer({
          description:
            'When a sync or log upload of the lock last reached the server, Unix milliseconds, to within 30 s (a lock that ' +
            'polls with nothing new is recorded at most every 30 s). Absent until the lock was seen.',
        }),
      ),
      appliedThrough: Type.Optional(
        Type.Integer({
          description:
            'The change-log position (the `serial` of sync answers and revocation lists) the lock has applied everything up ' +
            'to: its sync cursor, or the `appliedSerial` of a log upload (docs/api-reference.md 8.4). Absent until the lock was seen.',
        }),
      ),
      pendingRevocations: Type.Integer({
        minimum: 0,
        description:
          'Revoked tickets of this lock whose revocation it has not applied yet and whose credential may still be alive ' +
          'there (at its clock): how many revoked phones may still open this door. `GET /operatorapi/revocations?applied=false` lists them.',
      }),
      clockOffset: Type.Optional(
        Type.Integer({
          description:
            'The lock\'s clock minus the server\'s, milliseconds, estimated from its last log upload (docs/api-reference.md 8.5). ' +
            'Negative: the lock runs behind and accepts credentials that long after they expired. Absent until estimated.',
        }),
      ),
      clockDrift: Type.Boolean({ description: 'True when the lock\'s clock is off by more than 30 s (`clockOffset`).' }),
    }),
  ]),
  {
    id: 'front-door',
    channels: ['btlespp'],
    urls: ['btlespp://LOCK-0042/7d8a0c1e-4b7f-4d5e-9a41-3c2b1f0e9d8c'],
    creationTime: 1767225600000,
    timeZone: 'Europe/Berlin',
    lastSeenTime: 1767254470000,
    appliedThrough: 17,
    pendingRevocations: 0,
    clockOffset: -1200,
    clockDrift: false,
  },
);

export const NewMobileDeviceSchema = named(
  'NewMobileDevice',
  Type.Object(
    {
      id: Type.Optional(Type.String({ pattern: ID_PATTERN, description: 'Your id for the device; the server makes one when absent.' })),
      name: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'A name for people.' })),
    },
    { additionalProperties: false, examples: [{ id: 'phone-alice-1', name: "Alice's phone" }] },
  ),
);

export const MobileDeviceSchema = named(
  'MobileDevice',
  Type.Object({
    id: Type.String({ description: 'The mobile device id.' }),
    name: Type.Optional(Type.String()),
    creationTime: Type.Integer({ description: 'Creation time, Unix milliseconds.' }),
  }),
  { id: 'phone-alice-1', name: "Alice's phone", creationTime: 1767225600000 },
);

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
  }),
  TICKET_EXAMPLE,
);

export const TicketQuery = defaultsOptional(
  Type.Object(
    {
      mobileDeviceId: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: 'Only this device\'s tickets.' })),
      securedObjectId: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: 'Only this lock\'s tickets.' })),
      status: Type.Optional(TicketStatusSchema),
      limit: Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'Page size, 1 to 1000.' }),
      cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'Opaque cursor from `Link: rel="next"`.' })),
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
      limit: Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'Page size, 1 to 1000.' }),
      cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'Opaque cursor from `Link: rel="next"`.' })),
    },
    { additionalProperties: false },
  ),
);

export const AuditEventSchema = named(
  'AuditEvent',
  Type.Object({
    id: Type.String({
      pattern: '^[1-9][0-9]*$',
      description: "The event's number in its tenant's own sequence: 1, 2, 3, ... in append order, without gaps.",
    }),
    time: Type.Integer({ description: 'When, Unix milliseconds.' }),
    actor: Type.String({ description: '`client:<id>`, `user:<id>` or `cli`.' }),
    action: Type.Unsafe<string>({
      type: 'string',
      enum: [...EVENT_TYPES],
      description: 'What happened: the event\'s `type` (docs/api-reference.md 10), e.g. `ticket.created`.',
    }),
    target: Type.String({
      description:
        'What it happened to, e.g. `ticket:<id>`; for the tickets a grant, membership change or removal made or revoked ' +
        '(in chunks of up to 1,000), the change itself, e.g. `access_permission:<id>`.',
    }),
    requestId: Type.Optional(
      Type.String({ description: 'The id the server gave the request that made the change (its `X-Request-Id` answer).' }),
    ),
  }),
  {
    id: '42',
    time: 1767225600000,
    actor: 'client:3f2a9c4e-1b7d-4e8f-9a0b-1c2d3e4f5a6b',
    action: 'ticket.created',
    target: 'ticket:0b4f5b9e-3f3a-4c56-9a41-3c2b1f0e9d8c',
    requestId: '5d6e7f80-91a2-4b3c-8d4e-5f6a7b8c9d0e',
  },
);

export const AuditQuery = defaultsOptional(
  Type.Object(
    {
      target: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 300,
          description: 'Only events about this target, e.g. `ticket:<id>` (its creation and revocation whatever made them).',
        }),
      ),
      action: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Only this action, e.g. `ticket.revoked`.' })),
      from: Type.Optional(Millis('Only events at or after this time, Unix milliseconds.')),
      to: Type.Optional(Millis('Only events before this time, Unix milliseconds.')),
      limit: Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'Page size, 1 to 1000.' }),
      cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'Opaque cursor from `Link: rel="next"`.' })),
    },
    { additionalProperties: false },
  ),
);

// docs/api-reference.md 8.1: the tenant's ticket keys, what its locks verify credentials with.
export const TicketKeySchema = named(
  'TicketKey',
  Type.Object({
    kid: Type.String({ description: 'The key id, as in the credentials\' `kid` and the tenant\'s key set.' }),
    alg: Type.Unsafe<string>({ type: 'string', enum: ['EdDSA', 'ES256'], description: 'The signing algorithm: `EdDSA` or `ES256`.' }),
    state: Type.Union([Type.Literal('announced'), Type.Literal('active'), Type.Literal('retired')], {
      description:
        '`announced`: published, signs from `activatesTime`; `active`: signs now (until `retiresTime` when a successor is ' +
        'announced); `retired`: signs no more, published until `publishedUntil`. Withdrawn keys (an emergency rotation) ' +
        'are not listed: they are no longer published.',
    }),
    createdTime: Type.Integer({ description: 'When it was made (and first published), Unix milliseconds.' }),
    activatesTime: Type.Integer({ description: 'When it signs its first credential, Unix milliseconds.' }),
    retiresTime: Type.Optional(
      Type.Integer({ description: 'Its last signature: a newer key signs from then on, Unix milliseconds. Absent while none is.' }),
    ),
    publishedUntil: Type.Optional(
      Type.Integer({
        description: 'When it drops out of the key set: one CREDENTIAL_MAX_LIFETIME after its last signature, Unix milliseconds.',
      }),
    ),
  }),
  { kid: 'tk-2026-01', alg: 'EdDSA', state: 'active', createdTime: 1767225600000, activatesTime: 1767225600000 },
);

export const TicketKeyParams = Type.Object({
  kid: Type.String({ minLength: 1, maxLength: 128, description: 'The key id.' }),
});

export const NewTicketKeyRotationSchema = named(
  'NewTicketKeyRotation',
  Type.Object(
    {
      emergency: Type.Optional(
        Type.Boolean({
          default: false,
          description:
            'A leaked key: the new key signs at once and every other key is withdrawn from the key set at once. Locks that ' +
            'are never online keep the old keys until an installer visits them. Default false: the new key is announced ' +
            'and signs one CREDENTIAL_MAX_LIFETIME from now.',
        }),
      ),
    },
    { additionalProperties: false, examples: [{ emergency: false }] },
  ),
);

export const TicketKeyRotationSchema = named(
  'TicketKeyRotation',
  Type.Object({
    kid: Type.String({ description: 'The new key\'s id.' }),
    activatesTime: Type.Integer({ description: 'When the new key signs its first credential, Unix milliseconds.' }),
    emergency: Type.Boolean({ description: 'Whether the other keys were withdrawn at once.' }),
    retired: Type.Array(Type.String(), {
      description: 'The keys it replaces: retired at `activatesTime` (normal rotation) or withdrawn now (emergency).',
    }),
  }),
  { kid: 'tk-2026-02', activatesTime: 1767830400000, emergency: false, retired: ['tk-2026-01'] },
);
