// The real server process over HTTP: probes, graceful shutdown, the embedded DATA_DIR lock, restarts that keep data.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { Queryable } from '../src/db/database.js';
import { readMigrations } from '../src/db/migrate.js';
import { DataDirInUseError, acquireDataDirLock, createPgliteDatabase } from '../src/db/pglite.js';
import { buildTestApp } from './helpers/app.js';
import { createEmptyTestDatabase, createSeededDataDir, createTestDatabase } from './helpers/database.js';
import { postgresTestUrl } from './helpers/postgres-url.js';
import { PATIENCE_MS, ROOT, childEnv, freePort, killAll, spawnNode, temporaryDirectory, waitForUrl, type Child } from './helpers/process.js';

const SECRETS_KEY = '0123456789abcdef'.repeat(4);
const START_MS = PATIENCE_MS;
const STOP_MS = PATIENCE_MS;
const usePostgres = postgresTestUrl() !== undefined;

interface Running {
  child: Child;
  port: number;
  base: string;
}

/** Starts the server (`node dist/server.js`) on a free port and waits until /healthz answers. */
async function startServer(store: Record<string, string>): Promise<Running> {
  const port = await freePort();
  const child = spawnNode('src/server.ts', [], {
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    // A graceful stop that runs out of this exits 1; on a loaded machine closing the database alone can take seconds.
    SHUTDOWN_TIMEOUT_MS: '60000',
    ...store,
  });
  const base = `http://127.0.0.1:${port}`;
  const health = await waitForUrl(`${base}/healthz`, START_MS, child);
  expect(health.status).toBe(200);
  return { child, port, base };
}

async function stopServer(server: Running): Promise<void> {
  server.child.process.kill('SIGTERM');
  const exit = await server.child.waitForExit(STOP_MS);
  expect(exit).toEqual({ code: 0, signal: null });
}

/** Where a spawned server keeps its data: a DATA_DIR, or a PostgreSQL database. */
interface Store {
  env: Record<string, string>;
  dataDir: string | undefined;
  /** Runs `work` on the store: while no server holds it (embedded), or at any time (PostgreSQL). */
  use<T>(work: (db: Queryable) => Promise<T>): Promise<T>;
  remove(): Promise<void>;
}

const stores: Store[] = [];

/**
 * A store for one test. `fresh`: nothing in it, so the server's first start applies every migration itself;
 * otherwise already migrated (a seeded DATA_DIR, a clone of the template database), which starts faster.
 */
async function newStore(fresh: boolean): Promise<Store> {
  let store: Store;
  if (usePostgres) {
    const database = fresh ? await createEmptyTestDatabase() : await createTestDatabase();
    store = {
      env: { DATABASE_URL: database.url!, SECRETS_KEY },
      dataDir: undefined,
      use: (work) => work(database.db),
      remove: () => database.db.close(),
    };
  } else {
    const directory = fresh ? temporaryDirectory('acs-server-') : await createSeededDataDir();
    store = {
      env: { DATA_DIR: directory.path },
      dataDir: directory.path,
      async use(work) {
        // Opening it takes the DATA_DIR lock: this also proves the server released it.
        const db = await createPgliteDatabase({ dataDir: directory.path });
        try {
          return await work(db);
        } finally {
          await db.close();
        }
      },
      remove: async () => directory.remove(),
    };
  }
  stores.push(store);
  return store;
}

