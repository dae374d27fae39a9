// docs/security-cases.md B (10–14) and G (40, 41): the password grant with `user@tenant` logins and its lockout (docs/api-reference.md 3.2).
import { setTimeout as sleep } from 'node:timers/promises';
import bcrypt from 'bcrypt';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { migrate, readMigrations } from '../../src/db/migrate.js';
import { BadRequestError } from '../../src/errors.js';
import { splitLogin } from '../../src/services/oauth/grants.service.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createEmptyTestDatabase } from '../helpers/database.js';
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
import { decodeJwt, expectOAuthError, expectSimilarDurations, stableHeaders } from '../helpers/security.js';
import { PATIENCE_MS } from '../helpers/process.js';

const PASSWORD = 'correct horse battery';
const INVALID_LOGIN = 'The username or password is wrong.';
const ACCESS_SCOPES = ['offline', 'devices:read', 'device-groups:read'];

/** The lockout row of `USER@TENANT` (attempts in the window, lock end), or null when there is none. */
async function attemptsOf(t: TestApp, login: string) {
  const parts = splitLogin(login)!;
  const { rows } = await t.database.db.query<{ attempts: number; locked_until: number | null }>(
    `SELECT f.attempts, f.locked_until FROM login_failures f JOIN tenants t ON t.id = f.tenant_id
      WHERE t.name = $1 AND f.username = $2`,
    [parts.tenantName, parts.username],
  );
  return rows[0] ?? null;
}

