// loadConfig: defaults, conversion of environment strings, and refusals that name the bad variable.
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, ConfigSchema, checkListener, loadConfig, trustProxyOption } from '../src/config.js';
import { MAX_UPLOAD_ENTRIES } from '../src/schemas/access-log.js';
import { isLoopbackHost } from '../src/shared/loopback.js';
import { createSeededDataDir } from './helpers/database.js';
import { PATIENCE_MS, freePort, killAll, spawnNode, waitForUrl } from './helpers/process.js';

/** The ConfigError loadConfig throws for `env`; fails the test when it does not throw one. */
function configError(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error(`loadConfig accepted ${JSON.stringify(env)}`);
}

describe('loadConfig', () => {
  it('applies the documented defaults to an empty environment', () => {
    const config = loadConfig({});
    expect(config.PORT).toBe(8080);
    // Without PUBLIC_URL a development start on this machine: it listens there alone (README, "Quick start").
    expect(config.HOST).toBe('localhost');
    expect(config.PUBLIC_URL).toBe('http://localhost:8080');
    expect(config.DATA_DIR).toBe('./data');
    expect(config.BODY_LIMIT).toBe(1024 * 1024);
    expect(config.LOG_LEVEL).toBe('info');
    expect(config.DATABASE_URL).toBeUndefined();
    expect(config.SECRETS_KEY).toBeUndefined();
    expect(config.TRUST_PROXY).toBe('false');
  });

  it('derives the default PUBLIC_URL from PORT', () => {
    expect(loadConfig({ PORT: '3000' }).PUBLIC_URL).toBe('http://localhost:3000');
  });

  it('keeps an explicit PUBLIC_URL byte for byte', () => {
    expect(loadConfig({ PUBLIC_URL: 'https://Auth.Example.com/base/' }).PUBLIC_URL).toBe('https://Auth.Example.com/base/');
  });

  it('converts numeric strings to numbers', () => {
    const config = loadConfig({
      PORT: '3000',
      BODY_LIMIT: '2048',
      DB_POOL_MAX: '25',
      DB_CONNECT_TIMEOUT_MS: '500',
      DB_STATEMENT_TIMEOUT_MS: '1500',
      SHUTDOWN_TIMEOUT_MS: '250',
    });
    expect(config).toMatchObject({
      PORT: 3000,
      BODY_LIMIT: 2048,
      DB_POOL_MAX: 25,
      DB_CONNECT_TIMEOUT_MS: 500,
      DB_STATEMENT_TIMEOUT_MS: 1500,
      SHUTDOWN_TIMEOUT_MS: 250,
    });
    expect(typeof config.PORT).toBe('number');
  });

  it('reads integers written with surrounding spaces or a sign', () => {
    expect(loadConfig({ PORT: ' 8081 ', BODY_LIMIT: '+4096' })).toMatchObject({ PORT: 8081, BODY_LIMIT: 4096 });
  });

  it('accepts a complete valid environment', () => {
    const key = 'ab'.repeat(32);
    const config = loadConfig({
      HOST: '127.0.0.1',
      DATABASE_URL: 'postgresql://user@db:5432/acs',
      SECRETS_KEY: key,
      LOG_LEVEL: 'debug',
      TLS_CERT_FILE: '/etc/tls/cert.pem',
      TLS_KEY_FILE: '/etc/tls/key.pem',
      DATA_DIR: '/var/lib/acs',
    });
    expect(config).toMatchObject({
      HOST: '127.0.0.1',
      DATABASE_URL: 'postgresql://user@db:5432/acs',
      SECRETS_KEY: key,
      LOG_LEVEL: 'debug',
      TLS_CERT_FILE: '/etc/tls/cert.pem',
      TLS_KEY_FILE: '/etc/tls/key.pem',
      DATA_DIR: '/var/lib/acs',
    });
  });

  it('treats empty strings as unset and ignores unknown variables', () => {
    const config = loadConfig({ PORT: '', DATABASE_URL: '', SOMETHING_ELSE: 'x' });
    expect(config.PORT).toBe(8080);
    expect(config.DATABASE_URL).toBeUndefined();
    expect(config).not.toHaveProperty('SOMETHING_ELSE');
  });

  it.each([
    ['PORT', { PORT: 'abc' }],
    ['PORT', { PORT: '70000' }],
    ['PORT', { PORT: '-1' }],
    ['PORT', { PORT: '80.5' }],
    ['PORT', { PORT: '1e3' }],
    ['PORT', { PORT: '0x50' }],
    ['SHUTDOWN_TIMEOUT_MS', { SHUTDOWN_TIMEOUT_MS: 'true' }],
    ['LOG_LEVEL', { LOG_LEVEL: 'loud' }],
    ['BODY_LIMIT', { BODY_LIMIT: '-1' }],
    ['BODY_LIMIT', { BODY_LIMIT: 'lots' }],
    ['SECRETS_KEY', { SECRETS_KEY: 'abcd1234' }],
    ['SECRETS_KEY', { SECRETS_KEY: 'z'.repeat(64) }],
    ['TLS_CERT_FILE', { TLS_CERT_FILE: '/etc/tls/cert.pem' }],
    ['TLS_KEY_FILE', { TLS_KEY_FILE: '/etc/tls/key.pem' }],
    ['DATABASE_URL', { DATABASE_URL: 'mysql://x' }],
    ['PUBLIC_URL', { PUBLIC_URL: 'https://auth.example.com/?tenant=a' }],
    ['PUBLIC_URL', { PUBLIC_URL: 'https://auth.example.com/#top' }],
    ['PUBLIC_URL', { PUBLIC_URL: 'auth.example.com' }],
    ['DB_POOL_MAX', { DB_POOL_MAX: '0' }],
    ['TRUST_PROXY', { TRUST_PROXY: 'maybe' }],
  ])('refuses a bad %s (%j) with a ConfigError naming it', (variable, env) => {
    const error = configError(env);
    expect(error.name).toBe('ConfigError');
    expect(error.message).toContain(variable);
    expect(error.problems.length).toBeGreaterThan(0);
    expect(error.problems.every((problem) => problem.includes(variable))).toBe(true);
  });

  it('reports every bad variable at once, each named once', () => {
    const error = configError({ PORT: 'abc', LOG_LEVEL: 'loud', BODY_LIMIT: '-1' });
    for (const variable of ['PORT', 'LOG_LEVEL', 'BODY_LIMIT']) {
      expect(error.problems.filter((problem) => problem.startsWith(`${variable}=`))).toHaveLength(1);
    }
    expect(error.message).toMatch(/^Invalid configuration:/);
  });

  it('never echoes a secret: a near-miss SECRETS_KEY or a DATABASE_URL with a password shows only its length', () => {
    const key = `${'ab'.repeat(32)} `;
    const keyError = configError({ SECRETS_KEY: key });
    expect(keyError.message).not.toContain('abab');
    expect(keyError.message).toContain('SECRETS_KEY (value not shown, 65 characters)');
    expect(keyError.message).toMatch(/64 hex characters/);
    const previousError = configError({ SECRETS_KEY_PREVIOUS: `${'cd'.repeat(32)}, ${'ef'.repeat(32)}` });
    expect(previousError.message).not.toContain('cdcd');
    expect(previousError.message).toContain('SECRETS_KEY_PREVIOUS (value not shown, 130 characters)');
    expect(previousError.message).toMatch(/separated by commas without spaces/);
    const urlError = configError({ DATABASE_URL: 'mysql://acs:hunter2@db/acs' });
    expect(urlError.message).not.toContain('hunter2');
    expect(urlError.message).toMatch(/postgres:\/\//);
  });

  it('names the allowed choices of a choice variable', () => {
    expect(configError({ LOG_LEVEL: 'loud' }).problems).toEqual(['LOG_LEVEL="loud": must be one of fatal, error, warn, info, debug, trace, silent']);
    expect(configError({ JWT_ALG: 'RS256' }).problems).toEqual(['JWT_ALG="RS256": must be one of EdDSA, ES256']);
    expect(configError({ WEBHOOK_ALLOW_INSECURE: 'yes' }).problems).toEqual(['WEBHOOK_ALLOW_INSECURE="yes": must be one of true, false']);
  });

  it('gives the range of an integer variable', () => {
    expect(configError({ DB_POOL_MAX: 'many' }).problems).toEqual(['DB_POOL_MAX="many": must be a whole number from 1 to 1000, written in digits']);
  });

  it('keeps access logs for a year by default, and lets no lock\'s budget be smaller than one full upload', () => {
    expect(loadConfig({})).toMatchObject({ ACCESS_LOG_RETENTION_DAYS: 365, ACCESS_LOG_ENTRIES_PER_LOCK_PER_MINUTE: 1000 });
    expect(configError({ ACCESS_LOG_RETENTION_DAYS: '0' }).problems).toEqual([
      'ACCESS_LOG_RETENTION_DAYS=0: must be a whole number from 1 to 3650, written in digits',
    ]);
    // docs/api-reference.md 16.1: the instance's periods are bounded as a tenant's own are (migration 029).
    expect(loadConfig({})).toMatchObject({ EVENT_RETENTION_DAYS: 30, AUDIT_RETENTION_DAYS: 730 });
    expect(configError({ AUDIT_RETENTION_DAYS: '3651', EVENT_RETENTION_DAYS: '0' }).problems).toEqual([
      'EVENT_RETENTION_DAYS=0: must be a whole number from 1 to 3650, written in digits',
      'AUDIT_RETENTION_DAYS=3651: must be a whole number from 1 to 3650, written in digits',
    ]);
    // docs/api-reference.md 8.5: an upload over the budget is refused whole, so a budget below MAX_UPLOAD_ENTRIES would
    // refuse a lock's full upload for ever.
    expect(ConfigSchema.properties.ACCESS_LOG_ENTRIES_PER_LOCK_PER_MINUTE.minimum).toBe(MAX_UPLOAD_ENTRIES);
    expect(configError({ ACCESS_LOG_ENTRIES_PER_LOCK_PER_MINUTE: '999' }).problems).toEqual([
      'ACCESS_LOG_ENTRIES_PER_LOCK_PER_MINUTE=999: must be a whole number from 1000 to 1000000, written in digits',
    ]);
    expect(loadConfig({ ACCESS_LOG_ENTRIES_PER_LOCK_PER_MINUTE: '1000', ACCESS_LOG_RETENTION_DAYS: '1' })).toMatchObject({
      ACCESS_LOG_ENTRIES_PER_LOCK_PER_MINUTE: 1000,
      ACCESS_LOG_RETENTION_DAYS: 1,
    });
  });

  it('refuses an unknown removed interface in DEPRECATED_INTERFACES_ENABLED and lists those that can be kept alive', () => {
    for (const value of ['foo', 'nfccard', 'tickets-by-object,basic-auth']) {
      const error = configError({ DEPRECATED_INTERFACES_ENABLED: value });
      expect(error.problems).toHaveLength(1);
      expect(error.problems[0]).toMatch(/^DEPRECATED_INTERFACES_ENABLED=.*: unknown .*; the interfaces that can be kept alive are tickets-by-object, nfccard-channel$/);
    }
    expect(loadConfig({ DEPRECATED_INTERFACES_ENABLED: 'nfccard-channel, tickets-by-object' }).DEPRECATED_INTERFACES_ENABLED).toBe(
      'nfccard-channel, tickets-by-object',
    );
  });

  it('quotes the rejected value so the operator sees what was read', () => {
    expect(configError({ PORT: 'abc' }).message).toContain('PORT="abc"');
  });
});

describe('trustProxyOption', () => {
  it('maps booleans, hop counts and address lists', () => {
    expect(trustProxyOption('false')).toBe(false);
    expect(trustProxyOption('true')).toBe(true);
    expect(trustProxyOption('2')).toBe(2);
    expect(trustProxyOption('10.0.0.0/8, 127.0.0.1')).toEqual(['10.0.0.0/8', '127.0.0.1']);
  });
});

/** The ConfigError checkListener throws for `env` (after loadConfig accepted it); fails the test when it throws none. */
function listenerError(env: Record<string, string>): ConfigError {
  try {
    checkListener(loadConfig(env), env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error(`checkListener accepted ${JSON.stringify(env)}`);
}

describe('HOST and a loopback PUBLIC_URL (the issuer every lock trusts)', () => {
  it('listens on every interface by default once PUBLIC_URL names another machine, else on localhost', () => {
    expect(loadConfig({ PUBLIC_URL: 'https://acs.example.com' }).HOST).toBe('0.0.0.0');
    expect(loadConfig({ PUBLIC_URL: 'http://127.1.2.3:9000' }).HOST).toBe('localhost');
    expect(loadConfig({ PUBLIC_URL: 'https://acs.example.com', HOST: '10.0.0.5' }).HOST).toBe('10.0.0.5');
  });

  it.each([
    [{ HOST: '0.0.0.0' }],
    [{ HOST: '::' }],
    [{ HOST: '0.0.0.0', PUBLIC_URL: 'http://localhost:8080' }],
    [{ HOST: '192.168.1.10', PUBLIC_URL: 'https://127.0.0.1:8443/acs' }],
    [{ HOST: '0.0.0.0', PUBLIC_URL: 'http://[::1]:8080' }],
    [{ HOST: '0.0.0.0', PUBLIC_URL: 'http://acs.localhost' }],
  ])('refuses a start on %j, saying why and what to set', (env) => {
    const error = listenerError(env);
    expect(error.problems).toHaveLength(1);
    const [problem] = error.problems;
    expect(problem).toContain('PUBLIC_URL');
    expect(problem).toContain('/tenants/{tenant}');
    expect(problem).toMatch(/re-provisioning every lock/);
    expect(problem).toContain('HOST=127.0.0.1');
    expect(problem).toContain('ALLOW_LOOPBACK_PUBLIC_URL=true');
    if (!('PUBLIC_URL' in env)) expect(problem).toContain('PUBLIC_URL is unset');
  });

  it.each([
    [{}],
    [{ HOST: '127.0.0.1' }],
    [{ HOST: '::1' }],
    [{ HOST: 'localhost', PUBLIC_URL: 'http://localhost:9000' }],
    [{ PUBLIC_URL: 'http://127.1.2.3' }],
    [{ HOST: '0.0.0.0', PUBLIC_URL: 'https://acs.example.com' }],
    [{ HOST: '0.0.0.0', ALLOW_LOOPBACK_PUBLIC_URL: 'true' }],
    [{ HOST: '0.0.0.0', PUBLIC_URL: 'http://localhost:8080', ALLOW_LOOPBACK_PUBLIC_URL: 'true' }],
  ])('lets %j start', (env) => {
    expect(() => checkListener(loadConfig(env), env)).not.toThrow();
  });

  it('refuses a METRICS_PORT equal to PORT', () => {
    expect(listenerError({ HOST: '127.0.0.1', PORT: '8080', METRICS_PORT: '8080' }).problems).toEqual([
      'METRICS_PORT=8080: must differ from PORT, the API listener',
    ]);
  });

  it('tells loopback names and addresses from the others', () => {
    for (const host of ['localhost', 'LOCALHOST', 'a.localhost', '127.0.0.1', '127.255.0.9', '::1', '[::1]', '0:0:0:0:0:0:0:1', '::ffff:127.0.0.1']) {
      expect(isLoopbackHost(host), host).toBe(true);
    }
    for (const host of ['0.0.0.0', '::', '10.0.0.1', '128.0.0.1', 'localhost.example.com', 'acs.example.com', '::2', '::ffff:10.0.0.1']) {
      expect(isLoopbackHost(host), host).toBe(false);
    }
  });
});

describe('the server process and a loopback PUBLIC_URL', () => {
  afterAll(killAll);

  it('refuses to listen on every interface with the default PUBLIC_URL, and says why', async () => {
    const server = spawnNode('src/server.ts', [], { HOST: '0.0.0.0', PORT: String(await freePort()) });
    const exit = await server.waitForExit(PATIENCE_MS);
    expect(exit.code).toBe(78); // EX_CONFIG
    expect(server.stderr()).toContain('PUBLIC_URL is unset, so it defaults to http://localhost:');
    expect(server.stderr()).toContain('re-provisioning every lock');
    expect(server.stdout()).not.toMatch(/listening/i);
  });

  it.each([
    ['with ALLOW_LOOPBACK_PUBLIC_URL=true on every interface', { HOST: '0.0.0.0', ALLOW_LOOPBACK_PUBLIC_URL: 'true' }],
    ['on a loopback HOST with the default PUBLIC_URL', { HOST: '127.0.0.1' }],
    ['with neither HOST nor PUBLIC_URL (the quick start), on localhost', {}],
  ])('starts %s', async (_name, env: Record<string, string>) => {
    // Already migrated, so the start is quick.
    const directory = await createSeededDataDir();
    try {
      const port = await freePort();
      const server = spawnNode('src/server.ts', [], { ...env, PORT: String(port), DATA_DIR: directory.path, LOG_LEVEL: 'warn' });
      const response = await waitForUrl(`http://127.0.0.1:${port}/.well-known/oauth-authorization-server`, PATIENCE_MS, server);
      expect(((await response.json()) as { issuer: string }).issuer).toBe(`http://localhost:${port}`);
      server.process.kill('SIGTERM');
      expect(await server.waitForExit(PATIENCE_MS)).toEqual({ code: 0, signal: null });
    } finally {
      directory.remove();
    }
  });
});

describe('the server process with a bad variable', () => {
  afterAll(killAll);

  it('exits non-zero and names the variable on stderr', async () => {
    const server = spawnNode('src/server.ts', [], { PORT: 'abc' });
    const exit = await server.waitForExit(PATIENCE_MS);
    expect(exit.code).not.toBe(0);
    expect(exit.code).toBe(78); // EX_CONFIG
    expect(server.stderr()).toMatch(/PORT/);
    expect(server.stderr()).not.toMatch(/\n\s+at /); // a message, not a stack trace
    expect(server.stdout()).not.toMatch(/listening/i);
  });
});
