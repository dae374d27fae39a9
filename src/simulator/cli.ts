#!/usr/bin/env node
// `npm run simulate -- …`: a lock provisioned from the trust endpoint through its bound client, synced, given the
// revocation lists a phone carried, then deciding on credentials (with a proof of the phone's key under the nonce of
// its hello, docs/lock-integration.md 4) and, asked to, uploading its access log (docs/api-reference.md 6.2, 8.1, 8.3, 8.5).
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { NONCE } from '../shared/door-exchange.js';
import { LockSimulator, withSyncBackoff, type LockProvisioning, type SyncAnswer } from './lock-simulator.js';
import { PhoneSimulator, type PhoneHttp } from './phone-simulator.js';

const USAGE = `Usage: npm run --silent simulate -- --url URL --client-id ID --client-secret SECRET --secured-object ID
         [--command open] [--channel btlespp] [--at MILLIS] [--revocation-list JWS ...] [--upload-log]
         [--nonce NONCE --proof PROOF] [CREDENTIAL ...]
       npm run --silent simulate -- --enrol CLAIM_URL [--name NAME]

Provisions a lock as an installer would: takes a token for the client (scope sync, bound to the lock), fetches the
lock's trust answer (its tenant's issuer, key set and maximum credential lifetime), syncs, then applies every
--revocation-list (a compact JWS a phone carried; repeat the option for several). Then prints one JSON decision per
credential (from the arguments, or one per line on standard input).

  --at MILLIS   the lock's clock, an integer of Unix milliseconds (default: now). Anything else is a usage error.
  --nonce NONCE decide as a lock whose hello carried NONCE (docs/lock-integration.md 4): one decision, on exactly one
                CREDENTIAL, with --proof PROOF (the phone's ticket-proof+jwt) when the credential is bound.
  --proof PROOF the proof of the phone's key shown with the credential; needs --nonce.
  --upload-log  after deciding, upload the lock's access log (its decisions, its applied serial and its clock) to
                POST /deviceapi/securedobjects/{id}/accesslog; the server's answers go to stderr.
  --enrol URL   be the phone instead (docs/api-reference.md 12): make a P-256 key pair, look the claim link up, prove
                the key over its nonce, redeem it, get a token by private_key_jwt and download the tickets; prints
                {mobileDeviceId, clientId, keyThumbprint, tokens, bound} (bound: every credential carries cnf.jkt of
                the key). --name names the phone.`;

/** The options that take a value. */
const VALUE_OPTIONS = new Set(['--enrol', '--name', '--url', '--client-id', '--client-secret', '--secured-object', '--command', '--channel', '--at', '--revocation-list', '--nonce', '--proof']);

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

/**
 * The lock's clock from `--at`: digits only, a safe integer of milliseconds, or null. `Number('now')` is NaN and
 * every comparison with NaN is false, so a lock handed one would let every credential through its time checks.
 */
function parseInstant(text: string): number | null {
  if (!/^[0-9]+$/.test(text)) return null;
  const at = Number(text);
  return Number.isSafeInteger(at) ? at : null;
}

const OPTIONS = {
  url: { type: 'string' },
  'client-id': { type: 'string' },
  'client-secret': { type: 'string' },
  'secured-object': { type: 'string' },
  command: { type: 'string', default: 'open' },
  channel: { type: 'string', default: 'btlespp' },
  at: { type: 'string' },
  'revocation-list': { type: 'string', multiple: true },
  'upload-log': { type: 'boolean' },
  nonce: { type: 'string' },
  proof: { type: 'string' },
  enrol: { type: 'string' },
  name: { type: 'string' },
  help: { type: 'boolean' },
} satisfies ParseArgsConfig['options'];

