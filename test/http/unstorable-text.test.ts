// Text PostgreSQL cannot store (U+0000) is the client's fault: 400 on the APIs, invalid_request on OAuth; never 500.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { bearer, clientToken, createTenant, form } from '../helpers/oauth.js';

describe('U+0000 in paths, queries and bodies', () => {
  let t: TestApp;
  let headers: Record<string, string>;
  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4' });
    headers = bearer(await clientToken(t.app, await createTenant(t.app, 'acme')));
  });
  afterAll(async () => {
    await t.close();
  });

  it.each([
    ['GET', '/operatorapi/oauthclients/%00'],
    ['GET', '/operatorapi/securedobjects/a%00b'],
    ['DELETE', '/operatorapi/users/%00'],
    ['GET', '/operatorapi/tickets?mobileDeviceId=%00'],
  ])('%s %s → 400 problem', async (method, url) => {
    const response = await t.app.inject({ method: method as 'GET', url, headers });
    expect(response.statusCode).toBe(400);
    expect(response.headers['content-type']).toContain('application/problem+json');
    expect(response.json().detail).toContain('U+0000');
  });

  it('refuses it in a JSON body and stores nothing', async () => {
    const response = await t.app.inject({ method: 'POST', url: '/operatorapi/mobiledevices', headers, payload: { name: 'a\u0000b' } });
    expect(response.statusCode).toBe(400);
    const { rows } = await t.database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM mobile_devices');
    expect(rows[0]!.n).toBe(0);
  });

  it('answers invalid_request (or invalid_client) on the token endpoint', async () => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: form({ grant_type: 'client_credentials', client_id: 'a\u0000', client_secret: 'b' }),
    });
    expect([400, 401]).toContain(response.statusCode);
    expect(['invalid_request', 'invalid_client']).toContain(response.json().error);
  });
});
