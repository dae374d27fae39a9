// Real server processes and CLI runs for the reliability suite: bounded starts, JSON output, HTTP helpers.
import { spawn } from 'node:child_process';
import { ROOT, childEnv, freePort, spawnNode, waitForUrl, type Child } from '../../test/helpers/process.js';

export const SECRETS_KEY = '0123456789abcdef'.repeat(4);

export interface Server {
  child: Child;
  base: string;
}

/** `node --import tsx src/server.ts` on a free port; resolves once /readyz answers 200. */
export async function startServer(env: Record<string, string>, readyWithinMs = 90_000): Promise<Server> {
  const port = await freePort();
  const child = spawnNode('src/server.ts', [], { PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...env });
  const base = `http://127.0.0.1:${port}`;
  await waitUntilReady(base, readyWithinMs, child);
  return { child, base };
}

export async function waitUntilReady(base: string, ms: number, child?: Child): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    const response = await waitForUrl(`${base}/readyz`, Math.max(1, deadline - Date.now()), child);
    if (response.status === 200) return;
    if (Date.now() > deadline) throw new Error(`${base}/readyz still ${response.status} after ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** `node --import tsx src/cli.ts ...args --json` with `stdin`; the parsed JSON it prints, or a thrown error. */
export async function cli(args: string[], env: Record<string, string>, stdin = '', ms = 60_000): Promise<Record<string, string>> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args, '--json'], {
    cwd: ROOT,
    env: childEnv(env),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  child.stdin.end(stdin);
  const timer = setTimeout(() => child.kill('SIGKILL'), ms);
  const code = await new Promise<number | null>((resolve) => child.once('exit', (exitCode) => resolve(exitCode)));
  clearTimeout(timer);
  if (code !== 0) throw new Error(`cli ${args.join(' ')} exited ${code}: ${err}`);
  return JSON.parse(out.trim().split('\n').pop()!) as Record<string, string>;
}

export { spawnNode };

export function basic(clientId: string, clientSecret: string): string {
  const encode = (value: string) => encodeURIComponent(value).replaceAll('%20', '+');
  return `Basic ${Buffer.from(`${encode(clientId)}:${encode(clientSecret)}`).toString('base64')}`;
}

/** POST a token endpoint with Basic client authentication; the access token, or a thrown error. */
export async function token(
  base: string,
  client: { clientId: string; clientSecret: string },
  fields: Record<string, string>,
  path = '/oauth/token',
): Promise<string> {
  const response = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { authorization: basic(client.clientId, client.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
    signal: AbortSignal.timeout(30_000),
  });
  const body = (await response.json()) as { access_token?: string };
  if (response.status !== 200 || !body.access_token) throw new Error(`token ${response.status} ${JSON.stringify(body)}`);
  return body.access_token;
}

export interface Reply {
  status: number;
  body: unknown;
  ms: number;
  contentType: string | null;
  /** The `Link` header (pages follow `rel="next"`); null when none came. */
  link: string | null;
}

/** One JSON request with a deadline; a network failure or timeout is status 0. */
export async function call(
  base: string,
  method: string,
  path: string,
  bearer: string,
  body?: unknown,
  headers: Record<string, string> = {},
  timeoutMs = 30_000,
): Promise<Reply> {
  const started = Date.now();
  try {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${bearer}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON: keep the text
    }
    return { status: response.status, body: parsed, ms: Date.now() - started, contentType: response.headers.get('content-type'), link: response.headers.get('link') };
  } catch (error) {
    return { status: 0, body: String(error), ms: Date.now() - started, contentType: null, link: null };
  }
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export { freePort };
