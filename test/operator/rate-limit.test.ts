// Per-client rate limits on the Operator API (contract 7.4): 429 problem with Retry-After and RateLimit-* headers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { clientToken, createClient, createTenant, type ClientFixture, type TenantFixture } from '../helpers/oauth.js';
import { call, device, expectNothingChanged, expectProblem, issueTicket, lock, ticketBody } from '../helpers/operator.js';

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

  it('answers requests without a token 401, never 429, and they use up no client budget', async () => {
    for (let i = 0; i < LIMIT + 2; i++) expectProblem(await listLocks('not-a-token'), 401);
    for (let i = 0; i < LIMIT + 2; i++) expectProblem(await call(t, null, { method: 'GET', url: '/operatorapi/securedobjects' }), 401);
    const fresh = await clientToken(t.app, await newClient());
    expect((await listLocks(fresh)).headers['ratelimit-remaining']).toBe(String(LIMIT - 1));
  });
});
