// docs/security-cases.md A (1–9): the token endpoint and client authentication (RFC 6749 2.3, 3.1, 5.1, 5.2, Appendix B).
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../src/shared/crypto.js';
import { anotherInstance, buildTestApp, type TestApp } from '../helpers/app.js';
import {
  basic,
  bearer,
  clientToken,
  createClient,
  createTenant,
  createUser,
  form,
  tokenRequest,
  type ClientFixture,
  type TenantFixture,
} from '../helpers/oauth.js';
import { decodeJwt, expectOAuthError, expectSimilarDurations, stableHeaders } from '../helpers/security.js';
import { postgresTestUrl } from '../helpers/postgres-url.js';
import { secretsKeyOf } from '../../src/shared/crypto.js';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const OPERATOR_SCOPES = ['tokens:read', 'devices:read', 'clients:manage'];

describe('docs/security-cases.md A: token endpoint and client authentication', () => {
  let t: TestApp;
  let tenant: TenantFixture;
  let operator: ClientFixture;
  let accessOnly: ClientFixture;

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4', TOKEN_RATE_LIMIT_PER_MINUTE: '100000' });
    tenant = await createTenant(t.app, 'acme');
    operator = await createClient(t.app, tenant, [...OPERATOR_SCOPES, 'offline']);
    accessOnly = await createClient(t.app, tenant, ['offline', 'device-groups:read']);
    await createUser(t.app, tenant, 'alice', 'correct horse battery');
  });
  afterAll(async () => {
    await t.close();
  });

  /** A raw POST to a token endpoint: `authorization` and the form exactly as given. */
  const post = (payload: string, headers: Record<string, string> = {}, url = '/oauth/token') =>
    t.app.inject({ method: 'POST', url, headers: { ...FORM, ...headers }, payload });

  it('A1: wrong secret with Basic → 401 invalid_client, WWW-Authenticate: Basic, application/json, on every endpoint', async () => {
    for (const url of ['/oauth/token', '/oauth2/token', '/oauth/revoke', '/oauth/introspect']) {
      const response = await post(
        form({ grant_type: 'client_credentials', token: 'x' }),
        { authorization: basic(operator.clientId, 'wrong-secret') },
        url,
      );
      expectOAuthError(response, 401, 'invalid_client', 'Client authentication failed.');
      expect(response.headers['www-authenticate']).toBe('Basic realm="oauth"');
      expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
    }
    // The same answer for a wrong secret sent in the form (docs/api-reference.md 3.1).
    const posted = await post(form({ grant_type: 'client_credentials', client_id: operator.clientId, client_secret: 'wrong' }));
    expectOAuthError(posted, 401, 'invalid_client', 'Client authentication failed.');
    expect(posted.headers['www-authenticate']).toBe('Basic realm="oauth"');
  });

  it('A2: unknown client_id → the same status, body and headers as a wrong secret', async () => {
    const grant = form({ grant_type: 'client_credentials' });
    const wrongSecret = await post(grant, { authorization: basic(operator.clientId, 'wrong-secret') });
    const unknownClient = await post(grant, { authorization: basic('no-such-client', 'wrong-secret') });
    expect(unknownClient.statusCode).toBe(wrongSecret.statusCode);
    expect(unknownClient.body).toBe(wrongSecret.body);
    expect(stableHeaders(unknownClient)).toEqual(stableHeaders(wrongSecret));

    const postedWrong = await post(form({ grant_type: 'client_credentials', client_id: operator.clientId, client_secret: 'x' }));
    const postedUnknown = await post(form({ grant_type: 'client_credentials', client_id: 'no-such-client', client_secret: 'x' }));
    expect(postedUnknown.statusCode).toBe(postedWrong.statusCode);
    expect(postedUnknown.body).toBe(postedWrong.body);
    expect(stableHeaders(postedUnknown)).toEqual(stableHeaders(postedWrong));
  });

  it('A2: unknown client_id and wrong secret take a similar time (median of 30 interleaved requests each)', async () => {
    const grant = form({ grant_type: 'client_credentials' });
    await expectSimilarDurations({
      wrongSecret: (i: number) => post(grant, { authorization: basic(operator.clientId, `wrong-${i}`) }),
      unknownClient: (i: number) => post(grant, { authorization: basic(`unknown-${i}-${operator.clientId.slice(8)}`, `wrong-${i}`) }),
    });
  });

  it('A3: Basic and form-post authentication both work', async () => {
    const viaBasic = await post(form({ grant_type: 'client_credentials' }), { authorization: basic(operator.clientId, operator.clientSecret) });
    expect(viaBasic.statusCode).toBe(200);
    const viaForm = await post(
      form({ grant_type: 'client_credentials', client_id: operator.clientId, client_secret: operator.clientSecret }),
    );
    expect(viaForm.statusCode).toBe(200);
    expect(decodeJwt(viaForm.json().access_token as string).payload.client_id).toBe(operator.clientId);
    // A form client_id equal to the Basic one is allowed (RFC 6749 2.3.1 does not forbid repeating the id).
    const sameId = await post(form({ grant_type: 'client_credentials', client_id: operator.clientId }), {
      authorization: basic(operator.clientId, operator.clientSecret),
    });
    expect(sameId.statusCode).toBe(200);
  });

  it('A3: Basic and form credentials in one request → 400 invalid_request; a differing form client_id → rejected', async () => {
    const auth = { authorization: basic(operator.clientId, operator.clientSecret) };
    const both = await post(
      form({ grant_type: 'client_credentials', client_id: operator.clientId, client_secret: operator.clientSecret }),
      auth,
    );
    expectOAuthError(both, 400, 'invalid_request', 'Send client credentials by HTTP Basic or in the form, not both.');
    const secretOnly = await post(form({ grant_type: 'client_credentials', client_secret: operator.clientSecret }), auth);
    expectOAuthError(secretOnly, 400, 'invalid_request', 'Send client credentials by HTTP Basic or in the form, not both.');

    const differing = await post(form({ grant_type: 'client_credentials', client_id: accessOnly.clientId }), auth);
    expectOAuthError(differing, 400, 'invalid_request', 'The client_id in the form differs from the one in HTTP Basic.');
    const differingUnknown = await post(form({ grant_type: 'client_credentials', client_id: 'someone-else' }), auth);
    expectOAuthError(differingUnknown, 400, 'invalid_request');
  });

  it('A4: Basic with RFC 6749 Appendix B encoding (a secret containing + % : & and more) authenticates', async () => {
    const client = await createClient(t.app, tenant, ['tokens:read']);
    // Generated secrets are base64url; set one with every character Appendix B must encode.
    const secret = 'a+b%c:d&e f=g/h?i#é€';
    await t.database.db.query('UPDATE oauth_clients SET secret_hash = $1 WHERE client_id = $2', [sha256(secret), client.clientId]);

    const encoded = await post(form({ grant_type: 'client_credentials' }), { authorization: basic(client.clientId, secret) });
    expect(encoded.statusCode, encoded.body).toBe(200);
    expect(encoded.json().scope).toBe('tokens:read');
    const posted = await post(form({ grant_type: 'client_credentials', client_id: client.clientId, client_secret: secret }));
    expect(posted.statusCode, posted.body).toBe(200);

    // The same secret not form-encoded first is not the same secret ("+" is a space, "%c:" is no escape).
    const raw = await post(form({ grant_type: 'client_credentials' }), {
      authorization: `Basic ${Buffer.from(`${client.clientId}:${secret}`).toString('base64')}`,
    });
    expectOAuthError(raw, 401, 'invalid_client');
  });

  it('A4: non-base64, no colon, empty secret or id, bad escapes, NUL bytes, another scheme → 400/401, never 500', async () => {
    const b64 = (value: string) => Buffer.from(value).toString('base64');
    const headers = [
      'Basic !!!not-base64!!!',
      'Basic abc',
      'Basic ====',
      'Basic',
      'Basic ',
      'Basic     ',
      `Basic ${b64(operator.clientId)}`,
      `Basic ${b64(`${operator.clientId}:`)}`,
      `Basic ${b64(`:${operator.clientSecret}`)}`,
      `Basic ${b64(':')}`,
      `Basic ${b64(`${operator.clientId}:%`)}`,
      `Basic ${b64(`${operator.clientId}:%E0%A4%A`)}`,
      `Basic ${b64(`${operator.clientId}:%FF%FE`)}`,
      `Basic ${b64(`%00:${operator.clientSecret}`)}`,
      `Basic ${b64(`${operator.clientId}\u0000:${operator.clientSecret}`)}`,
      `Basic ${b64(`${'x'.repeat(5000)}:${'y'.repeat(5000)}`)}`,
      `Basic ${b64(`${operator.clientId}:${operator.clientSecret}`)} trailing`,
      `Bearer ${operator.clientSecret}`,
      `Digest username="${operator.clientId}"`,
      `${operator.clientId}:${operator.clientSecret}`,
      '',
    ];
    for (const authorization of headers) {
      const response = await post(form({ grant_type: 'client_credentials' }), { authorization });
      expect([400, 401], `${authorization.slice(0, 60)} → ${response.statusCode} ${response.body}`).toContain(response.statusCode);
      const body = expectOAuthError(response, response.statusCode, response.statusCode === 401 ? 'invalid_client' : 'invalid_request');
      expect(body.error_description).not.toMatch(/stack|\bat .*:\d+:\d+/);
    }
    // The same oddities in the form.
    const fieldSets: Record<string, string>[] = [
      { client_id: '', client_secret: operator.clientSecret },
      { client_id: operator.clientId, client_secret: '' },
      { client_id: operator.clientId },
      { client_id: '\u0000', client_secret: 'x' },
      { client_id: operator.clientId, client_secret: '\u0000' },
      { client_id: 'x'.repeat(10_000), client_secret: 'y' },
    ];
    for (const fields of fieldSets) {
      const response = await post(form({ grant_type: 'client_credentials', ...fields }));
      expect([400, 401], `${JSON.stringify(fields).slice(0, 60)} → ${response.statusCode} ${response.body}`).toContain(response.statusCode);
    }
  });

  it('A5: GET on a token endpoint → 405 with Allow: POST; a JSON body → 400 invalid_request', async () => {
    for (const url of ['/oauth/token', '/oauth2/token']) {
      const get = await t.app.inject({
        method: 'GET',
        url: `${url}?grant_type=client_credentials`,
        headers: { authorization: basic(operator.clientId, operator.clientSecret) },
      });
      expectOAuthError(get, 405, 'invalid_request');
      expect(get.headers.allow).toBe('POST');

      const json = await t.app.inject({
        method: 'POST',
        url,
        headers: { authorization: basic(operator.clientId, operator.clientSecret), 'content-type': 'application/json' },
        payload: JSON.stringify({ grant_type: 'client_credentials' }),
      });
      expectOAuthError(json, 400, 'invalid_request');
    }
  });

  it('A5: credentials or grant parameters in the query string → 400 invalid_request', async () => {
    const query = new URLSearchParams({ client_id: operator.clientId, client_secret: operator.clientSecret }).toString();
    const inQuery = await post(form({ grant_type: 'client_credentials' }), {}, `/oauth/token?${query}`);
    expectOAuthError(inQuery, 400, 'invalid_request', 'Parameters must be sent in the request body, not in the query string.');

    const grantInQuery = await post('', { authorization: basic(operator.clientId, operator.clientSecret) }, '/oauth/token?grant_type=client_credentials');
    expectOAuthError(grantInQuery, 400, 'invalid_request');
    const secretInQuery = await post(
      form({ grant_type: 'client_credentials', client_id: operator.clientId }),
      {},
      `/oauth2/token?client_secret=${encodeURIComponent(operator.clientSecret)}`,
    );
    expectOAuthError(secretInQuery, 400, 'invalid_request');
    // The secret in the URL never reaches the logs.
    expect(t.logLines.join('')).not.toContain(operator.clientSecret);
  });

  it('A6: repeated parameters → 400 invalid_request', async () => {
    const auth = { authorization: basic(operator.clientId, operator.clientSecret) };
    const cases = [
      'grant_type=client_credentials&scope=tokens:read&scope=devices:read',
      'grant_type=client_credentials&grant_type=client_credentials',
      'grant_type=client_credentials&grant_type=password',
      `grant_type=client_credentials&client_id=${operator.clientId}&client_id=${operator.clientId}`,
    ];
    for (const payload of cases) {
      const response = await post(payload, auth);
      expectOAuthError(response, 400, 'invalid_request');
      expect(response.json().error_description).toMatch(/repeated/);
    }
    const posted = await post(
      `grant_type=client_credentials&client_id=${operator.clientId}&client_secret=a&client_secret=${operator.clientSecret}`,
    );
    expectOAuthError(posted, 400, 'invalid_request');
    const password = await post(
      'grant_type=password&username=alice%40acme&username=bob%40acme&password=correct+horse+battery',
      { authorization: basic(accessOnly.clientId, accessOnly.clientSecret) },
      '/oauth2/token',
    );
    expectOAuthError(password, 400, 'invalid_request');
  });

  it('A6: parameters named like Object.prototype members are parameters, never inherited values', async () => {
    const auth = { authorization: basic(operator.clientId, operator.clientSecret) };
    // Unknown parameters are ignored (RFC 6749 3.2), whatever their names.
    const ignored = await post('__proto__=x&constructor=y&toString=z&hasOwnProperty=w&grant_type=client_credentials', auth);
    expect(ignored.statusCode).toBe(200);
    expect(ignored.json().token_type).toBe('Bearer');
    // Without grant_type, no inherited `grant_type` or `scope` stands in for it.
    expectOAuthError(await post('__proto__=grant_type&constructor=client_credentials', auth), 400, 'invalid_request', 'The parameter grant_type is missing.');
    // A repeated __proto__ is refused like any repeated parameter.
    const repeated = await post('grant_type=client_credentials&__proto__=a&__proto__=b', auth);
    expectOAuthError(repeated, 400, 'invalid_request');
    expect(repeated.json().error_description).toBe('The parameter __proto__ is repeated.');
  });

  it('A7: missing grant_type → invalid_request; unknown → unsupported_grant_type', async () => {
    const auth = { authorization: basic(operator.clientId, operator.clientSecret) };
    expectOAuthError(await post(form({ scope: 'tokens:read' }), auth), 400, 'invalid_request', 'The parameter grant_type is missing.');
    expectOAuthError(await post('', auth), 400, 'invalid_request', 'The parameter grant_type is missing.');
    expectOAuthError(await post(form({ grant_type: '' }), auth), 400, 'invalid_request');
    // authorization_code is supported since the console's sign-in (test/oauth/authorization-code.test.ts).
    for (const grantType of ['implicit', 'urn:ietf:params:oauth:grant-type:jwt-bearer', 'CLIENT_CREDENTIALS', 'AUTHORIZATION_CODE']) {
      expectOAuthError(await post(form({ grant_type: grantType }), auth), 400, 'unsupported_grant_type');
    }
  });

  it('A7: a grant the client may not use → 400 unauthorized_client', async () => {
    // An Access API client has no Operator API scope (`devices:read` would be one): no client_credentials.
    expectOAuthError(await tokenRequest(t.app, accessOnly, { grant_type: 'client_credentials' }), 400, 'unauthorized_client');
    // An Operator API client (no Access API scope) may not use the password or refresh grants.
    const operatorOnly = await createClient(t.app, tenant, ['tokens:read']);
    expectOAuthError(
      await tokenRequest(t.app, operatorOnly, { grant_type: 'password', username: 'alice@acme', password: 'correct horse battery' }, '/oauth2/token'),
      400,
      'unauthorized_client',
    );
    expectOAuthError(await tokenRequest(t.app, operatorOnly, { grant_type: 'refresh_token', refresh_token: 'x' }), 400, 'unauthorized_client');
    // A client bound to one device is a Device API client, even with Access API scopes.
    await t.app.services.mobileDevices.register({ tenantId: tenant.tenantId, actor: 'cli', requestId: null }, { id: 'phone-1' });
    const bound = await createClient(t.app, tenant, ['tokens:download', 'devices:read'], { mobileDeviceId: 'phone-1' });
    expectOAuthError(
      await tokenRequest(t.app, bound, { grant_type: 'password', username: 'alice@acme', password: 'correct horse battery' }, '/oauth2/token'),
      400,
      'unauthorized_client',
    );
  });

  it('A8: success → 200, application/json, Cache-Control: no-store, Bearer, integer expires_in, scope, no refresh_token', async () => {
    for (const url of ['/oauth/token', '/oauth2/token']) {
      const response = await tokenRequest(t.app, operator, { grant_type: 'client_credentials' }, url);
      expect(response.statusCode).toBe(200);
      expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(response.headers['cache-control']).toBe('no-store');
      expect(response.headers.pragma).toBe('no-cache');
      const body = response.json() as Record<string, unknown>;
      expect(Object.keys(body).sort()).toEqual(['access_token', 'expires_in', 'scope', 'token_type']);
      expect(body.token_type).toBe('Bearer');
      expect(Number.isInteger(body.expires_in)).toBe(true);
      expect(body.expires_in).toBe(3600);
      // No scope asked: all the client's Operator API scopes; `offline` is an Access API scope and gives nothing here.
      expect(body.scope).toBe(OPERATOR_SCOPES.join(' '));
      expect(body).not.toHaveProperty('refresh_token');
      const { header, payload } = decodeJwt(body.access_token as string);
      expect(header.typ).toBe('at+jwt');
      expect(payload.exp! as number - (payload.iat as number)).toBe(3600);
    }
    const narrowed = await tokenRequest(t.app, operator, { grant_type: 'client_credentials', scope: 'tokens:read' });
    expect(narrowed.statusCode).toBe(200);
    expect(narrowed.json()).toMatchObject({ scope: 'tokens:read', token_type: 'Bearer' });
    expect(narrowed.json()).not.toHaveProperty('refresh_token');
    // Asking for `offline` with client credentials is a scope the grant cannot give, not a refresh token.
    expectOAuthError(await tokenRequest(t.app, operator, { grant_type: 'client_credentials', scope: 'tokens:read offline' }), 400, 'invalid_scope');
  });

  it('A9: a deleted client → the next token request gets invalid_client; its access tokens stop at once', async () => {
    const doomed = await createClient(t.app, tenant, ['clients:manage']);
    const doomedToken = await clientToken(t.app, doomed);
    expect((await t.app.inject({ method: 'GET', url: '/operatorapi/oauthclients', headers: bearer(doomedToken) })).statusCode).toBe(200);

    const admin = await clientToken(t.app, { clientId: tenant.clientId, clientSecret: tenant.clientSecret });
    const deleted = await t.app.inject({ method: 'DELETE', url: `/operatorapi/oauthclients/${doomed.clientId}`, headers: bearer(admin) });
    expect(deleted.statusCode).toBe(204);

    const refused = await t.app.inject({ method: 'GET', url: '/operatorapi/oauthclients', headers: bearer(doomedToken) });
    expect(refused.statusCode).toBe(401);
    expect(refused.headers['www-authenticate']).toBe(
      'Bearer realm="operatorapi", error="invalid_token", error_description="the access token has been revoked"',
    );
    const next = await tokenRequest(t.app, doomed, { grant_type: 'client_credentials' });
    expectOAuthError(next, 401, 'invalid_client', 'Client authentication failed.');
    expect(next.headers['www-authenticate']).toBe('Basic realm="oauth"');

    const { rows: clients } = await t.database.db.query('SELECT 1 FROM oauth_clients WHERE client_id = $1', [doomed.clientId]);
    expect(clients).toHaveLength(0);
    const { rows: revocations } = await t.database.db.query<{ kind: string }>(
      'SELECT kind FROM token_revocations WHERE subject = $1',
      [doomed.clientId],
    );
    expect(revocations).toEqual([{ kind: 'client' }]);
    const { rows: audit } = await t.database.db.query<{ action: string }>(
      'SELECT action FROM audit_events WHERE target = $1 ORDER BY seq',
      [`client:${doomed.clientId}`],
    );
    expect(audit.map((row) => row.action)).toEqual(['client.created', 'client.deleted']);
  });

  describe.runIf(Boolean(postgresTestUrl()))('A9 across two instances on one PostgreSQL database', () => {
    it('A9: a client deleted on one instance has its tokens refused by another within 5 s', async () => {
      // Verifying needs only the public keys in the database; this instance never signs.
      const other = await anotherInstance(t, secretsKeyOf(randomBytes(32)));
      try {
        await other.ready();
        const doomed = await createClient(t.app, tenant, ['clients:manage']);
        const doomedToken = await clientToken(t.app, doomed);
        const probe = () => other.inject({ method: 'GET', url: '/operatorapi/oauthclients', headers: bearer(doomedToken) });
        expect((await probe()).statusCode).toBe(200);

        const admin = await clientToken(t.app, { clientId: tenant.clientId, clientSecret: tenant.clientSecret });
        const deleted = await t.app.inject({ method: 'DELETE', url: `/operatorapi/oauthclients/${doomed.clientId}`, headers: bearer(admin) });
        expect(deleted.statusCode).toBe(204);
        const deletedAt = Date.now();
        let status = 200;
        while (status === 200 && Date.now() - deletedAt < 6000) {
          status = (await probe()).statusCode;
          if (status === 200) await new Promise((resolve) => setTimeout(resolve, 50));
        }
        const elapsed = Date.now() - deletedAt;
        expect(status).toBe(401);
        expect(elapsed).toBeLessThan(5000);
        // And the other instance refuses the client itself.
        expectOAuthError(await tokenRequest(other, doomed, { grant_type: 'client_credentials' }), 401, 'invalid_client');
      } finally {
        await other.close();
      }
    });

    it('A9: a secret rotated on one instance is refused by another that cached the client within 5 s; the new one works at once', async () => {
      const other = await anotherInstance(t);
      try {
        await other.ready();
        const rotating = await createClient(t.app, tenant, ['tokens:read']);
        // The other instance authenticates the client once and so keeps it (with the old secret) in its cache.
        expect((await tokenRequest(other, rotating, { grant_type: 'client_credentials' })).statusCode).toBe(200);

        const admin = await clientToken(t.app, { clientId: tenant.clientId, clientSecret: tenant.clientSecret });
        const rotated = await t.app.inject({ method: 'POST', url: `/operatorapi/oauthclients/${rotating.clientId}/secret`, headers: bearer(admin) });
        expect(rotated.statusCode).toBe(200);
        const next = { clientId: rotating.clientId, clientSecret: rotated.json().clientSecret as string };
        const rotatedAt = Date.now();
        expect((await tokenRequest(other, next, { grant_type: 'client_credentials' })).statusCode).toBe(200);
        let status = 200;
        while (status === 200 && Date.now() - rotatedAt < 6000) {
          status = (await tokenRequest(other, rotating, { grant_type: 'client_credentials' })).statusCode;
          if (status === 200) await new Promise((resolve) => setTimeout(resolve, 50));
        }
        expect(status).toBe(401);
        expect(Date.now() - rotatedAt).toBeLessThan(5000);
      } finally {
        await other.close();
      }
    });

    it('A9: a deletion that commits after a later revocation (out of sequence order) still stops the tokens within 5 s', async () => {
      const doomed = await createClient(t.app, tenant, ['clients:manage']);
      const doomedToken = await clientToken(t.app, doomed);
      const probe = async () =>
        (await t.app.inject({ method: 'GET', url: '/operatorapi/oauthclients', headers: bearer(doomedToken) })).statusCode;
      expect(await probe()).toBe(200);

      // Another instance deletes the client in a transaction that takes its revocation number first but commits last,
      // as two concurrent deletions can do.
      const slow = new pg.Client({ connectionString: t.database.url! });
      await slow.connect();
      try {
        await slow.query('BEGIN');
        await slow.query('DELETE FROM oauth_clients WHERE client_id = $1', [doomed.clientId]);
        await slow.query(
          "INSERT INTO token_revocations (kind, subject, revoked_at, expires_at) VALUES ('client', $1, $2, $3)",
          [doomed.clientId, Date.now(), Date.now() + 3_600_000],
        );
        await slow.query("SELECT pg_notify('acs_token_revocations', $1)", [`client:${doomed.clientId}`]);
        // Meanwhile this instance revokes another token: a higher number, committed and loaded first.
        const bystander = await createClient(t.app, tenant, ['tokens:read']);
        const bystanderToken = await clientToken(t.app, bystander);
        const revoked = await t.app.inject({
          method: 'POST',
          url: '/oauth/revoke',
          headers: { ...FORM, authorization: basic(bystander.clientId, bystander.clientSecret) },
          payload: form({ token: bystanderToken }),
        });
        expect(revoked.statusCode).toBe(200);
        await slow.query('COMMIT');
      } finally {
        await slow.end();
      }
      const committedAt = Date.now();
      let status = await probe();
      while (status === 200 && Date.now() - committedAt < 6000) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        status = await probe();
      }
      expect(status).toBe(401);
      expect(Date.now() - committedAt).toBeLessThan(5000);
    });

    it('a signing key rotated on one instance is published and signs on another at once (NOTIFY), not after its 60 s re-read', async () => {
      const other = await anotherInstance(t);
      try {
        await other.ready();
        const credentials = { clientId: tenant.clientId, clientSecret: tenant.clientSecret };
        const jwksKids = async () =>
          ((await other.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json() as { keys: { kid: string }[] }).keys.map(
            (key) => key.kid,
          );
        const oldKid = decodeJwt(await clientToken(other, credentials)).header.kid as string;

        const { kid: newKid } = await t.app.services.accessTokenKeys.rotate();
        expect(newKid).not.toBe(oldKid);
        const rotatedAt = Date.now();
        let kid = oldKid;
        while (kid !== newKid && Date.now() - rotatedAt < 5000) {
          await new Promise((resolve) => setTimeout(resolve, 20));
          kid = decodeJwt(await clientToken(other, credentials)).header.kid as string;
        }
        // The periodic re-read runs every 60 s: within 2 s only the notification can have told the other instance.
        expect(kid).toBe(newKid);
        expect(Date.now() - rotatedAt).toBeLessThan(2000);
        // Both keys are published there: tokens the old key signed still verify.
        expect(await jwksKids()).toEqual(expect.arrayContaining([oldKid, newKid]));
      } finally {
        await other.close();
      }
    });
  });
});