describe('docs/security-cases.md B: password grant', () => {
  let t: TestApp;
  let skew = 0;
  let acme: TenantFixture;
  let globex: TenantFixture;
  let acmeApp: ClientFixture;
  let globexApp: ClientFixture;

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
    acme = await createTenant(t.app, 'acme');
    globex = await createTenant(t.app, 'globex');
    acmeApp = await createClient(t.app, acme, ACCESS_SCOPES);
    globexApp = await createClient(t.app, globex, ACCESS_SCOPES);
    for (const name of ['alice', 'carol', 'dave', 'erin', 'frank']) await createUser(t.app, acme, name, PASSWORD);
    await createUser(t.app, globex, 'dave', PASSWORD);
    await createUser(t.app, globex, 'gina', PASSWORD);
  });
  afterAll(async () => {
    await t.close();
  });

  const failuresOf = async (login: string) => attemptsOf(t, login);

  it('B10: wrong password, unknown user, unknown tenant, another tenant\'s user → all 400 invalid_grant, same answer', async () => {
    const wrongPassword = await passwordGrant(t.app, acmeApp, 'carol@acme', 'wrong password');
    const unknownUser = await passwordGrant(t.app, acmeApp, 'nobody@acme', 'wrong password');
    const unknownTenant = await passwordGrant(t.app, acmeApp, 'carol@no-such-tenant', 'wrong password');
    // A user that exists, with its right password, but in another tenant than the client's.
    const foreignUser = await passwordGrant(t.app, acmeApp, 'gina@globex', PASSWORD);
    for (const response of [wrongPassword, unknownUser, unknownTenant, foreignUser]) {
      expectOAuthError(response, 400, 'invalid_grant', INVALID_LOGIN);
      expect(response.body).toBe(wrongPassword.body);
      expect(stableHeaders(response)).toEqual(stableHeaders(wrongPassword));
    }
    // A login of the client's own tenant counts, whether or not the user exists (nothing is revealed)...
    for (const login of ['carol@acme', 'nobody@acme']) {
      expect(await failuresOf(login)).toEqual({ attempts: 1, locked_until: null });
    }
    // ...a login of another tenant never does (G41): it names no user this client could log in.
    expect(await failuresOf('gina@globex')).toBeNull();
  });

  it('B11: repeated failures lock one user@tenant; the locked answer equals a bad-password answer; it unlocks later', async () => {
    const badAnswers = [];
    for (let i = 0; i < 3; i++) badAnswers.push(await passwordGrant(t.app, acmeApp, 'dave@acme', `wrong ${i}`));
    for (const response of badAnswers) expectOAuthError(response, 400, 'invalid_grant', INVALID_LOGIN);
    const locked = await failuresOf('dave@acme');
    expect(locked?.attempts).toBe(3);
    expect(locked?.locked_until).toBeGreaterThan(Date.now() + skew + 50_000);

    // Locked: the right password gets exactly the bad-password answer.
    const lockedAnswer = await passwordGrant(t.app, acmeApp, 'dave@acme', PASSWORD);
    expectOAuthError(lockedAnswer, 400, 'invalid_grant', INVALID_LOGIN);
    expect(lockedAnswer.body).toBe(badAnswers[0]!.body);
    expect(stableHeaders(lockedAnswer)).toEqual(stableHeaders(badAnswers[0]!));
    // One event when the login became locked, in the user's tenant; refused attempts add none.
    const { rows: audit } = await t.database.db.query<{ tenant_id: string; action: string }>(
      'SELECT tenant_id, action FROM audit_events WHERE target = $1',
      ['login:dave@acme'],
    );
    expect(audit).toEqual([{ tenant_id: acme.tenantId, action: 'login.locked' }]);

    // The same name in another tenant is another login, not locked.
    const otherTenant = await passwordGrant(t.app, globexApp, 'dave@globex', PASSWORD);
    expect(otherTenant.statusCode, otherTenant.body).toBe(200);

    // After LOCKOUT_SECONDS the right password works again and the failures are forgotten.
    skew += 61_000;
    const unlocked = await passwordGrant(t.app, acmeApp, 'dave@acme', PASSWORD);
    expect(unlocked.statusCode, unlocked.body).toBe(200);
    expect(await failuresOf('dave@acme')).toBeNull();
  });

  it('B11: success resets the failure count', async () => {
    for (let i = 0; i < 2; i++) expectOAuthError(await passwordGrant(t.app, acmeApp, 'erin@acme', 'nope'), 400, 'invalid_grant');
    expect((await failuresOf('erin@acme'))?.attempts).toBe(2);
    expect((await passwordGrant(t.app, acmeApp, 'erin@acme', PASSWORD)).statusCode).toBe(200);
    expect(await failuresOf('erin@acme')).toBeNull();
    // Two more failures: 2, not 4, so still below the threshold of 3.
    for (let i = 0; i < 2; i++) expectOAuthError(await passwordGrant(t.app, acmeApp, 'erin@acme', 'nope'), 400, 'invalid_grant');
    expect(await failuresOf('erin@acme')).toEqual({ attempts: 2, locked_until: null });
    expect((await passwordGrant(t.app, acmeApp, 'erin@acme', PASSWORD)).statusCode).toBe(200);
  });

  it('B11: repeated failures are slowed down before they are refused', async () => {
    expectOAuthError(await passwordGrant(t.app, acmeApp, 'frank@acme', 'nope'), 400, 'invalid_grant');
    const secondStarted = Date.now();
    expectOAuthError(await passwordGrant(t.app, acmeApp, 'frank@acme', 'nope'), 400, 'invalid_grant');
    // services/oauth/grants.service.ts: the second failure waits 200 ms (a lower bound, so a loaded machine cannot fail it).
    expect(Date.now() - secondStarted).toBeGreaterThanOrEqual(195);
  });

  it('B11: the OAuth endpoints limit requests per IP (IPv6 per /64): 429 with Retry-After', async () => {
    const limited = await buildTestApp({ BCRYPT_COST: '4', TOKEN_RATE_LIMIT_PER_MINUTE: '3' });
    try {
      const tenant = await createTenant(limited.app, 'acme');
      const client = await createClient(limited.app, tenant, ACCESS_SCOPES);
      await createUser(limited.app, tenant, 'alice', PASSWORD);
      const attempt = (remoteAddress: string) =>
        limited.app.inject({
          method: 'POST',
          url: '/oauth2/token',
          remoteAddress,
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          payload: new URLSearchParams({
            grant_type: 'password',
            username: 'alice@acme',
            password: 'wrong',
            client_id: client.clientId,
            client_secret: client.clientSecret,
          }).toString(),
        });
      for (let i = 0; i < 3; i++) expect((await attempt('203.0.113.7')).statusCode).toBe(400);
      const refused = await attempt('203.0.113.7');
      expectOAuthError(refused, 429, 'temporarily_unavailable');
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(60);
      // Another address is not affected.
      expect((await attempt('198.51.100.9')).statusCode).toBe(400);
      // An IPv6 host counts by its /64: another address of the same prefix shares the budget, another prefix does not.
      for (let i = 0; i < 3; i++) expect((await attempt(`2001:db8:1:2::${i + 1}`)).statusCode).toBe(400);
      expectOAuthError(await attempt('2001:db8:1:2:ffff::9'), 429, 'temporarily_unavailable');
      expect((await attempt('2001:db8:1:3::1')).statusCode).toBe(400);
    } finally {
      await limited.close();
    }
  });

  it('B12: the username is split on the last @', () => {
    expect(splitLogin('alice@acme')).toEqual({ username: 'alice', tenantName: 'acme' });
    expect(splitLogin('first.last@example.com@acme')).toEqual({ username: 'first.last@example.com', tenantName: 'acme' });
    for (const login of ['@acme', 'alice@', '@', 'alice', '', 'alice@acme@']) expect(splitLogin(login)).toBeNull();
  });

  it('B12: a username holding @ logs in as USER@TENANT split on the last @', async () => {
    // The API refuses `@` in new usernames; a user imported with one must still log in unambiguously.
    const hash = await bcrypt.hash(PASSWORD, 4);
    const { rows } = await t.database.db.query<{ id: string }>(
      'INSERT INTO users (tenant_id, username, password_hash, created_at) VALUES ($1, $2, $3, $4) RETURNING id',
      [acme.tenantId, 'first.last@example.com', hash, Date.now()],
    );
    const response = await passwordGrant(t.app, acmeApp, 'first.last@example.com@acme', PASSWORD);
    expect(response.statusCode, response.body).toBe(200);
    expect(decodeJwt(response.json().access_token as string).payload.sub).toBe(rows[0]!.id);
  });

  it('B12: empty or odd parts → 400 invalid_request or invalid_grant, never 500', async () => {
    for (const login of ['@acme', 'alice@', '@', 'alice', 'alice@acme@', ' @ ']) {
      const response = await passwordGrant(t.app, acmeApp, login, PASSWORD);
      expect(response.statusCode, `${login}: ${response.body}`).toBe(400);
      expect(['invalid_request', 'invalid_grant']).toContain(response.json().error);
    }
    const empty = await passwordGrant(t.app, acmeApp, '', PASSWORD);
    expectOAuthError(empty, 400, 'invalid_request');
    for (const login of ['ali\u0000ce@acme', 'alice@ac\u0000me', `${'x'.repeat(5000)}@acme`, 'alice@ACME', 'alice@acme ']) {
      const response = await passwordGrant(t.app, acmeApp, login, PASSWORD);
      expectOAuthError(response, 400, 'invalid_grant', INVALID_LOGIN);
    }
    const nulPassword = await passwordGrant(t.app, acmeApp, 'alice@acme', 'correct\u0000horse');
    expectOAuthError(nulPassword, 400, 'invalid_grant', INVALID_LOGIN);
  });

  it('B13: offline → a refresh token; without it none; an unknown or ungranted scope → invalid_scope', async () => {
    const offline = await passwordGrant(t.app, acmeApp, 'alice@acme', PASSWORD, 'devices:read offline');
    expect(offline.statusCode).toBe(200);
    expect(offline.headers['cache-control']).toBe('no-store');
    expect(Object.keys(offline.json()).sort()).toEqual(['access_token', 'expires_in', 'refresh_token', 'scope', 'token_type']);
    expect(offline.json()).toMatchObject({ token_type: 'Bearer', expires_in: 3600, scope: 'devices:read offline' });
    expect(offline.json().refresh_token).toMatch(/^[A-Za-z0-9_-]{43}$/);

    const online = await passwordGrant(t.app, acmeApp, 'alice@acme', PASSWORD, 'devices:read');
    expect(online.statusCode).toBe(200);
    expect(Object.keys(online.json()).sort()).toEqual(['access_token', 'expires_in', 'scope', 'token_type']);
    expect(online.json().scope).toBe('devices:read');
    expect(decodeJwt(online.json().access_token as string).payload.aud).toBe('accessapi');

    // No scope asked: all the client's Access API scopes, `offline` included.
    const all = await passwordGrant(t.app, acmeApp, 'alice@acme', PASSWORD);
    expect(all.json().scope).toBe(ACCESS_SCOPES.join(' '));
    expect(all.json()).toHaveProperty('refresh_token');

    const { rows } = await t.database.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM refresh_tokens r JOIN users u ON u.tenant_id = r.tenant_id AND u.id = r.user_id WHERE u.username = $1',
      ['alice'],
    );
    expect(rows[0]!.n).toBe(2);

    expectOAuthError(await passwordGrant(t.app, acmeApp, 'alice@acme', PASSWORD, 'devices:read no-such-scope'), 400, 'invalid_scope', 'Unknown scope: no-such-scope.');
    // Known scopes the client does not hold, or of another API, are refused too.
    expectOAuthError(await passwordGrant(t.app, acmeApp, 'alice@acme', PASSWORD, 'access-permissions:write'), 400, 'invalid_scope');
    expectOAuthError(await passwordGrant(t.app, acmeApp, 'alice@acme', PASSWORD, 'clients:manage'), 400, 'invalid_scope');
  });

  it('B14: passwords longer than 72 bytes are refused at creation, never truncated', async () => {
    const admin = await clientToken(t.app, { clientId: acme.clientId, clientSecret: acme.clientSecret });
    const create = (username: string, password: string) =>
      t.app.inject({ method: 'POST', url: '/operatorapi/users', headers: bearer(admin), payload: { username, password } });

    const ascii = await create('long-ascii', 'a'.repeat(73));
    expect(ascii.statusCode).toBe(400);
    expect(ascii.headers['content-type']).toMatch(/^application\/problem\+json/);
    // 25 characters, 75 bytes in UTF-8: short in characters, too long for bcrypt.
    const multiByte = await create('long-utf8', '€'.repeat(25));
    expect(multiByte.statusCode).toBe(400);
    expect(multiByte.json()).toMatchObject({ status: 400, errors: [{ field: 'password', message: 'longer than 72 bytes' }] });
    // The service refuses it too (the CLI's path).
    await expect(
      t.app.services.users.create({ tenantId: acme.tenantId, actor: 'cli', requestId: null }, 'long-cli', 'b'.repeat(80)),
    ).rejects.toBeInstanceOf(BadRequestError);
    const { rows } = await t.database.db.query('SELECT username FROM users WHERE username LIKE $1', ['long-%']);
    expect(rows).toEqual([]);

    // Exactly 72 bytes is fine, and only those 72 bytes log in: no silent truncation of longer input either.
    const exact = `${'€'.repeat(23)}abc`;
    expect(Buffer.byteLength(exact)).toBe(72);
    expect((await create('exact72', exact)).statusCode).toBe(201);
    expect((await passwordGrant(t.app, acmeApp, 'exact72@acme', exact)).statusCode).toBe(200);
    expectOAuthError(await passwordGrant(t.app, acmeApp, 'exact72@acme', `${exact}x`), 400, 'invalid_grant', INVALID_LOGIN);
  });
});

