// The RFC 9457 problem details body every API answers errors with (docs/api-reference.md 7.1).
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { ResponseHeaders } from './common.js';

export const FieldErrorSchema = Type.Object({
  field: Type.String({ description: 'The offending field, as a path into the request (`commands[0]`, `limit`).' }),
  message: Type.String({ description: 'What is wrong with it.' }),
});

export const ProblemSchema = Type.Object(
  {
    type: Type.String({ description: 'A URI identifying the kind of problem.' }),
    title: Type.String({ description: 'A short summary of the kind of problem.' }),
    status: Type.Integer({ description: 'The HTTP status code.' }),
    detail: Type.Optional(Type.String({ description: 'What went wrong in this occurrence.' })),
    instance: Type.Optional(Type.String({ description: 'The request path.' })),
    requestId: Type.String({ description: 'The `X-Request-Id` of the request, for support and log correlation.' }),
    errors: Type.Optional(
      Type.Array(FieldErrorSchema, { description: 'One entry per invalid field: the first 20 of them (`errorCount` counts all).' }),
    ),
    errorCount: Type.Optional(Type.Integer({ description: 'On a 400 for an invalid request: how many errors it has in all.' })),
  },
  {
    $id: 'Problem',
    additionalProperties: true,
    description: 'RFC 9457 problem details.',
    examples: [
      {
        type: 'https://access-credential-service.dev/problems/validation',
        title: 'Request validation failed',
        status: 400,
        detail: 'endDate: must be >= 0',
        instance: '/operatorapi/tickets',
        requestId: '5d6e7f80-91a2-4b3c-8d4e-5f6a7b8c9d0e',
        errors: [{ field: 'endDate', message: 'must be >= 0' }],
        errorCount: 1,
      },
    ],
  },
);

export type Problem = Static<typeof ProblemSchema>;

const PROBLEM_DESCRIPTIONS: Record<number, string> = {
  400: 'The request is malformed: `errors` names the bad fields (the first 20; `errorCount` counts them all).',
  401:
    'No valid access token (RFC 6750). `WWW-Authenticate` says why. HTTP Basic, removed on 01.01.2019, also gets `Sunset` ' +
    'and `Link` to its successor, `POST /oauth/token`.',
  403: 'The access token lacks the scope this operation needs (`WWW-Authenticate` names it), or its client may not reach this resource.',
  404: 'No such resource in the caller\'s tenant.',
  409: 'The request conflicts with the current state (an id in use, an idempotent request still running).',
  410: 'The interface was removed; the detail and `successor` name its successor.',
  413: 'The request body is larger than the configured limit.',
  414: 'The request target is longer than 8 KiB, or a path parameter longer than 256 characters.',
  415: 'The request body is not JSON.',
  422: 'The request is well-formed but cannot be carried out; the detail says why.',
  429: 'Too many requests for this client, or without a valid access token from this address; `Retry-After` says when to retry.',
  431: 'The request\'s header fields are larger than 16 KiB.',
  500: 'An unexpected error; the detail reveals nothing. Quote the `requestId` when reporting it.',
  503: 'The database is unreachable or the server is shutting down; retry shortly.',
};

/** The headers a problem answer carries, by status code. */
const PROBLEM_HEADERS: Record<number, Record<string, TSchema>> = {
  // docs/api-reference.md 3.5, 4.4: HTTP Basic is a removed interface, answered like the others with its date and successor.
  401: { 'WWW-Authenticate': ResponseHeaders.bearerChallenge, Sunset: ResponseHeaders.sunset, Link: ResponseHeaders.successorLink },
  403: { 'WWW-Authenticate': ResponseHeaders.bearerChallenge },
  410: { Sunset: ResponseHeaders.sunset, Link: ResponseHeaders.successorLink },
  // docs/api-reference.md 7.4: the per-client limit answers the RateLimit fields on every answer, and Retry-After on the 429.
  429: {
    'Retry-After': ResponseHeaders.retryAfter,
    'RateLimit-Limit': ResponseHeaders.rateLimitLimit,
    'RateLimit-Remaining': ResponseHeaders.rateLimitRemaining,
    'RateLimit-Reset': ResponseHeaders.rateLimitReset,
  },
  503: { 'Retry-After': ResponseHeaders.retryAfter },
};

/**
 * The response of one problem status code for route `response` maps: its meaning, its headers, and the shared Problem
 * schema as `application/problem+json`, the media type every problem answer is sent with (RFC 9457 section 3).
 */
export function problemResponse(status: number) {
  const headers = PROBLEM_HEADERS[status];
  return {
    description: PROBLEM_DESCRIPTIONS[status] ?? 'An error.',
    ...(headers ? { headers } : {}),
    content: { 'application/problem+json': { schema: Type.Unsafe<Problem>({ $ref: 'Problem#' }) } },
  };
}

/**
 * The problem responses of an authenticated route: those any route can answer (400: every route validates its input;
 * 401, 403: the bearer check; 414, 431: the request size limits in app.ts; 429: the rate limit; 500; 503) plus the
 * given codes.
 */
export function problemResponses(...statuses: number[]) {
  const all = [...new Set([...statuses, 400, 401, 403, 414, 429, 431, 500, 503])].sort();
  return Object.fromEntries(all.map((status) => [status, problemResponse(status)]));
}
