// Schemas of access logs (docs/api-reference.md 8.5): the uploads of the Device API and the Operator API's entries and filters.
import { Type } from '@sinclair/typebox';
import { defaultsOptional, ID_PATTERN, Millis, named, PAGE_PARAMETERS } from './common.js';

/** Most entries one upload holds: a lock (or phone) with more sends several uploads. */
export const MAX_UPLOAD_ENTRIES = 1000;
/** Most receipts one relay holds: a phone that collected more sends several relays. */
export const MAX_UPLOAD_RECEIPTS = 50;

// An enum rather than a union of literals: one error for a bad value, and OpenAPI 3.0 has no `const`.
const ResultSchema = Type.Unsafe<'granted' | 'denied'>({
  type: 'string',
  enum: ['granted', 'denied'],
  description: 'What the lock decided: `granted` (it opened) or `denied`.',
});

export const ReportedEntrySchema = named(
  'ReportedAccessLogEntry',
  Type.Object(
    {
      entryNo: Type.Integer({
        minimum: 1,
        maximum: Number.MAX_SAFE_INTEGER,
        description:
          'The lock\'s own number of the entry, from 1, rising by one per decision. Sending an entry again stores nothing ' +
          '(idempotent on lock and entryNo); a number never received shows as a gap.',
      }),
      lockTime: Millis('When the lock decided, by the lock\'s own clock, Unix milliseconds.'),
      tokenId: Type.Optional(
        Type.String({ minLength: 1, maxLength: 256, description: 'The presented credential\'s `jti` (the ticket id), when it had one.' }),
      ),
      command: Type.String({ minLength: 1, maxLength: 16, description: 'The command asked for, e.g. `open`.' }),
      channel: Type.String({ minLength: 1, maxLength: 32, description: 'The channel it came over, e.g. `btlespp`.' }),
      result: ResultSchema,
      reason: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Why, as the lock words it: for a lock built from docs/lock-integration.md one reason of its section 3.2, e.g. `revoked`, `key-mismatch`, `ok`.' })),
    },
    { additionalProperties: false },
  ),
  {
    entryNo: 41,
    lockTime: 1767254400000,
    tokenId: '0b4f5b9e-3f3a-4c56-9a41-3c2b1f0e9d8c',
    command: 'open',
    channel: 'btlespp',
    result: 'granted',
    reason: 'ok',
  },
);

const uploadFields = {
  appliedSerial: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: Number.MAX_SAFE_INTEGER,
      description:
        'The serial of the last sync answer or revocation list the lock applied (docs/api-reference.md 8.3, 8.4): the lock has ' +
        'applied every change up to it, so the revocations up to it are marked applied. It is the lock\'s own client that ' +
        'says so; it never counts beyond the lock\'s own serial (its last change).',
    }),
  ),
  lockTime: Type.Optional(
    Millis(
      'The lock\'s clock at the moment of this upload, Unix milliseconds: the server estimates the lock\'s clock offset ' +
        'from it (docs/api-reference.md 8.5).',
    ),
  ),
  entries: Type.Array(ReportedEntrySchema, {
    minItems: 1,
    maxItems: MAX_UPLOAD_ENTRIES,
    description: `The lock's entries not yet acknowledged, 1 to ${MAX_UPLOAD_ENTRIES} per upload (send more in several uploads).`,
  }),
};

const EXAMPLE_ENTRIES = [
  { entryNo: 41, lockTime: 1767254400000, tokenId: '0b4f5b9e-3f3a-4c56-9a41-3c2b1f0e9d8c', command: 'open', channel: 'btlespp', result: 'granted', reason: 'ok' },
  { entryNo: 42, lockTime: 1767254460000, command: 'open', channel: 'btlespp', result: 'denied', reason: 'malformed' },
];

export const LockAccessLogUploadSchema = named(
  'LockAccessLogUpload',
  Type.Object(uploadFields, {
    additionalProperties: false,
    examples: [{ appliedSerial: 17, lockTime: 1767254470000, entries: EXAMPLE_ENTRIES }],
  }),
);

const EXAMPLE_RECEIPT =
  'eyJhbGciOiJFUzI1NiIsInR5cCI6ImxvY2stcmVjZWlwdCtqd3QifQ.eyJzdWIiOiJmcm9udC1kb29yIiwiYXBwbGllZFNlcmlhbCI6MTcsImxvY2tUaW1lIjoxNzY3MjU0NDcwMDAwLCJlbnRyaWVzIjpbXX0.' +
  'c2lnbmF0dXJlLW9mLXRoZS1sb2NrLWtleS1zaWduYXR1cmUtb2YtdGhlLWxvY2sta2V5LWFiY2RlZmdoaWprbG1ub3BxcnN0';

