// Schemas of webhook subscriptions (docs/api-reference.md 10).
import { Type } from '@sinclair/typebox';
import { EVENT_TYPES, type EventType } from '../shared/event-types.js';
import { named } from './common.js';

const MAX_URL_LENGTH = 2048;
const MAX_DESCRIPTION_LENGTH = 500;

// An enum rather than a union of literals: one error for a bad value that names the allowed ones, and OpenAPI 3.0
// has no `const`.
export const EventTypeSchema = Type.Unsafe<EventType>({
  type: 'string',
  enum: [...EVENT_TYPES],
  description: 'An event type of the tenant\'s event log (docs/api-reference.md 10).',
});

/**
 * The types a subscription receives. Listed one by one, with no wildcard: a type added to the service later is never
 * sent to a receiver that was not written for it.
 */
const EventTypesSchema = Type.Array(EventTypeSchema, {
  minItems: 1,
  maxItems: EVENT_TYPES.length,
  uniqueItems: true,
  description:
    'The event types to receive: at least one, each once. There is no wildcard; subscribe to a new type explicitly when ' +
    'the receiver handles it.',
});

const UrlSchema = Type.String({
  minLength: 1,
  maxLength: MAX_URL_LENGTH,
  description:
    'Where deliveries are POSTed: an `https` URL without credentials or fragment that does not resolve to a loopback, ' +
    'private, link-local or cloud-metadata address (`http` and loopback or private addresses only with ' +
    '`WEBHOOK_ALLOW_INSECURE=true`). Checked here and again at every delivery; a refused URL is a 422 naming the reason.',
});

const DescriptionSchema = Type.String({ minLength: 1, maxLength: MAX_DESCRIPTION_LENGTH, description: 'A note for people.' });

export const WebhookIdParams = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 128, description: 'The subscription id (a UUID).' }),
});

export const NewWebhookSchema = named(
  'NewWebhook',
  Type.Object(
    {
      url: UrlSchema,
      eventTypes: EventTypesSchema,
      description: Type.Optional(DescriptionSchema),
    },
    {
      additionalProperties: false,
      examples: [{ url: 'https://example.com/webhooks/access', eventTypes: ['ticket.created', 'ticket.revoked'], description: 'Front desk' }],
    },
  ),
);

export const WebhookChangesSchema = named(
  'WebhookChanges',
  Type.Object(
    {
      url: Type.Optional(UrlSchema),
      eventTypes: Type.Optional(EventTypesSchema),
      description: Type.Optional(
        Type.String({ maxLength: MAX_DESCRIPTION_LENGTH, description: 'A note for people; the empty string removes it.' }),
      ),
      enabled: Type.Optional(
        Type.Boolean({
          description:
            '`false` pauses the subscription (`disabledReason: operator`); `true` resumes a paused or disabled one where it ' +
            'stopped: the events committed meanwhile are delivered, nothing is lost.',
        }),
      ),
    },
    {
      additionalProperties: false,
      examples: [{ eventTypes: ['ticket.created', 'ticket.revoked', 'ticket.revocation_applied'], enabled: true }],
    },
  ),
);

/** The example subscription of the documents: the same one in every answer that shows it. */
const WEBHOOK_EXAMPLE = {
  id: 'b1c2d3e4-f5a6-4b7c-8d9e-0f1a2b3c4d5e',
  url: 'https://example.com/webhooks/access',
  eventTypes: ['ticket.created', 'ticket.revoked'],
  description: 'Front desk',
  enabled: true,
  createdTime: 1767225600000,
  updatedTime: 1767225600000,
};

export const WebhookSchema = named(
  'Webhook',
  Type.Object({
    id: Type.String({ description: 'The subscription id.' }),
    url: Type.String({ description: 'Where deliveries are POSTed.' }),
    eventTypes: Type.Array(Type.Unsafe<string>({ ...EventTypeSchema }), { description: 'The event types it receives.' }),
    description: Type.Optional(Type.String({ description: 'A note for people.' })),
    enabled: Type.Boolean({ description: 'False while paused or disabled: nothing is sent until it is enabled again.' }),
    disabledReason: Type.Optional(
      Type.Unsafe<'operator' | 'gone' | 'failing'>({
        type: 'string',
        enum: ['operator', 'gone', 'failing'],
        description:
          'Why it is disabled: `operator` (a PATCH), `gone` (the receiver answered 410), `failing` (every attempt failed for ' +
          '5 days). Absent while enabled.',
      }),
    ),
    disabledTime: Type.Optional(Type.Integer({ description: 'When it was disabled, Unix milliseconds. Absent while enabled.' })),
    createdTime: Type.Integer({ description: 'Creation time, Unix milliseconds.' }),
    updatedTime: Type.Integer({ description: 'Last change of its settings or secret, Unix milliseconds.' }),
    previousSecretExpiresTime: Type.Optional(
      Type.Integer({
        description:
          'After a rotation: until when the previous secret still signs beside the new one (a second `webhook-signature` ' +
          'entry), Unix milliseconds. Absent otherwise.',
      }),
    ),
  }),
  WEBHOOK_EXAMPLE,
);

/** docs/api-reference.md 10: a subscribe's answer; on an Idempotency-Key replay the secret is withheld (docs/security-cases.md H57). */
export const CreatedWebhookSchema = named(
  'CreatedWebhook',
  Type.Composite([
    WebhookSchema,
    Type.Object({
      secret: Type.Optional(
        Type.String({
          description:
            'The signing secret (Standard Webhooks `whsec_` and base64): shown in this answer only. Verify `webhook-signature` ' +
            'with it. Absent on an `Idempotency-Key` replay.',
        }),
      ),
      secretWithheld: Type.Optional(
        Type.Literal(true, {
          description: 'Only on an `Idempotency-Key` replay: the secret was shown once, in the first answer, and is not shown again.',
        }),
      ),
    }),
  ]),
  { ...WEBHOOK_EXAMPLE, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' },
);

export const WebhookWithSecretSchema = named(
  'WebhookWithSecret',
  Type.Composite([
    WebhookSchema,
    Type.Object({
      secret: Type.String({
        description:
          'The signing secret (Standard Webhooks `whsec_` and base64): shown in this answer only. Verify `webhook-signature` with it.',
      }),
    }),
  ]),
  { ...WEBHOOK_EXAMPLE, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' },
);
