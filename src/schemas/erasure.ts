// Schemas of erasures (docs/api-reference.md 16.2): the request naming one person, and the record of what was done.
import { Type } from '@sinclair/typebox';
import { named } from './common.js';
import { USERNAME_PATTERN } from '../shared/usernames.js';

export const ErasureRequestSchema = named(
  'ErasureRequest',
  Type.Object(
    {
      residentId: Type.Optional(Type.String({ format: 'uuid', description: 'A resident: their name, their devices\' names and access logs.' })),
      mobileDeviceId: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'One mobile device: its name and access logs.' })),
      username: Type.Optional(Type.String({ pattern: USERNAME_PATTERN, description: 'A user (without `@TENANT`): the username.' })),
      accessLogsOnly: Type.Optional(
        Type.Boolean({ description: 'Delete the person\'s access-log entries only, and keep the names. Default `false`.' }),
      ),
    },
    {
      additionalProperties: false,
      minProperties: 1,
      description: 'Exactly one of `residentId`, `mobileDeviceId` and `username`.',
    },
  ),
  { residentId: '3f1c2b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b' },
);

export const ErasureSchema = named(
  'Erasure',
  Type.Object({
    id: Type.String({ format: 'uuid', description: 'The erasure\'s id.' }),
    subject: Type.Object(
      {
        kind: Type.Unsafe<'resident' | 'mobile-device' | 'user'>({ type: 'string', enum: ['resident', 'mobile-device', 'user'], description: 'Whose data.' }),
        id: Type.String({ description: 'The resident\'s, device\'s or user\'s id; a user by id, never by the username.' }),
      },
      { description: 'The person, by an id the tenant already holds.' },
    ),
    accessLogsOnly: Type.Boolean({ description: 'Only the access logs were to be erased.' }),
    state: Type.Unsafe<'running' | 'succeeded'>({ type: 'string', enum: ['running', 'succeeded'], description: '`running` until every table is done.' }),
    requestedBy: Type.String({ description: 'Who asked: `client:<id>`, `user:<id>` or `cli`.' }),
    requestedTime: Type.Integer({ description: 'When it was asked, Unix milliseconds.' }),
    finishedTime: Type.Optional(Type.Integer({ description: 'When the last value was replaced, Unix milliseconds.' })),
    rows: Type.Record(Type.String(), Type.Integer({ minimum: 0 }), {
      description: 'Rows changed or deleted per table so far (`audit_events`, `access_log_entries`, `residents`, …).',
    }),
  }),
  {
    id: '0b9e7a1c-2d3f-4a5b-8c6d-7e8f9a0b1c2d',
    subject: { kind: 'resident', id: '3f1c2b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b' },
    accessLogsOnly: false,
    state: 'succeeded',
    requestedBy: 'client:pV0bTQ',
    requestedTime: 1767225600000,
    finishedTime: 1767225601000,
    rows: { access_log_entries: 1200, audit_events: 14, residents: 1, mobile_devices: 2, oauth_clients: 2 },
  },
);
