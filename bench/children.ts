// Child processes for the bench: the build, the servers under test, their readiness and their shutdown.
import { spawn, type ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';

/** Every child still running; killed synchronously if the bench itself exits unexpectedly. */
const live = new Set<ChildProcess>();

process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

/** The last lines a child printed, kept to explain a failure. */
class OutputTail {
  private readonly lines: string[] = [];
  count = 0;
  private partial = '';

  constructor(private readonly max = 40) {}

  push(chunk: Buffer): void {
    const text = this.partial + chunk.toString('utf8');
    const parts = text.split('\n');
    this.partial = parts.pop() ?? '';
    for (const line of parts) this.add(line);
  }

  private add(line: string): void {
    this.count += 1;
    this.lines.push(line);
    if (this.lines.length > this.max) this.lines.shift();
  }

  text(): string {
    return [...this.lines, ...(this.partial ? [this.partial] : [])].join('\n');
  }
}

/** Runs a command to completion with inherited output; rejects on a non-zero exit. */
export function runCommand(command: string, args: string[], options: { cwd: string }): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, stdio: 'inherit' });
    live.add(child);
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      live.delete(child);
      if (code === 0) resolve();
      else reject(new Error(`${command} ${args.join(' ')} failed (${signal ?? `exit code ${code}`})`));
    });
  });
}

/** Runs a command, feeding `input` to its stdin, and resolves its stdout; rejects with its stderr on failure. */
export function captureCommand(
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; input?: string },
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ['pipe', 'pipe', 'pipe'] });
    live.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      live.delete(child);
      if (code === 0) resolve(stdout);
      else reject(new Error(`${command} ${args.join(' ')} failed (${signal ?? `exit code ${code}`}): ${stderr.trim()}`));
    });
    child.stdin.end(options.input ?? '');
  });
}

export interface ServerLaunch {
  /** Used in messages: `app`, `baseline hello`, ... */
  label: string;
  command: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  port: number;
  readyPath: string;
  readyTimeoutMs: number;
  signal: AbortSignal;
}

/** A server running as a child process on 127.0.0.1. */
export class ChildServer {
  readonly url: string;
  private readonly child: ChildProcess;
  private readonly output = new OutputTail();
  private exitInfo: string | null = null;
  private readonly exited: Promise<void>;
  private stopping = false;

  /** The process id, to read the server's memory. */
  get pid(): number {
    return this.child.pid ?? -1;
  }

  private constructor(readonly launch: ServerLaunch) {
    this.url = `http://127.0.0.1:${launch.port}`;
    this.child = spawn(launch.command, launch.args, {
      cwd: launch.cwd,
      env: launch.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    live.add(this.child);
    this.child.stdout?.on('data', (chunk: Buffer) => this.output.push(chunk));
    this.child.stderr?.on('data', (chunk: Buffer) => this.output.push(chunk));
    this.exited = new Promise((resolve) => {
      this.child.on('error', (error) => {
        this.exitInfo = `could not start: ${error.message}`;
        live.delete(this.child);
        resolve();
      });
      this.child.on('exit', (code, signal) => {
        this.exitInfo = signal ? `killed by ${signal}` : `exit code ${code}`;
        live.delete(this.child);
        resolve();
      });
    });
  }

  /** Starts the process and resolves once `readyPath` answers 2xx; rejects (after stopping it) otherwise. */
  static async start(launch: ServerLaunch): Promise<ChildServer> {
    const server = new ChildServer(launch);
    try {
      await server.waitUntilReady();
      return server;
    } catch (error) {
      await server.stop();
      throw error;
    }
  }

  private async waitUntilReady(): Promise<void> {
    const deadline = Date.now() + this.launch.readyTimeoutMs;
    let last = 'no answer yet';
    while (Date.now() < deadline) {
      this.launch.signal.throwIfAborted();
      if (this.exitInfo !== null) {
        throw new Error(`${this.launch.label} stopped before it was ready (${this.exitInfo}):\n${this.output.text()}`);
      }
      try {
        const response = await fetch(this.url + this.launch.readyPath, { signal: AbortSignal.timeout(1000) });
        await response.arrayBuffer();
        if (response.ok) return;
        last = `GET ${this.launch.readyPath} answered ${response.status}`;
      } catch (error) {
        last = error instanceof Error ? error.message : String(error);
      }
      await sleep(100);
    }
    throw new Error(
      `${this.launch.label} was not ready within ${this.launch.readyTimeoutMs} ms (${last}):\n${this.output.text()}`,
    );
  }

  /** Fails when the process has stopped on its own: a crash under load must not pass as a slow run. */
  assertRunning(): void {
    if (this.exitInfo !== null && !this.stopping) {
      throw new Error(`${this.launch.label} stopped unexpectedly (${this.exitInfo}):\n${this.output.text()}`);
    }
  }

  /** How many lines it has printed (at LOG_LEVEL=warn, each one is worth a look) and the last of them. */
  printed(): { lines: number; tail: string } {
    return { lines: this.output.count, tail: this.output.text() };
  }

  /** SIGTERM (the server's graceful shutdown), then SIGKILL after `graceMs`. */
  async stop(graceMs = 5000): Promise<void> {
    this.stopping = true;
    if (this.exitInfo !== null) return;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(timer);
  }
}
