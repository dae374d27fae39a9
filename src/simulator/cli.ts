// `npm run simulate -- …`: a lock that syncs with the server through a bound client and decides on credentials.
import { parseArgs } from 'node:util';
import type { JSONWebKeySet } from 'jose';
import { LockSimulator, type SyncAnswer } from './lock-simulator.js';

const USAGE = `Usage: npm run --silent simulate -- --url URL --client-id ID --client-secret SECRET --secured-object ID
         [--command open] [--at MILLIS] [CREDENTIAL ...]

Fetches the JWKS, syncs the lock through the client (scope sync, bound to the lock or unbound), then prints one
JSON decision per credential (from the arguments, or one per line on standard input).`;

/** The options that take a value. */
const VALUE_OPTIONS = new Set(['--url', '--client-id', '--client-secret', '--secured-object', '--command', '--at']);

/**
 * `--option value` as `--option=value`: client ids and secrets are base64url, so one in 64 of each starts with `-`,
 * which parseArgs would otherwise refuse as an ambiguous option argument.
 */
function joinOptionValues(args: string[]): string[] {
  const joined: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--') {
      joined.push(...args.slice(i));
      break;
    }
    if (VALUE_OPTIONS.has(arg) && i + 1 < args.length) joined.push(`${arg}=${args[++i]!}`);
    else joined.push(arg);
  }
  return joined;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(Buffer.from(chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    args: joinOptionValues(process.argv.slice(2)),
    options: {
      url: { type: 'string' },
      'client-id': { type: 'string' },
      'client-secret': { type: 'string' },
      'secured-object': { type: 'string' },
      command: { type: 'string', default: 'open' },
      at: { type: 'string' },
      help: { type: 'boolean' },
    },
    allowPositionals: true,
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const base = values.url?.replace(/\/+$/, '');
  const clientId = values['client-id'];
  const clientSecret = values['client-secret'];
  const lockId = values['secured-object'];
  if (!base || !clientId || !clientSecret || !lockId) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const jwks = (await (await fetch(`${base}/.well-known/jwks.json`)).json()) as JSONWebKeySet;
  const tokenResponse = await fetch(`${base}/oauth/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: 'grant_type=client_credentials&scope=sync',
  });
  if (!tokenResponse.ok) {
    process.stderr.write(`token request failed: ${tokenResponse.status} ${await tokenResponse.text()}\n`);
    return 1;
  }
  const { access_token: token } = (await tokenResponse.json()) as { access_token: string };
  const lock = new LockSimulator(lockId, jwks);
  await lock.sync(async (cursor) => {
    const query = cursor ? `?cursor=${encodeURIComponent(cursor)}` : '';
    const response = await fetch(`${base}/deviceapi/securedobjects/${encodeURIComponent(lockId)}/sync${query}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    if (!response.ok) throw new Error(`sync failed: ${response.status} ${await response.text()}`);
    return { answer: (await response.json()) as SyncAnswer, more: (response.headers.get('link') ?? '').includes('rel="next"') };
  });
  const credentials = positionals.length > 0 ? positionals : (await readStdin()).split(/\s+/).filter(Boolean);
  const at = values.at ? Number(values.at) : Date.now();
  for (const credential of credentials) {
    process.stdout.write(`${JSON.stringify(await lock.decide(credential, values.command!, at))}\n`);
  }
  return 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
