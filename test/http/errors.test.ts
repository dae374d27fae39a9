// The HTTP shell: problem details for every error, request ids, JSON-only bodies, strict body validation.
import { Type } from '@sinclair/typebox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const PROBLEM_BASE = 'https://access-credential-service.dev/problems/';

const EchoBody = Type.Object(
  {
    count: Type.Integer({ description: 'A required integer.' }),
    tags: Type.Array(Type.String(), { description: 'A list of strings.' }),
    note: Type.Optional(Type.String({ maxLength: 10 })),
  },
  { additionalProperties: false },
);
const EchoQuery = Type.Object({ n: Type.Optional(Type.Integer()) }, { additionalProperties: false });

/** Test-only routes: a strict JSON route and handlers that fail in the ways real code can. */
function registerTestRoutes(app: App): void {
  app.post('/test/echo', { schema: { body: EchoBody, querystring: EchoQuery } }, async (request) => ({
    body: request.body,
    query: request.query,
  }));
  app.get('/test/echo', { schema: { querystring: EchoQuery } }, async (request) => ({
    n: request.query.n,
    type: typeof request.query.n,
  }));
  app.get(
    '/test/choice',
    { schema: { querystring: Type.Object({ status: Type.Optional(Type.Union([Type.Literal('VALID'), Type.Literal('REVOKED')])) }) } },
    async (request) => request.query,
  );
  app.get('/test/items/:id', { schema: { params: Type.Object({ id: Type.String({ minLength: 1 }) }) } }, async (request) => request.params);
  app.get('/test/throw', async () => {
    throw new Error('connection string postgres://admin:hunter2@db/acs rejected');
  });
  app.get('/test/pg-error', async () => {
    // The shape node-postgres gives a failed query: SQLSTATE in `code`, the server's message, often the query.
    throw Object.assign(new Error('relation "vault" does not exist in SELECT secret FROM vault WHERE id = $1'), {
      code: '42P01',
      severity: 'ERROR',
      query: 'SELECT secret FROM vault WHERE id = $1',
      table: 'vault',
    });
  });
  app.get('/test/pg-object', async () => {
    // Not even an Error: a bare object thrown by a driver or a careless library.
    throw { code: '42P01', message: 'SELECT secret FROM vault failed' };
  });
  app.get('/test/unavailable', async () => {
    throw Object.assign(new Error('connect ECONNREFUSED 10.0.0.5:5432'), { code: 'ECONNREFUSED' });
  });
  app.get('/test/pool-timeout', async () => {
    throw new Error('timeout exceeded when trying to connect');
  });
  app.get('/test/statement-timeout', async () => {
    // What pg throws when statement_timeout cancelled the statement (SQLSTATE 57014).
    throw Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' });
  });
  app.get('/test/deadlock', async () => {
    // What pg throws when PostgreSQL broke a deadlock by rolling this transaction back.
    throw Object.assign(new Error('deadlock detected'), { code: '40P01', detail: 'Process 4711 waits for ShareLock on transaction 815' });
  });
}

function expectProblem(
  response: { statusCode: number; headers: Record<string, unknown>; json(): unknown },
  status: number,
  instance: string,
) {
  expect(response.statusCode).toBe(status);
  expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
  const body = response.json() as Record<string, unknown>;
  expect(body).toMatchObject({ status, instance });
  expect(body.type).toEqual(expect.stringMatching(new RegExp(`^${PROBLEM_BASE}[a-z-]+$`)));
  expect(body.title).toEqual(expect.any(String));
  expect(body.detail).toEqual(expect.any(String));
  expect(body.requestId).toBe(response.headers['x-request-id']);
  return body;
}