afterEach(async () => {
  await killAll();
});
afterAll(async () => {
  await killAll();
  for (const store of stores) await store.remove();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe(`the real server (${usePostgres ? 'PostgreSQL' : 'embedded PGlite'})`, () => {
  it('serves the probes over HTTP, then exits 0 on SIGTERM, closing its port and releasing DATA_DIR', async () => {
    const store = await newStore(false);
    const server = await startServer(store.env);

    const health = await fetch(`${server.base}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
    expect(health.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const ready = await fetch(`${server.base}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready' });
    const missing = await fetch(`${server.base}/nothing`, { headers: { 'x-request-id': 'over-the-wire-1' } });
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    // The server makes its own request id; the client's X-Request-Id is only logged (clientRequestId).
    const requestId = missing.headers.get('x-request-id');
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(requestId).not.toBe('over-the-wire-1');
    expect(await missing.json()).toMatchObject({ status: 404, requestId });
    if (store.dataDir) {
      expect(readFileSync(join(store.dataDir, 'server.lock'), 'utf8')).toBe(String(server.child.pid));
    }

    await stopServer(server);

    await expect(fetch(`${server.base}/healthz`)).rejects.toThrow();
    expect(server.child.stdout()).toMatch(/"signal":"SIGTERM".*"msg":"shutting down"/);
    expect(server.child.stderr()).not.toMatch(/Error|Cannot/);
    if (store.dataDir) expect(existsSync(join(store.dataDir, 'server.lock'))).toBe(false);
  });

  it('answers a request in flight at SIGTERM, then exits 0 without waiting out SHUTDOWN_TIMEOUT_MS', async () => {
    // No route is slow, so the request is kept in flight by its body: headers now, the rest after the signal.
    const store = await newStore(false);
    const server = await startServer({ ...store.env, SHUTDOWN_TIMEOUT_MS: '60000' });
    const socket = connect(server.port, '127.0.0.1');
    let received = '';
    socket.setEncoding('utf8').on('data', (chunk: string) => (received += chunk));
    const socketClosed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    try {
      const body = '{"probe":"in flight"}';
      socket.write(
        `POST /in-flight HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 5)}`,
      );
      // Logged once the headers are parsed and routed: from here the request is in flight, waiting for its body.
      await server.child.waitForOutput(/"url":"\/in-flight".*"msg":"incoming request"/, PATIENCE_MS);

      server.child.process.kill('SIGTERM');
      await server.child.waitForOutput(/shutting down/, PATIENCE_MS);
      socket.write(body.slice(5));

      const exit = await server.child.waitForExit(STOP_MS);
      // The process is gone, so its end of the connection is closed: everything it sent has arrived.
      await socketClosed;
      expect(received).toMatch(/^HTTP\/1\.1 404 /); // answered, not cut off
      // A graceful exit: running out of SHUTDOWN_TIMEOUT_MS exits 1 (close-with-grace), whatever the clock says.
      expect(exit).toEqual({ code: 0, signal: null });
      // RFC 9112 section 9.6: a server about to close says so, so the client does not send another request on it.
      expect(received).toMatch(/^connection: close\r$/im);
    } finally {
      socket.destroy();
    }
  });

  it('keeps its data across a restart and does not apply migrations twice', async () => {
    const store = await newStore(true);
    const versions = readMigrations().map((migration) => migration.version);

    const first = await startServer(store.env);
    expect((await fetch(`${first.base}/readyz`)).status).toBe(200);
    await stopServer(first);
    const appliedLine = first.child
      .stdout()
      .split('\n')
      .find((line) => line.includes('"msg":"migrations applied"'));
    expect(appliedLine).toBeDefined();
    expect(JSON.parse(appliedLine!).applied).toEqual(versions);

    // Data written between the runs must still be there after the next one.
    const ledgerBefore = await store.use(async (db) => {
      await db.query('CREATE TABLE restart_probe (note text NOT NULL)');
      await db.query("INSERT INTO restart_probe VALUES ('written between runs')");
      return (await db.query('SELECT version, checksum, applied_at FROM schema_migrations ORDER BY version')).rows;
    });
    expect(ledgerBefore.map((row) => row.version)).toEqual(versions);

    const second = await startServer(store.env);
    expect((await fetch(`${second.base}/readyz`)).status).toBe(200);
    await stopServer(second);

    expect(second.child.stdout()).toMatch(/Server listening/);
    expect(second.child.stdout()).not.toMatch(/migrations applied/);
    await store.use(async (db) => {
      expect((await db.query('SELECT note FROM restart_probe')).rows).toEqual([{ note: 'written between runs' }]);
      const ledgerAfter = await db.query('SELECT version, checksum, applied_at FROM schema_migrations ORDER BY version');
      expect(ledgerAfter.rows).toEqual(ledgerBefore);
    });
  });
});

describe('the embedded database lock', () => {
  it('refuses a second server on the same DATA_DIR while the first keeps serving', async () => {
    const directory = await createSeededDataDir();
    try {
      const first = await startServer({ DATA_DIR: directory.path });
      const lockFile = join(directory.path, 'server.lock');
      expect(readFileSync(lockFile, 'utf8')).toBe(String(first.child.pid));

      const second = spawnNode('src/server.ts', [], {
        PORT: String(await freePort()),
        HOST: '127.0.0.1',
        DATA_DIR: directory.path,
      });
      const exit = await second.waitForExit(START_MS);

      expect(exit.code).not.toBe(0);
      expect(exit.code).not.toBeNull();
      expect(second.stderr()).toMatch(/in use by process \d+/);
      expect(second.stderr()).toContain(String(first.child.pid));
      expect(second.stderr()).not.toMatch(/\n\s+at /);
      // The refused server left the lock and the database alone.
      expect(readFileSync(lockFile, 'utf8')).toBe(String(first.child.pid));
      const ready = await fetch(`${first.base}/readyz`);
      expect(ready.status).toBe(200);
      await stopServer(first);
    } finally {
      await killAll();
      directory.remove();
    }
  });

  it('takes over the lock of a server that crashed, and its data is intact', async () => {
    const directory = await createSeededDataDir();
    try {
      const crashed = await startServer({ DATA_DIR: directory.path });
      crashed.child.process.kill('SIGKILL');
      expect((await crashed.child.waitForExit(STOP_MS)).signal).toBe('SIGKILL');
      const lockFile = join(directory.path, 'server.lock');
      // A dead holder's lock stays behind...
      expect(readFileSync(lockFile, 'utf8')).toBe(String(crashed.child.pid));

      const next = await startServer({ DATA_DIR: directory.path });

      // ...and the next server takes it over without re-applying anything.
      expect(readFileSync(lockFile, 'utf8')).toBe(String(next.child.pid));
      expect((await fetch(`${next.base}/readyz`)).status).toBe(200);
      expect(next.child.stdout()).not.toMatch(/migrations applied/);
      await stopServer(next);
    } finally {
      await killAll();
      directory.remove();
    }
  });

  it('treats a lock naming a process that no longer exists as stale, and refuses one naming a live process', () => {
    const directory = temporaryDirectory('acs-stale-');
    const lockFile = join(directory.path, 'server.lock');
    try {
      const gone = spawnSync(process.execPath, ['-e', '']);
      expect(gone.status).toBe(0);
      writeFileSync(lockFile, String(gone.pid));

      const release = acquireDataDirLock(directory.path);
      expect(readFileSync(lockFile, 'utf8')).toBe(String(process.pid));
      release();
      expect(existsSync(lockFile)).toBe(false);

      // pid 1 always exists: its lock is honoured.
      writeFileSync(lockFile, '1');
      expect(() => acquireDataDirLock(directory.path)).toThrow(DataDirInUseError);
      expect(readFileSync(lockFile, 'utf8')).toBe('1');
    } finally {
      directory.remove();
    }
  });
});

describe('graceful shutdown in process', () => {
  it('lets an in-flight request finish, then closes the connection and the database', async () => {
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const t = await buildTestApp(
      {},
      {
        beforeReady(app) {
          app.get('/test/slow', async () => {
            entered();
            await new Promise((resolve) => setTimeout(resolve, 300));
            return { finished: true };
          });
        },
      },
    );
    const address = await t.app.listen({ port: 0, host: '127.0.0.1' });

    const inFlight = fetch(`${address}/test/slow`);
    await inside;
    const closeStarted = Date.now();
    const closing = t.app.close();

    const response = await inFlight;
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ finished: true });
    // The keep-alive connection that carried it must not hold the close open (the client would keep it ~72 s)...
    // Generous for a loaded machine, and still well short of the ~72 s a held keep-alive connection would take.
    const closed = await Promise.race([closing.then(() => true), sleep(30_000).then(() => false)]);
    if (!closed) {
      // Finish the close before failing, so no socket or database outlives the test.
      t.app.server.closeAllConnections();
      await closing;
    }
    expect(closed, 'app.close() still waiting 30 s after the in-flight request was answered').toBe(true);
    // ...and the answer says the connection ends (RFC 9112 section 9.6), so the client opens a new one.
    expect(response.headers.get('connection')).toBe('close');
    expect(Date.now() - closeStarted).toBeGreaterThanOrEqual(200); // it waited for the request
    await expect(fetch(`${address}/healthz`)).rejects.toThrow();
    await expect(t.database.db.query('SELECT 1')).rejects.toThrow();
  });
});

describe('npm start', () => {
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  const gone = async (pid: number, ms: number) => {
    const deadline = Date.now() + ms;
    while (alive(pid) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    return !alive(pid);
  };

  /** `npm start` (dist/ is built by the global setup, so the pre-script is skipped) and the server's own pid. */
  async function npmStart(): Promise<{ npm: ChildProcess; server: number; remove(): void }> {
    const dataDir = temporaryDirectory();
    const port = await freePort();
    const npm = spawn('npm', ['start', '--ignore-scripts'], {
      cwd: ROOT,
      env: childEnv({ PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir.path, LOG_LEVEL: 'warn' }),
      stdio: 'ignore',
    });
    try {
      expect((await waitForUrl(`http://127.0.0.1:${port}/healthz`, START_MS)).status).toBe(200);
      const children = spawnSync('pgrep', ['-P', String(npm.pid)], { encoding: 'utf8' }).stdout.trim().split('\n');
      expect(children).toHaveLength(1);
      const server = Number(children[0]);
      // No shell between npm and node: the start script `exec`s it.
      expect(readFileSync(`/proc/${server}/cmdline`, 'utf8').split('\0').slice(0, 3)).toEqual([
        expect.stringMatching(/(^|\/)node$/),
        '--max-semi-space-size=64',
        'dist/server.js',
      ]);
      return { npm, server, remove: () => dataDir.remove() };
    } catch (error) {
      npm.kill('SIGKILL');
      dataDir.remove();
      throw error;
    }
  }

  it.runIf(process.platform === 'linux')('stops the server when npm gets SIGTERM', async () => {
    const started = await npmStart();
    started.npm.kill('SIGTERM');
    expect(await gone(started.server, STOP_MS)).toBe(true);
    started.remove();
  });

  it.runIf(process.platform === 'linux')('stops the server when npm is killed outright (SIGKILL forwards nothing)', async () => {
    const started = await npmStart();
    started.npm.kill('SIGKILL');
    expect(await gone(started.server, STOP_MS)).toBe(true);
    started.remove();
  });
});
