// Request logs: JSON lines carrying the request id, with credentials from headers and query strings redacted.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redactUrl } from '../../src/logger.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { clientToken, createTenant } from '../helpers/oauth.js';

const SECRETS = ['secret-token-123', 'leak123', 'leak456', 'pw-789', 'rt-000'];

interface LogLine {
  level: number;
  msg: string;
  requestId?: string;
  clientRequestId?: string;
  req?: { method: string; url: string };
  res?: { statusCode: number };
  tenantId?: string;
  clientId?: string;
}

describe('request logging', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp({ LOG_LEVEL: 'trace' }, {
      beforeReady(app) {
        app.get('/test/fail', async () => {
          throw new Error('downstream refused');
        });
        app.post('/test/login', async () => ({ ok: true }));
      },
    });
  });
  afterAll(async () => {
    await t.close();
  });

  const parsed = (): LogLine[] => t.logLines.map((line) => JSON.parse(line) as LogLine);
  const linesOf = (requestId: string) => parsed().filter((line) => line.requestId === requestId);

  it.each([
    ['a matched route', '/metrics', 200],
    ['an unknown route', '/nothing/here', 404],
    ['a failing route', '/test/fail', 500],
  ])('keeps bearer tokens and query-string secrets out of the logs on %s', async (_case, path, status) => {
    const response = await t.app.inject({
      method: 'GET',
      url: `${path}?access_token=leak123&client_secret=leak456&password=pw-789&refresh_token=rt-000&page=2`,
      headers: { authorization: 'Bearer secret-token-123', cookie: 'session=secret-token-123' },
    });
    expect(response.statusCode).toBe(status);

    const requestId = String(response.headers['x-request-id']);
    const lines = linesOf(requestId);
    expect(lines.length).toBeGreaterThanOrEqual(2); // incoming request, request completed
    const all = t.logLines.join('');
    for (const secret of SECRETS) expect(all).not.toContain(secret);

    const incoming = lines.find((line) => line.req)!;
    expect(incoming.req!.url).toBe(`${path}?access_token=[Redacted]&client_secret=[Redacted]&password=[Redacted]&refresh_token=[Redacted]&page=2`);
    expect(lines.find((line) => line.res)?.res?.statusCode).toBe(status);
  });

  it('keeps secrets in a malformed JSON body out of the logs and the answer', async () => {
    for (const payload of ['{"client_secret":"leak456" x}', '{"password":"pw-789",', '{"a":1}rt-000']) {
      const response = await t.app.inject({
        method: 'POST',
        url: '/test/login',
        headers: { 'content-type': 'application/json' },
        payload,
      });
      expect(response.statusCode).toBe(400);
      for (const secret of SECRETS) expect(response.body).not.toContain(secret);
      expect(linesOf(String(response.headers['x-request-id'])).length).toBeGreaterThanOrEqual(2);
    }
    const all = t.logLines.join('');
    for (const secret of SECRETS) expect(all).not.toContain(secret);
  });

  it("puts the server's request id on every line a request writes, and the client's X-Request-Id as clientRequestId", async () => {
    const response = await t.app.inject({ method: 'GET', url: '/test/fail', headers: { 'x-request-id': 'trace-me-1' } });
    const requestId = String(response.headers['x-request-id']);
    expect(requestId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(response.json().requestId).toBe(requestId);
    expect(linesOf('trace-me-1')).toEqual([]);
    const lines = linesOf(requestId);
    expect(lines.map((line) => line.msg)).toEqual(expect.arrayContaining(['incoming request', 'request failed', 'request completed']));
    expect(lines.every((line) => typeof line.level === 'number' && line.clientRequestId === 'trace-me-1')).toBe(true);
  });

  it('logs no clientRequestId for an X-Request-Id that is long or not plain, and never uses it as the request id', async () => {
    for (const incoming of ['x'.repeat(129), 'two words', '<script>', '']) {
      const response = await t.app.inject({ method: 'GET', url: '/metrics', headers: { 'x-request-id': incoming } });
      const requestId = String(response.headers['x-request-id']);
      expect(requestId).not.toBe(incoming);
      const lines = linesOf(requestId);
      expect(lines.length).toBeGreaterThanOrEqual(2);
      expect(lines.every((line) => line.clientRequestId === undefined)).toBe(true);
    }
  });

  it('names the tenant and client of an authenticated request on its completion line, and nothing on the server logger', async () => {
    const tenant = await createTenant(t.app, 'logged');
    const token = await clientToken(t.app, { clientId: tenant.clientId, clientSecret: tenant.clientSecret });
    const response = await t.app.inject({ method: 'GET', url: '/operatorapi/mobiledevices', headers: { authorization: `Bearer ${token}` } });
    expect(response.statusCode).toBe(200);
    const completed = linesOf(String(response.headers['x-request-id'])).find((line) => line.msg === 'request completed');
    expect(completed).toMatchObject({ tenantId: tenant.tenantId, clientId: tenant.clientId });
    expect(JSON.stringify(completed)).not.toContain(token);
    // The next request, unauthenticated, carries none of it: the bindings were the request's own.
    const anonymous = await t.app.inject({ method: 'GET', url: '/healthz' });
    for (const line of linesOf(String(anonymous.headers['x-request-id']))) expect(line).not.toHaveProperty('tenantId');
  });

  it('writes one JSON object per line', () => {
    expect(t.logLines.length).toBeGreaterThan(0);
    for (const line of t.logLines) {
      expect(line.endsWith('\n')).toBe(true);
      expect(() => JSON.parse(line)).not.toThrow();
    }
  });

  it('redacts secret fields an application logs by mistake', async () => {
    const before = t.logLines.length;
    t.app.log.info({ client_secret: 'leak456', body: { password: 'pw-789' }, nested: { deeper: { refresh_token: 'rt-000' } } }, 'oops');
    const line = t.logLines.slice(before).join('');
    expect(line).toContain('oops');
    for (const secret of SECRETS) expect(line).not.toContain(secret);
    expect(line).toContain('[Redacted]');
  });
});

describe('redactUrl', () => {
  it('masks credential parameters wherever they sit, keeping the others', () => {
    expect(redactUrl('/x?a=1&Access_Token=abc&b=2#frag')).toBe('/x?a=1&Access_Token=[Redacted]&b=2#frag');
    expect(redactUrl('/x?token=abc')).toBe('/x?token=[Redacted]');
    expect(redactUrl('/x?tokens=abc')).toBe('/x?tokens=abc');
    expect(redactUrl('/x/access_token=abc')).toBe('/x/access_token=abc');
  });

  it('masks a claim code, the credential of its path (docs/api-reference.md 12), keeping the query', () => {
    expect(redactUrl('/deviceapi/claims/q3Vb9xK2mP7sT4wY1zA6cE8gH0jL5nR2uX4vB7dF9hQ')).toBe('/deviceapi/claims/[Redacted]');
    expect(redactUrl('/deviceapi/claims/abc%2Fdef?x=1')).toBe('/deviceapi/claims/[Redacted]?x=1');
    expect(redactUrl('/DEVICEAPI/claims/abc/extra')).toBe('/DEVICEAPI/claims/[Redacted]');
    expect(redactUrl('/v1/claims/7c1e4b9a-2f3d-4a5b-8c6d-9e0f1a2b3c4d')).toBe('/v1/claims/7c1e4b9a-2f3d-4a5b-8c6d-9e0f1a2b3c4d');
  });
});
