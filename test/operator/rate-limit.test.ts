// Per-client rate limits on the Operator API (docs/api-reference.md 7.4): 429 problem with Retry-After and RateLimit-* headers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { expectNothingChanged } from '../helpers/database-state.js';
import { clientToken, createClient, createTenant, type ClientFixture, type TenantFixture } from '../helpers/oauth.js';
import { call, device, expectProblem, issueTicket, lock, LOCK_UUID, ticketBody } from '../helpers/operator.js';

const LIMIT = 3;

describe('per-client rate limit', () => {
  let t: TestApp;
  let acme: TenantFixture;
  let setupToken: string;

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4', API_RATE_LIMIT_PER_MINUTE: String(LIMIT) });
    acme = await createTenant(t.app, 'acme');
    // The management client spends its budget here; the tests use clients of their own.
    setupToken = await clientToken(t.app, acme);
    await lock(t, setupToken, 'door');
    await device(t, setupToken, 'phone');
  });
  afterAll(async () => {
    await t.close();
  });

  const newClient = (): Promise<ClientFixture> =>
    createClient(t.app, acme, ['tokens:create', 'tokens:read', 'devices:read', 'devices:write', 'audit:read']);
  const listLocks = (token: string) => call(t, token, { method: 'GET', url: '/operatorapi/securedobjects' });

  it('answers the request over the limit with 429, Retry-After and RateLimit-Limit/Remaining/Reset; nothing is done', async () => {
    const client = await newClient();
    const token = await clientToken(t.app, client);
    for (let i = 1; i <= LIMIT; i++) {
      const response = await listLocks(token);
      expect(response.statusCode).toBe(200);
      expect(response.headers['ratelimit-limit']).toBe(String(LIMIT));
      expect(response.headers['ratelimit-remaining']).toBe(String(LIMIT - i));
      expect(Number(response.headers['ratelimit-reset'])).toBeGreaterThan(0);
    }

    const limited = await listLocks(token);
    const problem = expectProblem(limited, 429);
    expect(problem.type).toContain('rate-limited');
    expect(problem.title).toBe('Too Many Requests');
    expect(problem.detail).toContain(`more than ${LIMIT} requests`);
    const retryAfter = Number(limited.headers['retry-after']);
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(limited.headers['ratelimit-limit']).toBe(String(LIMIT));
    expect(limited.headers['ratelimit-remaining']).toBe('0');
    expect(Number(limited.headers['ratelimit-reset'])).toBeGreaterThan(0);
    expect(Number(limited.headers['ratelimit-reset'])).toBeLessThanOrEqual(60);

    // A change over the limit is not carried out, and its Idempotency-Key is not spent.
    const body = ticketBody(t, 'door', 'phone');
    await expectNothingChanged(t, async () => {
      expectProblem(await issueTicket(t, token, body), 429);
      expectProblem(await issueTicket(t, token, body, { 'idempotency-key': 'over-the-limit' }), 429);
    });
    // The retry, once allowed (here by another client of the tenant, whose keys are shared), runs the request.
    const retry = await issueTicket(t, await clientToken(t.app, await newClient()), body, { 'idempotency-key': 'over-the-limit' });
    expect(retry.statusCode, retry.body).toBe(201);
    expect(retry.headers['idempotent-replayed']).toBeUndefined();

    // The limit follows the client, not the access token.
    expectProblem(await listLocks(await clientToken(t.app, client)), 429);
  });

  it('does not limit another client of the same tenant', async () => {
    const busy = await clientToken(t.app, await newClient());
    for (let i = 0; i <= LIMIT; i++) await listLocks(busy);
    expect((await listLocks(busy)).statusCode).toBe(429);

    const calm = await clientToken(t.app, await newClient());
    const response = await listLocks(calm);
    expect(response.statusCode).toBe(200);
    expect(response.headers['ratelimit-remaining']).toBe(String(LIMIT - 1));
    const issued = await issueTicket(t, calm, ticketBody(t, 'door', 'phone'));
    expect(issued.statusCode).toBe(201);
  });

  it('counts every Operator API route against one budget per client', async () => {
    const token = await clientToken(t.app, await newClient());
    for (const url of ['/operatorapi/securedobjects', '/operatorapi/mobiledevices', '/operatorapi/tickets']) {
      expect((await call(t, token, { method: 'GET', url })).statusCode).toBe(200);
    }
    expectProblem(await call(t, token, { method: 'GET', url: '/operatorapi/audit-events' }), 429);
  });

  it('counts requests without a valid token against their address: 429 after the limit; a client keeps its budget', async () => {
    const address = { remoteAddress: '192.0.2.33' };
    const bad = (authorization?: string) =>
      t.app.inject({ method: 'GET', url: '/operatorapi/securedobjects', ...address, headers: authorization ? { authorization } : {} });
    for (let i = 1; i <= LIMIT; i++) {
      const refused = await bad(i % 2 ? 'Bearer not-a-token' : undefined);
      expectProblem(refused, 401);
      expect(refused.headers['ratelimit-remaining']).toBe(String(LIMIT - i));
    }
    const limited = await bad();
    expect(expectProblem(limited, 429).detail).toContain('without a valid access token');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expectProblem(await bad('Bearer not-a-token'), 429);
    // A valid client calling from the same address is counted as itself.
    const fresh = await clientToken(t.app, await newClient());
    const allowed = await t.app.inject({ method: 'GET', url: '/operatorapi/securedobjects', ...address, headers: { authorization: `Bearer ${fresh}` } });
    expect(allowed.statusCode).toBe(200);
    expect(allowed.headers['ratelimit-remaining']).toBe(String(LIMIT - 1));
  });
});

