// The headers the APIs answer with, and the success responses that carry them. @fastify/swagger documents a response
// schema's `headers` as a map of header name → schema (one OpenAPI Header Object each, its description lifted out of
// the schema), so `headers` is always such a map here, never a Type.Object: that would document headers named
// `type`, `required` and `properties`.
import { Type, type TSchema } from '@sinclair/typebox';

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
