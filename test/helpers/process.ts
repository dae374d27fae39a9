// Spawns the real server and CLI as child processes: free ports, clean environments, bounded waits, no orphans.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * How long a test waits for something that will happen (a process to start, answer, print or exit; a worker to catch
 * up): a deadline only ends a wait that would otherwise hang, so it is generous. At load 30-35 on 2 cores a spawned
 * server took over 120 s to answer /healthz (test/server.test.ts); the same waits end within seconds when the machine
 * is idle.
 */
export const PATIENCE_MS = 300_000;

/** The repository root: spawned processes run from here, like `npm start`. */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Variables passed through to children; everything else (DATABASE_URL, TEST_DATABASE_URL, PORT, …) is left out. */
const PASSED_THROUGH = ['PATH', 'HOME', 'TMPDIR', 'TEMP', 'TMP', 'LANG', 'SystemRoot'];

/** A minimal environment for a child: only what `env` sets is configuration. */
export function childEnv(env: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const result: NodeJS.ProcessEnv = {};
  for (const key of PASSED_THROUGH) {
    const value = process.env[key];
    if (value !== undefined) result[key] = value;
  }
  for (const [key, value] of Object.entries(env)) {
    if (value !== undefined) result[key] = value;
  }
  return result;
}

/** A TCP port nobody listens on right now (the OS picks it; we close before the child binds it). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === 'object') resolve(address.port);
        else reject(new Error('no port'));
      });
    });
  });
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface Child {
  process: ChildProcess;
  pid: number;
  /** Everything written so far. */
  stdout(): string;
  stderr(): string;
  /** Resolves once the process has exited (never rejects). */
  exited: Promise<Exit>;
  /** The exit, or a rejection naming the output if it takes longer than `ms`. */
  waitForExit(ms: number): Promise<Exit>;
  /** Resolves once stdout or stderr matches `pattern`; rejects on exit or after `ms`. */
  waitForOutput(pattern: RegExp, ms: number): Promise<void>;
  /** SIGKILL if still running; resolves when gone. */
  kill(): Promise<void>;
}

const running = new Set<Child>();

// A crashed test run must not leave servers behind holding ports and data directories.
process.once('exit', () => {
  for (const child of running) child.process.kill('SIGKILL');
});

/**
 * A module of src/ as the compiled file that runs it (dist/, built once per run by the global setup): what `acs`,
 * `npm start` and the Docker image run, and about a third of the start-up CPU of compiling the source through tsx on
 * every spawn. Other scripts run through tsx.
 */
export function nodeArguments(script: string): string[] {
  const compiled = /^src\/(.+)\.ts$/.exec(script);
  return compiled ? [`dist/${compiled[1]}.js`] : ['--import', 'tsx', script];
}

/** `node <script> ...args` from the repository root (see nodeArguments), with exactly the environment given. */
export function spawnNode(script: string, args: string[] = [], env: Record<string, string | undefined> = {}): Child {
  const child = spawn(process.execPath, [...nodeArguments(script), ...args], {
    cwd: ROOT,
    env: childEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  const exited = new Promise<Exit>((resolve) => {
    // 'close', not 'exit': 'exit' may come before the last of the child's output has been read from its pipes.
    child.once('close', (code, signal) => resolve({ code, signal }));
    child.once('error', () => resolve({ code: null, signal: null }));
  });
  const describe = () => `\n--- stdout ---\n${out}\n--- stderr ---\n${err}`;

  const handle: Child = {
    process: child,
    pid: child.pid ?? -1,
    stdout: () => out,
    stderr: () => err,
    exited,
    waitForExit(ms) {
      return withDeadline(exited, ms, () => `${script} did not exit within ${ms} ms${describe()}`);
    },
    waitForOutput(pattern, ms) {
      return withDeadline(
        new Promise<void>((resolve, reject) => {
          const check = () => {
            if (pattern.test(out) || pattern.test(err)) {
              cleanup();
              resolve();
            }
          };
          const onExit = () => {
            cleanup();
            // Output may still be buffered when 'exit' fires; one last look.
            setImmediate(() => (pattern.test(out) || pattern.test(err) ? resolve() : reject(new Error(`${script} exited before printing ${pattern}${describe()}`))));
          };
          const cleanup = () => {
            child.stdout!.off('data', check);
            child.stderr!.off('data', check);
            child.off('close', onExit);
          };
          child.stdout!.on('data', check);
          child.stderr!.on('data', check);
          child.once('close', onExit);
          check();
        }),
        ms,
        () => `${script} did not print ${pattern} within ${ms} ms${describe()}`,
      );
    },
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await withDeadline(exited, 5000, () => `${script} survived SIGKILL`);
    },
  };
  running.add(handle);
  void exited.then(() => running.delete(handle));
  return handle;
}

/** Kills every child still running: call it in afterEach/afterAll of every file that spawns. */
export async function killAll(): Promise<void> {
  await Promise.all([...running].map((child) => child.kill()));
}

/** Polls `url` until it answers `status` (any HTTP answer when omitted); rejects after `ms` or if `child` exits. */
export async function waitForUrl(url: string, ms: number, child?: Child): Promise<Response> {
  const deadline = Date.now() + ms;
  let last: unknown;
  let exited = false;
  void child?.exited.then(() => (exited = true));
  while (Date.now() < deadline) {
    if (exited) throw new Error(`process exited before ${url} answered${child ? `\n${child.stderr()}` : ''}`);
    try {
      return await fetch(url, { signal: AbortSignal.timeout(Math.max(100, deadline - Date.now())) });
    } catch (error) {
      last = error;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${url} did not answer within ${ms} ms: ${String(last)}${child ? `\n${child.stdout()}\n${child.stderr()}` : ''}`);
}

/** A temporary directory removed by the returned function. */
export function temporaryDirectory(prefix = 'acs-test-'): { path: string; remove(): void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

function withDeadline<T>(promise: Promise<T>, ms: number, message: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(message())), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
