// docs/security-cases.md C (15–19): refresh tokens: rotation, reuse detection, client binding, scope, hashing (RFC 9700 4.14).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../src/shared/crypto.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import {
  bearer,
  clientToken,
  createClient,
  createTenant,
  createUser,
  passwordGrant,
  tokenRequest,
  type ClientFixture,
  type TenantFixture,
} from '../helpers/oauth.js';
import { ACCESS_API_PROBE, databaseText, decodeJwt, expectOAuthError, registerAccessApiProbe } from '../helpers/security.js';

const PASSWORD = 'correct horse battery';
const INVALID_REFRESH = 'The refresh token is invalid, expired, revoked or was issued to another client.';
const SCOPES = ['offline', 'devices:read', 'device-groups:read', 'nfc-token-writer'];

describe('docs/security-cases.md C: refresh tokens', () => {
  let t: TestApp;
  let acme: TenantFixture;
  let clientA: ClientFixture;
  let clientB: ClientFixture;
  let foreignClient: ClientFixture;
  let admin: string;

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4', TOKEN_RATE_LIMIT_PER_MINUTE: '100000' }, { beforeReady: registerAccessApiProbe });
    acme = await createTenant(t.app, 'acme');
    const globex = await createTenant(t.app, 'globex');
    clientA = await createClient(t.app, acme, SCOPES);
    clientB = await createClient(t.app, acme, SCOPES);
    foreignClient = await createClient(t.app, globex, SCOPES);
    for (const name of ['alice', 'bob', 'carol']) await createUser(t.app, acme, name, PASSWORD);
    admin = await clientToken(t.app, { clientId: acme.clientId, clientSecret: acme.clientSecret });
  });
  afterAll(async () => {
    await t.close();
  });

  async function login(client: ClientFixture, username = 'alice', scope = 'offline devices:read device-groups:read') {
    const response = await passwordGrant(t.app, client, `${username}@acme`, PASSWORD, scope);
    expect(response.statusCode, response.body).toBe(200);
    return { access: response.json().access_token as string, refresh: response.json().refresh_token as string };
  }
  const refresh = (client: ClientFixture, refreshToken: string, scope?: string) =>
    tokenRequest(t.app, client, { grant_type: 'refresh_token', refresh_token: refreshToken, ...(scope ? { scope } : {}) }, '/oauth2/token');
  const probe = async (accessToken: string) =>
    (await t.app.inject({ method: 'GET', url: ACCESS_API_PROBE, headers: bearer(accessToken) })).statusCode;
  const rowOf = async (refreshToken: string) =>
    (
      await t.database.db.query<{ family_id: string; used_at: number | null; revoked_at: number | null }>(
        'SELECT family_id, used_at, revoked_at FROM refresh_tokens WHERE token_hash = $1',
        [sha256(refreshToken)],
      )
    ).rows[0] ?? null;

  it('C15: RT1 → RT2; RT1 again → invalid_grant, and RT2 and the family\'s access tokens are revoked', async () => {
    const first = await login(clientA);
    const otherSession = await login(clientA);
    expect(await probe(first.access)).toBe(200);

    const rotated = await refresh(clientA, first.refresh);
    expect(rotated.statusCode, rotated.body).toBe(200);
    expect(rotated.headers['cache-control']).toBe('no-store');
    const second = { access: rotated.json().access_token as string, refresh: rotated.json().refresh_token as string };
    expect(second.refresh).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(second.refresh).not.toBe(first.refresh);
    expect(await probe(second.access)).toBe(200);
    expect((await rowOf(first.refresh))?.used_at).not.toBeNull();
    const familyId = (await rowOf(first.refresh))!.family_id;
    expect((await rowOf(second.refresh))?.family_id).toBe(familyId);
    expect(decodeJwt(second.access).payload.sid).toBe(familyId);

    // Reuse of RT1: refused, and the whole family dies (RFC 9700 4.14.2).
    expectOAuthError(await refresh(clientA, first.refresh), 400, 'invalid_grant', INVALID_REFRESH);
    expectOAuthError(await refresh(clientA, second.refresh), 400, 'invalid_grant', INVALID_REFRESH);
    expect(await probe(first.access)).toBe(401);
    expect(await probe(second.access)).toBe(401);

    const { rows: family } = await t.database.db.query<{ revoked_at: number | null }>(
      'SELECT revoked_at FROM refresh_tokens WHERE family_id = $1',
      [familyId],
    );
    expect(family).toHaveLength(2);
    for (const row of family) expect(row.revoked_at).not.toBeNull();
    const { rows: revocations } = await t.database.db.query('SELECT kind FROM token_revocations WHERE subject = $1', [familyId]);
    expect(revocations).toEqual([{ kind: 'family' }]);
    const { rows: audit } = await t.database.db.query<{ action: string }>(
      "SELECT action FROM audit_events WHERE action = 'token.refresh_reuse'",
    );
    expect(audit).toHaveLength(1);

    // Another session of the same user is not touched.
    expect(await probe(otherSession.access)).toBe(200);
    expect((await refresh(clientA, otherSession.refresh)).statusCode).toBe(200);
  });

  it('C16: two parallel refreshes with one RT → exactly one succeeds', async () => {
    for (let round = 0; round < 3; round++) {
      const session = await login(clientA);
      const answers = await Promise.all([refresh(clientA, session.refresh), refresh(clientA, session.refresh)]);
      const statuses = answers.map((answer) => answer.statusCode).sort();
      expect(statuses).toEqual([200, 400]);
      const loser = answers.find((answer) => answer.statusCode === 400)!;
      expectOAuthError(loser, 400, 'invalid_grant', INVALID_REFRESH);
      const { rows } = await t.database.db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM refresh_tokens WHERE family_id = $1',
        [(await rowOf(session.refresh))!.family_id],
      );
      // The original and exactly one successor.
      expect(rows[0]!.n).toBe(2);
    }
  });

  it('C17: an RT of client A presented by client B → invalid_grant, and A keeps it', async () => {
    const session = await login(clientA);
    expectOAuthError(await refresh(clientB, session.refresh), 400, 'invalid_grant', INVALID_REFRESH);
    expectOAuthError(await refresh(foreignClient, session.refresh), 400, 'invalid_grant', INVALID_REFRESH);
    // Neither consumed nor revoked: the thief cannot burn the owner's session.
    expect(await rowOf(session.refresh)).toMatchObject({ used_at: null, revoked_at: null });
    expect(await probe(session.access)).toBe(200);
    expect((await refresh(clientA, session.refresh)).statusCode).toBe(200);
  });

  it('C18: refresh asking a wider scope → invalid_scope; a narrower one is allowed', async () => {
    const session = await login(clientA, 'alice', 'offline devices:read device-groups:read');
    // The client holds nfc-token-writer, but this refresh token does not cover it.
    expectOAuthError(await refresh(clientA, session.refresh, 'offline devices:read nfc-token-writer'), 400, 'invalid_scope');
    expectOAuthError(await refresh(clientA, session.refresh, 'devices:read no-such-scope'), 400, 'invalid_scope');
    expectOAuthError(await refresh(clientA, session.refresh, 'clients:manage'), 400, 'invalid_scope');
    // A refused scope does not cost the refresh token.
    expect(await rowOf(session.refresh)).toMatchObject({ used_at: null, revoked_at: null });

    const narrower = await refresh(clientA, session.refresh, 'device-groups:read');
    expect(narrower.statusCode, narrower.body).toBe(200);
    expect(narrower.json().scope).toBe('device-groups:read');
    const narrowAccess = narrower.json().access_token as string;
    expect(decodeJwt(narrowAccess).payload.scope).toBe('device-groups:read');
    // The probe needs devices:read, which this access token no longer has.
    const forbidden = await t.app.inject({ method: 'GET', url: ACCESS_API_PROBE, headers: bearer(narrowAccess) });
    expect(forbidden.statusCode).toBe(403);

    // The new refresh token still covers the original grant (RFC 6749 6): no scope asked gives all of it back.
    const again = await refresh(clientA, narrower.json().refresh_token as string);
    expect(again.statusCode).toBe(200);
    expect(again.json().scope).toBe('offline devices:read device-groups:read');
  });

  it('C19: after the user is deleted → invalid_grant; its access tokens stop', async () => {
    const session = await login(clientA, 'bob');
    const deleted = await t.app.inject({ method: 'DELETE', url: '/operatorapi/users/bob', headers: bearer(admin) });
    expect(deleted.statusCode).toBe(204);
    expectOAuthError(await refresh(clientA, session.refresh), 400, 'invalid_grant', INVALID_REFRESH);
    expect(await probe(session.access)).toBe(401);
    expect(await rowOf(session.refresh)).toBeNull();
  });

  it('C19: after the client is deleted → its refresh tokens are gone (invalid_grant for anyone who presents them)', async () => {
    const doomed = await createClient(t.app, acme, SCOPES);
    const session = await login(doomed, 'carol');
    const deleted = await t.app.inject({ method: 'DELETE', url: `/operatorapi/oauthclients/${doomed.clientId}`, headers: bearer(admin) });
    expect(deleted.statusCode).toBe(204);
    // The deleted client itself fails client authentication first (RFC 6749 5.2): invalid_client.
    expectOAuthError(await refresh(doomed, session.refresh), 401, 'invalid_client');
    // Any other client presenting the token gets invalid_grant.
    expectOAuthError(await refresh(clientA, session.refresh), 400, 'invalid_grant', INVALID_REFRESH);
    expect(await probe(session.access)).toBe(401);
    expect(await rowOf(session.refresh)).toBeNull();
  });

  it('C19: refresh tokens are stored only as SHA-256 hashes', async () => {
    const session = await login(clientA);
    const rotated = await refresh(clientA, session.refresh);
    const next = rotated.json().refresh_token as string;
    for (const token of [session.refresh, next]) {
      const { rows } = await t.database.db.query<{ token_hash: Uint8Array }>(
        'SELECT token_hash FROM refresh_tokens WHERE token_hash = $1',
        [sha256(token)],
      );
      expect(rows).toHaveLength(1);
      expect(Buffer.from(rows[0]!.token_hash)).toHaveLength(32);
    }
    const everything = await databaseText(t.database.db);
    for (const token of [session.refresh, next]) {
      expect(everything).not.toContain(token);
      expect(everything).not.toContain(Buffer.from(token).toString('hex'));
    }
  });
});
