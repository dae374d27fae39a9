// The pieces every API's schemas share (docs/api-reference.md 7): model names, ids, times, commands, channels, pages, headers.
import { Type, type Static, type TObject, type TSchema } from '@sinclair/typebox';
import { DOCUMENTED_ENUM } from '../shared/documented-enum.js';
import { CHANNELS, COMMANDS, REMOVED_NFC_CHANNEL } from '../shared/vocabulary.js';

/**
 * `schema` titled `title` (its component name), with `example` (type-checked against the schema here, and validated
 * against it by test/ecosystem/openapi-examples.test.ts) as its example; without one it keeps its own `examples`.
 * A title is an annotation: validation and serialisation ignore it. plugins/openapi-components.ts makes every titled
 * schema a component, so a generated client gets a named type and Swagger UI shows a real answer, not placeholders.
 */
export function named<T extends TSchema>(title: string, schema: T, example?: Static<T>): T {
  return example === undefined ? { ...schema, title } : { ...schema, title, examples: [example] };
}

/**
 * Query parameters with a default are optional to clients (validation fills the default in), yet handlers always
 * see a value: the schema drops them from `required`, the static type keeps them.
 */
export function defaultsOptional<T extends TObject>(schema: T): T {
  const required = (schema.required ?? []).filter((name) => (schema.properties[name] as { default?: unknown }).default === undefined);
  const { required: _required, ...rest } = schema;
  return (required.length > 0 ? { ...rest, required } : rest) as T;
}

/**
 * Operator-chosen ids: URL-safe unreserved characters (RFC 3986 2.3), 1 to 128 of them, but not `.` or `..`: clients
 * remove those dot segments from a path (RFC 3986 5.2.4), so `/securedobjects/..` could never be reached.
 */
export const ID_PATTERN = '^(?!\\.\\.?$)[A-Za-z0-9._~-]{1,128}$';

/** The `{id}` of a secured object's or mobile device's path. */
export const ObjectIdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 256, description: 'The id.' }) });

/** docs/api-reference.md 7.4: times are integers of Unix milliseconds within JavaScript's date range. */
export const Millis = (description: string) => Type.Integer({ minimum: 0, maximum: 8640000000000000, description });

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
export const RequestedCommand = Type.String({ maxLength: 16, [DOCUMENTED_ENUM]: [...COMMANDS] });
export const RequestedChannel = Type.String({ maxLength: 32, [DOCUMENTED_ENUM]: ANSWERED_CHANNELS });

export const PageLimit = Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'Page size, 1 to 1000.' });

/** A list's page parameters (docs/api-reference.md 7.3), spread into its query beside the list's own filters. */
export const PAGE_PARAMETERS = {
  limit: PageLimit,
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'Opaque cursor from `Link: rel="next"`.' })),
};

/** The query of a list with no filters of its own. */
export const PageQuery = defaultsOptional(
  Type.Object(
    {
      limit: PageLimit,
      cursor: Type.Optional(
        Type.String({ minLength: 1, maxLength: 512, description: 'Opaque cursor from the `Link: rel="next"` header.' }),
      ),
    },
    { additionalProperties: false },
  ),
);

// The headers the APIs answer with, and the success responses that carry them. @fastify/swagger documents a response
// schema's `headers` as a map of header name → schema (one OpenAPI Header Object each, its description lifted out of
// the schema), so `headers` is always such a map here, never a Type.Object: that would document headers named
// `type`, `required` and `properties`.
export const ResponseHeaders = {
  location: Type.String({ description: 'The path of the created resource (RFC 9110 section 10.2.2).' }),
  nextPage: Type.String({
    description: 'RFC 8288 `<…>; rel="next"`: the same request with the cursor of the next page; absent on the last page.',
  }),
  successorLink: Type.String({
    description: 'RFC 8288 `<…>; rel="successor-version"` (RFC 5829): where the replacement of a removed interface lives.',
  }),
  // An enum, not Type.Literal: OpenAPI 3.0 has no `const`.
  noStore: Type.Unsafe<'no-store'>({
    type: 'string',
    enum: ['no-store'],
    description: 'RFC 9111 section 5.2.2.5: the answer holds a secret or credential, so no cache may store it.',
  }),
  sunset: Type.String({ description: 'RFC 8594: the HTTP-date the interface was removed on.' }),
  deprecation: Type.String({ description: 'RFC 9745 `@<unix seconds>`: the interface is deprecated since then and kept alive by an operator.' }),
  retryAfter: Type.Integer({ minimum: 0, description: 'Seconds to wait before retrying (RFC 9110 section 10.2.3).' }),
  rateLimitLimit: Type.Integer({ minimum: 0, description: 'Requests this client may send per minute (draft-ietf-httpapi-ratelimit-headers).' }),
  rateLimitRemaining: Type.Integer({ minimum: 0, description: 'Requests left until the limit starts afresh (draft-ietf-httpapi-ratelimit-headers).' }),
  rateLimitReset: Type.Integer({ minimum: 0, description: 'Seconds until the limit starts afresh (draft-ietf-httpapi-ratelimit-headers).' }),
  bearerChallenge: Type.String({
    description: 'RFC 6750 section 3 `Bearer realm="…"`, with `error` and, for a missing scope, `scope` naming it.',
  }),
};

/** `schema` as the response of one status code, with its meaning and the headers it carries. */
export function withHeaders<T extends TSchema>(schema: T, description: string, headers: Record<string, TSchema>) {
  return { ...schema, description, headers };
}

/** A 201 answer: the created resource, and `Location` naming it. */
export function createdResponse<T extends TSchema>(schema: T, description: string) {
  return withHeaders(schema, description, { Location: ResponseHeaders.location });
}

/** A page of a list (docs/api-reference.md 7.3): the items, and `Link: rel="next"` while more remain. */
export function pageResponse<T extends TSchema>(itemSchema: T, description: string) {
  return withHeaders(Type.Array(itemSchema), description, { Link: ResponseHeaders.nextPage });
}

/** A removed interface an operator keeps alive (docs/api-reference.md 4.4) answers with its deprecation headers. */
export function deprecatedResponse<T extends TSchema>(schema: T, description: string) {
  return withHeaders(schema, description, {
    Deprecation: ResponseHeaders.deprecation,
    Sunset: ResponseHeaders.sunset,
    Link: ResponseHeaders.successorLink,
  });
}

/**
 * An answer holding a secret or credential: documents `Cache-Control: no-store`, which the route's `config.noStore`
 * sets (app.ts), next to the answer's other headers.
 */
export function noStoreResponse<T extends TSchema>(schema: T, description: string, headers: Record<string, TSchema> = {}) {
  return withHeaders(schema, description, { ...headers, 'Cache-Control': ResponseHeaders.noStore });
}
