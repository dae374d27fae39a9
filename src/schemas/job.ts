// Schemas of bulk jobs (docs/api-reference.md 14): a job as sent (JSON or CSV), as read, and its per-item results.
import { Type } from '@sinclair/typebox';
import { ITEM_OUTCOMES, JOB_KINDS, JOB_STATES, JOB_TYPES } from '../shared/bulk-jobs.js';
import { defaultsOptional, named, PAGE_PARAMETERS } from './common.js';

const words = <T extends readonly string[]>(values: T, description: string) =>
  Type.Unsafe<T[number]>({ type: 'string', enum: [...values], description });

export const JobTypeSchema = words(
  JOB_TYPES,
  'What the items are: `secured-objects`, `mobile-devices`, `residents` (with `mobileDeviceIds`), `lock-groups` (with ' +
    '`securedObjectIds`), `access-permissions` or `tickets`. Each item is the body of that resource\'s create.',
);

export const NewJobSchema = named(
  'NewJob',
  Type.Object(
    {
      type: JobTypeSchema,
      items: Type.Array(Type.Object({}, { additionalProperties: true, description: 'One item: the body its single-item create takes.' }), {
        minItems: 1,
        description:
          'The items, each as its single-item endpoint takes it (`POST /operatorapi/securedobjects`, `/operatorapi/mobiledevices`, ' +
          '`/v1/residents`, `/v1/lock-groups`, `/v1/access-permissions`, `/operatorapi/tickets`). An item that endpoint would ' +
          'refuse fails alone, with its problem in the results. At most `JOB_MAX_ITEMS` (100,000).',
      }),
    },
    {
      additionalProperties: false,
      examples: [
        {
          type: 'mobile-devices',
          items: [
            { id: 'phone-alice-1', name: "Alice's phone" },
            { id: 'phone-bob-1', name: "Bob's phone" },
          ],
        },
      ],
    },
  ),
);

/** A CSV body (docs/api-reference.md 14): RFC 4180, UTF-8, a header row naming the type's columns. */
export const CsvBodySchema = Type.String({
  description:
    'RFC 4180 CSV in UTF-8 (`text/csv; charset=utf-8`): a header row naming the columns (the fields of the type\'s create, any ' +
    'order), then one record per item. An empty cell is an absent field; a list cell holds its values separated by spaces.',
  examples: ['id,name\r\nphone-alice-1,Alice\'s phone\r\nphone-bob-1,Bob\'s phone\r\n'],
});

export const JobQuery = Type.Object(
  { type: Type.Optional(JobTypeSchema) },
  { additionalProperties: false },
);

/** A job as read: one of the types a tenant sends, or `erasure` (docs/api-reference.md 16.2). */
const JobKindSchema = words(
  JOB_KINDS,
  'What the items are: a type a job is sent with (`secured-objects`, `mobile-devices`, `residents`, `lock-groups`, ' +
    '`access-permissions`, `tickets`), or `erasure`, the job of `POST /operatorapi/erasures` (one item: the person, by id).',
);

export const JobSchema = named(
  'Job',
  Type.Object({
    id: Type.String({ format: 'uuid', description: 'The job id.' }),
    type: JobKindSchema,
    state: words(
      JOB_STATES,
      '`queued` (no instance has started it), `running`, `succeeded` (every item ran, none failed), `failed` (every item ran, ' +
        'some failed: see the results), `cancelled` (items not yet run never will).',
    ),
    total: Type.Integer({ minimum: 0, description: 'Items in the job.' }),
    processed: Type.Integer({ minimum: 0, description: 'Items with an outcome so far: `succeeded + failed`.' }),
    succeeded: Type.Integer({ minimum: 0, description: 'Items `created`, `updated` or `unchanged`.' }),
    failed: Type.Integer({ minimum: 0, description: 'Items refused, each with its problem in the results.' }),
    createdTime: Type.Integer({ description: 'When the job was sent, Unix milliseconds.' }),
    startedTime: Type.Optional(Type.Integer({ description: 'When an instance first started it; absent while queued.' })),
    finishedTime: Type.Optional(Type.Integer({ description: 'When it finished or was cancelled; absent until then.' })),
  }),
  {
    id: '0b7a1f3e-2c4d-4e5f-8a9b-0c1d2e3f4a5b',
    type: 'mobile-devices',
    state: 'running',
    total: 2,
    processed: 1,
    succeeded: 1,
    failed: 0,
    createdTime: 1767225600000,
    startedTime: 1767225600150,
  },
);

export const JobResultSchema = named(
  'JobResult',
  Type.Object({
    index: Type.Integer({ minimum: 0, description: 'The item\'s position in `items`, or its record\'s after the CSV header (0: the first).' }),
    key: Type.String({
      description:
        'The item\'s natural key: a lock\'s or device\'s `id` (empty when the item has none), a group\'s `name`, ' +
        '`residentId/lockGroupId` or `securedObjectId/mobileDeviceId`.',
    }),
    outcome: words(
      ITEM_OUTCOMES,
      '`created`; `updated` (a group found by name got the members it lacked); `unchanged` (an equal resource was already ' +
        'there, as on a re-run); `failed` (see `problem`).',
    ),
    id: Type.Optional(Type.String({ description: 'The id of the resource the item made or found.' })),
    problem: Type.Optional(
      Type.Object(
        {
          type: Type.String(),
          title: Type.String(),
          status: Type.Integer(),
          detail: Type.Optional(Type.String()),
          errors: Type.Optional(Type.Array(Type.Object({ field: Type.String(), message: Type.String() }))),
        },
        { additionalProperties: true, description: 'The RFC 9457 problem the item\'s single-item endpoint answers it with.' },
      ),
    ),
  }),
  {
    index: 1,
    key: 'phone-bob-1',
    outcome: 'failed',
    problem: {
      type: 'https://access-credential-service.dev/problems/conflict',
      title: 'Conflict',
      status: 409,
      detail: 'The mobile device id phone-bob-1 is in use.',
    },
  },
);

export const JobResultQuery = defaultsOptional(
  Type.Object(
    {
      outcome: Type.Optional(words(ITEM_OUTCOMES, 'Only the results with this outcome.')),
      ...PAGE_PARAMETERS,
    },
    { additionalProperties: false },
  ),
);