describe('HTTP shell', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp({ BODY_LIMIT: '2048' }, { beforeReady: registerTestRoutes });
  });
  afterAll(async () => {
    await t.close();
  });

  const post = (payload: string, contentType = 'application/json', url = '/test/echo') =>
    t.app.inject({ method: 'POST', url, headers: { 'content-type': contentType }, payload });

  describe('unknown routes', () => {
    it('answers 404 as problem details naming the path, without the query', async () => {
      const response = await t.app.inject({ method: 'GET', url: '/no/such/route?x=1' });
      const body = expectProblem(response, 404, '/no/such/route');
      expect(body).toMatchObject({ type: `${PROBLEM_BASE}not-found`, title: 'Not Found' });
      expect(body.detail).toBe('No route GET /no/such/route.');
      expect(response.headers['x-request-id']).toMatch(UUID);
    });

    it('answers 405 with Allow for a known path with another method (RFC 9110 section 15.5.6)', async () => {
      const response = await t.app.inject({ method: 'DELETE', url: '/healthz' });
      const body = expectProblem(response, 405, '/healthz');
      expect(response.headers.allow).toBe('GET, HEAD');
      expect(body).toMatchObject({ type: `${PROBLEM_BASE}method-not-allowed`, detail: 'DELETE is not allowed on /healthz; it takes GET, HEAD.' });
      const collection = await t.app.inject({ method: 'PUT', url: '/operatorapi/mobiledevices', headers: { 'content-type': 'application/json' }, payload: '{}' });
      expectProblem(collection, 405, '/operatorapi/mobiledevices');
      expect(collection.headers.allow).toBe('GET, HEAD, POST');
      const item = await t.app.inject({ method: 'PUT', url: '/operatorapi/mobiledevices/phone-1?x=1' });
      expect(item.headers.allow).toBe('GET, HEAD, DELETE');
    });

    it('names the empty segment of a path that ends with a slash', async () => {
      const response = await t.app.inject({ method: 'GET', url: '/test/items/' });
      const body = expectProblem(response, 400, '/test/items/');
      expect(body.errors).toEqual([
        { field: 'id', message: 'is empty: the path ends with a slash; leave it off (without it, the path names the whole collection)' },
      ]);
    });

    it('lists the allowed words of a choice once, not one error per word', async () => {
      const response = await t.app.inject({ method: 'GET', url: '/test/choice?status=valid' });
      const body = expectProblem(response, 400, '/test/choice');
      expect(body.errors).toEqual([{ field: 'status', message: 'must be one of: VALID, REVOKED' }]);
      expect(body.detail).toBe('status: must be one of: VALID, REVOKED');
    });
  });

  describe('request ids', () => {
    it("answers the server's own id, never a client's X-Request-Id; a sane one is logged as clientRequestId", async () => {
      const id = 'req-42.abc:DEF@edge_1';
      const response = await t.app.inject({ method: 'GET', url: '/nowhere', headers: { 'x-request-id': id } });
      const requestId = String(response.headers['x-request-id']);
      expect(requestId).toMatch(UUID);
      expect(response.json()).toMatchObject({ requestId });
      const lines = t.logLines.map((line) => JSON.parse(line) as { requestId?: string; clientRequestId?: string });
      expect(lines.some((line) => line.requestId === requestId && line.clientRequestId === id)).toBe(true);
      expect(lines.some((line) => line.requestId === id)).toBe(false);
    });

    it('logs a 128-character client id as clientRequestId', async () => {
      const id = 'a'.repeat(128);
      const response = await t.app.inject({ method: 'GET', url: '/nowhere', headers: { 'x-request-id': id } });
      expect(response.headers['x-request-id']).toMatch(UUID);
      const requestId = String(response.headers['x-request-id']);
      expect(t.logLines.some((line) => line.includes(`"clientRequestId":"${id}"`) && line.includes(requestId))).toBe(true);
    });

    it.each([
      ['too long', 'a'.repeat(129)],
      ['with spaces', 'abc def'],
      ['with a newline', 'abc\ninjected: yes'],
      ['with unicode', 'ünïcode-ïd'],
      ['with JSON', '{"requestId":"x"}'],
      ['empty', ''],
    ])('replaces an incoming id %s with a fresh UUID', async (_case, id) => {
      const response = await t.app.inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': id } });
      expect(response.statusCode).toBe(200);
      expect(response.headers['x-request-id']).toMatch(UUID);
      expect(response.headers).not.toHaveProperty('injected');
    });

    it('gives every request its own id', async () => {
      const [a, b] = await Promise.all([
        t.app.inject({ method: 'GET', url: '/healthz' }),
        t.app.inject({ method: 'GET', url: '/healthz' }),
      ]);
      expect(a.headers['x-request-id']).toMatch(UUID);
      expect(b.headers['x-request-id']).toMatch(UUID);
      expect(a.headers['x-request-id']).not.toBe(b.headers['x-request-id']);
    });

    it.each([
      [200, () => t.app.inject({ method: 'GET', url: '/healthz' })],
      [404, () => t.app.inject({ method: 'GET', url: '/missing' })],
      [413, () => post(JSON.stringify({ count: 1, tags: ['x'.repeat(4096)] }))],
      [415, () => post('count=1', 'text/plain')],
      [400, () => post('{')],
      [500, () => t.app.inject({ method: 'GET', url: '/test/throw' })],
      [503, () => t.app.inject({ method: 'GET', url: '/test/unavailable' })],
    ])('puts X-Request-Id on a %i response', async (status, send) => {
      const response = await send();
      expect(response.statusCode).toBe(status);
      expect(response.headers['x-request-id']).toMatch(UUID);
    });
  });

  describe('request bodies', () => {
    it('accepts a valid JSON body', async () => {
      const response = await post(JSON.stringify({ count: 3, tags: ['a', 'b'] }));
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ body: { count: 3, tags: ['a', 'b'] }, query: {} });
    });

    it('refuses a text/plain body with 415', async () => {
      const response = await post('{"count":1,"tags":[]}', 'text/plain');
      const body = expectProblem(response, 415, '/test/echo');
      expect(body).toMatchObject({
        type: `${PROBLEM_BASE}unsupported-media-type`,
        title: 'Unsupported Media Type',
        detail: 'This API takes JSON only: send the body with Content-Type: application/json (docs/api-reference.md 7.2).',
      });
    });

    it('refuses a form body with 415', async () => {
      const response = await post('count=1', 'application/x-www-form-urlencoded');
      expectProblem(response, 415, '/test/echo');
    });

    it('refuses a body larger than BODY_LIMIT with 413', async () => {
      const payload = JSON.stringify({ count: 1, tags: ['x'.repeat(3000)] });
      expect(Buffer.byteLength(payload)).toBeGreaterThan(2048);
      const response = await post(payload);
      const body = expectProblem(response, 413, '/test/echo');
      expect(body).toMatchObject({
        type: `${PROBLEM_BASE}payload-too-large`,
        title: 'Content Too Large',
        detail: 'The request body is larger than the limit of 2048 bytes (BODY_LIMIT); send less per request.',
      });
    });

    it('accepts a body just under BODY_LIMIT', async () => {
      const payload = JSON.stringify({ count: 1, tags: ['x'.repeat(1900)] });
      expect(Buffer.byteLength(payload)).toBeLessThanOrEqual(2048);
      expect((await post(payload)).statusCode).toBe(200);
    });

    it('refuses broken JSON with 400', async () => {
      const response = await post('{"count": 1, "tags": [');
      const body = expectProblem(response, 400, '/test/echo');
      expect(body.type).toBe(`${PROBLEM_BASE}bad-request`);
      expect(JSON.stringify(body)).not.toMatch(/\n\s+at /);
    });

    it('refuses an unknown field with 400 naming it', async () => {
      const response = await post(JSON.stringify({ count: 1, tags: [], admin: true }));
      const body = expectProblem(response, 400, '/test/echo');
      expect(body.type).toBe(`${PROBLEM_BASE}validation`);
      expect(body.errors).toEqual([{ field: 'admin', message: 'is not a known field' }]);
    });

    it('names every bad field, not only the first', async () => {
      const response = await post(JSON.stringify({ count: 'many', tags: [1, 'ok', false], note: 'far too long for it' }));
      const body = expectProblem(response, 400, '/test/echo');
      const fields = (body.errors as { field: string; message: string }[]).map((error) => error.field).sort();
      expect(fields).toEqual(['count', 'note', 'tags[0]', 'tags[2]']);
      for (const field of fields) expect(body.detail).toContain(field);
    });

    it('names a missing required field', async () => {
      const response = await post(JSON.stringify({ tags: [] }));
      const body = expectProblem(response, 400, '/test/echo');
      expect(body.errors).toEqual([{ field: 'count', message: 'is required' }]);
    });

    it('does not coerce a string to an integer in a body', async () => {
      const response = await post(JSON.stringify({ count: '5', tags: [] }));
      const body = expectProblem(response, 400, '/test/echo');
      expect(body.errors).toEqual([{ field: 'count', message: expect.stringMatching(/integer/) }]);
    });

    it('does not coerce a single string into an array in a body', async () => {
      const response = await post(JSON.stringify({ count: 5, tags: 'solo' }));
      const body = expectProblem(response, 400, '/test/echo');
      expect((body.errors as { field: string }[]).map((error) => error.field)).toEqual(['tags']);
    });

    it('refuses a JSON body that is not an object', async () => {
      const response = await post('[1,2]');
      expectProblem(response, 400, '/test/echo');
    });

    it('coerces a query-string integer', async () => {
      const response = await t.app.inject({ method: 'GET', url: '/test/echo?n=5' });
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ n: 5, type: 'number' });
    });

    it('refuses a query-string value that is not an integer, naming the parameter', async () => {
      const response = await t.app.inject({ method: 'GET', url: '/test/echo?n=five' });
      const body = expectProblem(response, 400, '/test/echo');
      expect((body.errors as { field: string }[]).map((error) => error.field)).toEqual(['n']);
    });

    it('refuses an unknown query parameter when the schema closes the query', async () => {
      const response = await t.app.inject({ method: 'GET', url: '/test/echo?debug=1' });
      const body = expectProblem(response, 400, '/test/echo');
      expect(body.errors).toEqual([{ field: 'debug', message: 'is not a known field' }]);
    });
  });

  describe('server errors', () => {
    it('answers a thrown Error with a 500 that reveals nothing about it', async () => {
      const response = await t.app.inject({ method: 'GET', url: '/test/throw' });
      const body = expectProblem(response, 500, '/test/throw');
      expect(body).toMatchObject({ type: `${PROBLEM_BASE}internal`, title: 'Internal Server Error' });
      const text = response.body;
      expect(text).not.toContain('hunter2');
      expect(text).not.toContain('connection string');
      expect(text).not.toMatch(/\bat \S+ \(/); // stack frames
      expect(text).not.toContain('.ts');
      expect(body).not.toHaveProperty('stack');
      expect(body.detail).toContain('requestId');
    });

    it('logs the failure with its request id so the operator can find it', async () => {
      const response = await t.app.inject({ method: 'GET', url: '/test/throw' });
      const requestId = response.headers['x-request-id'];
      const logged = t.logLines.map((line) => JSON.parse(line)).filter((line) => line.requestId === requestId);
      expect(logged.some((line) => line.level === 50 && line.err?.message?.includes('rejected'))).toBe(true);
    });

    it('keeps SQL and table names of a database error out of the 500', async () => {
      const response = await t.app.inject({ method: 'GET', url: '/test/pg-error' });
      const body = expectProblem(response, 500, '/test/pg-error');
      expect(body.type).toBe(`${PROBLEM_BASE}internal`);
      expect(response.body).not.toMatch(/SELECT|secret|vault|42P01/);
    });

    it('keeps SQL out of the 500 when a bare object is thrown', async () => {
      const response = await t.app.inject({ method: 'GET', url: '/test/pg-object' });
      expect(response.statusCode).toBe(500);
      expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(response.headers['x-request-id']).toMatch(UUID);
      expect(response.body).not.toMatch(/SELECT|secret|vault/);
    });

    it('answers an unreachable database with 503 and Retry-After', async () => {
      const response = await t.app.inject({ method: 'GET', url: '/test/unavailable' });
      const body = expectProblem(response, 503, '/test/unavailable');
      expect(body).toMatchObject({ type: `${PROBLEM_BASE}unavailable`, title: 'Service Unavailable' });
      expect(response.headers['retry-after']).toMatch(/^\d+$/);
      expect(response.body).not.toMatch(/10\.0\.0\.5|5432|ECONNREFUSED/);
    });

    it('answers a transaction the database rolled back for a concurrent one (deadlock) with 503 and Retry-After, never 500', async () => {
      const response = await t.app.inject({ method: 'GET', url: '/test/deadlock' });
      const body = expectProblem(response, 503, '/test/deadlock');
      expect(body).toMatchObject({ type: `${PROBLEM_BASE}unavailable`, detail: expect.stringContaining('Retry it') });
      expect(response.headers['retry-after']).toMatch(/^\d+$/);
      expect(response.body).not.toMatch(/4711|ShareLock|deadlock detected/);
    });

    it('answers a statement the database cancelled at its statement timeout with 503 and Retry-After, never 500', async () => {
      const response = await t.app.inject({ method: 'GET', url: '/test/statement-timeout' });
      const body = expectProblem(response, 503, '/test/statement-timeout');
      expect(body).toMatchObject({ type: `${PROBLEM_BASE}unavailable`, detail: expect.stringContaining('did not finish the request in time') });
      expect(response.headers['retry-after']).toMatch(/^\d+$/);
      expect(response.body).not.toMatch(/canceling statement/);
    });

    it('answers a pool that cannot hand out a connection with 503', async () => {
      const response = await t.app.inject({ method: 'GET', url: '/test/pool-timeout' });
      expectProblem(response, 503, '/test/pool-timeout');
      expect(response.headers['retry-after']).toMatch(/^\d+$/);
    });
  });
});
