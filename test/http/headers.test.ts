// Response headers (docs/security-cases.md G45, docs/api-reference.md 7.1): ids in Location and Link are percent-encoded, a header
// that cannot be written answers a problem, secrets are never cached, and over-long requests answer problems too.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GoneError } from '../../src/errors.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { rawRequest } from '../helpers/raw-http.js';
import { accessToken, download, phoneToken } from '../helpers/device.js';
import { bearer, clientToken, createTenant, type TenantFixture } from '../helpers/oauth.js';
import { call, device, expectProblem, lock, ticket } from '../helpers/operator.js';

/** A resident id that, written raw into `Link`, would close the target and add a second link. */
const INJECTING_ID = 'a>; rel="alternate", <https://evil.example/>';
const V1_SUNSET = 'Fri, 01 Mar 2019 00:00:00 GMT';

/** The log lines of one request, parsed. */
function logOf(t: TestApp, requestId: string): { level: number; msg?: string; err?: { stack?: string } }[] {
  return t.logLines.map((line) => JSON.parse(line)).filter((entry) => entry.requestId === requestId);
}

describe('response headers', () => {
  let t: TestApp;
  let acme: TenantFixture;
  let operator: string;
  let writer: string;

  beforeAll(async () => {
    t = await buildTestApp(
      { BCRYPT_COST: '4' },
      {
        beforeReady(app) {
          // Test-only routes that put a value no header can carry into a header, the way a future bug could.
          app.get('/test/raw-header', async (_request, reply) => reply.header('x-note', 'one\r\nSet-Cookie: session=stolen').send({ ok: true }));
          app.get('/test/raw-problem-header', async () => {
            throw new GoneError('Gone for good.', { link: '<https://example.test/\u00e9t\u00e9\r\n>; rel="successor-version"' }, {});
          });
        },
      },
    );
    acme = await createTenant(t.app, 'acme');
    operator = await clientToken(t.app, acme);
    writer = await accessToken(t, acme, ['nfc-token-writer', 'device-groups:write']);
  });
  afterAll(async () => {
    await t.close();
  });

  const cardV1 = (encodedId: string) => t.app.inject({ url: `/v1/residents/${encodedId}/token-card?version=1`, headers: bearer(writer) });

  describe('G45: ids in Location and Link are percent-encoded', () => {
    it('the removed token card v1 answers one successor link whose target holds the id percent-encoded', async () => {
      const response = await cardV1(encodeURIComponent(INJECTING_ID));
      const body = expectProblem(response, 410);
      expect(body.successor).toEqual(expect.stringContaining('token card v2'));
      expect(response.headers.sunset).toBe(V1_SUNSET);
      expect(response.headers.link).toBe(`</v1/residents/${encodeURIComponent(INJECTING_ID)}/token-card?version=2>; rel="successor-version"`);
      const link = String(response.headers.link);
      // One link: one target, closed once, and no second relation.
      expect(link.match(/</g)).toHaveLength(1);
      expect(link.match(/>/g)).toHaveLength(1);
      expect(link).not.toContain('rel="alternate"');
      expect(link.match(/"/g)).toHaveLength(2);
      expect(link).not.toContain('evil.example/>');
    });

    it('a resident id with CR/LF or non-ASCII answers a 4xx problem with X-Request-Id, never a raw header error', async () => {
      for (const id of ['a\r\nSet-Cookie: session=stolen', 'r\u00e9sident-\u2603', 'tab\there', '\u0000nul']) {
        const response = await cardV1(encodeURIComponent(id));
        const body = expectProblem(response, 410);
        expect(response.headers['x-request-id']).toEqual(expect.any(String));
        expect(body.requestId).toBe(response.headers['x-request-id']);
        expect(response.headers['set-cookie']).toBeUndefined();
        expect(response.headers.link).toBe(`</v1/residents/${encodeURIComponent(id)}/token-card?version=2>; rel="successor-version"`);
        expect(String(response.headers.link)).toMatch(/^[\x21-\x7e ]+$/);
        // A client's mistake is not the service's error: nothing at error level, no stack.
        const lines = logOf(t, String(response.headers['x-request-id']));
        expect(lines.filter((line) => line.level >= 50)).toEqual([]);
        expect(JSON.stringify(lines)).not.toContain('ERR_INVALID_CHAR');
      }
    });

    it('every Location of a create holds its id percent-encoded', async () => {
      const admin = await clientToken(t.app, acme);
      for (const username of ['ann/smith?x#y%', 'zo\u00eb', 'a;b,c<d>e"f']) {
        const created = await call(t, admin, { method: 'POST', url: '/operatorapi/users', payload: { username, password: 'correct horse battery' } });
        expect(created.statusCode, created.body).toBe(201);
        expect(created.headers.location).toBe(`/operatorapi/users/${encodeURIComponent(username)}`);
        expect(created.json().username).toBe(username);
        // The Location names that user and no other: deleting through it removes exactly that user.
        const removed = await call(t, admin, { method: 'DELETE', url: String(created.headers.location) });
        expect(removed.statusCode, removed.body).toBe(204);
        const left = await t.database.db.query<{ n: string }>('SELECT count(*) AS n FROM users WHERE tenant_id = $1 AND username = $2', [acme.tenantId, username]);
        expect(Number(left.rows[0]!.n)).toBe(0);
      }
      for (const id of ['lock.~_-1', '~']) {
        const created = await call(t, operator, { method: 'POST', url: '/operatorapi/securedobjects', payload: { id, channels: ['btlespp'], localName: 'door', uuid: '7d8a0c1e-4b7f-4d5e-9a41-3c2b1f0e9d8c' } });
        expect(created.statusCode, created.body).toBe(201);
        expect(created.headers.location).toBe(`/operatorapi/securedobjects/${encodeURIComponent(id)}`);
        expect((await call(t, operator, { method: 'GET', url: String(created.headers.location) })).json().id).toBe(id);
      }
    });

    it('a page link is built from the route and the decoded id, not echoed from the request line', async () => {
      await lock(t, operator, 'side-gate');
      await device(t, operator, 'phone.2');
      const issued = [await ticket(t, operator, 'side-gate', 'phone.2'), await ticket(t, operator, 'side-gate', 'phone.2')];
      const phone = await phoneToken(t, acme, 'phone.2');
      // `%2E` is an encoded `.`: the link names the id in its one canonical form.
      const first = await t.app.inject({ url: '/deviceapi/mobiledevices/phone%2E2/tickets?limit=1', headers: bearer(phone) });
      expect(first.statusCode, first.body).toBe(200);
      expect(first.headers.link).toMatch(/^<\/deviceapi\/mobiledevices\/phone\.2\/tickets\?limit=1&cursor=[A-Za-z0-9_%.-]+>; rel="next"$/);
      const next = /^<([^>]+)>/.exec(String(first.headers.link))![1]!;
      const second = await t.app.inject({ url: next, headers: bearer(phone) });
      expect(second.statusCode, second.body).toBe(200);
      expect([...first.json(), ...second.json()].map((item: { id: string }) => item.id).sort()).toEqual(issued.map((item) => item.id).sort());
      expect(second.headers.link).toBeUndefined();
    });
  });

  describe('a header that cannot be written answers a problem', () => {
    it('a route that writes CR/LF into a header answers 400 problem+json with X-Request-Id, and the header is not sent', async () => {
      const response = await t.app.inject({ url: '/test/raw-header' });
      const body = expectProblem(response, 400);
      expect(body.detail).toEqual(expect.stringContaining('header'));
      expect(response.headers['x-note']).toBeUndefined();
      expect(response.headers['set-cookie']).toBeUndefined();
      expect(response.body).not.toContain('ERR_INVALID_CHAR');
      const lines = logOf(t, String(response.headers['x-request-id']));
      expect(lines.filter((line) => line.level >= 50)).toEqual([]);
      expect(lines.some((line) => line.err?.stack)).toBe(false);
    });

    it('a problem carrying a header that cannot be written still answers as that problem, without the header', async () => {
      const response = await t.app.inject({ url: '/test/raw-problem-header' });
      const body = expectProblem(response, 410);
      expect(body.detail).toBe('Gone for good.');
      expect(response.headers.link).toBeUndefined();
      const lines = logOf(t, String(response.headers['x-request-id']));
      expect(lines.filter((line) => line.level >= 50)).toEqual([]);
    });
  });

  describe('RFC 9111 5.2.2.5: answers holding secrets or credentials are never stored', () => {
    it('client create and secret rotation answer Cache-Control: no-store', async () => {
      const admin = await clientToken(t.app, acme);
      const created = await call(t, admin, { method: 'POST', url: '/operatorapi/oauthclients', payload: { name: 'desk', scopes: ['tokens:read'] } });
      expect(created.statusCode, created.body).toBe(201);
      expect(created.json().clientSecret).toEqual(expect.any(String));
      expect(created.headers['cache-control']).toBe('no-store');
      const rotated = await call(t, admin, { method: 'POST', url: `/operatorapi/oauthclients/${created.json().clientId}/secret` });
      expect(rotated.statusCode, rotated.body).toBe(200);
      expect(rotated.json().clientSecret).not.toBe(created.json().clientSecret);
      expect(rotated.headers['cache-control']).toBe('no-store');
      // A read without a secret keeps the default.
      const read = await call(t, admin, { method: 'GET', url: `/operatorapi/oauthclients/${created.json().clientId}` });
      expect(read.json()).not.toHaveProperty('clientSecret');
      expect(read.headers['cache-control']).toBeUndefined();
    });

    it('the phone\'s ticket download and the token card answer Cache-Control: no-store', async () => {
      await lock(t, operator, 'front-door');
      await device(t, operator, 'phone-1');
      const issued = await ticket(t, operator, 'front-door', 'phone-1');
      const phone = await phoneToken(t, acme, 'phone-1');
      const downloaded = await t.app.inject({ url: '/deviceapi/mobiledevices/phone-1/tickets', headers: bearer(phone) });
      expect(downloaded.statusCode, downloaded.body).toBe(200);
      expect(downloaded.json()).toEqual([expect.objectContaining({ id: issued.id, credential: expect.any(String) })]);
      expect(downloaded.headers['cache-control']).toBe('no-store');
      expect(await download(t, phone, 'phone-1')).toHaveLength(1);

      const resident = await t.app.inject({ method: 'POST', url: '/v1/residents', headers: bearer(writer), payload: { name: 'Alice', mobileDeviceIds: ['phone-1'] } });
      expect(resident.statusCode, resident.body).toBe(201);
      const card = await t.app.inject({ url: `/v1/residents/${resident.json().id}/token-card?version=2`, headers: bearer(writer) });
      expect(card.statusCode, card.body).toBe(200);
      const contents = JSON.parse(Buffer.from(card.json().cardData, 'base64').toString('utf8'));
      expect(contents.credentials).toHaveLength(1);
      expect(card.headers['cache-control']).toBe('no-store');
    });
  });

  describe('over-long requests over a real socket (RFC 9110 15.5.15, RFC 6585 5)', () => {
    let port: number;
    beforeAll(async () => {
      await t.app.listen({ port: 0, host: '127.0.0.1' });
      const address = t.app.server.address();
      port = typeof address === 'object' && address ? address.port : 0;
    });

    function expectSocketProblem(answer: { status: number; headers: Record<string, string>; body: string }, status: number) {
      expect(answer.status, answer.body).toBe(status);
      expect(answer.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(answer.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
      const body = JSON.parse(answer.body);
      expect(body).toMatchObject({ status, type: expect.stringContaining('/problems/'), title: expect.any(String), detail: expect.any(String) });
      expect(body.requestId).toBe(answer.headers['x-request-id']);
      expect(Number(answer.headers['content-length'])).toBe(Buffer.byteLength(answer.body));
    }

    it('a 20,000-character query answers 414 problem+json with X-Request-Id', async () => {
      const answer = await rawRequest(port, `GET /operatorapi/tickets?status=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${operator}\r\nConnection: close\r\n\r\n`);
      expectSocketProblem(answer, 414);
    });

    it('a 20 KB header block answers 431 problem+json with X-Request-Id', async () => {
      // No `Connection: close` from the client: the server closes after refusing it (rawRequest waits for that).
      const answer = await rawRequest(port, `GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Padding: ${'a'.repeat(20 * 1024)}\r\n\r\n`);
      expectSocketProblem(answer, 431);
      expect(answer.headers.connection).toBe('close');
    });

    it('a header block over the parser\'s own limit answers 431 problem+json with X-Request-Id', async () => {
      const answer = await rawRequest(port, `GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Padding: ${'a'.repeat(80 * 1024)}\r\n\r\n`);
      expectSocketProblem(answer, 431);
    });

    it('a path parameter over the router\'s limit still answers 414, and a normal request still works', async () => {
      const answer = await rawRequest(port, `GET /operatorapi/tickets/${'x'.repeat(300)} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${operator}\r\nConnection: close\r\n\r\n`);
      expectSocketProblem(answer, 414);
      const ok = await rawRequest(port, `GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nX-Padding: ${'a'.repeat(1024)}\r\n\r\n`);
      expect(ok.status).toBe(200);
    });
  });
});
