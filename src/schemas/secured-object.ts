// Schemas of secured objects, the locks (docs/api-reference.md 4.1, 8.4, 8.5, 9): as created, listed, changed and read one by one.
import { Type } from '@sinclair/typebox';
import { ChannelSchema, defaultsOptional, ID_PATTERN, named, PAGE_PARAMETERS, RequestedChannel } from './common.js';
import { TimeZoneSchema } from './schedule.js';
import { holderBindingSchema, LOCK_KEY_THUMBPRINT_EXAMPLE } from './holder-key.js';
import type { HolderBinding } from '../shared/holder-binding.js';

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

/** GET /operatorapi/securedobjects (docs/api-reference.md 4.1): a page, optionally only the locks a text finds. */
export const SecuredObjectListQuery = defaultsOptional(
  Type.Object(
    {
      search: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 128,
          description:
            'Only the locks whose id or Bluetooth LE local name contains this text, ignoring case (taken literally: `%` and ' +
            '`_` are no wildcards). The next page\'s link keeps it.',
          examples: ['front'],
        }),
      ),
      ...PAGE_PARAMETERS,
    },
    { additionalProperties: false },
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
    keyThumbprint: Type.Optional(
      Type.String({
        description:
          'The RFC 7638 thumbprint of the lock\'s own key, registered by its client (docs/api-reference.md 11.1). Absent while ' +
          'it has none; `DELETE /operatorapi/securedobjects/{id}/key` removes it so that a new one can be registered.',
      }),
    ),
    holderBinding: Type.Optional(
      holderBindingSchema(
        'The lock\'s own holder-binding policy (docs/api-reference.md 11.2); absent while the tenant\'s applies (`GET /operatorapi/settings`).',
      ),
    ),
  }),
  {
    id: 'front-door',
    channels: ['btlespp'],
    urls: ['btlespp://LOCK-0042/7d8a0c1e-4b7f-4d5e-9a41-3c2b1f0e9d8c'],
    creationTime: 1767225600000,
    timeZone: 'Europe/Berlin',
    keyThumbprint: LOCK_KEY_THUMBPRINT_EXAMPLE,
  },
);

/** PATCH /operatorapi/securedobjects/{id} (docs/api-reference.md 9): the fields to change, at least one. */
export const SecuredObjectChangesSchema = named(
  'SecuredObjectChanges',
  Type.Object(
    {
      timeZone: Type.Optional(TimeZoneSchema),
      holderBinding: Type.Optional(
        Type.Unsafe<HolderBinding | null>({
          type: 'string',
          nullable: true,
          enum: ['optional', 'required', null],
          description:
            'docs/api-reference.md 11.2: this lock\'s own policy, `optional` or `required`; `null` removes it, so the tenant\'s ' +
            'applies. The lock learns the change at its next sync and from the next revocation list a phone brings.',
        }),
      ),
    },
    { additionalProperties: false, minProperties: 1, examples: [{ timeZone: 'Europe/Berlin', holderBinding: 'required' }] },
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
      pendingKeyRevocations: Type.Integer({
        minimum: 0,
        description:
          'Revoked phone keys of the tenant (docs/api-reference.md 11.4) revoked after the position this lock has applied, ' +
          'while a credential bound to one may still be alive at its clock: copies of credentials bound to them may still ' +
          'be shown here with the key. 0 once the lock has synced or a phone brought it a newer revocation list.',
      }),
      clockOffset: Type.Optional(
        Type.Integer({
          description:
            'The lock\'s clock minus the server\'s, milliseconds, estimated from its last log upload (docs/api-reference.md 8.5). ' +
            'Negative: the lock runs behind and accepts credentials that long after they expired. Absent until estimated.',
        }),
      ),
      clockDrift: Type.Boolean({ description: 'True when the lock\'s clock is off by more than 30 s (`clockOffset`).' }),
      lockMode: Type.Optional(
        Type.Union([Type.Literal('lockdown'), Type.Literal('normal')], {
          description: 'The lock\'s state as the last lockdown that reached it set it (docs/api-reference.md 15). Absent while none did.',
        }),
      ),
      lockdownApplied: Type.Optional(
        Type.Boolean({
          description:
            'Whether the lock has applied that state: it synced past it, or a receipt it signed reports a serial at or above ' +
            'it (as `appliedThrough`, docs/api-reference.md 8.4). Absent with `lockMode`.',
        }),
      ),
    }),
  ]),
  {
    id: 'front-door',
    channels: ['btlespp'],
    urls: ['btlespp://LOCK-0042/7d8a0c1e-4b7f-4d5e-9a41-3c2b1f0e9d8c'],
    creationTime: 1767225600000,
    timeZone: 'Europe/Berlin',
    keyThumbprint: LOCK_KEY_THUMBPRINT_EXAMPLE,
    lastSeenTime: 1767254470000,
    appliedThrough: 17,
    pendingRevocations: 0,
    pendingKeyRevocations: 0,
    clockOffset: -1200,
    clockDrift: false,
  },
);
