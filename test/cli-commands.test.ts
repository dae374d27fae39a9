// The CLI's tenant, client, user and keys commands (docs/api-reference.md 2), run as child processes on the test's database.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type App } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { acquireDataDirLock, createPgliteDatabase } from '../src/db/pglite.js';
import { createLogger } from '../src/logger.js';
import { resolveSecretsKey } from '../src/services/keys/secrets-key-source.js';
import { createTestDatabase, type TestDatabase } from './helpers/database.js';
import { passwordGrant, tokenRequest } from './helpers/oauth.js';
import { PATIENCE_MS, ROOT, childEnv, nodeArguments, temporaryDirectory } from './helpers/process.js';
import { postgresTestUrl } from './helpers/postgres-url.js';

interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

describe('CLI commands', () => {
  const directory = temporaryDirectory('acs-cli-');
  let database: TestDatabase | undefined;
  let env: Record<string, string>;

  beforeAll(async () => {
    env = { BCRYPT_COST: '4', LOG_LEVEL: 'warn' };
    if (postgresTestUrl()) {
      database = await createTestDatabase();
      env = { ...env, DATABASE_URL: database.url!, SECRETS_KEY: randomBytes(32).toString('hex') };
    } else {
      env = { ...env, DATA_DIR: directory.path };
    }
  });
  afterAll(async () => {
    await database?.db.close();
    directory.remove();
  });

  function cli(args: string[], input?: string): Promise<CliResult> {
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [...nodeArguments('src/cli.ts'), ...args], {
        cwd: ROOT,
        env: childEnv(env),
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`cli ${args.join(' ')} timed out\n${stdout}\n${stderr}`));
      }, PATIENCE_MS);
      // 'close', not 'exit': 'exit' may come before the last of the child's output has been read from its pipes.
      child.once('close', (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr });
      });
      child.stdin.end(input ?? '');
    });
  }

  /** The app on the same database the CLI wrote, to prove the credentials it printed work. */
  async function appOnCliDatabase(): Promise<App> {
    const config = loadConfig({ ...env, LOG_LEVEL: 'silent', PUBLIC_URL: 'http://cli.test' });
    const db = database ? (await import('../src/db/postgres.js')).createPostgresDatabase({
      connectionString: database.url!,
      poolMax: 2,
      connectTimeoutMs: 2000,
      statementTimeoutMs: 10_000,
      log: createLogger('silent'),
    }) : await createPgliteDatabase({ dataDir: directory.path });
    const app = await buildApp(config, { db, log: createLogger('silent'), secretsKey: resolveSecretsKey(config) });
    await app.ready();
    return app;
  }

  let tenant: { tenant: string; clientId: string; clientSecret: string };
  let bound: { clientId: string; clientSecret: string; securedObjectId: string };

  it('tenant create NAME --json prints the management client once', async () => {
    const result = await cli(['tenant', 'create', 'acme', '--json']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    tenant = JSON.parse(result.stdout);
    // docs/api-reference.md 13: the console's public client, which has no secret.
    expect(tenant).toEqual({ tenant: 'acme', clientId: expect.any(String), clientSecret: expect.any(String), consoleClientId: expect.any(String) });
    expect(Buffer.from(tenant.clientSecret, 'base64url').length).toBe(32);
  });

  it('refuses a second tenant of the same name and a bad name, on stderr with a non-zero exit', async () => {
    const again = await cli(['tenant', 'create', 'acme', '--json']);
    expect(again.code).not.toBe(0);
    expect(again.stdout).toBe('');
    expect(again.stderr).toContain('exists already');
    const bad = await cli(['tenant', 'create', 'no spaces@here']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('tenant name');
  });

  it('user create USER@TENANT --password-stdin reads the password from standard input', async () => {
    const result = await cli(['user', 'create', 'alice@acme', '--password-stdin', '--json'], 'correct horse battery\n');
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({ tenant: 'acme', id: expect.any(String), username: 'alice', creationDate: expect.any(Number) });
    expect(result.stdout + result.stderr).not.toContain('correct horse');

    const withoutStdin = await cli(['user', 'create', 'bob@acme', '--json']);
    expect(withoutStdin.code).toBe(2);
    expect(withoutStdin.stderr).toContain('--password-stdin');
    const tooLong = await cli(['user', 'create', 'carol@acme', '--password-stdin'], `${'x'.repeat(73)}\n`);
    expect(tooLong.code).toBe(1);
    expect(tooLong.stderr).toContain('72 bytes');
    const noTenant = await cli(['user', 'create', 'dave@nowhere', '--password-stdin'], 'long enough pass\n');
    expect(noTenant.code).toBe(1);
    expect(noTenant.stderr).toContain('No tenant nowhere');
  });

  it('client create refuses unknown scopes and a binding to a lock the tenant does not have', async () => {
    const unknownLock = await cli(['client', 'create', '--tenant', 'acme', '--scopes', 'sync', '--secured-object', 'lock-1', '--json']);
    expect(unknownLock.code).toBe(1);
    expect(unknownLock.stderr).toContain('No secured object lock-1');
    const unknown = await cli(['client', 'create', '--tenant', 'acme', '--scopes', 'sync doors:kick']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('doors:kick');
    // It says which scopes there are.
    expect(unknown.stderr).toMatch(/Known scopes: .*tokens:create .*audit:read .*webhooks:manage/);
    const missing = await cli(['client', 'create', '--scopes', 'sync']);
    expect(missing.code).toBe(2);
  });

  it('client create binds a client to a registered secured object', async () => {
    const app = await appOnCliDatabase();
    try {
      const management = (await tokenRequest(app, tenant, { grant_type: 'client_credentials' })).json().access_token;
      const registered = await app.inject({
        method: 'POST',
        url: '/operatorapi/securedobjects',
        headers: { authorization: `Bearer ${management}` },
        payload: { id: 'lock-1', channels: ['btlespp'], localName: 'L1', uuid: '7d8a0c1e-4b7f-4d5e-9a41-3c2b1f0e9d8c' },
      });
      expect(registered.statusCode).toBe(201);
    } finally {
      await app.close();
    }
    const result = await cli(['client', 'create', '--tenant', 'acme', '--scopes', 'sync', '--secured-object', 'lock-1', '--json']);
    expect(result.code).toBe(0);
    bound = JSON.parse(result.stdout);
    // docs/api-reference.md 11.1: a bound client also registers its lock's key.
    expect(bound).toMatchObject({ tenant: 'acme', scopes: ['sync', 'keys:register'], securedObjectId: 'lock-1' });
  });

  it('keys rotate prints the new key and the retired one', async () => {
    const first = await cli(['keys', 'rotate', '--json']);
    expect(first.code).toBe(0);
    const second = await cli(['keys', 'rotate', '--json']);
    const rotated = JSON.parse(second.stdout);
    expect(rotated).toEqual({ kid: expect.any(String), retired: [JSON.parse(first.stdout).kid] });
  });

  it('secrets-key reencrypt moves every sealed value to a new SECRETS_KEY and back, and says what it did', async () => {
    const oldKeyHex = env.SECRETS_KEY ?? readFileSync(join(directory.path, 'secrets.key'), 'utf8').trim();
    const newKeyHex = randomBytes(32).toString('hex');
    const unchanged = await cli(['secrets-key', 'reencrypt', '--json']);
    expect(unchanged.code, unchanged.stderr).toBe(0);
    const current = JSON.parse(unchanged.stdout);
    expect(current.resealed).toEqual({ signingKey: 0, credential: 0, webhookSecret: 0, previousWebhookSecret: 0 });
    expect(current.alreadyCurrent).toBeGreaterThanOrEqual(2);

    const saved = env;
    try {
      env = { ...saved, SECRETS_KEY: newKeyHex, SECRETS_KEY_PREVIOUS: oldKeyHex };
      const forward = await cli(['secrets-key', 'reencrypt']);
      expect(forward.code, forward.stderr).toBe(0);
      expect(forward.stdout).toMatch(new RegExp(`Sealed again under SECRETS_KEY: ${current.alreadyCurrent} \\(signing keys ${current.alreadyCurrent},`));
      expect(forward.stdout).toContain('remove SECRETS_KEY_PREVIOUS');
      expect(forward.stdout + forward.stderr).not.toContain(newKeyHex);
      expect(forward.stdout + forward.stderr).not.toContain(oldKeyHex);
      // Without the old key: everything opens under the new one.
      env = { ...saved, SECRETS_KEY: newKeyHex };
      const check = await cli(['secrets-key', 'reencrypt', '--json']);
      expect(JSON.parse(check.stdout)).toMatchObject({ alreadyCurrent: current.alreadyCurrent, unopenable: [] });
      // The old key alone opens nothing now: listed, exit code 1.
      env = { ...saved, SECRETS_KEY: oldKeyHex };
      const stale = await cli(['secrets-key', 'reencrypt']);
      expect(stale.code).toBe(1);
      expect(stale.stdout).toContain(`${current.alreadyCurrent} value(s) open under none of the given keys`);
      expect(stale.stderr).toContain('keep SECRETS_KEY_PREVIOUS');
      // The key that is also previous is refused before anything runs.
      env = { ...saved, SECRETS_KEY: newKeyHex, SECRETS_KEY_PREVIOUS: newKeyHex };
      const same = await cli(['secrets-key', 'reencrypt']);
      expect(same.code).toBe(1);
      expect(same.stderr).toContain('SECRETS_KEY_PREVIOUS holds the current key');
      // Back, so that the tests below use the key they were set up with.
      env = { ...saved, SECRETS_KEY: oldKeyHex, SECRETS_KEY_PREVIOUS: newKeyHex };
      expect((await cli(['secrets-key', 'reencrypt'])).code).toBe(0);
    } finally {
      env = saved;
    }
  });

  it('prints --help on every level', async () => {
    for (const args of [['--help'], ['tenant', '--help'], ['tenant', 'create', '--help'], ['user', 'create', '--help'], ['keys', 'rotate', '--help'], ['secrets-key', 'reencrypt', '--help']]) {
      const result = await cli(args);
      expect(result.code, args.join(' ')).toBe(0);
      expect(result.stdout, args.join(' ')).toContain('Usage: npm run --silent cli --');
    }
  });

  it('printed credentials work against the server on the same database', async () => {
    const app = await appOnCliDatabase();
    try {
      const management = await tokenRequest(app, tenant, { grant_type: 'client_credentials' });
      expect(management.statusCode).toBe(200);
      expect(management.json().scope).toContain('clients:manage');
      const lock = await tokenRequest(app, bound, { grant_type: 'client_credentials' });
      expect(lock.statusCode).toBe(200);
      const payload = JSON.parse(Buffer.from(lock.json().access_token.split('.')[1], 'base64url').toString());
      expect(payload).toMatchObject({ aud: 'deviceapi', secured_object_id: 'lock-1' });
      const accessClient = (await app.services.clients.create(
        { tenantId: payload.tenant, actor: 'test', requestId: null },
        { name: 'app', scopes: ['device-groups:read'] },
      ));
      expect((await passwordGrant(app, accessClient, 'alice@acme', 'correct horse battery')).statusCode).toBe(200);
      const jwks = (await app.inject({ url: '/.well-known/jwks.json' })).json();
      expect(jwks.keys.length).toBeGreaterThanOrEqual(2);
    } finally {
      await app.close();
    }
  });

  it.runIf(!postgresTestUrl())('refuses to touch the embedded database while a server holds it', async () => {
    const release = acquireDataDirLock(directory.path);
    try {
      const result = await cli(['tenant', 'create', 'other', '--json']);
      expect(result.code).not.toBe(0);
      expect(result.stderr).toContain(`in use by process ${process.pid}`);
    } finally {
      release();
    }
  });
});
