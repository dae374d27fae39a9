// docs/security-cases.md E (32–34): revocation (RFC 7009), introspection (RFC 7662) and metadata (RFC 8414).
// E35 (openid-client, oauth4webapi, simple-oauth2) lives with the reference-client tests.
import { randomBytes } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { expectNothingChanged } from '../helpers/database-state.js';
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
import { device, lock } from '../helpers/operator.js';
import { ACCESS_API_PROBE, craftAccessToken, decodeJwt, expectOAuthError, registerAccessApiProbe } from '../helpers/security.js';
import { MANAGEMENT_SCOPES } from '../../src/shared/scopes.js';

const PASSWORD = 'correct horse battery';
const INACTIVE = '{"active":false}';

describe('docs/security-cases.md E: revocation and introspection', () => {
  let t: TestApp;
  let skew = 0;
  let acme: TenantFixture;
  let globex: TenantFixture;
  let acmeAdmin: ClientFixture;
  let acmeOther: ClientFixture;
  let acmeAccess: ClientFixture;
  let acmeAccess2: ClientFixture;
  let globexClient: ClientFixture;
  let globexAccess: ClientFixture;
  /** Holds tokens:introspect (docs/api-reference.md 3.3): what it is told inactive is inactive for every client of the tenant. */
  let acmeResourceServer: ClientFixture;

  beforeAll(async () => {
    t = await buildTestApp(
      { BCRYPT_COST: '4', TOKEN_RATE_LIMIT_PER_MINUTE: '100000' },
      { clock: () => Date.now() + skew, beforeReady: registerAccessApiProbe },
    );
    acme = await createTenant(t.app, 'acme');
    globex = await createTenant(t.app, 'globex');
    acmeAdmin = { clientId: acme.clientId, clientSecret: acme.clientSecret };
    acmeOther = await createClient(t.app, acme, ['clients:manage', 'devices:read']);
    acmeAccess = await createClient(t.app, acme, ['offline', 'devices:read']);
    acmeAccess2 = await createClient(t.app, acme, ['offline', 'devices:read']);
    globexClient = await createClient(t.app, globex, ['clients:manage']);
    globexAccess = await createClient(t.app, globex, ['offline', 'devices:read']);
    acmeResourceServer = await createClient(t.app, acme, ['tokens:introspect']);
    await createUser(t.app, acme, 'alice', PASSWORD);
    await createUser(t.app, globex, 'gina', PASSWORD);
  });
  afterAll(async () => {
    await t.close();
  });

  const oauthPost = (url: string, client: ClientFixture | null, fields: Record<string, string>) =>
    t.app.inject({
      method: 'POST',
      url,
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        ...(client ? { authorization: basic(client.clientId, client.clientSecret) } : {}),
      },
      payload: form(fields),
    });
  const revoke = (client: ClientFixture | null, token: string, hint?: string) =>
    oauthPost('/oauth/revoke', client, { token, ...(hint ? { token_type_hint: hint } : {}) });
  const introspect = (client: ClientFixture | null, token: string) => oauthPost('/oauth/introspect', client, { token });
  const operatorProbe = async (token: string) =>
    (await t.app.inject({ method: 'GET', url: '/operatorapi/oauthclients', headers: bearer(token) })).statusCode;
  const accessProbe = async (token: string) =>
    (await t.app.inject({ method: 'GET', url: ACCESS_API_PROBE, headers: bearer(token) })).statusCode;
  const login = async (client: ClientFixture, loginName = 'alice@acme') => {
    const response = await passwordGrant(t.app, client, loginName, PASSWORD, 'offline devices:read');
    expect(response.statusCode, response.body).toBe(200);
    return { access: response.json().access_token as string, refresh: response.json().refresh_token as string };
  };
  const refresh = (client: ClientFixture, refreshToken: string) =>
    tokenRequest(t.app, client, { grant_type: 'refresh_token', refresh_token: refreshToken }, '/oauth2/token');
  const state = async () => ({
    revocations: (await t.database.db.query('SELECT kind, subject FROM token_revocations ORDER BY seq')).rows,
    refreshRevoked: (await t.database.db.query('SELECT count(*)::int AS n FROM refresh_tokens WHERE revoked_at IS NOT NULL')).rows,
  });

  function expectRevokeOk(response: LightMyRequestResponse) {
    expect(response.statusCode, response.body).toBe(200);
    expect(response.body).toBe('');
    expect(response.headers['cache-control']).toBe('no-store');
  }

  function expectInactive(response: LightMyRequestResponse, what: string) {
    expect(response.statusCode, what).toBe(200);
    expect(response.body, what).toBe(INACTIVE);
    expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(response.headers['cache-control']).toBe('no-store');
  }

  it('E32: revoking garbage → 200 and nothing revoked', async () => {
    const before = await state();
    const garbage = [
      'garbage',
      'a.b.c',
      'eyJhbGciOiJub25lIn0.eyJqdGkiOiJ4In0.',
      randomBytes(32).toString('base64url'),
      'x'.repeat(10_000),
      '\u0000',
      '{"active":true}',
    ];
    for (const token of garbage) {
      expectRevokeOk(await revoke(acmeAdmin, token));
      expectRevokeOk(await revoke(acmeAdmin, token, 'refresh_token'));
      expectRevokeOk(await revoke(acmeAdmin, token, 'no_such_hint'));
    }
    expect(await state()).toEqual(before);
  });

  it("E32: revoking another client's access or refresh token → 200 and nothing revoked", async () => {
    const otherAccessToken = await clientToken(t.app, acmeOther);
    const globexToken = await clientToken(t.app, globexClient);
    const session = await login(acmeAccess);
    const globexSession = await login(globexAccess, 'gina@globex');
    const before = await state();

    expectRevokeOk(await revoke(acmeAdmin, otherAccessToken)); // same tenant, another client
    expectRevokeOk(await revoke(acmeAdmin, globexToken)); // another tenant
    expectRevokeOk(await revoke(acmeAccess2, session.access, 'access_token'));
    expectRevokeOk(await revoke(acmeAccess2, session.refresh, 'refresh_token'));
    expectRevokeOk(await revoke(acmeAdmin, globexSession.refresh));
    expect(await state()).toEqual(before);

    expect(await operatorProbe(otherAccessToken)).toBe(200);
    expect(await operatorProbe(globexToken)).toBe(200);
    expect(await accessProbe(session.access)).toBe(200);
    expect((await refresh(acmeAccess, session.refresh)).statusCode).toBe(200);
    expect((await refresh(globexAccess, globexSession.refresh)).statusCode).toBe(200);
  });

  it('E32: the owner revoking its own tokens works (the control for the two tests above)', async () => {
    const own = await clientToken(t.app, acmeOther);
    expectRevokeOk(await revoke(acmeOther, own));
    expect(await operatorProbe(own)).toBe(401);
    expectRevokeOk(await revoke(acmeOther, own)); // again: still 200

    const session = await login(acmeAccess);
    expectRevokeOk(await revoke(acmeAccess, session.refresh));
    expectOAuthError(await refresh(acmeAccess, session.refresh), 400, 'invalid_grant');
    // Revoking a refresh token revokes its family, access tokens included (RFC 7009 2.1).
    expect(await accessProbe(session.access)).toBe(401);
  });

  it('E32: revocation needs client authentication and a token parameter', async () => {
    const token = await clientToken(t.app, acmeOther);
    const anonymous = await revoke(null, token);
    expectOAuthError(anonymous, 401, 'invalid_client');
    expect(anonymous.headers['www-authenticate']).toBe('Basic realm="oauth"');
    const withBearer = await t.app.inject({
      method: 'POST',
      url: '/oauth/revoke',
      headers: { ...bearer(token), 'content-type': 'application/x-www-form-urlencoded' },
      payload: form({ token }),
    });
    expectOAuthError(withBearer, 401, 'invalid_client');
    expectOAuthError(await oauthPost('/oauth/revoke', acmeAdmin, {}), 400, 'invalid_request');
    expect(await operatorProbe(token)).toBe(200);
  });

  it('E33: introspection needs client authentication', async () => {
    const token = await clientToken(t.app, acmeOther);
    const anonymous = await introspect(null, token);
    expectOAuthError(anonymous, 401, 'invalid_client');
    expect(anonymous.headers['www-authenticate']).toBe('Basic realm="oauth"');
    expect(anonymous.body).not.toContain('active');
    // A bearer token is no client authentication (RFC 7662 2.1 leaves it open; this server does not accept it).
    const withBearer = await t.app.inject({
      method: 'POST',
      url: '/oauth/introspect',
      headers: { ...bearer(token), 'content-type': 'application/x-www-form-urlencoded' },
      payload: form({ token }),
    });
    expectOAuthError(withBearer, 401, 'invalid_client');
    expectOAuthError(await introspect({ clientId: acmeOther.clientId, clientSecret: 'wrong' }, token), 401, 'invalid_client');
    expectOAuthError(await oauthPost('/oauth/introspect', acmeAdmin, {}), 400, 'invalid_request');
  });

  it('E32/E33: GET on the revocation and introspection endpoints → 405 with Allow: POST, and nothing revoked', async () => {
    const token = await clientToken(t.app, acmeOther);
    for (const url of ['/oauth/revoke', '/oauth/introspect']) {
      const get = await t.app.inject({
        method: 'GET',
        url: `${url}?token=${token}`,
        headers: { authorization: basic(acmeOther.clientId, acmeOther.clientSecret) },
      });
      expectOAuthError(get, 405, 'invalid_request');
      expect(get.headers.allow).toBe('POST');
    }
    expect(await operatorProbe(token)).toBe(200);
  });

  it('E33: an active token is described (the control for the inactive cases)', async () => {
    const token = await clientToken(t.app, acmeOther);
    const response = await introspect(acmeResourceServer, token);
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({ active: true, client_id: acmeOther.clientId, token_type: 'Bearer', tenant: acme.tenantId });
  });

  it('RFC 7662 2.2: a refresh token is described without token_type (an access token type, RFC 6749 7.1)', async () => {
    const session = await login(acmeAccess);
    const { rows } = await t.database.db.query<{ user_id: string; created_at: string; expires_at: string }>(
      'SELECT user_id, created_at, expires_at FROM refresh_tokens WHERE client_id = $1 ORDER BY created_at DESC LIMIT 1',
      [acmeAccess.clientId],
    );
    const row = rows[0]!;
    const described = await introspect(acmeResourceServer, session.refresh);
    expect(described.json()).toEqual({
      active: true,
      scope: 'offline devices:read',
      client_id: acmeAccess.clientId,
      sub: row.user_id,
      iss: t.config.PUBLIC_URL,
      exp: Math.floor(Number(row.expires_at) / 1000),
      iat: Math.floor(Number(row.created_at) / 1000),
      tenant: acme.tenantId,
    });
    expect((await introspect(acmeAccess, session.refresh)).json()).not.toHaveProperty('token_type');
    // The access token of the same login keeps its type.
    expect((await introspect(acmeAccess, session.access)).json()).toMatchObject({ active: true, token_type: 'Bearer' });
  });

  it('E33: expired, revoked, foreign or garbage → exactly {"active":false}', async () => {
    // Revoked access token, and refresh tokens revoked, used, and of a revoked family.
    const revokedAccess = await clientToken(t.app, acmeOther);
    expectRevokeOk(await revoke(acmeOther, revokedAccess));
    expectInactive(await introspect(acmeResourceServer, revokedAccess), 'revoked access token');
    const revokedSession = await login(acmeAccess);
    expectRevokeOk(await revoke(acmeAccess, revokedSession.refresh));
    expectInactive(await introspect(acmeResourceServer, revokedSession.refresh), 'revoked refresh token');
    expectInactive(await introspect(acmeResourceServer, revokedSession.access), 'access token of a revoked family');
    const usedSession = await login(acmeAccess);
    expect((await refresh(acmeAccess, usedSession.refresh)).statusCode).toBe(200);
    expectInactive(await introspect(acmeResourceServer, usedSession.refresh), 'used refresh token');

    // Foreign: another tenant's access and refresh tokens.
    expectInactive(await introspect(acmeResourceServer, await clientToken(t.app, globexClient)), 'another tenant\'s access token');
    expectInactive(await introspect(acmeResourceServer, (await login(globexAccess, 'gina@globex')).refresh), 'another tenant\'s refresh token');
    // A token signed by our key claiming another tenant is still that tenant's.
    const crafted = await craftAccessToken(t.app, t.config.PUBLIC_URL, { clientId: globex.clientId, tenantId: globex.tenantId, scope: 'clients:manage' });
    expectInactive(await introspect(acmeResourceServer, crafted), 'crafted token of another tenant');

    // Garbage.
    for (const token of ['garbage', 'a.b.c', 'eyJhbGciOiJub25lIn0.eyJqdGkiOiJ4In0.', randomBytes(32).toString('base64url'), '\u0000', 'x'.repeat(10_000)]) {
      expectInactive(await introspect(acmeResourceServer, token), `garbage ${token.slice(0, 20)}`);
    }

    // Expired: access tokens after an hour, refresh tokens after REFRESH_TOKEN_TTL_SECONDS (30 days).
    const access = await clientToken(t.app, acmeOther);
    const session = await login(acmeAccess);
    skew += 3601 * 1000;
    try {
      expectInactive(await introspect(acmeResourceServer, access), 'expired access token');
      expectInactive(await introspect(acmeResourceServer, session.access), 'expired user access token');
    } finally {
      skew -= 3601 * 1000;
    }
    skew += 31 * 86_400_000;
    try {
      expectInactive(await introspect(acmeResourceServer, session.refresh), 'expired refresh token');
    } finally {
      skew -= 31 * 86_400_000;
    }
    expect((await introspect(acmeResourceServer, session.refresh)).json().active).toBe(true);
  });
});

