// The command line as a process: help, usage errors, `migrate`, and refusing a DATA_DIR a server holds.
import { spawn } from 'node:child_process';
import { readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readMigrations } from '../src/db/migrate.js';
import { createPgliteDatabase } from '../src/db/pglite.js';
import { createEmptyTestDatabase, createSeededDataDir } from './helpers/database.js';
import { postgresTestUrl } from './helpers/postgres-url.js';
import { PATIENCE_MS, ROOT, childEnv, freePort, killAll, spawnNode, temporaryDirectory, waitForUrl } from './helpers/process.js';

const RUN_MS = PATIENCE_MS;
const usePostgres = postgresTestUrl() !== undefined;
const cleanups: (() => unknown)[] = [];

/** Runs the CLI (`node dist/cli.js ...args`) to completion with exactly `env`. */
async function cli(args: string[], env: Record<string, string> = {}) {
  const child = spawnNode('src/cli.ts', args, { LOG_LEVEL: 'info', ...env });
  const exit = await child.waitForExit(RUN_MS);
  return { code: exit.code, stdout: child.stdout(), stderr: child.stderr() };
}

// Not afterEach: the concurrent tests below would kill each other's processes.
afterAll(async () => {
  await killAll();
  for (const cleanup of cleanups.reverse()) await cleanup();
});

// Each of these is a separate short process: run them side by side.
describe.concurrent('cli help and usage errors', () => {
  it('prints the usage on --help and exits 0', async ({ expect }) => {
    const result = await cli(['--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Usage: /);
    expect(result.stdout).toMatch(/^\s+migrate\b/m);
    expect(result.stderr).toBe('');
  });

  it('prints a command usage on COMMAND --help', async ({ expect }) => {
    const result = await cli(['migrate', '--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('migrate [--json]');
    expect(result.stderr).toBe('');
  });

  it('refuses an unknown command on stderr with a non-zero exit', async ({ expect }) => {
    const result = await cli(['frobnicate']);
    expect(result.code).not.toBe(0);
    expect(result.code).toBe(2); // usage error
    expect(result.stderr).toMatch(/^Unknown command: frobnicate/);
    expect(result.stderr).toContain('migrate');
    expect(result.stdout).toBe('');
  });

  it('refuses an unknown option, naming it', async ({ expect }) => {
    const result = await cli(['migrate', '--frobnicate']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--frobnicate');
    expect(result.stdout).toBe('');
  });

  it('refuses a bad configuration with exit code 78, naming the variable', async ({ expect }) => {
    const result = await cli(['migrate'], { LOG_LEVEL: 'loud' });
    expect(result.code).toBe(78);
    expect(result.stderr).toContain('LOG_LEVEL');
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });
});

describe(`cli migrate (${usePostgres ? 'PostgreSQL' : 'embedded PGlite'})`, () => {
  it('applies every migration to a fresh database, prints them as JSON, then has nothing left to do', async () => {
    const versions = readMigrations().map((migration) => migration.version);
    let env: Record<string, string>;
    let ledger: () => Promise<number[]>;
    if (usePostgres) {
      const database = await createEmptyTestDatabase();
      cleanups.push(() => database.db.close());
      env = { DATABASE_URL: database.url!, SECRETS_KEY: 'ab'.repeat(32) };
      ledger = async () =>
        (await database.db.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version')).rows.map(
          (row) => row.version,
        );
    } else {
      const directory = temporaryDirectory('acs-cli-');
      cleanups.push(() => directory.remove());
      env = { DATA_DIR: directory.path };
      ledger = async () => {
        const db = await createPgliteDatabase({ dataDir: directory.path });
        try {
          return (await db.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version')).rows.map(
            (row) => row.version,
          );
        } finally {
          await db.close();
        }
      };
    }

    const first = await cli(['migrate', '--json'], env);
    const second = await cli(['migrate', '--json'], env);
    const third = await cli(['migrate'], env);

    expect(first.code, first.stderr).toBe(0);
    expect(await ledger()).toEqual(versions);
    expect(second.code, second.stderr).toBe(0);
    expect(JSON.parse(second.stdout)).toEqual({ applied: [] });
    expect(second.stdout.trim().split('\n')).toHaveLength(1); // nothing but the JSON on stdout
    expect(third.code, third.stderr).toBe(0);
    expect(third.stdout).toBe('Up to date.\n');
    // The first run reports what it applied.
    expect(JSON.parse(first.stdout)).toEqual({ applied: versions });
  });
});

describe('cli on an embedded DATA_DIR a server holds', () => {
  it('refuses to run, says the database is in use, and leaves the server serving', async () => {
    const directory = await createSeededDataDir();
    cleanups.push(() => directory.remove());
    const port = await freePort();
    const server = spawnNode('src/server.ts', [], { PORT: String(port), HOST: '127.0.0.1', DATA_DIR: directory.path });
    try {
      expect((await waitForUrl(`http://127.0.0.1:${port}/readyz`, RUN_MS, server)).status).toBe(200);

      const result = await cli(['migrate', '--json'], { DATA_DIR: directory.path });

      expect(result.code).not.toBe(0);
      expect(result.stderr).toMatch(/in use by process \d+/);
      expect(result.stderr).toContain(String(server.pid));
      expect(result.stdout).toBe('');
      expect(readFileSync(join(directory.path, 'server.lock'), 'utf8')).toBe(String(server.pid));
      expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);

      server.process.kill('SIGTERM');
      expect((await server.waitForExit(PATIENCE_MS)).code).toBe(0);
    } finally {
      await server.kill();
    }
  });
});

describe('the commands package.json names (`bin`)', () => {
  it('are the compiled CLI and simulator, and run through a link of their name without a build, as the image links them', async () => {
    const { bin } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string> };
    expect(bin).toEqual({ acs: 'dist/cli.js', 'acs-simulate': 'dist/simulator/cli.js' });
    const directory = temporaryDirectory('acs-bin-');
    cleanups.push(() => directory.remove());
    for (const [name, target] of Object.entries(bin)) {
      // npm and the Dockerfile run these as executables: the shebang picks node.
      expect(readFileSync(join(ROOT, target), 'utf8').split('\n')[0], target).toBe('#!/usr/bin/env node');
      // Linked under its own name elsewhere (/usr/local/bin/acs in the image): the entry point must still run.
      const link = join(directory.path, name);
      symlinkSync(join(ROOT, target), link);
      const child = spawn(process.execPath, [link, '--help'], { cwd: directory.path, env: childEnv({}), stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
      const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
      expect(code, `${name} --help`).toBe(0);
      expect(stdout, name).toMatch(/^Usage: /);
    }
  });
});