describe('docs/security-cases.md B10: timing of failed logins', () => {
  let t: TestApp;
  let client: ClientFixture;
  const ROUNDS = 30;
  const ATTEMPTS = 3;

  beforeAll(async () => {
    // A realistic bcrypt cost (≈ 15 ms here): a skipped comparison for unknown users would stand out clearly.
    t = await buildTestApp({ BCRYPT_COST: '8', TOKEN_RATE_LIMIT_PER_MINUTE: '100000', LOCKOUT_THRESHOLD: '100' });
    const tenant = await createTenant(t.app, 'acme');
    client = await createClient(t.app, tenant, ACCESS_SCOPES);
    // One user per measured wrong-password attempt (and per warm-up round), so no login is slowed down by an earlier
    // failure. They share one bcrypt hash of cost 8, copied in SQL rather than hashed 95 times.
    await createUser(t.app, tenant, 'user0', PASSWORD);
    await t.database.db.query(
      `INSERT INTO users (tenant_id, username, password_hash, created_at)
       SELECT tenant_id, 'user' || n, password_hash, created_at
         FROM users, (SELECT generate_series(1, $1::int - 1) AS n UNION ALL SELECT generate_series(1000000, 1000004)) AS numbers
        WHERE username = 'user0'`,
      [ROUNDS * ATTEMPTS],
    );
    const { rows } = await t.database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM users');
    expect(rows[0]!.n).toBe(ROUNDS * ATTEMPTS + 5);
    // The copies are real users: the right password logs them in.
    expect((await passwordGrant(t.app, client, `user${ROUNDS * ATTEMPTS - 1}@acme`, PASSWORD)).statusCode).toBe(200);
  });
  afterAll(async () => {
    await t.close();
  });

  it('B10: wrong password, unknown user and unknown tenant take a similar time (median of 30 interleaved requests each)', async () => {
    const medians = await expectSimilarDurations(
      {
        wrongPassword: (i: number) => passwordGrant(t.app, client, `user${i}@acme`, 'wrong password'),
        unknownUser: (i: number) => passwordGrant(t.app, client, `ghost${i}@acme`, 'wrong password'),
        unknownTenant: (i: number) => passwordGrant(t.app, client, `user${i}@tenant${i}`, 'wrong password'),
      },
      { rounds: ROUNDS, attempts: ATTEMPTS },
    );
    // The comparison is meaningful only if a bcrypt check dominates the answer.
    expect(Math.min(...Object.values(medians))).toBeGreaterThan(3);
  });
});