describe('docs/security-cases.md E34: authorization server metadata', () => {
  for (const issuer of ['https://Login.Example.TEST:8443/acs', 'http://issuer.test/base/']) {
    it(`E34: issuer ${issuer} is echoed byte for byte; endpoints, grants, auth methods and scopes are listed`, async () => {
      const t = await buildTestApp({ BCRYPT_COST: '4', PUBLIC_URL: issuer });
      try {
        const response = await t.app.inject({ method: 'GET', url: '/.well-known/oauth-authorization-server' });
        expect(response.statusCode).toBe(200);
        expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
        const metadata = response.json() as Record<string, unknown>;
        expect(metadata.issuer).toBe(issuer);
        const base = issuer.replace(/\/+$/, '');
        expect(metadata).toMatchObject({
          token_endpoint: `${base}/oauth/token`,
          jwks_uri: `${base}/.well-known/jwks.json`,
          revocation_endpoint: `${base}/oauth/revoke`,
          introspection_endpoint: `${base}/oauth/introspect`,
        });
        expect(metadata.grant_types_supported).toEqual(expect.arrayContaining(['client_credentials', 'password', 'refresh_token']));
        for (const key of ['token_endpoint_auth_methods_supported', 'revocation_endpoint_auth_methods_supported', 'introspection_endpoint_auth_methods_supported']) {
          // docs/api-reference.md 3.1: a phone's client may sign instead of sending a secret (test/oauth/private-key-jwt.test.ts);
          // docs/api-reference.md 13: the console's public client names itself (`none`) at the token and revocation endpoints.
          const publicClient = key === 'introspection_endpoint_auth_methods_supported' ? [] : ['none'];
          expect(metadata[key], key).toEqual(['client_secret_basic', 'client_secret_post', 'private_key_jwt', ...publicClient]);
        }
        expect(metadata.authorization_endpoint).toBe(`${base}/oauth/authorize`);
        // docs/api-reference.md 3.6: every scope of every API.
        expect(metadata.scopes_supported).toEqual(
          expect.arrayContaining([
            'tokens:create', 'tokens:read', 'tokens:delete', 'tokens:download', 'devices:read', 'devices:write', 'sync',
            'clients:manage', 'users:manage', 'audit:read', 'offline', 'nfc-token-writer', 'device-groups:write',
            'device-groups:read', 'access-permissions:read', 'access-permissions:write', 'tokens:introspect',
            'events:read', 'webhooks:manage',
          ]),
        );
        // The console's authorization endpoint (docs/api-reference.md 13) answers `code` only: ["token"] would announce
        // the implicit flow.
        expect(metadata.response_types_supported).toEqual(['code']);
        expect(metadata.code_challenge_methods_supported).toEqual(['S256']);

        // The tokens carry the same issuer, byte for byte, and the server accepts them.
        const tenant = await createTenant(t.app, 'acme');
        const token = await clientToken(t.app, { clientId: tenant.clientId, clientSecret: tenant.clientSecret });
        const payload = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as { iss: string };
        expect(payload.iss).toBe(issuer);
        expect((await t.app.inject({ method: 'GET', url: '/operatorapi/oauthclients', headers: bearer(token) })).statusCode).toBe(200);
        const introspection = await t.app.inject({
          method: 'POST',
          url: '/oauth/introspect',
          headers: { authorization: basic(tenant.clientId, tenant.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
          payload: form({ token }),
        });
        expect(introspection.json()).toMatchObject({ active: true, iss: issuer });
        // The JWKS at jwks_uri's path publishes the key that signed it.
        const kid = (JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString('utf8')) as { kid: string }).kid;
        const jwks = (await t.app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json() as { keys: { kid: string }[] };
        expect(jwks.keys.map((key) => key.kid)).toContain(kid);
      } finally {
        await t.close();
      }
    });
  }
});

describe('docs/api-reference.md 3.3, 3.6 and docs/security-cases.md G44: tokens:introspect', () => {
  let t: TestApp;
  let acme: TenantFixture;
  let acmeAdmin: ClientFixture;
  let management: string;
  /** Clients of acme, by what they are; each introspects the same tokens below. */
  let plain: ClientFixture;
  let app: ClientFixture;
  let phone: ClientFixture;
  let resourceServer: ClientFixture;
  let phoneWithIntrospect: ClientFixture;
  let lockWithIntrospect: ClientFixture;
  /** Another tenant's resource server. */
  let globexResourceServer: ClientFixture;
  let aliceId: string;

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4', TOKEN_RATE_LIMIT_PER_MINUTE: '100000' });
    acme = await createTenant(t.app, 'acme');
    const globex = await createTenant(t.app, 'globex');
    acmeAdmin = { clientId: acme.clientId, clientSecret: acme.clientSecret };
    management = await clientToken(t.app, acmeAdmin);
    await device(t, management, 'phone-1');
    await lock(t, management, 'door-1');
    plain = await createClient(t.app, acme, ['devices:read']);
    app = await createClient(t.app, acme, ['offline', 'devices:read']);
    // Its secret lives on an end user's phone (docs/api-reference.md 3.7).
    phone = await createClient(t.app, acme, ['tokens:download'], { mobileDeviceId: 'phone-1' });
    resourceServer = await createOverApi(['tokens:introspect']);
    phoneWithIntrospect = await createClient(t.app, acme, ['tokens:download', 'tokens:introspect'], { mobileDeviceId: 'phone-1' });
    lockWithIntrospect = await createClient(t.app, acme, ['sync', 'tokens:introspect'], { securedObjectId: 'door-1' });
    globexResourceServer = await createClient(t.app, globex, ['tokens:introspect']);
    aliceId = (await createUser(t.app, acme, 'alice', PASSWORD)).id;
  });
  afterAll(async () => {
    await t.close();
  });

  /** A client made over POST /operatorapi/oauthclients, as a tenant's administrator makes a resource server. */
  async function createOverApi(scopes: string[], binding: Record<string, string> = {}): Promise<ClientFixture> {
    const response = await t.app.inject({
      method: 'POST',
      url: '/operatorapi/oauthclients',
      headers: bearer(management),
      payload: { name: 'resource server', scopes, ...binding },
    });
    expect(response.statusCode, response.body).toBe(201);
    expect(response.json()).toMatchObject({ scopes, ...binding });
    const { rows } = await t.database.db.query<{ scopes: string[] }>('SELECT scopes FROM oauth_clients WHERE client_id = $1', [
      response.json().clientId,
    ]);
    expect(rows).toEqual([{ scopes }]);
    return { clientId: response.json().clientId as string, clientSecret: response.json().clientSecret as string };
  }

  it('POST /operatorapi/oauthclients gives tokens:introspect; the token endpoint never puts it into an access token', async () => {
    const introspectOnly = await createOverApi(['tokens:introspect']);
    // A permission at the introspection endpoint, not an API scope: a client with nothing else has no grant to use.
    expectOAuthError(await tokenRequest(t.app, introspectOnly, { grant_type: 'client_credentials' }), 400, 'unauthorized_client');
    expectOAuthError(
      await tokenRequest(t.app, introspectOnly, { grant_type: 'client_credentials', scope: 'tokens:introspect' }),
      400,
      'unauthorized_client',
    );

    const withApiScope = await createOverApi(['tokens:read', 'tokens:introspect']);
    const granted = await tokenRequest(t.app, withApiScope, { grant_type: 'client_credentials' });
    expect(granted.statusCode, granted.body).toBe(200);
    expect(granted.json().scope).toBe('tokens:read');
    const { payload } = decodeJwt(granted.json().access_token as string);
    expect(payload.scope).toBe('tokens:read');
    expectOAuthError(
      await tokenRequest(t.app, withApiScope, { grant_type: 'client_credentials', scope: 'tokens:read tokens:introspect' }),
      400,
      'invalid_scope',
      'The client may not request: tokens:introspect.',
    );
  });

  const introspect = (client: ClientFixture, token: string) =>
    t.app.inject({
      method: 'POST',
      url: '/oauth/introspect',
      headers: { authorization: basic(client.clientId, client.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
      payload: form({ token }),
    });

  /** Who asks, and whether it is told: `true` → the token's claims, `false` → exactly {"active":false}. */
  type Row = [who: string, client: () => ClientFixture, told: boolean];

  async function expectMatrix(token: string, rows: Row[], claims: Record<string, unknown>) {
    // Introspection only reads: no row of any table changes, whatever the answer.
    await expectNothingChanged(t, async () => {
      for (const [who, client, told] of rows) {
        const response = await introspect(client(), token);
        expect(response.statusCode, who).toBe(200);
        expect(response.headers['cache-control'], who).toBe('no-store');
        if (told) expect(response.json(), who).toMatchObject({ active: true, ...claims });
        else expect(response.body, who).toBe(INACTIVE);
      }
    });
  }

  it("G44: the tenant's management token is described to its own client and to a resource server, to no one else", async () => {
    const { payload } = decodeJwt(management);
    const claims = {
      active: true,
      token_type: 'Bearer',
      scope: MANAGEMENT_SCOPES.join(' '),
      client_id: acme.clientId,
      sub: acme.clientId,
      aud: 'operatorapi',
      iss: t.config.PUBLIC_URL,
      exp: payload.exp,
      iat: payload.iat,
      jti: payload.jti,
      tenant: acme.tenantId,
    };
    await expectMatrix(
      management,
      [
        ['the issuing client itself', () => acmeAdmin, true],
        ['a plain other client of the tenant', () => plain, false],
        ['an Access API client of the tenant', () => app, false],
        ['a phone-bound client', () => phone, false],
        ['a client holding tokens:introspect', () => resourceServer, true],
        ['a phone-bound client holding tokens:introspect', () => phoneWithIntrospect, false],
        ['a lock-bound client holding tokens:introspect', () => lockWithIntrospect, false],
        ["another tenant's client holding tokens:introspect", () => globexResourceServer, false],
      ],
      claims,
    );
    // The full answer, not only its start: every claim of the token, nothing else.
    expect((await introspect(resourceServer, management)).json()).toEqual(claims);
    expect((await introspect(acmeAdmin, management)).json()).toEqual(claims);
    // Still a working token: nobody's question changed it.
    expect((await t.app.inject({ url: '/operatorapi/oauthclients', headers: bearer(management) })).statusCode).toBe(200);
  });

  it("G44: another client's refresh token is described to its own client and to a resource server, to no one else", async () => {
    const login = await passwordGrant(t.app, app, 'alice@acme', PASSWORD, 'offline devices:read');
    expect(login.statusCode, login.body).toBe(200);
    const refreshToken = login.json().refresh_token as string;
    await expectMatrix(
      refreshToken,
      [
        ['the issuing client itself', () => app, true],
        ["the tenant's management client", () => acmeAdmin, false],
        ['a plain other client of the tenant', () => plain, false],
        ['a phone-bound client', () => phone, false],
        ['a client holding tokens:introspect', () => resourceServer, true],
        ['a phone-bound client holding tokens:introspect', () => phoneWithIntrospect, false],
        ['a lock-bound client holding tokens:introspect', () => lockWithIntrospect, false],
        ["another tenant's client holding tokens:introspect", () => globexResourceServer, false],
      ],
      { scope: 'offline devices:read', client_id: app.clientId, sub: aliceId, iss: t.config.PUBLIC_URL, tenant: acme.tenantId },
    );
    // Introspection did not consume it: it still refreshes, once.
    const refreshed = await tokenRequest(t.app, app, { grant_type: 'refresh_token', refresh_token: refreshToken }, '/oauth2/token');
    expect(refreshed.statusCode, refreshed.body).toBe(200);
  });

  it('G44: a bound client learns about its own token, never about another client of its device, tokens:introspect or not', async () => {
    const phoneToken = await clientToken(t.app, phone);
    const own = await introspect(phone, phoneToken);
    expect(own.json()).toMatchObject({ active: true, client_id: phone.clientId, scope: 'tokens:download keys:register', aud: 'deviceapi' });
    // Same tenant, same phone, tokens:introspect held: still another client's token.
    expect((await introspect(phoneWithIntrospect, phoneToken)).body).toBe(INACTIVE);
    expect((await introspect(lockWithIntrospect, phoneToken)).body).toBe(INACTIVE);
    expect((await introspect(resourceServer, phoneToken)).json()).toMatchObject({ active: true, client_id: phone.clientId });
  });
});
