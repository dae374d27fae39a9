// docs/security-cases.md D (20–31): the bearer JWT check every API runs (RFC 6750, RFC 8725, RFC 9068 section 4).
import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LightMyRequestResponse } from 'fastify';
import { SignJWT, UnsecuredJWT, exportSPKI, generateKeyPair, exportJWK, importJWK, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import {
  bearer,
  clientToken,
  createClient,
  createTenant,
  createUser,
  passwordGrant,
  type ClientFixture,
  type TenantFixture,
} from '../helpers/oauth.js';
import {
  ACCESS_API_PROBE,
  b64url,
  craftAccessToken,
  decodeJwt,
  registerAccessApiProbe,
  signRaw,
  type CraftOptions,
} from '../helpers/security.js';

const PROBE = '/operatorapi/oauthclients';
const PASSWORD = 'correct horse battery';
const INVALID_TOKEN_CHALLENGE = 'Bearer realm="operatorapi", error="invalid_token"';

/** 401, problem details, `error="invalid_token"`, and no data. */
function expectInvalidToken(response: LightMyRequestResponse, what: string, path = PROBE) {
  expect(response.statusCode, `${what}: ${response.body}`).toBe(401);
  expect(response.headers['www-authenticate'], what).toMatch(/^Bearer realm="operatorapi", error="invalid_token"/);
  expect(response.headers['content-type']).toBe('application/problem+json; charset=utf-8');
  const body = response.json() as Record<string, unknown>;
  expect(body).toMatchObject({ status: 401, title: 'Unauthorized', instance: path });
  expect(Object.keys(body).sort()).toEqual(['detail', 'instance', 'requestId', 'status', 'title', 'type']);
}

describe('docs/security-cases.md D: bearer JWT at every API', () => {
  let t: TestApp;
  let skew = 0;
  let acme: TenantFixture;
  let globex: TenantFixture;
  let admin: string;
  let accessClient: ClientFixture;
  let issuer: string;

  beforeAll(async () => {
    t = await buildTestApp(
      { BCRYPT_COST: '4', TOKEN_RATE_LIMIT_PER_MINUTE: '100000' },
      { clock: () => Date.now() + skew, beforeReady: registerAccessApiProbe },
    );
    issuer = t.config.PUBLIC_URL;
    acme = await createTenant(t.app, 'acme');
    globex = await createTenant(t.app, 'globex');
    admin = await clientToken(t.app, { clientId: acme.clientId, clientSecret: acme.clientSecret });
    accessClient = await createClient(t.app, acme, ['offline', 'devices:read']);
    await createUser(t.app, acme, 'alice', PASSWORD);
  });
  afterAll(async () => {
    await t.close();
  });

  const get = (authorization: string | undefined, url = PROBE) =>
    t.app.inject({ method: 'GET', url, headers: authorization === undefined ? {} : { authorization } });
  /** A token signed with our real key, for acme's management client; `options` breaks exactly one thing. */
  const craft = (options: CraftOptions = {}, scope = 'clients:manage') =>
    craftAccessToken(t.app, issuer, { clientId: acme.clientId, tenantId: acme.tenantId, scope }, options);
  const ourKid = async () => (await t.app.services.accessTokenKeys.signingKey()).kid;

  it('D20–D27 baseline: a crafted token with nothing wrong passes, so each refusal below is for its one defect', async () => {
    expect((await get(`Bearer ${await craft()}`)).statusCode).toBe(200);
    const { payload } = decodeJwt(await craft());
    expect((await get(`Bearer ${await signRaw(t.app, {}, JSON.stringify(payload))}`)).statusCode).toBe(200);
  });

  it('D20: alg none → 401 invalid_token', async () => {
    const valid = await craft();
    const { payload } = decodeJwt(valid);
    const signature = valid.split('.')[2]!;
    const kid = await ourKid();
    const unsecured = new UnsecuredJWT(payload).encode();
    const tokens = {
      'jose UnsecuredJWT': unsecured,
      'alg none with typ and kid': `${b64url(JSON.stringify({ alg: 'none', typ: 'at+jwt', kid }))}.${b64url(JSON.stringify(payload))}.`,
      'alg None': `${b64url(JSON.stringify({ alg: 'None', typ: 'at+jwt', kid }))}.${b64url(JSON.stringify(payload))}.`,
      'alg NONE': `${b64url(JSON.stringify({ alg: 'NONE', typ: 'at+jwt', kid }))}.${b64url(JSON.stringify(payload))}.`,
      'alg none with the real signature kept': `${b64url(JSON.stringify({ alg: 'none', typ: 'at+jwt', kid }))}.${valid.split('.')[1]}.${signature}`,
      'no alg at all': `${b64url(JSON.stringify({ typ: 'at+jwt', kid }))}.${valid.split('.')[1]}.${signature}`,
    };
    for (const [what, token] of Object.entries(tokens)) {
      const response = await get(`Bearer ${token}`);
      expectInvalidToken(response, what);
      expect(response.headers['www-authenticate'], what).toMatch(
        new RegExp(`^${INVALID_TOKEN_CHALLENGE}, error_description="the access token (is not a well-formed JWT|was not issued by this server for this use)"$`),
      );
    }
  });

  it('D21: HS256 signed with our public key (as JWK, raw bytes or PEM) as the secret → 401', async () => {
    const jwks = (await t.app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json() as { keys: JWK[] };
    const kid = await ourKid();
    const jwk = jwks.keys.find((key) => key.kid === kid)!;
    expect(jwk).toBeDefined();
    const pem = await exportSPKI((await importJWK(jwk, jwk.alg)) as Parameters<typeof exportSPKI>[0]);
    const secrets = {
      'JWK JSON': JSON.stringify(jwk),
      'JWKS JSON': JSON.stringify(jwks),
      'raw x': Buffer.from(jwk.x!, 'base64url'),
      'x as text': jwk.x!,
      PEM: pem,
      'PEM without newline': pem.trim(),
    };
    const { payload } = decodeJwt(await craft());
    for (const [what, secret] of Object.entries(secrets)) {
      for (const alg of ['HS256', 'HS384', 'HS512']) {
        const token = await new SignJWT(payload)
          .setProtectedHeader({ alg, kid, typ: 'at+jwt' })
          .sign(typeof secret === 'string' ? new TextEncoder().encode(secret) : new Uint8Array(secret));
        expectInvalidToken(await get(`Bearer ${token}`), `${alg} with ${what}`);
      }
    }
  });

  it('D22: unknown kid → 401; odd kid values (../, SQL, 10 kB, non-strings) are harmless', async () => {
    const before = (await t.database.db.query('SELECT kid, retired_at FROM signing_keys ORDER BY kid')).rows;
    const kids: unknown[] = [
      randomUUID(),
      '../../../../etc/passwd',
      '..%2F..%2Fetc%2Fpasswd',
      "' OR '1'='1",
      "x'; DROP TABLE signing_keys; --",
      'k'.repeat(10 * 1024),
      '',
      '\u0000',
      123,
      null,
      { $ne: null },
      [await ourKid()],
      `${await ourKid()} `,
      (await ourKid()).toUpperCase(),
    ];
    for (const kid of kids) {
      // Signed with our real key: only the kid is wrong.
      const token = await craft({ header: { kid } });
      expectInvalidToken(await get(`Bearer ${token}`), `kid ${JSON.stringify(kid).slice(0, 40)}`);
    }
    const noKid = await craft({ header: { kid: undefined } });
    expectInvalidToken(await get(`Bearer ${noKid}`), 'no kid');
    // Nothing changed, and the real kid still works.
    expect((await t.database.db.query('SELECT kid, retired_at FROM signing_keys ORDER BY kid')).rows).toEqual(before);
    expect((await get(`Bearer ${await craft()}`)).statusCode).toBe(200);
  });

  it('D23: jku, x5u and an embedded jwk are ignored → 401; an unknown crit → 401', async () => {
    const fetchSpy = vi.spyOn(globalThis, 'fetch');
    try {
      const attacker = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
      const attackerJwk = { ...(await exportJWK(attacker.publicKey)), kid: 'attacker', alg: 'EdDSA', use: 'sig' };
      const { payload } = decodeJwt(await craft());
      const kid = await ourKid();
      const headers: Record<string, Record<string, unknown>> = {
        'embedded jwk, no kid': { jwk: attackerJwk },
        'embedded jwk with our kid': { jwk: attackerJwk, kid },
        'jku to the attacker': { jku: 'https://attacker.test/jwks.json', kid: 'attacker' },
        'jku with our kid': { jku: 'https://attacker.test/jwks.json', kid },
        'x5u to the attacker': { x5u: 'https://attacker.test/cert.pem', kid: 'attacker' },
        'x5u with our kid': { x5u: 'https://attacker.test/cert.pem', kid },
        'x5c with our kid': { x5c: ['MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA'], kid },
      };
      for (const [what, header] of Object.entries(headers)) {
        const token = await new SignJWT(payload)
          .setProtectedHeader({ alg: 'EdDSA', typ: 'at+jwt', ...header })
          .sign(attacker.privateKey);
        expectInvalidToken(await get(`Bearer ${token}`), what);
      }
      expect(fetchSpy).not.toHaveBeenCalled();

      // crit: signed with our real key, so only the unknown critical extension is wrong (RFC 7515 4.1.11).
      const crit = await craft({ header: { crit: ['urn:example:policy'], 'urn:example:policy': 'strict' }, crit: { 'urn:example:policy': true } });
      expect(decodeJwt(crit).header.crit).toEqual(['urn:example:policy']);
      expectInvalidToken(await get(`Bearer ${crit}`), 'unknown crit');
      for (const [what, header] of Object.entries({
        'crit naming an absent header': { crit: ['urn:example:absent'] },
        'empty crit': { crit: [] },
        'crit not an array': { crit: 'urn:example:policy', 'urn:example:policy': 1 },
        'crit naming a registered header': { crit: ['alg'] },
      })) {
        expectInvalidToken(await get(`Bearer ${await signRaw(t.app, header, JSON.stringify(payload))}`), what);
      }
    } finally {
      fetchSpy.mockRestore();
    }
  });

  it('D24: flipped signature bit, truncated, not base64url, payload not JSON → 401, never 500', async () => {
    const valid = await craft();
    const [header, payload, signature] = valid.split('.') as [string, string, string];
    const flipped = Buffer.from(signature, 'base64url');
    flipped[0]! ^= 0x01;
    const lastFlipped = Buffer.from(signature, 'base64url');
    lastFlipped[lastFlipped.length - 1]! ^= 0x80;
    const claims = decodeJwt(valid).payload;
    const tamperedPayload = b64url(JSON.stringify({ ...claims, scope: 'clients:manage users:manage' }));
    const tokens: Record<string, string> = {
      'flipped first signature bit': `${header}.${payload}.${b64url(flipped)}`,
      'flipped last signature bit': `${header}.${payload}.${b64url(lastFlipped)}`,
      'tampered payload': `${header}.${tamperedPayload}.${signature}`,
      'signature cut short': valid.slice(0, -10),
      'no signature': `${header}.${payload}.`,
      'two parts': `${header}.${payload}`,
      'one part': header,
      'four parts': `${valid}.${signature}`,
      'signature as base64 (+ /)': `${header}.${payload}.${Buffer.from(signature, 'base64url').toString('base64')}`,
      'signature with base64 padding': `${header}.${payload}.${signature}==`,
      'header with base64 padding': `${header}==.${payload}.${signature}`,
      'payload with base64 padding': `${header}.${payload}=.${signature}`,
      'not base64 at all': '!!!.???.***',
      'stray characters': `${header}.${payload}.${signature}*`,
      'percent-encoded': encodeURIComponent(`${header}.${payload}.${signature}`).replace(/\./g, '%2E'),
      'header not JSON': await signRaw(t.app, '{"alg":"EdDSA",', JSON.stringify(claims)),
      'header a JSON string': await signRaw(t.app, '"EdDSA"', JSON.stringify(claims)),
      'payload not JSON': await signRaw(t.app, {}, 'this is not JSON'),
      'payload a JSON array': await signRaw(t.app, {}, JSON.stringify([claims])),
      'payload JSON null': await signRaw(t.app, {}, 'null'),
      'payload JSON number': await signRaw(t.app, {}, '42'),
      'payload with a trailing comma': await signRaw(t.app, {}, `${JSON.stringify(claims).slice(0, -1)},}`),
      'payload not UTF-8': await signRaw(t.app, {}, '\udc80'),
      'scope not a string': await signRaw(t.app, {}, JSON.stringify({ ...claims, scope: ['clients:manage'] })),
      'tenant not a string': await signRaw(t.app, {}, JSON.stringify({ ...claims, tenant: { id: acme.tenantId } })),
      'exp a string': await signRaw(t.app, {}, JSON.stringify({ ...claims, exp: String(claims.exp) })),
    };
    for (const [what, token] of Object.entries(tokens)) expectInvalidToken(await get(`Bearer ${token}`), what);
    for (const header of ['Bearer', 'Bearer ', `Bearer  ${valid} extra`, `Bearer\t${valid}`, `Bearer ${valid}\u0000`, 'Token abc']) {
      const response = await get(header);
      expect(response.statusCode, JSON.stringify(header).slice(0, 40)).toBe(401);
    }
  });

  it('D25: expired, nbf in the future, no exp → 401', async () => {
    const now = Math.floor((Date.now() + skew) / 1000);
    expectInvalidToken(await get(`Bearer ${await craft({ claims: { iat: now - 7200, exp: now - 1 } })}`), 'exp in the past');
    expectInvalidToken(await get(`Bearer ${await craft({ claims: { exp: now } })}`), 'exp now');
    expectInvalidToken(await get(`Bearer ${await craft({ claims: { nbf: now + 60 } })}`), 'nbf in the future');
    expectInvalidToken(await get(`Bearer ${await craft({ claims: { exp: undefined } })}`), 'no exp');
    expectInvalidToken(await get(`Bearer ${await craft({ claims: { exp: undefined, nbf: now - 10 } })}`), 'no exp, with nbf');
    // A past nbf is fine: the refusals above are for exp and nbf, not for having them.
    expect((await get(`Bearer ${await craft({ claims: { nbf: now - 10 } })}`)).statusCode).toBe(200);

    // A real token, and the clock moved past its expiry.
    const issued = await clientToken(t.app, { clientId: acme.clientId, clientSecret: acme.clientSecret });
    expect((await get(`Bearer ${issued}`)).statusCode).toBe(200);
    skew += 3601 * 1000;
    try {
      expectInvalidToken(await get(`Bearer ${issued}`), 'expired by the clock');
    } finally {
      skew -= 3601 * 1000;
    }
    expect((await get(`Bearer ${issued}`)).statusCode).toBe(200);
  });

  it('D25–D26: error_description says which check failed (expired, bad signature, wrong API, revoked), and no more', async () => {
    const now = Math.floor((Date.now() + skew) / 1000);
    const described = async (token: string, url = PROBE) => {
      const response = await get(`Bearer ${token}`, url);
      expect(response.statusCode).toBe(401);
      return { challenge: response.headers['www-authenticate'], detail: response.json<{ detail: string }>().detail };
    };
    expect(await described(await craft({ claims: { iat: now - 7200, exp: now - 1 } }))).toEqual({
      challenge: `${INVALID_TOKEN_CHALLENGE}, error_description="the access token has expired"`,
      detail: 'The access token has expired. Obtain a new one.',
    });
    const valid = await craft();
    const [header, payload, signature] = valid.split('.') as [string, string, string];
    const flipped = Buffer.from(signature, 'base64url');
    flipped[0]! ^= 0x01;
    expect((await described(`${header}.${payload}.${b64url(flipped)}`)).challenge).toBe(
      `${INVALID_TOKEN_CHALLENGE}, error_description="the access token signature does not verify"`,
    );
    // An unknown key id reads the same as a bad signature: which key ids exist is not told.
    expect((await described(await craft({ header: { kid: 'no-such-key' } }))).challenge).toBe(
      `${INVALID_TOKEN_CHALLENGE}, error_description="the access token signature does not verify"`,
    );
    expect((await described('not-a-token')).challenge).toBe(`${INVALID_TOKEN_CHALLENGE}, error_description="the access token is not a well-formed JWT"`);
    const userToken = (await passwordGrant(t.app, accessClient, 'alice@acme', PASSWORD, 'devices:read')).json<{ access_token: string }>().access_token;
    expect(await described(userToken)).toEqual({
      challenge: `${INVALID_TOKEN_CHALLENGE}, error_description="the access token is for another API"`,
      detail: 'The access token is for another API. Obtain a token for this API from POST /oauth/token.',
    });
    const revoked = await createClient(t.app, acme, ['devices:read']);
    const revokedToken = await clientToken(t.app, revoked);
    await t.app.services.clients.delete({ tenantId: acme.tenantId, actor: 'test', requestId: null }, revoked.clientId);
    const gone = await described(revokedToken, '/operatorapi/mobiledevices');
    expect(gone.challenge).toBe('Bearer realm="operatorapi", error="invalid_token", error_description="the access token has been revoked"');
    expect(gone.detail).not.toContain(revoked.clientId);
  });

  it('D26: wrong or missing iss or aud → 401', async () => {
    const cases: Record<string, Record<string, unknown>> = {
      'another issuer': { iss: 'https://attacker.test' },
      'the issuer with a trailing slash': { iss: `${issuer}/` },
      'the issuer in another case': { iss: issuer.toUpperCase() },
      'no iss': { iss: undefined },
      'aud accessapi': { aud: 'accessapi' },
      'aud deviceapi': { aud: 'deviceapi' },
      'aud the issuer': { aud: issuer },
      'aud for other APIs only': { aud: ['accessapi', 'deviceapi'] },
      'no aud': { aud: undefined },
      'empty aud': { aud: [] },
    };
    for (const [what, claims] of Object.entries(cases)) {
      expectInvalidToken(await get(`Bearer ${await craft({ claims })}`), what);
    }
    // operatorapi among several audiences is accepted (client credentials with `sync` get two).
    expect((await get(`Bearer ${await craft({ claims: { aud: ['deviceapi', 'operatorapi'] } })}`)).statusCode).toBe(200);
  });

  it('D26: a token for another API → 401', async () => {
    // Password grant: aud accessapi, refused by the Operator API; accepted where it belongs.
    const login = await passwordGrant(t.app, accessClient, 'alice@acme', PASSWORD, 'devices:read');
    const userToken = login.json().access_token as string;
    expect(decodeJwt(userToken).payload.aud).toBe('accessapi');
    expectInvalidToken(await get(`Bearer ${userToken}`), 'password-grant token');
    expectInvalidToken(await get(`Bearer ${userToken}`, '/operatorapi/users'), 'password-grant token', '/operatorapi/users');
    expect((await get(`Bearer ${userToken}`, ACCESS_API_PROBE)).statusCode).toBe(200);

    // Client credentials: aud operatorapi, refused by the Access API even with the right scope.
    const operatorToken = await clientToken(t.app, { clientId: acme.clientId, clientSecret: acme.clientSecret }, 'devices:read');
    const onAccessApi = await get(`Bearer ${operatorToken}`, ACCESS_API_PROBE);
    expect(onAccessApi.statusCode).toBe(401);
    expect(onAccessApi.headers['www-authenticate']).toBe(
      'Bearer realm="accessapi", error="invalid_token", error_description="the access token is for another API"',
    );
    expect(onAccessApi.json<{ detail: string }>().detail).toBe('The access token is for another API. Obtain a token for this API from POST /oauth2/token.');

    // A client bound to one device: aud deviceapi only.
    await t.app.services.mobileDevices.register({ tenantId: acme.tenantId, actor: 'cli', requestId: null }, { id: 'phone-1' });
    const device = await createClient(t.app, acme, ['tokens:download', 'clients:manage'], { mobileDeviceId: 'phone-1' });
    const deviceToken = await clientToken(t.app, device);
    expect(decodeJwt(deviceToken).payload.aud).toBe('deviceapi');
    expectInvalidToken(await get(`Bearer ${deviceToken}`), 'device-bound token');
  });

  it('D27: typ other than at+jwt (e.g. a ticket credential) → 401', async () => {
    for (const typ of ['JWT', 'jwt', 'ticket+jwt', 'application/jwt', 'at+jwe', 'JOSE', '', undefined]) {
      expectInvalidToken(await get(`Bearer ${await craft({ header: { typ } })}`), `typ ${String(typ)}`);
    }
    // A ticket credential (docs/api-reference.md 6.3) has ticket claims; signed with our key it is still no access token.
    const now = Math.floor(Date.now() / 1000);
    const ticket = await craft({
      header: { typ: 'ticket+jwt' },
      claims: { aud: 'operatorapi', sub: 'phone-1', nbf: now - 1, beginDate: Date.now(), endDate: Date.now() + 1, cmd: ['open'], chn: ['btlespp'] },
    });
    expectInvalidToken(await get(`Bearer ${ticket}`), 'ticket credential');
  });

  it("D28: tenant A's token on tenant B's ids → 404, no data, nothing changed", async () => {
    const globexClient = await createClient(t.app, globex, ['tokens:read']);
    await createUser(t.app, globex, 'gina', PASSWORD);
    const asAcme = (method: 'GET' | 'DELETE' | 'POST', url: string) => t.app.inject({ method, url, headers: bearer(admin) });

    const foreign = await asAcme('GET', `/operatorapi/oauthclients/${globexClient.clientId}`);
    const missing = await asAcme('GET', '/operatorapi/oauthclients/no-such-client');
    expect(foreign.statusCode).toBe(404);
    expect(foreign.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    const foreignBody = foreign.json() as Record<string, unknown>;
    const missingBody = missing.json() as Record<string, unknown>;
    // Exactly as a missing id, but for the id itself.
    const normalise = (body: Record<string, unknown>, id: string) =>
      JSON.parse(JSON.stringify({ ...body, requestId: '' }).replaceAll(id, 'ID')) as unknown;
    expect(normalise(foreignBody, globexClient.clientId)).toEqual(normalise(missingBody, 'no-such-client'));
    expect(foreign.body).not.toContain('tokens:read');
    expect(foreign.body).not.toContain(globex.tenantId);

    expect((await asAcme('DELETE', `/operatorapi/oauthclients/${globexClient.clientId}`)).statusCode).toBe(404);
    expect((await asAcme('POST', `/operatorapi/oauthclients/${globexClient.clientId}/secret`)).statusCode).toBe(404);
    expect((await asAcme('DELETE', '/operatorapi/users/gina')).statusCode).toBe(404);

    const clients = (await asAcme('GET', '/operatorapi/oauthclients?limit=1000')).json() as { clientId: string }[];
    expect(clients.map((client) => client.clientId)).not.toContain(globexClient.clientId);
    expect(clients.map((client) => client.clientId)).not.toContain(globex.clientId);
    const users = (await asAcme('GET', '/operatorapi/users?limit=1000')).json() as { username: string }[];
    expect(users.map((user) => user.username)).not.toContain('gina');

    // Globex's client and user are untouched: the secret still works, the user still logs in.
    expect(await clientToken(t.app, globexClient)).toEqual(expect.any(String));
    const { rows } = await t.database.db.query('SELECT 1 FROM users WHERE tenant_id = $1 AND username = $2', [globex.tenantId, 'gina']);
    expect(rows).toHaveLength(1);
    const { rows: audit } = await t.database.db.query('SELECT action FROM audit_events WHERE tenant_id = $1 AND action LIKE $2', [
      globex.tenantId,
      '%deleted',
    ]);
    expect(audit).toEqual([]);
  });

  it("D28: tenant A's token on tenant B's locks, devices and tickets → 404 (422 when referenced), no data", async () => {
    const globexAdmin = await clientToken(t.app, { clientId: globex.clientId, clientSecret: globex.clientSecret });
    const call = (token: string, method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object) =>
      t.app.inject({ method, url, headers: bearer(token), ...(payload ? { payload } : {}) });
    const lock = await call(globexAdmin, 'POST', '/operatorapi/securedobjects', {
      id: 'globex-door',
      channels: ['btlespp'],
      localName: 'LOCK-1',
      uuid: randomUUID(),
    });
    expect(lock.statusCode, lock.body).toBe(201);
    const device = await call(globexAdmin, 'POST', '/operatorapi/mobiledevices', { id: 'globex-phone' });
    expect(device.statusCode, device.body).toBe(201);
    const now = Date.now();
    const ticketBody = {
      securedObjectId: 'globex-door',
      mobileDeviceId: 'globex-phone',
      beginDate: now,
      endDate: now + 86_400_000,
      commands: ['open'],
      channels: ['btlespp'],
    };
    const ticket = await call(globexAdmin, 'POST', '/operatorapi/tickets', ticketBody);
    expect(ticket.statusCode, ticket.body).toBe(201);
    const ticketId = ticket.json().id as string;

    const pairs: [string, string][] = [
      ['/operatorapi/securedobjects/globex-door', '/operatorapi/securedobjects/no-such-door'],
      ['/operatorapi/mobiledevices/globex-phone', '/operatorapi/mobiledevices/no-such-phone'],
      [`/operatorapi/tickets/${ticketId}`, `/operatorapi/tickets/${randomUUID()}`],
    ];
    for (const [foreignUrl, missingUrl] of pairs) {
      for (const method of ['GET', 'DELETE'] as const) {
        const foreign = await call(admin, method, foreignUrl);
        const missing = await call(admin, method, missingUrl);
        expect(foreign.statusCode, `${method} ${foreignUrl}`).toBe(404);
        expect(missing.statusCode).toBe(404);
        const strip = (body: Record<string, unknown>) => ({ type: body.type, title: body.title, status: body.status });
        expect(strip(foreign.json())).toEqual(strip(missing.json()));
        expect(foreign.body).not.toContain('btlespp');
      }
    }
    // Referencing another tenant's lock and device in a new ticket: as unknown as missing ones.
    const forged = await call(admin, 'POST', '/operatorapi/tickets', ticketBody);
    const missingRefs = await call(admin, 'POST', '/operatorapi/tickets', { ...ticketBody, securedObjectId: 'nope', mobileDeviceId: 'nope' });
    expect(forged.statusCode).toBe(422);
    expect(missingRefs.statusCode).toBe(422);
    // Filters by another tenant's ids find nothing.
    for (const filter of ['mobileDeviceId=globex-phone', 'securedObjectId=globex-door']) {
      const listed = await call(admin, 'GET', `/operatorapi/tickets?${filter}`);
      expect(listed.statusCode, listed.body).toBe(200);
      expect(listed.json()).toEqual([]);
    }
    // Globex's data is untouched.
    const still = await call(globexAdmin, 'GET', `/operatorapi/tickets/${ticketId}`);
    expect(still.json()).toMatchObject({ id: ticketId, status: 'VALID' });
    expect((await call(globexAdmin, 'GET', '/operatorapi/securedobjects/globex-door')).statusCode).toBe(200);
    expect((await call(globexAdmin, 'GET', '/operatorapi/mobiledevices/globex-phone')).statusCode).toBe(200);
  });

  it('D29: missing scope → 403 + WWW-Authenticate: Bearer error="insufficient_scope", scope="…"', async () => {
    const readOnly = await clientToken(t.app, { clientId: acme.clientId, clientSecret: acme.clientSecret }, 'tokens:read');
    for (const [url, scope] of [
      ['/operatorapi/oauthclients', 'clients:manage'],
      ['/operatorapi/users', 'users:manage'],
    ] as const) {
      const response = await get(`Bearer ${readOnly}`, url);
      expect(response.statusCode).toBe(403);
      expect(response.headers['www-authenticate']).toBe(`Bearer realm="operatorapi", error="insufficient_scope", scope="${scope}"`);
      expect(response.headers['content-type']).toBe('application/problem+json; charset=utf-8');
      expect(response.json()).toMatchObject({ status: 403, title: 'Forbidden', detail: `This request needs the scope ${scope}.` });
    }
  });

  const response401Headers = (response: LightMyRequestResponse) => ({ sunset: response.headers.sunset, link: response.headers.link });

  it('D29: no token → 401 with WWW-Authenticate: Bearer realm=… and no error code', async () => {
    for (const authorization of [undefined, '', '   ']) {
      const response = await get(authorization);
      expect(response.statusCode).toBe(401);
      expect(response.headers['www-authenticate']).toBe('Bearer realm="operatorapi"');
      expect(response.headers['content-type']).toBe('application/problem+json; charset=utf-8');
      expect(response.json()).toMatchObject({ status: 401, title: 'Unauthorized' });
      expect(response.json().detail).toContain('POST /oauth/token');
    }
    expect(response401Headers(await get(undefined))).toEqual({ sunset: undefined, link: undefined });
    // HTTP Basic (removed 01.01.2019, docs/api-reference.md 3.5) carries no bearer token either: no error code, a pointer to
    // /oauth/token, and the Sunset and successor Link of every removed interface (docs/api-reference.md 4.4), in any spelling.
    const credentials = Buffer.from(`${acme.clientId}:${acme.clientSecret}`).toString('base64');
    for (const authorization of [`Basic ${credentials}`, `basic ${credentials}`, 'BASIC', 'Basic ']) {
      const basicAuth = await get(authorization);
      expect(basicAuth.statusCode, authorization).toBe(401);
      expect(basicAuth.headers['www-authenticate']).toBe('Bearer realm="operatorapi"');
      expect(basicAuth.json().detail).toContain('POST /oauth/token');
      expect(response401Headers(basicAuth), authorization).toEqual({
        sunset: 'Tue, 01 Jan 2019 00:00:00 GMT',
        link: '</oauth/token>; rel="successor-version"',
      });
    }
  });

  it('a verification that fails unexpectedly is answered 500 and goes no further: never left unanswered, never a 401', async () => {
    // The bearer check is a callback hook continued from the verification's promise: a throw there, or a rejection
    // without a reason, must still answer the request as the key store being unreachable does (a 5xx at once).
    const verify = vi.spyOn(t.app.services.tokens, 'verifyAccessToken');
    try {
      // Claims without their scopes (a verifier breaking its contract): reading them throws after verification.
      verify.mockResolvedValueOnce({ tenantId: acme.tenantId, clientId: acme.clientId } as never);
      const thrown = await get(`Bearer ${admin}`);
      expect(thrown.statusCode, thrown.body).toBe(500);
      expect(thrown.json()).toMatchObject({ status: 500, title: 'Internal Server Error' });
      expect(thrown.body).not.toContain('scopes');

      verify.mockRejectedValueOnce(undefined);
      const noReason = await get(`Bearer ${admin}`);
      expect(noReason.statusCode, noReason.body).toBe(500);
      expect(noReason.headers['www-authenticate']).toBeUndefined();
    } finally {
      verify.mockRestore();
    }
    // The check itself is unharmed: the same token passes again.
    expect((await get(`Bearer ${admin}`)).statusCode).toBe(200);
  });

  it('D30: a token in ?access_token= or in the body is not accepted', async () => {
    const inQuery = await get(undefined, `${PROBE}?access_token=${admin}`);
    expect(inQuery.statusCode).toBe(401);
    expect(inQuery.headers['www-authenticate']).toBe('Bearer realm="operatorapi"');

    const before = (await t.database.db.query('SELECT count(*)::int AS n FROM oauth_clients')).rows;
    const inJson = await t.app.inject({
      method: 'POST',
      url: PROBE,
      headers: { 'content-type': 'application/json' },
      payload: { access_token: admin, name: 'smuggled', scopes: ['tokens:read'] },
    });
    expect(inJson.statusCode).toBe(401);
    const inForm = await t.app.inject({
      method: 'POST',
      url: PROBE,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ access_token: admin, name: 'smuggled' }).toString(),
    });
    expect(inForm.statusCode).toBe(401);
    expect((await t.database.db.query('SELECT count(*)::int AS n FROM oauth_clients')).rows).toEqual(before);
    // The token in the URL never reaches the logs.
    expect(t.logLines.join('')).not.toContain(admin);
  });

  it('D30: `bearer` in lower (or upper) case works', async () => {
    expect((await get(`bearer ${admin}`)).statusCode).toBe(200);
    expect((await get(`BEARER ${admin}`)).statusCode).toBe(200);
    expect((await get(`Bearer ${admin}`)).statusCode).toBe(200);
  });

  it('D30: an oversized Authorization header → 431 problem, in process and over HTTP', async () => {
    // Header fields over 16 KiB are refused before authentication (app.ts), so the token is never looked at.
    const huge = `Bearer ${'A'.repeat(40 * 1024)}`;
    const hugeValid = `Bearer ${admin}${'A'.repeat(40 * 1024)}`;
    for (const [what, authorization] of [['huge token', huge], ['a valid token with 40 kB appended', hugeValid]] as const) {
      const response = await get(authorization);
      expect(response.statusCode, `${what}: ${response.body}`).toBe(431);
      expect(response.headers['content-type']).toBe('application/problem+json; charset=utf-8');
      expect(response.json()).toMatchObject({ status: 431, instance: PROBE, requestId: response.headers['x-request-id'] });
    }

    // Over a socket, Node's parser refuses a header block this large before any handler runs.
    const server = await buildTestApp({ BCRYPT_COST: '4' });
    try {
      await server.app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = server.app.server.address() as AddressInfo;
      const status = await new Promise<number>((resolve, reject) => {
        const request = httpRequest({ host: '127.0.0.1', port, path: PROBE, headers: { authorization: huge } }, (response) => {
          response.resume();
          resolve(response.statusCode ?? 0);
        });
        request.on('error', reject);
        request.end();
      });
      expect(status).toBe(431);
    } finally {
      await server.close();
    }
  });

  it('D31: key rotation: tokens of the previous key still pass while it is published; the JWKS holds no private members', async () => {
    const jwksOf = async () => ((await t.app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json() as { keys: JWK[] }).keys;
    const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k', 'oth'];

    const before = await clientToken(t.app, { clientId: acme.clientId, clientSecret: acme.clientSecret });
    const oldKid = decodeJwt(before).header.kid as string;
    const { kid: newKid, retired } = await t.app.services.accessTokenKeys.rotate();
    expect(retired).toContain(oldKid);
    expect(newKid).not.toBe(oldKid);

    expect((await get(`Bearer ${before}`)).statusCode).toBe(200);
    const after = await clientToken(t.app, { clientId: acme.clientId, clientSecret: acme.clientSecret });
    expect(decodeJwt(after).header.kid).toBe(newKid);
    expect((await get(`Bearer ${after}`)).statusCode).toBe(200);

    const keys = await jwksOf();
    expect(keys.map((key) => key.kid)).toEqual(expect.arrayContaining([oldKid, newKid]));
    for (const key of keys) {
      for (const member of PRIVATE_MEMBERS) expect(key, `${key.kid} has ${member}`).not.toHaveProperty(member);
      expect(key).toMatchObject({ kid: expect.any(String), alg: expect.stringMatching(/^(EdDSA|ES256)$/), use: 'sig' });
    }
    const { rows } = await t.database.db.query<{ kid: string; retired_at: number | null }>(
      "SELECT kid, retired_at FROM signing_keys WHERE purpose = 'access_token' AND tenant_id IS NULL",
    );
    expect(rows.find((row) => row.kid === oldKid)?.retired_at).toEqual(expect.any(Number));
    expect(rows.find((row) => row.kid === newKid)?.retired_at).toBeNull();

    // Once everything the old key signed has expired, it leaves the JWKS and its tokens fail anyway.
    skew += 3601 * 1000;
    try {
      expect((await jwksOf()).map((key) => key.kid)).not.toContain(oldKid);
      expectInvalidToken(await get(`Bearer ${before}`), 'token of a key no longer published');
    } finally {
      skew -= 3601 * 1000;
    }
  });
});
