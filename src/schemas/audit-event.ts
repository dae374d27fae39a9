// Schemas of audit events (docs/api-reference.md 10): the Operator API's view of who changed what, and its filters.
import { Type } from '@sinclair/typebox';
import { EVENT_TYPES } from '../shared/event-types.js';
import { defaultsOptional, Millis, named, PAGE_PARAMETERS } from './common.js';

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
      ...PAGE_PARAMETERS,
    },
    { additionalProperties: false },
  ),
);
