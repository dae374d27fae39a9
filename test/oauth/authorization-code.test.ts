// docs/api-reference.md 13 and 3.8: the console's sign-in, the authorization code grant with PKCE (RFC 6749 4.1,
// RFC 7636 S256 only, RFC 9700 2.1): the whole flow, and every refusal.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { bearer, createUser, form, type TenantFixture } from '../helpers/oauth.js';
import { decodeJwt, expectOAuthError } from '../helpers/security.js';
import {
  authorizeParameters,
  exchangeCode,
  formOf,
  getAuthorize,
  pkce,
  postAuthorize,
  redirectQuery,
  refreshPublic,
  showForm,
  signInCode,
  submitForm,
} from '../helpers/console-sign-in.js';
import { ROLE_SCOPES } from '../../src/shared/scopes.js';
import { AUTHORIZATION_CODE_TTL_MS } from '../../src/services/oauth/authorization.service.js';
import { CSRF_REFUSED, SIGN_IN_REFUSED } from '../../src/routes/oauth/authorize.js';

const PASSWORD = 'correct horse battery';
const INVALID_CODE = 'The authorization code is invalid, expired, used, or was issued to another client or redirect URI.';

interface ConsoleTenant extends TenantFixture {
  consoleClientId: string;
}

describe('docs/api-reference.md 13: console sign-in with the authorization code grant and PKCE', () => {
  let t: TestApp;
  let skew = 0;
  let acme: ConsoleTenant;
  let globex: ConsoleTenant;
  let redirectUri: string;

  async function tenant(name: string): Promise<ConsoleTenant> {
    const created = await t.app.services.tenants.create(name);
    return {
      tenantId: created.tenant.id,
      name,
      clientId: created.clientId,
      clientSecret: created.clientSecret,
      consoleClientId: created.consoleClientId,
    };
  }

  const cli = (tenantId: string) => ({ tenantId, actor: 'cli', requestId: null });

  beforeAll(async () => {
    t = await buildTestApp(
      {
        BCRYPT_COST: '4',
        LOCKOUT_THRESHOLD: '3',
        LOCKOUT_WINDOW_SECONDS: '60',
        LOCKOUT_SECONDS: '60',
        TOKEN_RATE_LIMIT_PER_MINUTE: '100000',
      },
      { clock: () => Date.now() + skew },
    );
    acme = await tenant('acme');
    globex = await tenant('globex');
    redirectUri = `${t.config.PUBLIC_URL}/console/callback`;
    await t.app.services.users.create(cli(acme.tenantId), 'ada', PASSWORD, 'admin');
    await t.app.services.users.create(cli(acme.tenantId), 'olga', PASSWORD, 'operator');
    await t.app.services.users.create(cli(acme.tenantId), 'vic', PASSWORD, 'viewer');
    await createUser(t.app, acme, 'norole', PASSWORD);
    await t.app.services.users.create(cli(acme.tenantId), 'locky', PASSWORD, 'admin');
    await t.app.services.users.create(cli(globex.tenantId), 'gina', PASSWORD, 'admin');
  });
  afterAll(async () => {
    await t.close();
  });

  const parameters = (challenge = pkce(), state = 'state-1', tenantFixture: ConsoleTenant = acme) =>
    authorizeParameters(tenantFixture.consoleClientId, redirectUri, challenge, state);

  async function signIn(login: string, tenantFixture: ConsoleTenant = acme) {
    const challenge = pkce();
    const code = await signInCode(t.app, parameters(challenge, 'state-1', tenantFixture), login, PASSWORD);
    return { challenge, code };
  }

  async function codeCount(): Promise<number> {
    const { rows } = await t.database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM authorization_codes');
    return rows[0]!.n;
  }

  it('the metadata names the authorization endpoint, `code`, S256 and the grant', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/.well-known/oauth-authorization-server' });
    const metadata = response.json();
    expect(metadata.authorization_endpoint).toBe(`${t.config.PUBLIC_URL}/oauth/authorize`);
    expect(metadata.response_types_supported).toEqual(['code']);
    expect(metadata.code_challenge_methods_supported).toEqual(['S256']);
    expect(metadata.grant_types_supported).toContain('authorization_code');
    expect(metadata.token_endpoint_auth_methods_supported).toContain('none');
  });

  it('tenant create makes the console\'s public client: no secret, the redirect URI under PUBLIC_URL', async () => {
    const { rows } = await t.database.db.query<{ secret_hash: Buffer | null; redirect_uri: string; scopes: string[] }>(
      'SELECT secret_hash, redirect_uri, scopes FROM oauth_clients WHERE tenant_id = $1 AND client_id = $2',
      [acme.tenantId, acme.consoleClientId],
    );
    expect(rows).toEqual([{ secret_hash: null, redirect_uri: '/console/callback', scopes: [...ROLE_SCOPES.admin] }]);
    // A public client cannot use a secret it does not have, nor have one made.
    const token = await t.app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: form({ grant_type: 'client_credentials', client_id: acme.consoleClientId, client_secret: 'x'.repeat(43) }),
    });
    expectOAuthError(token, 401, 'invalid_client');
    const passwordByPublic = await t.app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: form({ grant_type: 'password', client_id: acme.consoleClientId, username: 'ada@acme', password: PASSWORD }),
    });
    expectOAuthError(passwordByPublic, 401, 'invalid_client');
    await expect(t.app.services.clients.rotateSecret(cli(acme.tenantId), acme.consoleClientId)).rejects.toThrow(/public client/);
  });

  it('the happy path: form, 303 with code, state and iss, exchange, tokens for both APIs with the role\'s scopes', async () => {
    const challenge = pkce();
    const shown = await showForm(t.app, parameters(challenge, 'xyz'));
    const page = shown.response;
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['content-security-policy']).toMatch(/default-src 'none'/);
    expect(page.headers['content-security-policy']).toMatch(/frame-ancestors 'none'/);
    expect(page.headers['content-security-policy']).toMatch(/form-action 'self'/);
    expect(page.headers['x-frame-options']).toBe('DENY');
    expect(page.headers['cache-control']).toBe('no-store');
    expect(String(page.headers['set-cookie'])).toMatch(/HttpOnly; SameSite=Strict/);
    // No third-party resource: no script at all, no link, no src, nothing with a scheme but the form's own action.
    expect(page.body).not.toMatch(/<script|<link|src=|<img|<iframe/i);
    expect(page.body).toContain('name="username"');
    expect(page.body).toContain('name="password"');
    expect(shown.hidden).toMatchObject({ client_id: acme.consoleClientId, redirect_uri: redirectUri, state: 'xyz', code_challenge: challenge.challenge });

    const posted = await submitForm(t.app, shown, 'ada@acme', PASSWORD);
    expect(posted.statusCode).toBe(303);
    const location = new URL(posted.headers.location as string);
    expect(`${location.origin}${location.pathname}`).toBe(redirectUri);
    expect(location.searchParams.get('state')).toBe('xyz');
    expect(location.searchParams.get('iss')).toBe(t.config.PUBLIC_URL);
    const code = location.searchParams.get('code')!;
    expect(code).toMatch(/^[A-Za-z0-9_-]{43}$/);
    // Stored only as a digest.
    const { rows } = await t.database.db.query<{ code_hash: Buffer; expires_at: number; created_at: number }>(
      'SELECT code_hash, expires_at, created_at FROM authorization_codes WHERE tenant_id = $1',
      [acme.tenantId],
    );
    expect(rows.some((row) => Buffer.from(row.code_hash).toString('base64url') === code)).toBe(false);
    expect(rows.every((row) => Number(row.expires_at) - Number(row.created_at) === AUTHORIZATION_CODE_TTL_MS)).toBe(true);

    const exchanged = await exchangeCode(t.app, { code, redirect_uri: redirectUri, client_id: acme.consoleClientId, code_verifier: challenge.verifier });
    expect(exchanged.statusCode, exchanged.body).toBe(200);
    expect(exchanged.headers['cache-control']).toBe('no-store');
    const body = exchanged.json();
    expect(body.token_type).toBe('Bearer');
    expect(typeof body.refresh_token).toBe('string');
    expect(body.scope.split(' ').sort()).toEqual([...ROLE_SCOPES.admin].sort());
    const claims = decodeJwt(body.access_token).payload;
    expect(claims.aud).toEqual(['operatorapi', 'accessapi']);
    expect(claims.client_id).toBe(acme.consoleClientId);
    expect(claims.tenant).toBe(acme.tenantId);
    // It works on both APIs.
    const operator = await t.app.inject({ method: 'GET', url: '/operatorapi/users', headers: bearer(body.access_token) });
    expect(operator.statusCode).toBe(200);
    const access = await t.app.inject({ method: 'GET', url: '/v1/residents', headers: bearer(body.access_token) });
    expect(access.statusCode).toBe(200);
  });

  it('each role signs in with its own scope set; a viewer cannot write, an operator cannot manage users', async () => {
    const scopesOf = async (login: string) => {
      const { challenge, code } = await signIn(login);
      const response = await exchangeCode(t.app, { code, redirect_uri: redirectUri, client_id: acme.consoleClientId, code_verifier: challenge.verifier });
      expect(response.statusCode, response.body).toBe(200);
      return response.json() as { access_token: string; scope: string };
    };
    const operator = await scopesOf('olga@acme');
    expect(operator.scope.split(' ').sort()).toEqual([...ROLE_SCOPES.operator].sort());
    expect(operator.scope.split(' ')).not.toContain('users:manage');
    const forbidden = await t.app.inject({ method: 'GET', url: '/operatorapi/users', headers: bearer(operator.access_token) });
    expect(forbidden.statusCode).toBe(403);
    const viewer = await scopesOf('vic@acme');
    expect(viewer.scope.split(' ').sort()).toEqual([...ROLE_SCOPES.viewer].sort());
    expect(viewer.scope.split(' ').every((scope) => scope.endsWith(':read'))).toBe(true);
    const read = await t.app.inject({ method: 'GET', url: '/operatorapi/securedobjects', headers: bearer(viewer.access_token) });
    expect(read.statusCode).toBe(200);
    const write = await t.app.inject({
      method: 'POST',
      url: '/operatorapi/mobiledevices',
      headers: { ...bearer(viewer.access_token), 'content-type': 'application/json' },
      payload: {},
    });
    expect(write.statusCode).toBe(403);
  });

  it('a user without a role gets the generic error and no code', async () => {
    const before = await codeCount();
    const shown = await showForm(t.app, parameters());
    const response = await submitForm(t.app, shown, 'norole@acme', PASSWORD);
    expect(response.statusCode).toBe(200);
    expect(response.body).toContain(SIGN_IN_REFUSED);
    const wrongPassword = await submitForm(t.app, shown, 'ada@acme', 'not the password');
    const unknown = await submitForm(t.app, shown, 'nobody@acme', PASSWORD);
    const otherTenant = await submitForm(t.app, shown, 'gina@globex', PASSWORD);
    for (const refused of [wrongPassword, unknown, otherTenant]) {
      expect(refused.statusCode).toBe(200);
      expect(refused.body).toContain(SIGN_IN_REFUSED);
      expect(refused.headers.location).toBeUndefined();
    }
    // The password is never shown back.
    expect(wrongPassword.body).not.toContain('not the password');
    expect(await codeCount()).toBe(before);
  });

  it('plain PKCE, a missing challenge or method, a bad response type → error redirect to the registered URI', async () => {
    const base = parameters(pkce(), 'st');
    const cases: [Record<string, string>, string][] = [
      [{ ...base, code_challenge_method: 'plain' }, 'invalid_request'],
      [Object.fromEntries(Object.entries(base).filter(([name]) => name !== 'code_challenge_method')), 'invalid_request'],
      [Object.fromEntries(Object.entries(base).filter(([name]) => name !== 'code_challenge')), 'invalid_request'],
      [{ ...base, code_challenge: 'too-short' }, 'invalid_request'],
      [{ ...base, response_type: 'token' }, 'unsupported_response_type'],
      [Object.fromEntries(Object.entries(base).filter(([name]) => name !== 'response_type')), 'invalid_request'],
    ];
    for (const [query, error] of cases) {
      const response = await getAuthorize(t.app, query);
      expect(response.statusCode, JSON.stringify(query)).toBe(302);
      const location = new URL(response.headers.location as string);
      expect(`${location.origin}${location.pathname}`).toBe(redirectUri);
      expect(location.searchParams.get('error')).toBe(error);
      expect(location.searchParams.get('state')).toBe('st');
      expect(location.searchParams.get('code')).toBeNull();
    }
    // The same checks on the form's POST: a tampered hidden field is refused, with no code.
    const shown = await showForm(t.app, base);
    const plain = await submitForm(t.app, shown, 'ada@acme', PASSWORD, { code_challenge_method: 'plain' });
    expect(plain.statusCode).toBe(303);
    expect(redirectQuery(plain).get('error')).toBe('invalid_request');
    expect(redirectQuery(plain).get('code')).toBeNull();
  });

  it('an unknown client, a confidential client, a foreign or missing redirect URI → an error page, never a redirect', async () => {
    const base = parameters();
    const cases: Record<string, string>[] = [
      { ...base, client_id: 'no-such-client' },
      { ...base, client_id: acme.clientId },
      Object.fromEntries(Object.entries(base).filter(([name]) => name !== 'client_id')),
      { ...base, redirect_uri: 'https://attacker.example/callback' },
      { ...base, redirect_uri: `${redirectUri}/` },
      { ...base, redirect_uri: `${redirectUri}?x=1` },
      Object.fromEntries(Object.entries(base).filter(([name]) => name !== 'redirect_uri')),
      // Another tenant's console client with this tenant's... the registered URI is the same, the client is its own.
      { ...base, client_id: globex.consoleClientId, redirect_uri: 'http://issuer.test.attacker.example/console/callback' },
    ];
    for (const query of cases) {
      const response = await getAuthorize(t.app, query);
      expect(response.statusCode, JSON.stringify(query)).toBe(400);
      expect(response.headers.location).toBeUndefined();
      expect(response.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(response.headers['x-frame-options']).toBe('DENY');
    }
    const repeated = await getAuthorize(t.app, {}, `${new URLSearchParams(base).toString()}&client_id=${acme.consoleClientId}`);
    expect(repeated.statusCode).toBe(400);
    expect(repeated.headers.location).toBeUndefined();
  });

  it('a missing or wrong CSRF token (or cookie) re-shows the form with 403, counts nothing and issues no code', async () => {
    const before = await codeCount();
    const shown = await showForm(t.app, parameters());
    const { csrf_token: _dropped, ...withoutToken } = shown.hidden;
    const missing = await postAuthorize(t.app, { ...withoutToken, username: 'ada@acme', password: PASSWORD }, shown.cookie);
    const wrong = await submitForm(t.app, shown, 'ada@acme', PASSWORD, { csrf_token: 'A'.repeat(43) });
    const noCookie = await postAuthorize(t.app, { ...shown.hidden, username: 'ada@acme', password: PASSWORD });
    const otherCookie = await submitForm(t.app, { ...shown, cookie: `acs_authorize_csrf=${'B'.repeat(43)}` }, 'ada@acme', PASSWORD);
    for (const response of [missing, wrong, noCookie, otherCookie]) {
      expect(response.statusCode).toBe(403);
      expect(response.body).toContain(CSRF_REFUSED);
      expect(response.headers.location).toBeUndefined();
    }
    expect(await codeCount()).toBe(before);
    // The re-shown form carries a working token.
    const again = formOf(missing);
    const ok = await submitForm(t.app, again, 'ada@acme', PASSWORD);
    expect(ok.statusCode).toBe(303);
  });

  it('a reused code fails and revokes the tokens issued from it (RFC 9700 4.2.1)', async () => {
    const { challenge, code } = await signIn('ada@acme');
    const fields = { code, redirect_uri: redirectUri, client_id: acme.consoleClientId, code_verifier: challenge.verifier };
    const first = await exchangeCode(t.app, fields);
    expect(first.statusCode).toBe(200);
    const { access_token: accessToken, refresh_token: refreshToken } = first.json();
    const again = await exchangeCode(t.app, fields);
    expectOAuthError(again, 400, 'invalid_grant', INVALID_CODE);
    const refused = await t.app.inject({ method: 'GET', url: '/operatorapi/users', headers: bearer(accessToken) });
    expect(refused.statusCode).toBe(401);
    expectOAuthError(await refreshPublic(t.app, acme.consoleClientId, refreshToken), 400, 'invalid_grant');
    const { rows } = await t.database.db.query<{ action: string }>(
      "SELECT action FROM audit_events WHERE tenant_id = $1 AND action = 'token.code_reuse'",
      [acme.tenantId],
    );
    expect(rows).toHaveLength(1);
  });

  it('a wrong verifier, a foreign redirect URI, another client → invalid_grant, and the code is spent', async () => {
    for (const tamper of [
      { code_verifier: pkce().verifier },
      { code_verifier: 'short' },
      { redirect_uri: 'https://attacker.example/callback' },
    ]) {
      const { challenge, code } = await signIn('ada@acme');
      const fields = { code, redirect_uri: redirectUri, client_id: acme.consoleClientId, code_verifier: challenge.verifier };
      expectOAuthError(await exchangeCode(t.app, { ...fields, ...tamper }), 400, 'invalid_grant', INVALID_CODE);
      // Spent by the failed attempt: the right values no longer work either.
      expectOAuthError(await exchangeCode(t.app, fields), 400, 'invalid_grant', INVALID_CODE);
    }
    // Another tenant's console client presenting acme's code: the code is not found in its tenant.
    const { challenge, code } = await signIn('ada@acme');
    const foreign = await exchangeCode(t.app, { code, redirect_uri: redirectUri, client_id: globex.consoleClientId, code_verifier: challenge.verifier });
    expectOAuthError(foreign, 400, 'invalid_grant', INVALID_CODE);
    const fine = await exchangeCode(t.app, { code, redirect_uri: redirectUri, client_id: acme.consoleClientId, code_verifier: challenge.verifier });
    expect(fine.statusCode).toBe(200);
    // Missing parameters and unknown clients.
    expectOAuthError(await exchangeCode(t.app, { code: 'x', redirect_uri: redirectUri, client_id: 'nobody', code_verifier: challenge.verifier }), 401, 'invalid_client');
    const missing = await t.app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: form({ grant_type: 'authorization_code', client_id: acme.consoleClientId, code: 'x', redirect_uri: redirectUri }),
    });
    expectOAuthError(missing, 400, 'invalid_request');
    // A confidential client may not use the grant.
    const confidential = await t.app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: form({ grant_type: 'authorization_code', client_id: acme.clientId, client_secret: acme.clientSecret, code: 'x', redirect_uri: redirectUri, code_verifier: challenge.verifier }),
    });
    expectOAuthError(confidential, 400, 'unauthorized_client');
  });

  it('a code expires after 60 s (service clock)', async () => {
    const { challenge, code } = await signIn('ada@acme');
    skew += AUTHORIZATION_CODE_TTL_MS + 1;
    try {
      const response = await exchangeCode(t.app, { code, redirect_uri: redirectUri, client_id: acme.consoleClientId, code_verifier: challenge.verifier });
      expectOAuthError(response, 400, 'invalid_grant', INVALID_CODE);
    } finally {
      skew -= AUTHORIZATION_CODE_TTL_MS + 1;
    }
  });

  it('refresh rotates; a reused refresh token revokes the family; a removed role ends the sign-in', async () => {
    const { challenge, code } = await signIn('olga@acme');
    const first = (await exchangeCode(t.app, { code, redirect_uri: redirectUri, client_id: acme.consoleClientId, code_verifier: challenge.verifier })).json();
    const second = await refreshPublic(t.app, acme.consoleClientId, first.refresh_token);
    expect(second.statusCode, second.body).toBe(200);
    const rotated = second.json();
    expect(rotated.refresh_token).not.toBe(first.refresh_token);
    expect(decodeJwt(rotated.access_token).payload.aud).toEqual(['operatorapi', 'accessapi']);
    expect(rotated.scope.split(' ').sort()).toEqual([...ROLE_SCOPES.operator].sort());
    // The old one again: refused, and the family with it.
    expectOAuthError(await refreshPublic(t.app, acme.consoleClientId, first.refresh_token), 400, 'invalid_grant');
    expectOAuthError(await refreshPublic(t.app, acme.consoleClientId, rotated.refresh_token), 400, 'invalid_grant');

    // A role change reaches the next refresh; no role, no refresh.
    const fresh = await signIn('olga@acme');
    const tokens = (await exchangeCode(t.app, { code: fresh.code, redirect_uri: redirectUri, client_id: acme.consoleClientId, code_verifier: fresh.challenge.verifier })).json();
    await t.app.services.users.update(cli(acme.tenantId), 'olga', { role: 'viewer' });
    const narrowed = await refreshPublic(t.app, acme.consoleClientId, tokens.refresh_token);
    expect(narrowed.statusCode).toBe(200);
    expect(narrowed.json().scope.split(' ').sort()).toEqual([...ROLE_SCOPES.viewer].sort());
    await t.app.services.users.update(cli(acme.tenantId), 'olga', { role: null });
    expectOAuthError(await refreshPublic(t.app, acme.consoleClientId, narrowed.json().refresh_token), 400, 'invalid_grant');
    await t.app.services.users.update(cli(acme.tenantId), 'olga', { role: 'operator' });
  });

  it('the console revokes its own refresh token by client_id alone (RFC 7009 2.1), and it stops working', async () => {
    const { challenge, code } = await signIn('ada@acme');
    const tokens = (await exchangeCode(t.app, { code, redirect_uri: redirectUri, client_id: acme.consoleClientId, code_verifier: challenge.verifier })).json();
    const revoked = await t.app.inject({
      method: 'POST',
      url: '/oauth/revoke',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: form({ token: tokens.refresh_token, client_id: acme.consoleClientId }),
    });
    expect(revoked.statusCode).toBe(200);
    expectOAuthError(await refreshPublic(t.app, acme.consoleClientId, tokens.refresh_token), 400, 'invalid_grant');
    // A confidential client cannot pass itself off as public by leaving its secret out.
    const confidential = await t.app.inject({
      method: 'POST',
      url: '/oauth/revoke',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: form({ token: 'anything', client_id: acme.clientId }),
    });
    expectOAuthError(confidential, 401, 'invalid_client');
  });

  it('the lockout of the password grant applies: locked after the threshold, the right password refused alike', async () => {
    const shown = await showForm(t.app, parameters());
    for (let attempt = 0; attempt < 3; attempt++) {
      const response = await submitForm(t.app, shown, 'locky@acme', `wrong ${attempt}`);
      expect(response.statusCode).toBe(200);
      expect(response.body).toContain(SIGN_IN_REFUSED);
    }
    const locked = await submitForm(t.app, shown, 'locky@acme', PASSWORD);
    expect(locked.statusCode).toBe(200);
    expect(locked.body).toContain(SIGN_IN_REFUSED);
    // The password grant sees the same lock: one limit for both doors.
    const { rows } = await t.database.db.query<{ attempts: number; locked_until: number | null }>(
      'SELECT attempts, locked_until FROM login_failures WHERE tenant_id = $1 AND username = $2',
      [acme.tenantId, 'locky'],
    );
    expect(rows[0]!.locked_until).not.toBeNull();
    // After the lock, the right password works again.
    skew += 61_000;
    try {
      const open = await submitForm(t.app, formOf(locked), 'locky@acme', PASSWORD);
      expect(open.statusCode).toBe(303);
    } finally {
      skew -= 61_000;
    }
  });
});
