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
