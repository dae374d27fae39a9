// The response validator (test/helpers/openapi-response-validator.ts) refuses what the documents do not describe:
// a body its schema refuses, an undocumented field or status, a body where none is documented. Without these
// negative cases a validator that accepts everything would let the generated-client test pass vacuously.
import createClient from 'openapi-fetch';
import { describe, expect, it } from 'vitest';
import { buildTestApp } from '../helpers/app.js';
import {
  OpenApiResponseValidator,
  committedValidators,
  ResponseMismatchError,
  responseValidation,
  type AnswerToCheck,
  type OpenApiDocument,
} from '../helpers/openapi-response-validator.js';
import type { paths as OperatorApiPaths } from './generated/operatorapi.js';

const TICKET_ID = '0b9f3c1e-2d4a-4e6f-8a1b-3c5d7e9f1a2b';
const ticket = {
  id: TICKET_ID,
  securedObjectId: 'front-door',
  mobileDeviceId: 'phone-alice-1',
  beginDate: 1767225600000,
  endDate: 1798761600000,
  creationDate: 1767225600000,
  commands: ['open'],
  channels: ['btlespp'],
  status: 'VALID',
};

const getTicket = (status: number, body: unknown, contentType = 'application/json; charset=utf-8'): AnswerToCheck => ({
  method: 'GET',
  path: `/operatorapi/tickets/${TICKET_ID}`,
  status,
  contentType,
  body: body === undefined ? '' : JSON.stringify(body),
});

