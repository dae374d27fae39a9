// Input limits: header block over a real socket (431), bodies over BODY_LIMIT (413), page size and member-list caps
// (400); each refused with the right 4xx and nothing stored.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { rawRequest } from '../helpers/raw-http.js';
import { basic, bearer, clientToken, createTenant, type TenantFixture } from '../helpers/oauth.js';
import { accessToken } from '../matrix/route-table.js';

const count = async (t: TestApp, table: string) =>
  Number((await t.database.db.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`)).rows[0]!.n);

describe('input limits', () => {
  let t: TestApp;
  let tenant: TenantFixture;
  let operator: Record<string, string>;
  let access: Record<string, string>;

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4' });
    tenant = await createTenant(t.app, 'limits');
    operator = bearer(await clientToken(t.app, tenant));
    access = bearer(await accessToken(t.app, tenant, ['device-groups:write', 'device-groups:read']));
  });
  afterAll(async () => {
    await t.close();
  });

  it('answers 431 to a 20 KB header block over a real socket, and stores nothing', async () => {
    const before = await count(t, 'mobile_devices');
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const address = t.app.server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const body = JSON.stringify({ id: 'phone-header' });
    const answer = await rawRequest(
      port,
      `POST /operatorapi/mobiledevices HTTP/1.1\r\nHost: localhost\r\nAuthorization: ${operator.authorization}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${body.length}\r\nX-Padding: ${'a'.repeat(20 * 1024)}\r\n\r\n${body}`,
    );
    expect(answer.status).toBe(431);
    expect(answer.headers['content-type']).toContain('application/problem+json');
    expect(answer.headers['x-request-id']).toBeTruthy();
    // The same request with a normal header block goes through: the 431 was the header size, nothing else.
    const small = await rawRequest(
      port,
      `GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nX-Padding: ${'a'.repeat(1024)}\r\n\r\n`,
    );
    expect(small.status).toBe(200);
    expect(await count(t, 'mobile_devices')).toBe(before);
  });

  it('answers 413 problem details to an API body over BODY_LIMIT (1 MiB), and stores nothing', async () => {
    const before = await count(t, 'mobile_devices');
    const response = await t.app.inject({
      method: 'POST',
      url: '/operatorapi/mobiledevices',
      headers: { ...operator, 'content-type': 'application/json' },
      payload: JSON.stringify({ id: 'phone-big', name: 'n'.repeat(t.config.BODY_LIMIT) }),
    });
    expect(response.statusCode).toBe(413);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(response.json()).toMatchObject({ status: 413, title: expect.any(String), type: expect.any(String), requestId: expect.any(String) });
    expect(await count(t, 'mobile_devices')).toBe(before);

    const residents = await count(t, 'residents');
    const v1 = await t.app.inject({
      method: 'POST',
      url: '/v1/residents',
      headers: { ...access, 'content-type': 'application/json' },
      payload: JSON.stringify({ name: 'r'.repeat(t.config.BODY_LIMIT + 1) }),
    });
    expect(v1.statusCode).toBe(413);
    expect(v1.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(await count(t, 'residents')).toBe(residents);
  });

  it('answers 413 invalid_request to a /oauth/token body over the limit, and issues nothing', async () => {
    const refreshTokensBefore = await count(t, 'refresh_tokens');
    for (const size of [70 * 1024, t.config.BODY_LIMIT + 1]) {
      const response = await t.app.inject({
        method: 'POST',
        url: '/oauth/token',
        headers: { authorization: basic(tenant.clientId, tenant.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
        payload: `grant_type=client_credentials&scope=${'a'.repeat(size)}`,
      });
      expect(response.statusCode).toBe(413);
      expect(response.headers['content-type']).toMatch(/^application\/json/);
      expect(response.json()).toEqual({ error: 'invalid_request', error_description: expect.any(String) });
      expect(response.body).not.toContain('access_token');
    }
    expect(await count(t, 'refresh_tokens')).toBe(refreshTokensBefore);
  });

  it('accepts a page size of 1000 and refuses 1001 with 400', async () => {
    for (const url of ['/operatorapi/tickets', '/operatorapi/mobiledevices', '/operatorapi/securedobjects']) {
      const ok = await t.app.inject({ url: `${url}?limit=1000`, headers: operator });
      expect(ok.statusCode, url).toBe(200);
      const refused = await t.app.inject({ url: `${url}?limit=1001`, headers: operator });
      expect(refused.statusCode, url).toBe(400);
      expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(refused.json().errors).toEqual([expect.objectContaining({ field: 'limit' })]);
    }
    expect((await t.app.inject({ url: '/v1/residents?limit=1000', headers: access })).statusCode).toBe(200);
    expect((await t.app.inject({ url: '/v1/residents?limit=1001', headers: access })).statusCode).toBe(400);
  });

  it('refuses more than 1000 member ids in POST /v1/residents with 400, and stores nothing', async () => {
    const before = { residents: await count(t, 'residents'), members: await count(t, 'resident_devices'), audit: await count(t, 'audit_events') };
    const ids = Array.from({ length: 1001 }, (_, index) => `phone-${index}`);
    const response = await t.app.inject({
      method: 'POST',
      url: '/v1/residents',
      headers: access,
      payload: { name: 'Too many', mobileDeviceIds: ids },
    });
    expect(response.statusCode).toBe(400);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(response.json().errors).toEqual([expect.objectContaining({ field: 'mobileDeviceIds' })]);
    expect({ residents: await count(t, 'residents'), members: await count(t, 'resident_devices'), audit: await count(t, 'audit_events') }).toEqual(before);
  });

  // docs/security-cases.md G46: a 1 MiB body of invalid items must not turn into megabytes of answer and log.
  it('answers 45,000 invalid commands with at most 64 KiB, naming the array once; the log line stays small', async () => {
    const before = await count(t, 'tickets');
    const now = Date.now();
    const body = {
      securedObjectId: 'door',
      mobileDeviceId: 'phone',
      beginDate: now,
      endDate: now + 3_600_000,
      commands: Array.from({ length: 45_000 }, () => 'x'.repeat(17)),
      channels: ['btlespp'],
    };
    const response = await t.app.inject({ method: 'POST', url: '/operatorapi/tickets', headers: operator, payload: body });
    expect(response.statusCode).toBe(400);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(Buffer.byteLength(response.body)).toBeLessThanOrEqual(64 * 1024);
    const problem = response.json();
    // An array over its maxItems is named by its length; its 45,000 items are not examined one by one.
    expect(problem.errors).toEqual([{ field: 'commands', message: 'must NOT have more than 8 items' }]);
    expect(problem.errorCount).toBe(1);
    expect(problem.detail).toBe('commands: must NOT have more than 8 items');
    const logged = t.logLines.filter((line) => line.includes(String(response.headers['x-request-id']))).join('');
    expect(logged.length).toBeLessThan(4096);
    // Within its bound the array still has every bad item named, and nothing else.
    const within = await t.app.inject({ method: 'POST', url: '/operatorapi/tickets', headers: operator, payload: { ...body, commands: ['x'.repeat(17), 'open', 5] } });
    expect(within.statusCode).toBe(400);
    expect(within.json().errors).toEqual([
      { field: 'commands[0]', message: 'must NOT have more than 16 characters' },
      { field: 'commands[2]', message: 'must be string' },
    ]);
    expect(within.json().errorCount).toBe(2);
    expect(await count(t, 'tickets')).toBe(before);
  });

  it('lists the first 20 of 30,000 errors with their count; answer and log stay small', async () => {
    const before = await count(t, 'tickets');
    const now = Date.now();
    const body: Record<string, unknown> = { securedObjectId: 'door', mobileDeviceId: 'phone', beginDate: now, endDate: now + 3_600_000, commands: ['open'], channels: ['btlespp'] };
    // Unknown field names are the client's: long ones are cut in the answer.
    for (let index = 0; index < 30_000; index++) body[`${index}-${'u'.repeat(index < 20 ? 1000 : 1)}`] = 0;
    const response = await t.app.inject({ method: 'POST', url: '/operatorapi/tickets', headers: operator, payload: body });
    expect(response.statusCode).toBe(400);
    expect(Buffer.byteLength(response.body)).toBeLessThanOrEqual(64 * 1024);
    const problem = response.json();
    expect(problem.errorCount).toBe(30_000);
    expect(problem.errors).toHaveLength(20);
    for (const error of problem.errors as { field: string; message: string }[]) {
      expect(error.message).toBe('is not a known field');
      expect(error.field.length).toBeLessThanOrEqual(101);
      expect(error.field).toMatch(/^\d+-u+…$/);
    }
    expect(problem.detail).toMatch(/; … and 29980 more$/);
    const logged = t.logLines.filter((line) => line.includes(String(response.headers['x-request-id']))).join('');
    expect(logged.length).toBeLessThan(4096);
    expect(await count(t, 'tickets')).toBe(before);
  });
});