describe('docs/security-cases.md G40, G41: the lockout under concurrent and cross-tenant guesses', () => {
  const THRESHOLD = 5;
  const LOCK_MS = 300_000;
  let t: TestApp;
  let skew = 0;
  let acme: TenantFixture;
  let globex: TenantFixture;
  let acmeApp: ClientFixture;
  let globexApp: ClientFixture;

  beforeAll(async () => {
    // bcrypt at cost 10 (tens of milliseconds, as in production): a burst is still being checked when the next
    // request arrives, which is what let the right password through when the count followed the check.
    t = await buildTestApp(
      {
        BCRYPT_COST: '10',
        LOCKOUT_THRESHOLD: String(THRESHOLD),
        LOCKOUT_WINDOW_SECONDS: '60',
        LOCKOUT_SECONDS: String(LOCK_MS / 1000),
        TOKEN_RATE_LIMIT_PER_MINUTE: '100000',
      },
      { clock: () => Date.now() + skew },
    );
    acme = await createTenant(t.app, 'acme');
    globex = await createTenant(t.app, 'globex');
    acmeApp = await createClient(t.app, acme, ACCESS_SCOPES);
    globexApp = await createClient(t.app, globex, ACCESS_SCOPES);
    for (const name of ['dave', 'henry', 'ivan', 'lena', 'mona', 'olga']) await createUser(t.app, acme, name, PASSWORD);
    await createUser(t.app, globex, 'gina', PASSWORD);
  });
  afterEach(() => {
    vi.restoreAllMocks();
  });
  afterAll(async () => {
    await t.close();
  });

  /** `count` wrong passwords for `login`, all sent at once. */
  const burst = (client: ClientFixture, login: string, count: number) =>
    Promise.all(Array.from({ length: count }, (_, i) => passwordGrant(t.app, client, login, `wrong password ${i}`)));

  it('G40: 29 wrong passwords at once, the right one as soon as they have locked the login: refused; after the lock a success clears the count', async () => {
    const wrongAnswers = burst(acmeApp, 'henry@acme', 29);
    // Each attempt is counted before its password check, so the lock is set while most of the burst is still being
    // checked; the right password then arrives during the burst, however slowly the machine runs.
    await vi.waitFor(async () => expect((await attemptsOf(t, 'henry@acme'))?.locked_until).toBeTruthy(), { timeout: PATIENCE_MS, interval: 5 });
    const right = await passwordGrant(t.app, acmeApp, 'henry@acme', PASSWORD);
    const wrong = await wrongAnswers;
    expectOAuthError(right, 400, 'invalid_grant', INVALID_LOGIN);
    for (const response of wrong) {
      expectOAuthError(response, 400, 'invalid_grant', INVALID_LOGIN);
      expect(response.body).toBe(right.body);
      expect(stableHeaders(response)).toEqual(stableHeaders(right));
    }
    // Counted before the check: the row holds the threshold plus one (attempts past it are not counted further).
    const locked = await attemptsOf(t, 'henry@acme');
    expect(locked?.attempts).toBe(THRESHOLD + 1);
    expect(locked?.locked_until).toBeGreaterThan(Date.now() + skew + LOCK_MS - 60_000);

    // The window (60 s) has passed, the lock (300 s) has not: still refused, still locked.
    skew += 61_000;
    expectOAuthError(await passwordGrant(t.app, acmeApp, 'henry@acme', PASSWORD), 400, 'invalid_grant', INVALID_LOGIN);
    expect((await attemptsOf(t, 'henry@acme'))?.locked_until).toBe(locked?.locked_until);

    // After the lock the right password works and the count is gone.
    skew += LOCK_MS;
    const unlocked = await passwordGrant(t.app, acmeApp, 'henry@acme', PASSWORD);
    expect(unlocked.statusCode, unlocked.body).toBe(200);
    expect(await attemptsOf(t, 'henry@acme')).toBeNull();
  });

  it('G40: a burst of 40 concurrent wrong guesses: only the threshold reaches the password check; one audit event', async () => {
    const verifyPassword = vi.spyOn(t.app.services.users, 'verifyPassword');
    const answers = await burst(acmeApp, 'ivan@acme', 40);
    for (const response of answers) expectOAuthError(response, 400, 'invalid_grant', INVALID_LOGIN);
    expect(new Set(answers.map((response) => response.body)).size).toBe(1);
    const checked = verifyPassword.mock.calls.filter(([tenantName, username]) => tenantName === 'acme' && username === 'ivan');
    expect(checked).toHaveLength(THRESHOLD);
    expect((await attemptsOf(t, 'ivan@acme'))?.attempts).toBe(THRESHOLD + 1);
    const { rows } = await t.database.db.query<{ tenant_id: string; action: string }>(
      'SELECT tenant_id, action FROM audit_events WHERE target = $1',
      ['login:ivan@acme'],
    );
    expect(rows).toEqual([{ tenant_id: acme.tenantId, action: 'login.locked' }]);
  });

  it('G41: a client of another tenant naming dave@acme gets the wrong-password answer and never counts against him', async () => {
    const verifyPassword = vi.spyOn(t.app.services.users, 'verifyPassword');
    const spendLookupAndComparison = vi.spyOn(t.app.services.users, 'spendLookupAndComparison');
    const wrongPassword = await passwordGrant(t.app, acmeApp, 'ghost@acme', 'wrong password');
    const foreign = [];
    for (let i = 0; i < THRESHOLD; i++) foreign.push(await passwordGrant(t.app, globexApp, 'dave@acme', `wrong password ${i}`));
    for (const response of foreign) {
      expectOAuthError(response, 400, 'invalid_grant', INVALID_LOGIN);
      expect(response.body).toBe(wrongPassword.body);
      expect(stableHeaders(response)).toEqual(stableHeaders(wrongPassword));
    }
    // acme's own app still logs dave in; nothing was counted, nothing was audited about him.
    const own = await passwordGrant(t.app, acmeApp, 'dave@acme', PASSWORD);
    expect(own.statusCode, own.body).toBe(200);
    // Each foreign attempt spent a look-up and a comparison (the time of a wrong password) but none checked dave's hash.
    expect(spendLookupAndComparison).toHaveBeenCalledTimes(THRESHOLD);
    expect(verifyPassword.mock.calls.filter(([, username]) => username === 'dave')).toHaveLength(1);
    const { rows: counted } = await t.database.db.query('SELECT tenant_id FROM login_failures WHERE username = $1', ['dave']);
    expect(counted).toEqual([]);
    const { rows: audited } = await t.database.db.query('SELECT action FROM audit_events WHERE target LIKE $1', ['%dave%']);
    expect(audited).toEqual([]);
  });

  it('G41: the lock appears in the audit trail of the user\'s tenant, not in another tenant\'s', async () => {
    await burst(acmeApp, 'mona@acme', THRESHOLD);
    const events = async (tenant: TenantFixture) => {
      const token = await clientToken(t.app, { clientId: tenant.clientId, clientSecret: tenant.clientSecret });
      const response = await t.app.inject({
        method: 'GET',
        url: `/operatorapi/audit-events?target=${encodeURIComponent('login:mona@acme')}`,
        headers: bearer(token),
      });
      expect(response.statusCode, response.body).toBe(200);
      return response.json() as { actor: string; action: string; target: string }[];
    };
    expect(await events(acme)).toEqual([
      expect.objectContaining({ actor: `client:${acmeApp.clientId}`, action: 'login.locked', target: 'login:mona@acme' }),
    ]);
    expect(await events(globex)).toEqual([]);
  });

  it('7c: only logins of the client\'s own tenant, with usernames the API allows, are counted', async () => {
    const tooLong = `${'x'.repeat(129)}@acme`;
    for (const login of [tooLong, `${'y'.repeat(5000)}@acme`, 'gina@globex', 'nobody@no-such-tenant', 'lena@ACME']) {
      expectOAuthError(await passwordGrant(t.app, acmeApp, login, 'wrong password'), 400, 'invalid_grant', INVALID_LOGIN);
    }
    const { rows } = await t.database.db.query<{ username: string }>(
      'SELECT username FROM login_failures WHERE length(username) > 128 OR username IN ($1, $2, $3)',
      ['gina', 'nobody', 'lena'],
    );
    expect(rows).toEqual([]);
    // 128 characters is a username the API accepts: counted like any other in the tenant.
    expectOAuthError(await passwordGrant(t.app, acmeApp, `${'z'.repeat(128)}@acme`, 'wrong password'), 400, 'invalid_grant');
    expect(await attemptsOf(t, `${'z'.repeat(128)}@acme`)).toEqual({ attempts: 1, locked_until: null });
  });

  it('7c: the prune step removes rows whose window and lock have both passed, and only those', async () => {
    expectOAuthError(await passwordGrant(t.app, acmeApp, 'lena@acme', 'wrong password'), 400, 'invalid_grant');
    await burst(acmeApp, 'olga@acme', THRESHOLD);
    expect(await attemptsOf(t, 'lena@acme')).toEqual({ attempts: 1, locked_until: null });
    expect((await attemptsOf(t, 'olga@acme'))?.locked_until).toEqual(expect.any(Number));

    // Nothing has passed yet.
    await t.app.services.tokens.pruneLoginFailures();
    expect(await attemptsOf(t, 'lena@acme')).not.toBeNull();

    // The window has passed: lena's row goes, olga's lock stays.
    skew += 61_000;
    await t.app.services.tokens.pruneLoginFailures();
    expect(await attemptsOf(t, 'lena@acme')).toBeNull();
    expect((await attemptsOf(t, 'olga@acme'))?.locked_until).toEqual(expect.any(Number));
    expectOAuthError(await passwordGrant(t.app, acmeApp, 'olga@acme', PASSWORD), 400, 'invalid_grant', INVALID_LOGIN);

    // The lock has passed too: olga's row goes, and every row left is one whose window or lock is still running.
    skew += LOCK_MS;
    await t.app.services.tokens.pruneLoginFailures();
    expect(await attemptsOf(t, 'olga@acme')).toBeNull();
    const { rows } = await t.database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM login_failures');
    expect(rows[0]!.n).toBe(0);
    expect((await passwordGrant(t.app, acmeApp, 'olga@acme', PASSWORD)).statusCode).toBe(200);
  });

  it('7c: the started service runs the prune every 15 minutes', async () => {
    expectOAuthError(await passwordGrant(t.app, acmeApp, 'lena@acme', 'wrong password'), 400, 'invalid_grant');
    skew += 61_000;
    // The service started with the app: restart it under fake interval timers to move its 15 minutes.
    t.app.services.tokens.stop();
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      t.app.services.tokens.start();
      vi.advanceTimersByTime(14 * 60_000);
      await sleep(50);
      expect(await attemptsOf(t, 'lena@acme')).not.toBeNull();
      vi.advanceTimersByTime(60_000);
      await vi.waitFor(async () => expect(await attemptsOf(t, 'lena@acme')).toBeNull(), { timeout: PATIENCE_MS });
    } finally {
      t.app.services.tokens.stop();
      vi.useRealTimers();
      t.app.services.tokens.start();
    }
  });
});

