// docs/security-cases.md F (36–38): secrets shown once, made by a CSPRNG and stored hashed; no leaks in answers or logs.
import { randomBytes, randomUUID } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { sha256 } from '../../src/shared/crypto.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import {
  basic,
  bearer,
  clientToken,
  createClient,
  createTenant,
  createUser,
  form,
  passwordGrant,
  tokenRequest,
  type ClientFixture,
  type TenantFixture,
} from '../helpers/oauth.js';
import { databaseText } from '../helpers/security.js';

// Pass-through spy on the CSPRNG, to see that secrets are exactly its output (F37).
vi.mock('node:crypto', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:crypto')>();
  return { ...actual, randomBytes: vi.fn(actual.randomBytes) };
});

const PASSWORD = 'correct horse battery';

/** Every way a secret could show up: itself, and its SHA-256 in hex, base64 and base64url. */
function forms(secret: string): string[] {
  const digest = sha256(secret);
  return [secret, digest.toString('hex'), digest.toString('base64'), digest.toString('base64url')];
}

function expectNoneOf(text: string, secrets: string[], where: string) {
  for (const secret of secrets) for (const variant of forms(secret)) expect(text.includes(variant), `${where} holds ${variant.slice(0, 12)}…`).toBe(false);
}

/** A stack frame, SQL, a driver message, or a password/secret hash in an answer. */
const LEAKS: [string, RegExp][] = [
  ['stack frame', /\bat (?:async )?[\w.<>[\] ]*\(?(?:file:\/\/|\/|node:)[^)\s]*:\d+:\d+/],
  ['source path', /(?:\/work\/|node_modules|\.ts:\d+|\.js:\d+)/],
  ['SQL', /\b(?:SELECT\s.+\sFROM|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|ON CONFLICT|RETURNING)\b/i],
  // Driver and server wording; case-sensitive and anchored, since random ids can hold any short letter sequence.
  ['database message', /(?:relation "|syntax error at or near|violates \w+ constraint|invalid byte sequence for encoding|duplicate key value|SQLSTATE|\bpg_[a-z_]+\(|\bPGlite\b)/],
  ['column name', /\b(?:secret_hash|password_hash|token_hash|private_jwk_encrypted)\b/],
  ['bcrypt hash', /\$2[aby]?\$\d{2}\$[./A-Za-z0-9]{53}/],
];

function expectClean(response: LightMyRequestResponse, what: string) {
  for (const [kind, pattern] of LEAKS) expect(pattern.test(response.body), `${what} (${response.statusCode}) carries a ${kind}: ${response.body.slice(0, 300)}`).toBe(false);
  for (const [name, value] of Object.entries(response.headers)) {
    for (const [kind, pattern] of LEAKS) expect(pattern.test(String(value)), `${what}: header ${name} carries a ${kind}`).toBe(false);
  }
}

describe('docs/security-cases.md F: management and hygiene', () => {
  let t: TestApp;
  let acme: TenantFixture;
  let admin: string;

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4', TOKEN_RATE_LIMIT_PER_MINUTE: '100000', LOG_LEVEL: 'trace' });
    acme = await createTenant(t.app, 'acme');
    admin = await clientToken(t.app, { clientId: acme.clientId, clientSecret: acme.clientSecret });
  });
  afterAll(async () => {
    await t.close();
  });

  const api = (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object) =>
    t.app.inject({ method, url, headers: bearer(admin), ...(payload ? { payload } : {}) });

  it('F36: a client secret appears only in the create and rotate answers; never in get, list, logs or audit', async () => {
    const created = await api('POST', '/operatorapi/oauthclients', { name: 'front desk', scopes: ['tokens:read', 'devices:read'] });
    expect(created.statusCode).toBe(201);
    const { clientId, clientSecret } = created.json() as { clientId: string; clientSecret: string };
    expect(clientSecret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    // RFC 9111 section 5.2.2.5: no cache keeps the one answer that shows the secret.
    expect(created.headers['cache-control']).toBe('no-store');

    // Use it, in both authentication forms, so the logs have had every chance to see it.
    expect((await tokenRequest(t.app, { clientId, clientSecret }, { grant_type: 'client_credentials' })).statusCode).toBe(200);
    const posted = await t.app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: form({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret }),
    });
    expect(posted.statusCode).toBe(200);

    const rotated = await api('POST', `/operatorapi/oauthclients/${clientId}/secret`);
    expect(rotated.statusCode).toBe(200);
    const newSecret = rotated.json().clientSecret as string;
    expect(newSecret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(newSecret).not.toBe(clientSecret);
    expect(rotated.headers['cache-control']).toBe('no-store');
    // The old secret stops at once; the new one works.
    expect((await tokenRequest(t.app, { clientId, clientSecret }, { grant_type: 'client_credentials' })).statusCode).toBe(401);
    expect((await tokenRequest(t.app, { clientId, clientSecret: newSecret }, { grant_type: 'client_credentials' })).statusCode).toBe(200);

    const one = await api('GET', `/operatorapi/oauthclients/${clientId}`);
    expect(one.statusCode).toBe(200);
    expect(Object.keys(one.json()).sort()).toEqual(['clientId', 'creationDate', 'name', 'scopes']);
    const list = await api('GET', '/operatorapi/oauthclients?limit=1000');
    expect(list.statusCode).toBe(200);
    for (const client of list.json() as Record<string, unknown>[]) expect(client).not.toHaveProperty('clientSecret');
    const audit = await api('GET', '/operatorapi/audit-events?limit=1000');
    expect(audit.statusCode).toBe(200);
    expect((audit.json() as { action: string }[]).map((event) => event.action)).toEqual(
      expect.arrayContaining(['client.created', 'client.secret_rotated']),
    );
    const secrets = [clientSecret, newSecret, acme.clientSecret];
    for (const [where, response] of [['get', one], ['list', list], ['audit', audit]] as const) expectNoneOf(response.body, secrets, where);
    const { rows } = await t.database.db.query<{ row: string }>('SELECT x::text AS row FROM audit_events x');
    expectNoneOf(rows.map((row) => row.row).join('\n'), secrets, 'audit table');
    expectNoneOf(t.logLines.join(''), secrets, 'logs');
  });

  it('F37: secrets come from the CSPRNG (randomBytes), 256 bits, distinct; client ids too', async () => {
    const spy = vi.mocked(randomBytes);
    const mathRandom = vi.spyOn(Math, 'random');
    try {
      const secrets: string[] = [];
      const ids: string[] = [];
      for (let i = 0; i < 40; i++) {
        spy.mockClear();
        const client = await createClient(t.app, acme, ['tokens:read']);
        // The secret is exactly the base64url of 32 bytes the CSPRNG returned during the call.
        const outputs = spy.mock.results.map((result) => (result.value as Buffer).toString('base64url'));
        expect(outputs).toContain(client.clientSecret);
        expect(Buffer.from(client.clientSecret, 'base64url')).toHaveLength(32);
        secrets.push(client.clientSecret);
        ids.push(client.clientId);
      }
      expect(mathRandom).not.toHaveBeenCalled();
      expect(new Set(secrets).size).toBe(secrets.length);
      expect(new Set(ids).size).toBe(ids.length);
      // 40 × 256 bits: the ones should be near half (6 standard deviations ≈ 300 bits of slack).
      let ones = 0;
      for (const secret of secrets) for (const byte of Buffer.from(secret, 'base64url')) ones += byte.toString(2).replaceAll('0', '').length;
      expect(Math.abs(ones - (40 * 256) / 2)).toBeLessThan(300);
    } finally {
      mathRandom.mockRestore();
    }
  });

  it('F37: client secrets are stored only as SHA-256 hashes', async () => {
    const client = await createClient(t.app, acme, ['tokens:read']);
    const { rows } = await t.database.db.query<{ secret_hash: Uint8Array }>(
      'SELECT secret_hash FROM oauth_clients WHERE client_id = $1',
      [client.clientId],
    );
    expect(Buffer.from(rows[0]!.secret_hash).equals(sha256(client.clientSecret))).toBe(true);
    const everything = await databaseText(t.database.db);
    for (const secret of [client.clientSecret, acme.clientSecret]) {
      expect(everything).not.toContain(secret);
      expect(everything).not.toContain(Buffer.from(secret).toString('hex'));
    }
  });

  it('F38: no answer carries a stack trace, SQL text or a hash', async () => {
    await createUser(t.app, acme, 'alice', PASSWORD);
    const access = await createClient(t.app, acme, ['offline', 'devices:read']);
    const json = { ...bearer(admin), 'content-type': 'application/json' };
    const requests: [string, () => Promise<LightMyRequestResponse>][] = [
      ['user list', () => api('GET', '/operatorapi/users')],
      ['client list', () => api('GET', '/operatorapi/oauthclients')],
      ['duplicate user', () => api('POST', '/operatorapi/users', { username: 'alice', password: PASSWORD })],
      ['bad username', () => api('POST', '/operatorapi/users', { username: 'a b@c', password: PASSWORD })],
      ['password too long', () => api('POST', '/operatorapi/users', { username: 'bob', password: '€'.repeat(30) })],
      ['unknown scope', () => api('POST', '/operatorapi/oauthclients', { name: 'x', scopes: ['root'] })],
      ['unknown field', () => api('POST', '/operatorapi/oauthclients', { name: 'x', scopes: ['tokens:read'], secret: 'x' })],
      ['wrong types', () => api('POST', '/operatorapi/oauthclients', { name: 1, scopes: 'tokens:read' })],
      ['malformed JSON', () => t.app.inject({ method: 'POST', url: '/operatorapi/users', headers: json, payload: '{"username":"x","password": SELECT' })],
      ['truncated JSON', () => t.app.inject({ method: 'POST', url: '/operatorapi/users', headers: json, payload: '{"username":"x","password":"pw' })],
      ['prototype pollution', () => t.app.inject({ method: 'POST', url: '/operatorapi/users', headers: json, payload: '{"__proto__":{"admin":true},"username":"x","password":"12345678"}' })],
      ['wrong media type', () => t.app.inject({ method: 'POST', url: '/operatorapi/users', headers: { ...bearer(admin), 'content-type': 'text/xml' }, payload: '<x/>' })],
      ['body too large', () => t.app.inject({ method: 'POST', url: '/operatorapi/users', headers: json, payload: JSON.stringify({ username: 'x', password: 'y'.repeat(2 * 1024 * 1024) }) })],
      ['bad cursor', () => api('GET', "/operatorapi/oauthclients?cursor=' OR 1=1 --")],
      ['bad limit', () => api('GET', '/operatorapi/oauthclients?limit=1e9')],
      ['missing client', () => api('GET', `/operatorapi/oauthclients/${randomUUID()}`)],
      ['SQL in an id', () => api('GET', `/operatorapi/oauthclients/${encodeURIComponent("x' OR '1'='1")}`)],
      ['NUL in an id', () => api('GET', '/operatorapi/oauthclients/%00')],
      ['NUL in a username', () => api('DELETE', '/operatorapi/users/%00')],
      ['NUL in a body', () => api('POST', '/operatorapi/users', { username: 'x\u0000y', password: PASSWORD })],
      ['invalid UTF-8 in a path', () => api('GET', '/operatorapi/oauthclients/%C0%AF')],
      ['unknown route', () => api('GET', '/operatorapi/../../etc/passwd')],
      ['no token', () => t.app.inject({ method: 'GET', url: '/operatorapi/users' })],
      ['bad token', () => t.app.inject({ method: 'GET', url: '/operatorapi/users', headers: bearer('a.b.c') })],
      ['token endpoint, wrong secret', () => tokenRequest(t.app, { clientId: access.clientId, clientSecret: 'x' }, { grant_type: 'client_credentials' })],
      ['token endpoint, bad password', () => passwordGrant(t.app, access, 'alice@acme', 'wrong')],
      ['token endpoint, NUL login', () => passwordGrant(t.app, access, 'al\u0000ice@acme', 'wrong')],
      ['token endpoint, bad refresh', () => tokenRequest(t.app, access, { grant_type: 'refresh_token', refresh_token: "' OR 1=1 --" })],
      ['token endpoint, JSON', () => t.app.inject({ method: 'POST', url: '/oauth/token', headers: { 'content-type': 'application/json' }, payload: '{"grant_type":' })],
      ['token endpoint, huge form', () => t.app.inject({ method: 'POST', url: '/oauth/token', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: `grant_type=${'x'.repeat(200_000)}` })],
      ['introspection, garbage', () => t.app.inject({ method: 'POST', url: '/oauth/introspect', headers: { authorization: basic(access.clientId, access.clientSecret), 'content-type': 'application/x-www-form-urlencoded' }, payload: form({ token: 'x'.repeat(50_000) }) })],
      ['metadata', () => t.app.inject({ method: 'GET', url: '/.well-known/oauth-authorization-server' })],
      ['JWKS', () => t.app.inject({ method: 'GET', url: '/.well-known/jwks.json' })],
    ];
    for (const [what, send] of requests) {
      const response = await send();
      expectClean(response, what);
      // Every error has its documented shape: problem details on the APIs, RFC 6749 on the OAuth endpoints.
      if (response.statusCode >= 400) {
        expect(response.headers['content-type'], what).toMatch(/^application\/(problem\+)?json/);
        const body = response.json() as Record<string, unknown>;
        expect(body.type !== undefined || body.error !== undefined, `${what}: ${response.body}`).toBe(true);
      }
    }
    const users = (await api('GET', '/operatorapi/users')).json() as Record<string, unknown>[];
    for (const user of users) expect(Object.keys(user).sort()).toEqual(['creationDate', 'id', 'username']);
  });

  it('F38: after a sequence of requests, the logs carry no secret, password, refresh token or access token', async () => {
    const tenant = await createTenant(t.app, 'globex');
    const password = `pw-${randomBytes(9).toString('base64url')}`;
    const apiPassword = `pw-${randomBytes(9).toString('base64url')}`;
    await createUser(t.app, tenant, 'gina', password);
    const management = await clientToken(t.app, { clientId: tenant.clientId, clientSecret: tenant.clientSecret });
    const created = await t.app.inject({
      method: 'POST',
      url: '/operatorapi/oauthclients',
      headers: bearer(management),
      payload: { name: 'app', scopes: ['offline', 'devices:read', 'clients:manage', 'users:manage'] },
    });
    const client: ClientFixture = { clientId: created.json().clientId as string, clientSecret: created.json().clientSecret as string };
    const userCreated = await t.app.inject({
      method: 'POST',
      url: '/operatorapi/users',
      headers: bearer(management),
      payload: { username: 'hank', password: apiPassword },
    });
    expect(userCreated.statusCode).toBe(201);

    const login = await passwordGrant(t.app, client, 'gina@globex', password);
    expect(login.statusCode).toBe(200);
    const failed = await passwordGrant(t.app, client, 'hank@globex', `${apiPassword}-wrong`);
    expect(failed.statusCode).toBe(400);
    const refreshToken = login.json().refresh_token as string;
    const refreshed = await tokenRequest(t.app, client, { grant_type: 'refresh_token', refresh_token: refreshToken }, '/oauth2/token');
    expect(refreshed.statusCode).toBe(200);
    // Reuse: a warning is logged, and must not quote the token.
    expect((await tokenRequest(t.app, client, { grant_type: 'refresh_token', refresh_token: refreshToken }, '/oauth2/token')).statusCode).toBe(400);
    const operatorToken = await clientToken(t.app, client, 'clients:manage');
    const userToken = refreshed.json().access_token as string;
    const newRefresh = refreshed.json().refresh_token as string;

    const oauthForm = (url: string, fields: Record<string, string>, query = '') =>
      t.app.inject({
        method: 'POST',
        url: `${url}${query}`,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: form(fields),
      });
    const credentials = { client_id: client.clientId, client_secret: client.clientSecret };
    await oauthForm('/oauth/introspect', { ...credentials, token: operatorToken });
    await oauthForm('/oauth/introspect', { ...credentials, token: newRefresh });
    await oauthForm('/oauth/revoke', { ...credentials, token: userToken });
    await oauthForm('/oauth/token', { grant_type: 'client_credentials' }, `?client_id=${client.clientId}&client_secret=${client.clientSecret}`);
    await oauthForm('/oauth2/token', { grant_type: 'password', username: 'gina@globex' }, `?password=${password}`);
    await t.app.inject({ method: 'GET', url: `/operatorapi/oauthclients?access_token=${operatorToken}` });
    await t.app.inject({ method: 'GET', url: '/operatorapi/oauthclients', headers: bearer(operatorToken) });
    await t.app.inject({ method: 'GET', url: '/operatorapi/oauthclients', headers: bearer(userToken) });
    await t.app.inject({ method: 'GET', url: '/operatorapi/oauthclients', headers: { authorization: basic(client.clientId, client.clientSecret) } });
    await t.app.inject({
      method: 'POST',
      url: '/operatorapi/users',
      headers: { ...bearer(management), 'content-type': 'application/json' },
      payload: `{"username":"ivy","password":"${apiPassword}" oops}`,
    });
    await t.app.inject({
      method: 'POST',
      url: '/operatorapi/users',
      headers: bearer(management),
      payload: { username: 'ivy', password: apiPassword, client_secret: client.clientSecret },
    });
    await t.app.inject({ method: 'GET', url: `/nowhere?refresh_token=${newRefresh}&token=${userToken}` });
    // A query the database refuses (NUL in a username) is logged as an error; its bound parameters (the new
    // user's bcrypt hash) are not.
    await t.app.inject({ method: 'POST', url: '/operatorapi/users', headers: bearer(management), payload: { username: 'n\u0000ul', password: apiPassword } });

    const logs = t.logLines.join('');
    expect(logs.length).toBeGreaterThan(0);
    const leaks = {
      'client secret': client.clientSecret,
      'management secret': tenant.clientSecret,
      password,
      'API password': apiPassword,
      'refresh token': refreshToken,
      'new refresh token': newRefresh,
      'operator access token': operatorToken,
      'user access token': userToken,
      'management access token': management,
    };
    for (const [what, secret] of Object.entries(leaks)) {
      expect(logs.includes(secret), `the logs hold the ${what}`).toBe(false);
      // Nor the signature part of a token (a token split over fields), nor the Basic credentials.
      if (secret.split('.').length === 3) expect(logs.includes(secret.split('.')[2]!), `the logs hold the ${what}'s signature`).toBe(false);
    }
    expect(logs).not.toContain(basic(client.clientId, client.clientSecret).slice(6));
    expect(logs).not.toMatch(/\$2[aby]?\$\d{2}\$/);
  });
});