// docs/security-cases.md G46: the limit counts before validation, and failed authentications count against their address.
describe('rate limit before validation and authentication', () => {
  const LIMIT_10 = 10;
  let t: TestApp;
  let acme: TenantFixture;

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4', API_RATE_LIMIT_PER_MINUTE: String(LIMIT_10) });
    acme = await createTenant(t.app, 'acme');
  });
  afterAll(async () => {
    await t.close();
  });

  it('counts invalid bodies: of 15 with a valid token, the 11th on answer 429 and nothing is stored', async () => {
    const token = await clientToken(t.app, await createClient(t.app, acme, ['tokens:create']));
    await expectNothingChanged(t, async () => {
      for (let i = 1; i <= 15; i++) {
        const response = await issueTicket(t, token, { commands: Array.from({ length: 9 }, () => 'x'.repeat(17)), unknown: i });
        if (i <= LIMIT_10) {
          const problem = expectProblem(response, 400);
          expect(problem.type).toContain('validation');
          expect(response.headers['ratelimit-remaining']).toBe(String(LIMIT_10 - i));
        } else {
          const problem = expectProblem(response, 429);
          expect(problem.detail).toContain(`This client sent more than ${LIMIT_10} requests`);
          expect(Number(response.headers['retry-after'])).toBeGreaterThan(0);
          expect(response.headers['ratelimit-limit']).toBe(String(LIMIT_10));
          expect(response.headers['ratelimit-remaining']).toBe('0');
        }
      }
    });
  });

  it('counts a bad token against its address: of 15, the 11th on answer 429; a client from another address is not affected', async () => {
    const attacker = '203.0.113.7';
    const bad = (remoteAddress: string) =>
      t.app.inject({ method: 'POST', url: '/operatorapi/tickets', remoteAddress, headers: { authorization: 'Bearer forged.token.value' }, payload: {} });
    await expectNothingChanged(t, async () => {
      for (let i = 1; i <= 15; i++) {
        const response = await bad(attacker);
        if (i <= LIMIT_10) {
          expectProblem(response, 401);
          expect(response.headers['www-authenticate']).toContain('invalid_token');
        } else {
          const problem = expectProblem(response, 429);
          expect(problem.detail).toContain('without a valid access token');
          expect(Number(response.headers['retry-after'])).toBeGreaterThan(0);
          expect(Number(response.headers['retry-after'])).toBeLessThanOrEqual(60);
          expect(response.headers['ratelimit-limit']).toBe(String(LIMIT_10));
          expect(response.headers['ratelimit-remaining']).toBe('0');
          expect(Number(response.headers['ratelimit-reset'])).toBeGreaterThan(0);
        }
      }
    });
    // Another address's bad token is still refused with 401, not 429.
    expectProblem(await bad('198.51.100.10'), 401);

    // A valid client from another address: its own full budget, and its ticket is made.
    const token = await clientToken(t.app, await createClient(t.app, acme, ['tokens:create', 'devices:write']));
    const from = (remoteAddress: string, url: string, payload: object) =>
      t.app.inject({ method: 'POST', url, remoteAddress, headers: { authorization: `Bearer ${token}` }, payload });
    const other = '198.51.100.9';
    expect((await from(other, '/operatorapi/securedobjects', { id: 'door', channels: ['btlespp'], localName: 'LOCK-door', uuid: LOCK_UUID })).statusCode).toBe(201);
    expect((await from(other, '/operatorapi/mobiledevices', { id: 'phone' })).statusCode).toBe(201);
    const issued = await from(other, '/operatorapi/tickets', ticketBody(t, 'door', 'phone'));
    expect(issued.statusCode, issued.body).toBe(201);
    expect(issued.headers['ratelimit-remaining']).toBe(String(LIMIT_10 - 3));
    const stored = await t.database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM tickets WHERE id = $1', [issued.json().id]);
    expect(stored.rows[0]!.n).toBe(1);
  });

  it('counts a token without the scope against its client', async () => {
    const token = await clientToken(t.app, await createClient(t.app, acme, ['tokens:read']));
    for (let i = 1; i <= LIMIT_10; i++) expectProblem(await issueTicket(t, token, {}), 403);
    expectProblem(await issueTicket(t, token, {}), 429);
    expectProblem(await call(t, token, { method: 'GET', url: '/operatorapi/tickets' }), 429);
  });
});