describe('7c: migration 007 keys the lockout by tenant and username', () => {
  it('carries running counts and locks over; rows naming no tenant or an impossible username are dropped', async () => {
    const { db } = await createEmptyTestDatabase();
    try {
      await migrate(db, readMigrations().filter((migration) => migration.version < 7));
      const { rows: tenants } = await db.query<{ id: string; name: string }>(
        "INSERT INTO tenants (name, created_at) VALUES ('acme', 1), ('me', 1) RETURNING id, name",
      );
      const idOf = (name: string) => tenants.find((tenant) => tenant.name === name)!.id;
      const old: [string, number, number, number | null][] = [
        ['dave@acme', 5, 1000, 901_000],
        ['first.last@example.com@acme', 2, 2000, null],
        ['bob@me', 1, 3000, null],
        ['carol@no-such-tenant', 1, 4000, null],
        ['@acme', 1, 5000, null],
        [`${'x'.repeat(129)}@acme`, 1, 6000, null],
      ];
      for (const row of old) {
        await db.query('INSERT INTO login_failures (login, failures, first_failure_at, locked_until) VALUES ($1, $2, $3, $4)', row);
      }
      expect(await migrate(db)).toEqual(readMigrations().filter((migration) => migration.version >= 7).map((m) => m.version));
      const { rows } = await db.query(
        'SELECT tenant_id, username, attempts, first_attempt_at, locked_until FROM login_failures ORDER BY first_attempt_at',
      );
      expect(rows).toEqual([
        { tenant_id: idOf('acme'), username: 'dave', attempts: 5, first_attempt_at: 1000, locked_until: 901_000 },
        { tenant_id: idOf('acme'), username: 'first.last@example.com', attempts: 2, first_attempt_at: 2000, locked_until: null },
        { tenant_id: idOf('me'), username: 'bob', attempts: 1, first_attempt_at: 3000, locked_until: null },
      ]);
      expect((await db.query("SELECT to_regclass('login_failures_by_login') AS old")).rows).toEqual([{ old: null }]);
    } finally {
      await db.close();
    }
  });
});