async function main(): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: joinOptionValues(process.argv.slice(2)), options: OPTIONS, allowPositionals: true });
  } catch (error) {
    // An unknown option or one without its value is a usage error, as a missing option is.
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n${USAGE}\n`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (values.enrol !== undefined) return enrolPhone(values.enrol, values.name);
  const base = values.url?.replace(/\/+$/, '');
  const clientId = values['client-id'];
  const clientSecret = values['client-secret'];
  const lockId = values['secured-object'];
  if (!base || !clientId || !clientSecret || !lockId) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  if (values.proof !== undefined && values.nonce === undefined) {
    process.stderr.write(`--proof needs the --nonce of the hello it answers\n${USAGE}\n`);
    return 2;
  }
  if (values.nonce !== undefined && positionals.length !== 1) {
    process.stderr.write(`--nonce decides exactly one CREDENTIAL (one proof per hello), given as an argument\n${USAGE}\n`);
    return 2;
  }
  if (values.nonce !== undefined && !NONCE.test(values.nonce)) {
    process.stderr.write(`--nonce must be 22 to 128 base64url characters, not ${JSON.stringify(values.nonce)}\n${USAGE}\n`);
    return 2;
  }
  const at = values.at === undefined ? Date.now() : parseInstant(values.at);
  if (at === null) {
    process.stderr.write(`--at must be an integer of milliseconds, not ${JSON.stringify(values.at)}\n${USAGE}\n`);
    return 2;
  }
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
  const lockPath = `${base}/deviceapi/securedobjects/${encodeURIComponent(lockId)}`;
  const headers = { authorization: `Bearer ${token}` };

  // docs/api-reference.md 8.1: what an installer writes into the lock. Never the server-wide /.well-known/jwks.json,
  // which holds access-token keys: the lock trusts its own tenant's issuer and key set only.
  const trustResponse = await fetch(`${lockPath}/trust`, { headers });
  if (!trustResponse.ok) {
    process.stderr.write(`trust request failed: ${trustResponse.status} ${await trustResponse.text()}\n`);
    return 1;
  }
  const trust = (await trustResponse.json()) as LockProvisioning;
  if (trust.securedObjectId !== lockId) {
    process.stderr.write(`trust answer is for ${JSON.stringify(trust.securedObjectId)}, not ${JSON.stringify(lockId)}\n`);
    return 1;
  }
  const lock = new LockSimulator(trust);
  await lock.sync(async (cursor) => {
    const query = cursor ? `?cursor=${encodeURIComponent(cursor)}` : '';
    // docs/lock-sync.md: a sync refused for load is retried with backoff and full jitter, never before Retry-After.
    const response = await withSyncBackoff(() => fetch(`${lockPath}/sync${query}`, { headers }));
    if (!response.ok) throw new Error(`sync failed: ${response.status} ${await response.text()}`);
    return { answer: (await response.json()) as SyncAnswer, more: (response.headers.get('link') ?? '').includes('rel="next"') };
  });
  // docs/api-reference.md 8.3: lists a phone carried, applied after the sync as a lock that is never online would.
  // What became of each goes to stderr, so stdout holds the decisions only.
  for (const list of values['revocation-list'] ?? []) {
    process.stderr.write(`revocation list: ${JSON.stringify(await lock.applyRevocationList(list))}\n`);
  }
  // docs/lock-integration.md 4.1: the hello that carried the nonce; the one decision below uses it up.
  if (values.nonce !== undefined) lock.hello(at, values.nonce);
  const credentials = positionals.length > 0 ? positionals : (await readStdin()).split(/\s+/).filter(Boolean);
  for (const credential of credentials) {
    process.stdout.write(`${JSON.stringify(await lock.decide(credential, values.command!, at, values.channel!, values.proof ?? null))}\n`);
  }
  if (values['upload-log']) return uploadLog(lock, `${lockPath}/accesslog`, headers, at);
  return 0;
}

/** The phone's network: fetch, the body parsed as JSON when there is one. */
const phoneHttp: PhoneHttp = async (request) => {
  const response = await fetch(request.url, {
    method: request.method,
    ...(request.headers ? { headers: request.headers } : {}),
    ...(request.body !== undefined ? { body: request.body } : {}),
  });
  const text = await response.text();
  return { status: response.status, body: text === '' ? null : (JSON.parse(text) as unknown) };
};

/**
 * docs/api-reference.md 12: the reference phone enrols from a claim link and downloads its tickets; the key pair lives
 * only in this process, as a phone's lives in its secure hardware.
 */
async function enrolPhone(claimUrl: string, name: string | undefined): Promise<number> {
  const phone = new PhoneSimulator();
  const enrolment = await phone.enrol(claimUrl, phoneHttp, name === undefined ? {} : { name });
  const tokens = await phone.download(phoneHttp);
  const bound = tokens.every((token) => {
    const payload = JSON.parse(Buffer.from(token.credential?.split('.')[1] ?? '', 'base64url').toString('utf8') || '{}') as { cnf?: { jkt?: string } };
    return payload.cnf?.jkt === phone.keyThumbprint;
  });
  process.stdout.write(
    `${JSON.stringify({ mobileDeviceId: enrolment.mobileDeviceId, clientId: enrolment.clientId, keyThumbprint: phone.keyThumbprint, tokens: tokens.length, bound })}\n`,
  );
  return 0;
}

/**
 * docs/api-reference.md 8.5: uploads the log one upload at a time, dropping what each 2xx answer acknowledged. Anything else
 * keeps the entries (for the next run of a real lock) and fails the run.
 */
async function uploadLog(lock: LockSimulator, url: string, headers: Record<string, string>, at: number): Promise<number> {
  for (let upload = lock.accessLogUpload(at); upload !== null; upload = lock.accessLogUpload(at)) {
    const response = await fetch(url, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(upload) });
    const answer = await response.text();
    if (!response.ok) {
      process.stderr.write(`access log upload failed: ${response.status} ${answer}\n`);
      return 1;
    }
    process.stderr.write(`access log: ${answer}\n`);
    lock.acknowledgeAccessLog(upload.entries[upload.entries.length - 1]!.entryNo);
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
