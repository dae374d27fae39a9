// /operatorapi/users (docs/api-reference.md 3.7): create, list, delete Access API users; scope, tenant and audit checks.
import bcrypt from 'bcrypt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { bearer, clientToken, createClient, passwordGrant, type ClientFixture, type TenantFixture } from '../helpers/oauth.js';
import { twoTenants } from '../helpers/tenants.js';

describe('user management', () => {
  let t: TestApp;
  let acme: TenantFixture;
  let token: string;
  let otherToken: string;
  let accessClient: ClientFixture;

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4' });
    ({ acme, token, otherToken } = await twoTenants(t));
    accessClient = await createClient(t.app, acme, ['offline', 'device-groups:read']);
  });
  afterAll(async () => {
    await t.close();
  });

  const create = (body: unknown, auth = token) =>
    t.app.inject({ method: 'POST', url: '/operatorapi/users', headers: bearer(auth), payload: body as object });

  it('creates a user who can log in; the password is stored as a bcrypt hash only', async () => {
    const response = await create({ username: 'alice', password: 'correct horse battery' });
    expect(response.statusCode).toBe(201);
    expect(response.json()).toEqual({ id: expect.any(String), username: 'alice', creationDate: expect.any(Number) });
    expect(response.headers.location).toBe('/operatorapi/users/alice');
    expect(response.body).not.toContain('correct horse');

    const { rows } = await t.database.db.query<{ password_hash: string }>("SELECT password_hash FROM users WHERE username = 'alice'");
    expect(rows[0]!.password_hash).toMatch(/^\$2[aby]\$/);
    expect(await bcrypt.compare('correct horse battery', rows[0]!.password_hash)).toBe(true);

    const login = await passwordGrant(t.app, accessClient, 'alice@acme', 'correct horse battery');
    expect(login.statusCode).toBe(200);
    const events = await t.database.db.query<{ action: string }>('SELECT action FROM audit_events WHERE target = $1', [`user:${response.json().id}`]);
    expect(events.rows.map((row) => row.action)).toEqual(['user.created']);
  });

  it('refuses a taken username (409), a password over 72 bytes (400) and bad usernames (400)', async () => {
    await create({ username: 'bob', password: 'long enough pass' });
    expect((await create({ username: 'bob', password: 'another password' })).statusCode).toBe(409);
    // 25 three-byte characters: 25 characters, 75 bytes. Never truncated to 72.
    const tooLong = await create({ username: 'carol', password: '€'.repeat(25) });
    expect(tooLong.statusCode).toBe(400);
    expect(tooLong.json().errors).toEqual([{ field: 'password', message: 'longer than 72 bytes' }]);
    expect((await create({ username: 'dave@evil', password: 'long enough pass' })).statusCode).toBe(400);
    expect((await create({ username: 'eve', password: 'short' })).statusCode).toBe(400);
    const { rows } = await t.database.db.query<{ n: number }>("SELECT count(*)::int AS n FROM users WHERE username IN ('carol', 'eve')");
    expect(rows[0]!.n).toBe(0);
  });

  it('needs users:manage (403) and a token (401)', async () => {
    expect((await t.app.inject({ url: '/operatorapi/users' })).statusCode).toBe(401);
    const limitedToken = await clientToken(t.app, await createClient(t.app, acme, ['tokens:read']));
    const response = await t.app.inject({ url: '/operatorapi/users', headers: bearer(limitedToken) });
    expect(response.statusCode).toBe(403);
    expect(response.headers['www-authenticate']).toContain('scope="users:manage"');
  });

  it('lists only the tenant\'s users, and another tenant cannot delete them', async () => {
    await create({ username: 'frank', password: 'long enough pass' });
    const list = await t.app.inject({ url: '/operatorapi/users', headers: bearer(token) });
    expect(list.json().map((u: { username: string }) => u.username)).toEqual(expect.arrayContaining(['alice', 'bob', 'frank']));
    expect((await t.app.inject({ url: '/operatorapi/users', headers: bearer(otherToken) })).json()).toEqual([]);
    const foreign = await t.app.inject({ method: 'DELETE', url: '/operatorapi/users/frank', headers: bearer(otherToken) });
    expect(foreign.statusCode).toBe(404);
    expect((await passwordGrant(t.app, accessClient, 'frank@acme', 'long enough pass')).statusCode).toBe(200);
  });

  it('deletes a user: 204, its access and refresh tokens stop working', async () => {
    await create({ username: 'gone', password: 'long enough pass' });
    const login = (await passwordGrant(t.app, accessClient, 'gone@acme', 'long enough pass', 'offline device-groups:read')).json();
    const deleted = await t.app.inject({ method: 'DELETE', url: '/operatorapi/users/gone', headers: bearer(token) });
    expect(deleted.statusCode).toBe(204);
    expect((await passwordGrant(t.app, accessClient, 'gone@acme', 'long enough pass')).json().error).toBe('invalid_grant');
    const introspected = await t.app.inject({
      method: 'POST',
      url: '/oauth/introspect',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ token: login.access_token, client_id: accessClient.clientId, client_secret: accessClient.clientSecret }).toString(),
    });
    expect(introspected.json()).toEqual({ active: false });
    expect((await t.app.inject({ method: 'DELETE', url: '/operatorapi/users/gone', headers: bearer(token) })).statusCode).toBe(404);
  });
});
