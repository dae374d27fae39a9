// The RFC 9457 problem details body every API answers errors with (contract 7.1).
import { Type, type Static } from '@sinclair/typebox';

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
    errors: Type.Optional(Type.Array(FieldErrorSchema, { description: 'One entry per invalid field.' })),
  },
  { $id: 'Problem', additionalProperties: true, description: 'RFC 9457 problem details.' },
);

export type Problem = Static<typeof ProblemSchema>;

const PROBLEM_DESCRIPTIONS: Record<number, string> = {
  400: 'The request is malformed: `errors` names every bad field.',
  401: 'No valid access token (RFC 6750). `WWW-Authenticate` says why.',
  403: 'The access token lacks the scope this operation needs.',
  404: 'No such resource in the caller\'s tenant.',
  409: 'The request conflicts with the current state (an id in use, an idempotent request still running).',
  410: 'The interface was removed; the detail names its successor.',
  413: 'The request body is larger than the configured limit.',
  415: 'The request body is not JSON.',
  422: 'The request is well-formed but cannot be carried out; the detail says why.',
  429: 'Too many requests for this client; `Retry-After` says when to retry.',
  503: 'The database is unreachable; retry shortly.',
};

/** A reference to the shared Problem schema with the meaning of one status code, for route `response` maps. */
export function problemResponse(status: number) {
  return Type.Unsafe<Problem>({ $ref: 'Problem#', description: PROBLEM_DESCRIPTIONS[status] ?? 'An error.' });
}

/** The problem responses of an authenticated route: 401, 403, 429 and 503, plus the given codes. */
export function problemResponses(...statuses: number[]) {
  const all = [...new Set([...statuses, 401, 403, 429, 503])].sort();
  return Object.fromEntries(all.map((status) => [status, problemResponse(status)]));
}
