// Scenarios for the token endpoint: POST /oauth/token (client credentials) against node-oidc-provider's, with a client
// secret and with a phone key's assertion (private_key_jwt, docs/api-reference.md 3.1, 11.1).
import { generateKeyPairSync, randomUUID, sign, type KeyObject } from 'node:crypto';
import { basicAuthorization } from '../requests.js';
import type { Comparison, Scenario, ScenarioContext } from '../types.js';
import { accessToken, createTenant, operatorFixture } from './fixtures.js';

const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** A compact ES256 JWS (RFC 7515 7.1, RFC 7518 3.4). */
function signEs256(key: KeyObject, header: object, payload: object): string {
  const input = `${part({ alg: 'ES256', ...header })}.${part(payload)}`;
  return `${input}.${sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
}

/**
 * A phone with a registered key (docs/api-reference.md 11.1): a mobile device, its bound client (CLI), a nonce and the
 * key proof over it. Answers the client id and the phone's private key.
 */
async function phoneWithKey(context: ScenarioContext, tenantName: string): Promise<{ clientId: string; privateKey: KeyObject }> {
  const fixture = await operatorFixture(context, tenantName);
  const client = JSON.parse(
    await context.cli(['client', 'create', '--tenant', fixture.credentials.tenant, '--scopes', 'tokens:download', '--mobile-device', fixture.mobileDeviceId, '--json']),
  ) as { clientId: string; clientSecret: string };
  const headers = { authorization: `Bearer ${await accessToken(context, client)}` };
  const nonce = await context.request({ url: context.appUrl, method: 'POST', path: '/deviceapi/nonces', headers });
  if (nonce.status !== 200) throw new Error(`POST /deviceapi/nonces answered ${nonce.status}`);
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const { kty, crv, x, y } = publicKey.export({ format: 'jwk' });
  const proof = signEs256(privateKey, { typ: 'key-proof+jwt' }, { aud: context.appUrl, nonce: (nonce.body as { nonce: string }).nonce, iat: Math.floor(Date.now() / 1000) });
  const put = await context.request({
    url: context.appUrl,
    method: 'PUT',
    path: `/deviceapi/mobiledevices/${encodeURIComponent(fixture.mobileDeviceId)}/key`,
    headers,
    body: { publicKey: { kty, crv, x, y }, proof },
  });
  if (put.status !== 200) throw new Error(`PUT …/key answered ${put.status}: ${JSON.stringify(put.body)}`);
  return { clientId: client.clientId, privateKey };
}

/** A new tenant's management client, authenticating with HTTP Basic (its secret). */
async function tenantClientBasic(context: ScenarioContext, tenantName: string): Promise<{ headers: Record<string, string> }> {
  const { clientId, clientSecret } = await createTenant(context, tenantName);
  return { headers: { authorization: basicAuthorization(clientId, clientSecret) } };
}

const SECRET_ROW = 'POST /oauth/token (client_credentials)';
const KEY_ROW = 'POST /oauth/token (client_credentials, private_key_jwt)';

export const oauthTokenScenarios: Scenario[] = [
  {
    name: SECRET_ROW,
    method: 'POST',
    path: '/oauth/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    // No scope: the client's every Operator API scope, as most operator backends ask.
    body: 'grant_type=client_credentials',
    baseline: 'oidc-provider',
    goalRatio: 2,
    setup: (context) => tenantClientBasic(context, 'bench-oauth-token'),
  },
  {
    // The same request against the limit of a token endpoint here: a bare route that parses the same form and signs
    // the same token. What the service adds on top: the client's look-up and secret check (cached after the first),
    // the rate limit, metrics, request ids, the token's claims from the client's scopes. Goal: at least 0.8 of it.
    name: `${SECRET_ROW} (vs bare sign)`,
    method: 'POST',
    path: '/oauth/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials',
    baseline: 'token',
    goalRatio: 0.8,
    // The client's look-up is a single-shard read (cached after the first).
    citus: { goalRatio: 0.5 },
    setup: (context) => tenantClientBasic(context, 'bench-oauth-token-bare'),
  },
  {
    name: KEY_ROW,
    method: 'POST',
    path: '/oauth/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    baseline: 'oidc-provider',
    async setup(context) {
      const { clientId, privateKey } = await phoneWithKey(context, 'bench-private-key-jwt');
      const audience = `${context.appUrl}/oauth/token`;
      // Every request a new assertion (its jti is used once): signed here, on the same cores as the service, which
      // the row's req/s therefore pays too (an ES256 signature, some 30 µs).
      const body = () => {
        const now = Math.floor(Date.now() / 1000);
        const assertion = signEs256(privateKey, { typ: 'JWT' }, { iss: clientId, sub: clientId, aud: audience, iat: now, exp: now + 60, jti: randomUUID() });
        return new URLSearchParams({
          grant_type: 'client_credentials',
          client_id: clientId,
          client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
          client_assertion: assertion,
        }).toString();
      };
      return {
        requests: [
          {
            method: 'POST',
            path: '/oauth/token',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            setupRequest: (request) => ({ ...request, body: body() }),
          },
        ],
      };
    },
  },
];

/** What authenticating with the phone's key costs next to a client secret (ES256 verification is the floor). */
export const oauthTokenComparisons: Comparison[] = [{ name: 'private_key_jwt / client secret (p50)', numerator: KEY_ROW, denominator: SECRET_ROW }];
