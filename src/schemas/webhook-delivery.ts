// Schemas of webhook deliveries (docs/api-reference.md 10): the attempt log, replay and the test ping.
import { Type } from '@sinclair/typebox';
import { defaultsOptional, Millis, named, PAGE_PARAMETERS } from './common.js';

export const WebhookIdParams = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 256, description: 'The subscription\'s id.' }),
});

export const WebhookAttemptSchema = named(
  'WebhookAttempt',
  Type.Object(
    {
      eventId: Type.String({
        description: 'The `webhook-id` sent: the event\'s id (the same on every retry and replay), or a test ping\'s own id.',
      }),
      time: Millis('When the attempt ended, Unix milliseconds.'),
      statusCode: Type.Optional(Type.Integer({ description: 'The receiver\'s HTTP status code, when it answered.' })),
      error: Type.Optional(
        Type.String({
          description:
            'Why the attempt failed, when the status alone does not say: no answer in time, connection refused, an ' +
            'address the URL guard refused, a redirect (not followed). Never the receiver\'s answer body.',
        }),
      ),
      durationMs: Type.Integer({ minimum: 0, description: 'How long the attempt took, milliseconds.' }),
      nextAttemptTime: Type.Optional(Millis('When the delivery is tried again, Unix milliseconds; absent when it is not.')),
    },
    { additionalProperties: false },
  ),
  {
    eventId: '1f2e3d4c-5b6a-4978-8e9f-0a1b2c3d4e5f',
    time: 1767225601200,
    statusCode: 503,
    durationMs: 180,
    nextAttemptTime: 1767225661200,
  },
);

export const WebhookAttemptQuery = defaultsOptional(
  Type.Object(
    {
      eventId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Only the attempts of this event (its id, the `webhook-id`).' })),
      ...PAGE_PARAMETERS,
    },
    { additionalProperties: false },
  ),
);

/** Most events one replay names. */
export const MAX_REPLAY_EVENT_IDS = 1000;

export const ReplaySchema = named(
  'Replay',
  Type.Object(
    {
      eventIds: Type.Optional(
        Type.Array(Type.String({ minLength: 1, maxLength: 64, description: 'An event\'s id.' }), {
          minItems: 1,
          maxItems: MAX_REPLAY_EVENT_IDS,
          description:
            'The events to deliver again, by id. Every one must be an event of the tenant of a type the subscription ' +
            'receives; otherwise the answer is 422 naming the others, and nothing is replayed.',
        }),
      ),
      since: Type.Optional(
        Millis(
          'Deliver again every event of the subscription\'s types from this time on (Unix milliseconds), up to the last one ' +
            'already sent to it (later ones reach it anyway). Earlier events than the subscription are included.',
        ),
      ),
    },
    { additionalProperties: false, description: 'Exactly one of `eventIds` and `since`.', examples: [{ since: 0 }] },
  ),
);

export const ReplayResultSchema = named(
  'ReplayResult',
  Type.Object(
    {
      replayed: Type.Integer({ minimum: 0, description: 'How many deliveries were made due now.' }),
    },
    { additionalProperties: false },
  ),
  { replayed: 12 },
);

export const TestPingResultSchema = named(
  'TestPingResult',
  Type.Object(
    {
      eventId: Type.String({ description: 'The ping\'s `webhook-id`, as the attempt log shows it.' }),
      statusCode: Type.Optional(Type.Integer({ description: 'The receiver\'s HTTP status code, when it answered.' })),
      error: Type.Optional(Type.String({ description: 'Why the ping failed, when the status alone does not say.' })),
      durationMs: Type.Integer({ minimum: 0, description: 'How long the attempt took, milliseconds.' }),
    },
    { additionalProperties: false },
  ),
  { eventId: 'msg_2b3c4d5e6f7a8b9c', statusCode: 204, durationMs: 95 },
);
