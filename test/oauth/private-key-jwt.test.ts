// private_key_jwt at the token endpoint (RFC 7523 2.2 and 3, OpenID Connect Core 9; docs/api-reference.md 3.1): a
// client bound to a mobile device that has a key authenticates with an assertion signed by that key.
import { createHmac, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { clientAssertion, newKeyPair, putDeviceKey, signJws, type HolderKeyPair } from '../helpers/holder-keys.js';
import { basic, bearer, clientToken, createClient, createTenant, form, type ClientFixture, type TenantFixture } from '../helpers/oauth.js';
import { device, lock } from '../helpers/operator.js';
import { decodeJwt, expectOAuthError } from '../helpers/security.js';

const JWT_BEARER = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
const ISSUER = 'http://issuer.test';
const TOKEN_ENDPOINT = `${ISSUER}/oauth/token`;

describe('private_key_jwt (RFC 7523)', () => {
  let t: TestApp;
  let tenant: TenantFixture;
  let phoneKey: HolderKeyPair;
  let phoneClient: ClientFixture;
  let keylessClient: ClientFixture;
  let lockClient: ClientFixture;
  let unboundClient: ClientFixture;

  beforeAll(async () => {
    t = await buildTestApp({ TOKEN_RATE_LIMIT_PER_MINUTE: '100000' });
    tenant = await createTenant(t.app, 'acme');
    const admin = await clientToken(t.app, tenant);
    await device(t, admin, 'phone-1');
    await device(t, admin, 'phone-keyless');
    await lock(t, admin, 'front-door');
    phoneKey = newKeyPair();
    await putDeviceKey(t, tenant.tenantId, 'phone-1', phoneKey);
    phoneClient = await createClient(t.app, tenant, ['tokens:download'], {
      mobileDeviceId: 'phone-1',
    });
    keylessClient = await createClient(t.app, tenant, ['tokens:download'], { mobileDeviceId: 'phone-keyless' });
    lockClient = await createClient(t.app, tenant, ['sync'], { securedObjectId: 'front-door' });
    unboundClient = await createClient(t.app, tenant, ['tokens:read']);
  });
  afterAll(async () => {
    await t.close();
  });

  const post = (fields: Record<string, string>, headers: Record<string, string> = {}, url = '/oauth/token') =>
    t.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, payload: form(fields) });

  const withAssertion = (assertion: string, extra: Record<string, string> = {}) =>
    post({ grant_type: 'client_credentials', client_assertion_type: JWT_BEARER, client_assertion: assertion, ...extra });

  async function usedIds(clientId: string): Promise<string[]> {
    const { rows } = await t.database.db.query<{ jti: string }>(
      'SELECT jti FROM client_assertion_ids WHERE tenant_id = $1 AND client_id = $2 ORDER BY jti',
      [tenant.tenantId, clientId],
    );
    return rows.map((row) => row.jti);
  }

  it('a good assertion gets a token with the client\'s scopes, at either token path, with aud the endpoint, the issuer, or an array', async () => {
    for (const [audience, path] of [
      [TOKEN_ENDPOINT, '/oauth/token'],
      [ISSUER, '/oauth/token'],
      [[`${ISSUER}/other`, `${ISSUER}/oauth2/token`], '/oauth2/token'],
    ] as const) {
      const jti = randomUUID();
      const response = await post(
        { grant_type: 'client_credentials', client_assertion_type: JWT_BEARER, client_assertion: clientAssertion(phoneKey, phoneClient.clientId, [...[audience].flat()], { jti }) },
        {},
        path,
      );
      expect(response.statusCode, response.body).toBe(200);
      expect(response.headers['cache-control']).toBe('no-store');
      const body = response.json();
      expect(body).toMatchObject({ token_type: 'Bearer', scope: 'tokens:download keys:register' });
      expect(decodeJwt(body.access_token).payload).toMatchObject({ client_id: phoneClient.clientId, sub: phoneClient.clientId, tenant: tenant.tenantId });
      expect(await usedIds(phoneClient.clientId)).toContain(jti);
      // The token works on the Device API like a secret-authenticated one.
      const tickets = await t.app.inject({ url: '/deviceapi/mobiledevices/phone-1/tickets', headers: bearer(body.access_token) });
      expect(tickets.statusCode, tickets.body).toBe(200);
    }
    // A form client_id naming the same client is allowed (RFC 7521 4.2).
    const named = await withAssertion(clientAssertion(phoneKey, phoneClient.clientId, TOKEN_ENDPOINT), { client_id: phoneClient.clientId });
    expect(named.statusCode, named.body).toBe(200);
  });

  it('a replayed jti is refused, on its first use\'s terms: 401 invalid_client', async () => {
    const assertion = clientAssertion(phoneKey, phoneClient.clientId, TOKEN_ENDPOINT);
    expect((await withAssertion(assertion)).statusCode).toBe(200);
    expectOAuthError(await withAssertion(assertion), 401, 'invalid_client');
    // A new assertion with the same jti is the same replay.
    const { jti } = decodeJwt(assertion).payload as { jti: string };
    expectOAuthError(await withAssertion(clientAssertion(phoneKey, phoneClient.clientId, TOKEN_ENDPOINT, { jti })), 401, 'invalid_client');
  });

  it('every wrong assertion is 401 invalid_client with the same hint, and spends no jti', async () => {
    const now = Math.floor(Date.now() / 1000);
    const other = newKeyPair();
    const good = (claims: Record<string, unknown> = {}) => clientAssertion(phoneKey, phoneClient.clientId, TOKEN_ENDPOINT, claims);
    const [head, payload] = good().split('.');
    const hmac = (header: object) => {
      const input = `${Buffer.from(JSON.stringify(header)).toString('base64url')}.${payload}`;
      return `${input}.${createHmac('sha256', 'secret').update(input).digest('base64url')}`;
    };
    const cases: [string, string][] = [
      ['wrong aud', good({ aud: 'https://elsewhere.example' })],
      ['aud an array without this server', good({ aud: ['https://elsewhere.example'] })],
      ['expired', good({ iat: now - 600, exp: now - 5 })],
      ['exp too far ahead', good({ exp: now + 600 })],
      ['no exp', good({ exp: undefined })],
      ['iat in the future', good({ iat: now + 300 })],
      ['nbf in the future', good({ nbf: now + 300 })],
      ['no jti', good({ jti: undefined })],
      ['empty jti', good({ jti: '' })],
      ['jti too long', good({ jti: 'j'.repeat(257) })],
      ['iss differs from sub', good({ sub: keylessClient.clientId })],
      ['iss another client', clientAssertion(phoneKey, keylessClient.clientId, TOKEN_ENDPOINT)],
      ['signed by another key', clientAssertion(other, phoneClient.clientId, TOKEN_ENDPOINT)],
      ['alg none', `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${payload}.`],
      ['alg HS256', hmac({ alg: 'HS256', typ: 'JWT' })],
      ['alg header says ES256 over an HMAC', hmac({ alg: 'ES256', typ: 'JWT' })],
      ['a JWS of another type (a key proof)', signJws(phoneKey.privateKey, { alg: 'ES256', typ: 'key-proof+jwt' }, decodeJwt(good()).payload)],
      ['not a JWS', 'not-a-jwt'],
      ['three parts, not JSON', `${head}.bm90IGpzb24.AAAA`],
      ['client bound to a device without a key', clientAssertion(phoneKey, keylessClient.clientId, TOKEN_ENDPOINT)],
      ['client bound to a lock', clientAssertion(phoneKey, lockClient.clientId, TOKEN_ENDPOINT)],
      ['client bound to nothing', clientAssertion(phoneKey, unboundClient.clientId, TOKEN_ENDPOINT)],
      ['unknown client', clientAssertion(phoneKey, 'no-such-client', TOKEN_ENDPOINT)],
    ];
    const before = (await t.database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM client_assertion_ids')).rows[0]!.n;
    const descriptions = new Set<string>();
    for (const [name, assertion] of cases) {
      const response = await withAssertion(assertion);
      const body = expectOAuthError(response, 401, 'invalid_client');
      expect(response.headers['www-authenticate'], name).toBe('Basic realm="oauth"');
      descriptions.add(body.error_description);
    }
    // One hint for every failure: which check failed is not said.
    expect(descriptions.size).toBe(1);
    expect((await t.database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM client_assertion_ids')).rows[0]!.n).toBe(before);
    // A form client_id naming another client than the assertion's.
    expectOAuthError(await withAssertion(good(), { client_id: keylessClient.clientId }), 401, 'invalid_client');
  });

  it('a deleted client\'s assertion is refused', async () => {
    const key = newKeyPair();
    const admin = await clientToken(t.app, tenant);
    await device(t, admin, 'phone-doomed');
    await putDeviceKey(t, tenant.tenantId, 'phone-doomed', key);
    const doomed = await createClient(t.app, tenant, ['tokens:download'], { mobileDeviceId: 'phone-doomed' });
    expect((await withAssertion(clientAssertion(key, doomed.clientId, TOKEN_ENDPOINT))).statusCode).toBe(200);
    const deleted = await t.app.inject({ method: 'DELETE', url: `/operatorapi/oauthclients/${doomed.clientId}`, headers: bearer(admin) });
    expect(deleted.statusCode).toBe(204);
    expectOAuthError(await withAssertion(clientAssertion(key, doomed.clientId, TOKEN_ENDPOINT)), 401, 'invalid_client');
  });

  it('a secret and an assertion in one request → 400 invalid_request; so is half an assertion', async () => {
    const assertion = clientAssertion(phoneKey, phoneClient.clientId, TOKEN_ENDPOINT);
    expectOAuthError(await withAssertion(assertion, { client_id: phoneClient.clientId, client_secret: phoneClient.clientSecret }), 400, 'invalid_request');
    expectOAuthError(
      await post(
        { grant_type: 'client_credentials', client_assertion_type: JWT_BEARER, client_assertion: assertion },
        { authorization: basic(phoneClient.clientId, phoneClient.clientSecret) },
      ),
      400,
      'invalid_request',
    );
    expectOAuthError(await post({ grant_type: 'client_credentials', client_assertion: assertion }), 400, 'invalid_request');
    expectOAuthError(await post({ grant_type: 'client_credentials', client_assertion_type: JWT_BEARER }), 400, 'invalid_request');
    // An assertion type this server does not know fails authentication (RFC 7521 4.2.1).
    expectOAuthError(
      await post({ grant_type: 'client_credentials', client_assertion_type: 'urn:example:saml', client_assertion: assertion }),
      401,
      'invalid_client',
    );
    // None of these spent the assertion's jti: it still works once.
    expect((await withAssertion(assertion)).statusCode).toBe(200);
  });

  it('works at the revocation and introspection endpoints too', async () => {
    const token = (await withAssertion(clientAssertion(phoneKey, phoneClient.clientId, TOKEN_ENDPOINT))).json().access_token as string;
    const introspected = await post(
      { token, client_assertion_type: JWT_BEARER, client_assertion: clientAssertion(phoneKey, phoneClient.clientId, ISSUER) },
      {},
      '/oauth/introspect',
    );
    expect(introspected.statusCode, introspected.body).toBe(200);
    expect(introspected.json()).toMatchObject({ active: true, client_id: phoneClient.clientId });
  });

  it('the metadata lists private_key_jwt and ES256 (RFC 8414 2)', async () => {
    const metadata = (await t.app.inject({ url: '/.well-known/oauth-authorization-server' })).json();
    for (const endpoint of ['token', 'revocation', 'introspection']) {
      expect(metadata[`${endpoint}_endpoint_auth_methods_supported`]).toEqual(expect.arrayContaining(['client_secret_basic', 'client_secret_post', 'private_key_jwt']));
      expect(metadata[`${endpoint}_endpoint_auth_signing_alg_values_supported`]).toEqual(['ES256']);
    }
  });

  it('expired ids are swept, tenant by tenant; live ones stay', async () => {
    const now = Date.now();
    await t.database.db.query(
      `INSERT INTO client_assertion_ids (tenant_id, client_id, jti, expires_at) VALUES ($1, $2, 'old-1', $3), ($1, $2, 'old-2', $3), ($1, $2, 'live', $4)`,
      [tenant.tenantId, phoneClient.clientId, now - 1000, now + 600_000],
    );
    expect(await t.app.services.clientAssertions.prune()).toBeGreaterThanOrEqual(2);
    const left = await usedIds(phoneClient.clientId);
    expect(left).toContain('live');
    expect(left).not.toContain('old-1');
    expect(left).not.toContain('old-2');
  });
});