export const RelayedAccessLogUploadSchema = named(
  'RelayedAccessLogUpload',
  Type.Object(
    {
      securedObjectId: Type.String({
        pattern: ID_PATTERN,
        description: 'The lock whose log this is: one the phone holds or has held a ticket for.',
      }),
      receipts: Type.Optional(
        Type.Array(Type.String({ minLength: 1, maxLength: 512 * 1024 }), {
          minItems: 1,
          maxItems: MAX_UPLOAD_RECEIPTS,
          description:
            'The lock\'s receipts, as it gave them (docs/api-reference.md 8.5, "Signed receipts"): compact JWS, `typ` ' +
            '`lock-receipt+jwt`, ES256 by the lock\'s registered key, `{sub (the lock id), appliedSerial, lockTime, entries}`. ' +
            'Verified, each is the lock\'s own word: its `appliedSerial` acknowledges, its `lockTime` feeds the clock estimate ' +
            '(when its entries are newer than any the lock gave before) and its entries are stored `signed`. A receipt that ' +
            `fails (another key, another lock, another type, a lock without a key) refuses the whole upload with 400. At most ${MAX_UPLOAD_RECEIPTS}, ` +
            `and ${MAX_UPLOAD_ENTRIES} entries with the plain ones.`,
        }),
      ),
      appliedSerial: Type.Optional(
        Type.Integer({
          minimum: 0,
          maximum: Number.MAX_SAFE_INTEGER,
          description:
            'Accepted for older apps and ignored: a relay acknowledges nothing by itself (docs/api-reference.md 8.4, 8.5). ' +
            'Only a receipt\'s `appliedSerial` does.',
        }),
      ),
      lockTime: Type.Optional(
        Millis('Accepted for older apps and ignored: a relay never moves the lock\'s clock estimate; a receipt\'s `lockTime` does.'),
      ),
      entries: Type.Optional(
        Type.Array(ReportedEntrySchema, {
          minItems: 1,
          maxItems: MAX_UPLOAD_ENTRIES,
          description:
            'Plain entries the phone read from a lock that gives no receipts: stored as the phone\'s report (`signed: false`), ' +
            'numbered apart from the lock\'s own entries, so they never block or fill the lock\'s numbering.',
        }),
      ),
    },
    {
      additionalProperties: false,
      description: 'A relay holds `receipts`, `entries`, or both.',
      examples: [{ securedObjectId: 'front-door', receipts: [EXAMPLE_RECEIPT] }],
    },
  ),
);

export const UploadAnswerSchema = named(
  'AccessLogUploadResult',
  Type.Object({
    accepted: Type.Integer({ minimum: 0, description: 'Entries stored by this upload.' }),
    duplicates: Type.Integer({ minimum: 0, description: 'Entries already stored (or repeated within this upload): stored once.' }),
    // Pairs as arrays of two: OpenAPI 3.0 has no tuple schema.
    gaps: Type.Array(Type.Unsafe<[number, number]>(Type.Array(Type.Integer({ minimum: 1 }), { minItems: 2, maxItems: 2 })), {
      description:
        'Ranges `[fromEntryNo, toEntryNo]` (inclusive) of the lock\'s entry numbers missing between the highest of the lock\'s ' +
        'own entries received before this upload and the highest of this upload: entries the lock dropped or has not sent ' +
        'yet. A later upload of them fills them. Counted in the lock\'s own numbering only (its client\'s uploads and ' +
        'signed receipts): a relay of plain entries reports none.',
    }),
  }),
  { accepted: 2, duplicates: 0, gaps: [[38, 40]] },
);

export const AccessLogEntrySchema = named(
  'AccessLogEntry',
  Type.Object({
    securedObjectId: Type.String({ description: 'The lock that decided.' }),
    entryNo: Type.Integer({ description: 'The lock\'s number of the entry.' }),
    lockTime: Type.Integer({ description: 'When, by the lock\'s clock, Unix milliseconds (see `clockOffset`).' }),
    tokenId: Type.Optional(Type.String({ description: 'The presented credential\'s `jti`, when it had one.' })),
    mobileDeviceId: Type.Optional(
      Type.String({ description: 'The phone of the ticket `tokenId` names, when that is a ticket of this tenant for this lock.' }),
    ),
    command: Type.String(),
    channel: Type.String(),
    result: ResultSchema,
    reason: Type.Optional(Type.String({ description: 'Why, as the lock worded it.' })),
    receivedTime: Type.Integer({ description: 'When the server received the entry, Unix milliseconds.' }),
    via: Type.String({ description: '`lock` (uploaded by the lock\'s client) or the id of the phone that relayed it.' }),
    signed: Type.Boolean({
      description:
        'The lock\'s own word: uploaded by the lock\'s client, or relayed in a receipt verified with the lock\'s key ' +
        '(docs/api-reference.md 8.5). False: a phone\'s report of plain entries, numbered apart from the lock\'s own ' +
        '(its `entryNo` is the lock\'s as the phone reported it, and may repeat one of the lock\'s).',
    }),
    clockOffset: Type.Optional(
      Type.Integer({
        description:
          'The lock\'s clock minus the server\'s (ms) as estimated at the entry\'s upload (or the lock\'s last estimate): ' +
          '`lockTime - clockOffset` is the server\'s time of the decision. Absent while never estimated.',
      }),
    ),
  }),
  {
    securedObjectId: 'front-door',
    entryNo: 41,
    lockTime: 1767254400000,
    tokenId: '0b4f5b9e-3f3a-4c56-9a41-3c2b1f0e9d8c',
    mobileDeviceId: 'phone-alice-1',
    command: 'open',
    channel: 'btlespp',
    result: 'granted',
    reason: 'ok',
    receivedTime: 1767254471200,
    via: 'lock',
    signed: true,
    clockOffset: -1200,
  },
);

export const AccessLogQuery = defaultsOptional(
  Type.Object(
    {
      securedObjectId: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: 'Only this lock\'s entries.' })),
      mobileDeviceId: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: 'Only entries of this phone\'s tickets.' })),
      tokenId: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'Only entries of this credential (`jti`).' })),
      result: Type.Optional(ResultSchema),
      from: Type.Optional(Millis('Only entries at or after this lock time, Unix milliseconds.')),
      to: Type.Optional(Millis('Only entries before this lock time, Unix milliseconds.')),
      ...PAGE_PARAMETERS,
    },
    { additionalProperties: false },
  ),
);