describe('OpenAPI response validator', () => {
  const operatorapi = OpenApiResponseValidator.committed('operatorapi');

  it('accepts a body the committed document describes', () => {
    expect(() => operatorapi.validate(getTicket(200, ticket))).not.toThrow();
    expect(operatorapi.checked.at(-1)).toBe('operatorapi: GET /operatorapi/tickets/{id} answered 200');
  });

  it('refuses a body that violates the schema: a missing required field, a wrong type, a value outside the enum', () => {
    const { status: _status, ...withoutStatus } = ticket;
    expect(() => operatorapi.validate(getTicket(200, withoutStatus))).toThrow(/must have required property 'status'/);
    expect(() => operatorapi.validate(getTicket(200, { ...ticket, beginDate: '2026-01-01' }))).toThrow(/\/beginDate must be integer/);
    expect(() => operatorapi.validate(getTicket(200, { ...ticket, status: 'ACTIVE' }))).toThrow(ResponseMismatchError);
    expect(() => operatorapi.validate(getTicket(200, [ticket]))).toThrow(/must be object/);
  });

  it('refuses a field the document does not describe, unless objects are left open', () => {
    expect(() => operatorapi.validate(getTicket(200, { ...ticket, credential: 'x.y.z' }))).toThrow(/additional properties \(credential\)/);
    const open = OpenApiResponseValidator.committed('operatorapi', { closedObjects: false });
    expect(() => open.validate(getTicket(200, { ...ticket, credential: 'x.y.z' }))).not.toThrow();
  });

  it('refuses a status the operation does not document, and an operation the document does not have', () => {
    expect(() => operatorapi.validate(getTicket(418, { title: 'teapot' }))).toThrow(/answered 418, a status the document does not list/);
    expect(() => operatorapi.validate({ ...getTicket(200, ticket), method: 'PUT' })).toThrow(/no such operation/);
    expect(() => operatorapi.validate({ ...getTicket(200, ticket), path: '/operatorapi/tickets' })).toThrow(/must be array/);
  });

  it('resolves $ref to the document\'s components (the Problem schema of error answers)', () => {
    // Whichever media type the document gives problems (application/problem+json, RFC 9457), the schema is a $ref.
    const content = operatorapi.document.paths['/operatorapi/tickets/{id}']?.get?.responses?.['404']?.content ?? {};
    const [mediaType] = Object.keys(content);
    expect(content[mediaType!]?.schema).toEqual({ $ref: '#/components/schemas/Problem' });
    const problem = { type: 'about:blank', title: 'Not Found', status: 404, requestId: 'r-1', detail: 'No such ticket.' };
    expect(() => operatorapi.validate(getTicket(404, problem, mediaType))).not.toThrow();
    const { requestId: _requestId, ...withoutRequestId } = problem;
    expect(() => operatorapi.validate(getTicket(404, withoutRequestId, mediaType))).toThrow(/must have required property 'requestId'/);
  });

  it('refuses a media type the response does not list, a body that is not JSON, and a body where none is documented', () => {
    expect(() => operatorapi.validate(getTicket(200, ticket, 'text/html'))).toThrow(/as text\/html, but the document lists application\/json/);
    expect(() => operatorapi.validate({ ...getTicket(200, undefined), body: '<html>' })).toThrow(/not JSON/);
    const removeLock = { method: 'DELETE', path: '/operatorapi/securedobjects/front-door', status: 204, contentType: undefined };
    expect(() => operatorapi.validate({ ...removeLock, body: '' })).not.toThrow();
    expect(() => operatorapi.validate({ ...removeLock, contentType: 'application/json', body: '{}' })).toThrow(/describes none/);
  });

  it('checks the headers a response documents: their schema, and presence when required', () => {
    const document: OpenApiDocument = {
      openapi: '3.0.3',
      paths: {
        '/things': {
          get: {
            responses: {
              429: { headers: { 'Retry-After': { schema: { type: 'integer', minimum: 0 } }, 'X-Trace': { required: true, schema: { type: 'string' } } } },
            },
          },
        },
      },
    };
    const validator = new OpenApiResponseValidator('things', document);
    const answer = (headers: Record<string, string>): AnswerToCheck => ({ method: 'GET', path: '/things', status: 429, contentType: undefined, body: '', headers });
    expect(() => validator.validate(answer({ 'retry-after': '30', 'x-trace': 't' }))).not.toThrow();
    expect(() => validator.validate(answer({ 'retry-after': 'soon', 'x-trace': 't' }))).toThrow(/header Retry-After: "soon": it must be integer/);
    expect(() => validator.validate(answer({ 'retry-after': '-1', 'x-trace': 't' }))).toThrow(/must be >= 0/);
    expect(() => validator.validate(answer({ 'retry-after': '30' }))).toThrow(/without its required header X-Trace/);
  });

  it('reads OpenAPI 3.0 `nullable`, ignores `example`, and falls back to `default` for unlisted statuses', () => {
    const document: OpenApiDocument = {
      openapi: '3.0.3',
      paths: {
        '/things/{id}': {
          get: {
            responses: {
              200: {
                content: {
                  'application/json': {
                    schema: { type: 'object', required: ['note'], properties: { note: { type: 'string', nullable: true, example: 'hi' } } },
                  },
                },
              },
              default: { content: { 'application/json': { schema: { $ref: '#/components/schemas/Failure' } } } },
            },
          },
        },
      },
      components: { schemas: { Failure: { type: 'object', required: ['message'], properties: { message: { type: 'string' } } } } },
    };
    const validator = new OpenApiResponseValidator('things', document);
    const answer = (status: number, body: unknown): AnswerToCheck => ({ method: 'GET', path: '/things/1', status, contentType: 'application/json', body: JSON.stringify(body) });
    expect(() => validator.validate(answer(200, { note: null }))).not.toThrow();
    expect(() => validator.validate(answer(200, { note: 'hello' }))).not.toThrow();
    expect(() => validator.validate(answer(200, { note: 7 }))).toThrow(ResponseMismatchError);
    expect(() => validator.validate(answer(500, { message: 'boom' }))).not.toThrow();
    expect(() => validator.validate(answer(500, { error: 'boom' }))).toThrow(/required property 'message'/);
  });

  it('as openapi-fetch middleware, rejects the call whose answer does not match', async () => {
    const answers: Response[] = [];
    const client = createClient<OperatorApiPaths>({
      baseUrl: 'http://api.test',
      fetch: async () => answers.shift()!,
    });
    client.use(responseValidation(OpenApiResponseValidator.committed('operatorapi')));
    const json = (status: number, body: unknown) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });

    answers.push(json(200, ticket));
    const good = await client.GET('/operatorapi/tickets/{id}', { params: { path: { id: TICKET_ID } } });
    expect(good.data?.status).toBe('VALID');

    answers.push(json(200, { ...ticket, endDate: null }));
    await expect(client.GET('/operatorapi/tickets/{id}', { params: { path: { id: TICKET_ID } } })).rejects.toThrow(/\/endDate must be integer/);

    answers.push(json(402, { type: 'about:blank', title: 'Payment Required', status: 402, requestId: 'r-2' }));
    await expect(client.GET('/operatorapi/tickets/{id}', { params: { path: { id: TICKET_ID } } })).rejects.toThrow(/answered 402/);
  });

  it('as a buildTestApp option, checks every inject answer to a documented operation and rejects a mismatch', async () => {
    // /healthz is in no committed document: a made-up one claims it answers 204, to provoke a mismatch from the server.
    const healthz = (status: string): OpenApiDocument => ({
      openapi: '3.0.3',
      paths: { '/healthz': { get: { responses: { [status]: { description: 'Alive.' } } } } },
    });
    const validators = [...committedValidators(), new OpenApiResponseValidator('made-up', healthz('204'))];
    const t = await buildTestApp({}, { validateResponses: validators });
    try {
      const anonymous = await t.app.inject({ method: 'GET', url: '/operatorapi/tickets?limit=5' });
      expect(anonymous.statusCode).toBe(401);
      expect(validators[0]!.checked).toEqual(['operatorapi: GET /operatorapi/tickets answered 401']);
      // Not an operation of any document: unchecked.
      expect((await t.app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).statusCode).toBe(200);
      await expect(t.app.inject({ method: 'GET', url: '/healthz' })).rejects.toThrow(/made-up: GET \/healthz answered 200, a status the document does not list \(204\)/);
    } finally {
      await t.close();
    }
  });
});
