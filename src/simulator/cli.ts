#!/usr/bin/env node
// `npm run simulate -- …`: the reference phone (enrolled from a claim link, kept in a file, answering a lock's hello) and a
// lock provisioned from the trust endpoint through its bound client (its own key kept in a file and registered), synced, given the
// revocation lists a phone carried, then deciding on credentials (with a proof of the phone's key under the nonce of
// its hello, docs/lock-integration.md 4) and, asked to, uploading its access log (docs/api-reference.md 6.2, 8.1, 8.3, 8.5).
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { NONCE } from '../shared/door-exchange.js';
import { LockSimulator, withSyncBackoff, type LockProvisioning, type SyncAnswer } from './lock-simulator.js';
import { es256KeyPair, privateJwk, signEs256 } from './es256.js';
import { PhoneSimulator, type DownloadedToken, type PhoneHttp } from './phone-simulator.js';

const USAGE = `Usage: npm run --silent simulate -- --url URL --client-id ID --client-secret SECRET --secured-object ID
         [--lock-key FILE] [--command open] [--channel btlespp] [--at MILLIS] [--revocation-list JWS ...]
         [--upload-log] [--nonce NONCE --proof PROOF] [CREDENTIAL ...]
       npm run --silent simulate -- --url URL --client-id ID --client-secret SECRET --secured-object ID
         --lock-key FILE (--register-key | --hello) [--at MILLIS]
       npm run --silent simulate -- --enrol CLAIM_URL [--name NAME] [--phone FILE]
       npm run --silent simulate -- --phone FILE (--download | --present LOCK_ID HELLO) [--command open] [--at MILLIS]

Provisions a lock as an installer would: takes a token for the client (scope sync, bound to the lock), fetches the
lock's trust answer (its tenant's issuer, key set and maximum credential lifetime), syncs, then applies every
--revocation-list (a compact JWS a phone carried; repeat the option for several). Then prints one JSON decision per
credential (from the arguments, or one per line on standard input).

  --at MILLIS   the lock's (or phone's) clock, an integer of Unix milliseconds (default: now). Anything else is a
                usage error.
  --nonce NONCE decide as a lock whose hello carried NONCE (docs/lock-integration.md 4): one decision, on exactly one
                CREDENTIAL, with --proof PROOF (the phone's ticket-proof+jwt) when the credential is bound.
  --proof PROOF the proof of the phone's key shown with the credential; needs --nonce.
  --upload-log  after deciding, upload the lock's access log (its decisions, its applied serial and its clock) to
                POST /deviceapi/securedobjects/{id}/accesslog; the server's answers go to stderr.
  --lock-key FILE
                the lock's own P-256 key, a private JWK kept in FILE (made, readable by its owner only, when FILE does
                not exist): the key the lock signs its hellos and receipts with (docs/lock-integration.md 4). A lock
                whose trust answer names another registered key refuses to start.
  --register-key
                register the lock key (PUT /deviceapi/securedobjects/{id}/key, docs/api-reference.md 11.1; the client
                needs the scope keys:register) with a proof over a fresh nonce, aud the --url (the service's
                PUBLIC_URL); prints {securedObjectId, keyThumbprint, keyRegisteredTime}.
  --hello       provision and sync, then greet a phone: prints {hello, nonce}, the signed hello a phone checks with the
                lockKey of its download and the nonce its proof must answer (pass it back with --nonce to decide).
  --enrol URL   be the phone instead (docs/api-reference.md 12): make a P-256 key pair, look the claim link up, prove
                the key over its nonce, redeem it, get a token by private_key_jwt and download the tickets; prints
                {mobileDeviceId, clientId, keyThumbprint, tokens, bound} (bound: every credential carries cnf.jkt of
                the key). --name names the phone; --phone FILE keeps the phone (its private key, enrolment and
                download) in FILE, readable by its owner only.
  --download    the phone kept in --phone FILE downloads its tickets again and keeps them; prints {tokens, bound}.
  --present LOCK_ID HELLO
                the phone kept in --phone FILE answers the lock's HELLO (docs/lock-integration.md 4.2): checks it with
                the lockKey of its ticket for LOCK_ID, then prints {tokenId, credential, proof, revocationList?,
                lockState?} (proof: over the hello's nonce and --command); a hello it cannot trust prints {refused}
                and exits 1.`;

/** The options that take a value. */
const VALUE_OPTIONS = new Set([
  '--enrol',
  '--name',
  '--phone',
  '--present',
  '--lock-key',
  '--url',
  '--client-id',
  '--client-secret',
  '--secured-object',
  '--command',
  '--channel',
  '--at',
  '--revocation-list',
  '--nonce',
  '--proof',
]);

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
  phone: { type: 'string' },
  download: { type: 'boolean' },
  present: { type: 'string' },
  'lock-key': { type: 'string' },
  'register-key': { type: 'boolean' },
  hello: { type: 'boolean' },
  help: { type: 'boolean' },
} satisfies ParseArgsConfig['options'];

/** A usage error: the message and the usage on stderr, exit code 2. */
function usageError(message: string): number {
  process.stderr.write(`${message}${message === '' ? '' : '\n'}${USAGE}\n`);
  return 2;
}

async function main(): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: joinOptionValues(process.argv.slice(2)), options: OPTIONS, allowPositionals: true });
  } catch (error) {
    // An unknown option or one without its value is a usage error, as a missing option is.
    return usageError(error instanceof Error ? error.message : String(error));
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const at = values.at === undefined ? Date.now() : parseInstant(values.at);
  if (at === null) return usageError(`--at must be an integer of milliseconds, not ${JSON.stringify(values.at)}`);
  if (values.enrol !== undefined) return enrolPhone(values.enrol, values.name, values.phone);
  if (values.download || values.present !== undefined) {
    if (values.phone === undefined) return usageError('--download and --present need the --phone FILE the phone was kept in (--enrol … --phone FILE)');
    if (values.download && values.present !== undefined) return usageError('--download and --present are two runs of the phone: give one');
    if (values.download) return downloadAgain(values.phone, at);
    if (positionals.length !== 1) return usageError('--present LOCK_ID answers exactly one HELLO, given as an argument');
    return presentToLock(values.phone, values.present!, positionals[0]!, values.command!, at);
  }
  if (values.phone !== undefined) return usageError('--phone FILE goes with --enrol, --download or --present');
  const base = values.url?.replace(/\/+$/, '');
  const clientId = values['client-id'];
  const clientSecret = values['client-secret'];
  const lockId = values['secured-object'];
  if (!base || !clientId || !clientSecret || !lockId) return usageError('');
  if (values['register-key'] && values.hello) return usageError('--register-key and --hello are two runs of the lock: give one');
  if ((values['register-key'] || values.hello) && values['lock-key'] === undefined) {
    return usageError('--register-key and --hello need the lock\'s own key: --lock-key FILE');
  }
  if ((values['register-key'] || values.hello) && positionals.length > 0) return usageError('--register-key and --hello decide on no credential');
  if (values.proof !== undefined && values.nonce === undefined) return usageError('--proof needs the --nonce of the hello it answers');
  if (values.nonce !== undefined && positionals.length !== 1) return usageError('--nonce decides exactly one CREDENTIAL (one proof per hello), given as an argument');
  if (values.nonce !== undefined && !NONCE.test(values.nonce)) return usageError(`--nonce must be 22 to 128 base64url characters, not ${JSON.stringify(values.nonce)}`);
  const lockKey = values['lock-key'] === undefined ? undefined : readOrMakeKey(values['lock-key']);
  const scope = values['register-key'] ? 'sync keys:register' : 'sync';
  const tokenResponse = await fetch(`${base}/oauth/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({ grant_type: 'client_credentials', scope }).toString(),
  });
  if (!tokenResponse.ok) {
    process.stderr.write(`token request failed: ${tokenResponse.status} ${await tokenResponse.text()}\n`);
    return 1;
  }
  const { access_token: token } = (await tokenResponse.json()) as { access_token: string };
  const lockPath = `${base}/deviceapi/securedobjects/${encodeURIComponent(lockId)}`;
  const headers = { authorization: `Bearer ${token}` };
  if (values['register-key']) return registerLockKey(base, lockPath, headers, lockKey!, lockId, at);

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
  const lock = new LockSimulator(trust, lockKey === undefined ? {} : { key: lockKey });
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
  if (values.hello) {
    // docs/lock-integration.md 4.1: a fresh nonce; the decision that answers it runs with --nonce, as the same lock.
    const hello = lock.hello(at);
    const nonce = (JSON.parse(Buffer.from(hello.split('.')[1]!, 'base64url').toString('utf8')) as { nonce: string }).nonce;
    process.stdout.write(`${JSON.stringify({ hello, nonce })}\n`);
    return 0;
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

/**
 * The lock's private JWK from `file`, or a new key pair written there first (`wx`: never over another file; mode 0600:
 * the key is the lock's identity, docs/lock-integration.md 4).
 */
function readOrMakeKey(file: string): Record<string, string> {
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as Record<string, string>;
  const key = privateJwk(es256KeyPair());
  writeFileSync(file, `${JSON.stringify(key)}\n`, { flag: 'wx', mode: 0o600 });
  return key;
}

/**
 * docs/api-reference.md 11.1: registers the lock key with a key proof over a nonce this client asked for, `aud` the
 * service's public URL.
 */
async function registerLockKey(base: string, lockPath: string, headers: Record<string, string>, key: Record<string, string>, lockId: string, at: number): Promise<number> {
  const pair = es256KeyPair(key);
  const nonceResponse = await fetch(`${base}/deviceapi/nonces`, { method: 'POST', headers });
  if (!nonceResponse.ok) {
    process.stderr.write(`nonce request failed: ${nonceResponse.status} ${await nonceResponse.text()}\n`);
    return 1;
  }
  const { nonce } = (await nonceResponse.json()) as { nonce: string };
  const proof = signEs256(pair.privateKey, { typ: 'key-proof+jwt' }, { aud: base, nonce, iat: Math.floor(at / 1000) });
  const response = await fetch(`${lockPath}/key`, {
    method: 'PUT',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify({ publicKey: pair.publicKey, proof }),
  });
  const answer = await response.text();
  if (!response.ok) {
    process.stderr.write(`key registration failed: ${response.status} ${answer}\n`);
    return 1;
  }
  process.stdout.write(`${JSON.stringify({ securedObjectId: lockId, ...(JSON.parse(answer) as object) })}\n`);
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

/** Whether every credential of a download is bound to the phone's key (`cnf.jkt`, docs/api-reference.md 11.2). */
function allBound(tokens: readonly DownloadedToken[], phone: PhoneSimulator): boolean {
  return tokens.every((token) => {
    const payload = JSON.parse(Buffer.from(token.credential?.split('.')[1] ?? '', 'base64url').toString('utf8') || '{}') as { cnf?: { jkt?: string } };
    return payload.cnf?.jkt === phone.keyThumbprint;
  });
}

/** Keeps the phone in `file`, readable by its owner only: it holds the phone's private key. */
function savePhone(file: string, phone: PhoneSimulator, flag: 'w' | 'wx'): void {
  writeFileSync(file, `${JSON.stringify(phone.saved())}\n`, { flag, mode: 0o600 });
}

/**
 * docs/api-reference.md 12: the reference phone enrols from a claim link and downloads its tickets; the key pair lives
 * only in this process, as a phone's lives in its secure hardware, unless `--phone FILE` keeps it for later runs.
 */
async function enrolPhone(claimUrl: string, name: string | undefined, file: string | undefined): Promise<number> {
  // Checked first: a claim redeemed by a phone that then could not be kept would be used up for nothing.
  if (file !== undefined && existsSync(file)) {
    process.stderr.write(`${file} already holds a phone: give another --phone FILE\n`);
    return 1;
  }
  const phone = new PhoneSimulator();
  const enrolment = await phone.enrol(claimUrl, phoneHttp, name === undefined ? {} : { name });
  const tokens = await phone.download(phoneHttp);
  if (file !== undefined) savePhone(file, phone, 'wx');
  process.stdout.write(
    `${JSON.stringify({ mobileDeviceId: enrolment.mobileDeviceId, clientId: enrolment.clientId, keyThumbprint: phone.keyThumbprint, tokens: tokens.length, bound: allBound(tokens, phone) })}\n`,
  );
  return 0;
}

/** A phone kept by an earlier run. */
function loadPhone(file: string): PhoneSimulator {
  return PhoneSimulator.restore(JSON.parse(readFileSync(file, 'utf8')) as unknown);
}

/** docs/api-reference.md 6.1: the kept phone downloads again (its credentials renewed, lock keys it lacked) and keeps it. */
async function downloadAgain(file: string, at: number): Promise<number> {
  const phone = loadPhone(file);
  const tokens = await phone.download(phoneHttp, at);
  savePhone(file, phone, 'w');
  process.stdout.write(`${JSON.stringify({ tokens: tokens.length, bound: allBound(tokens, phone) })}\n`);
  return 0;
}

/** docs/lock-integration.md 4.2: the kept phone answers a lock's hello, offline, from its last download. */
function presentToLock(file: string, lockId: string, hello: string, command: string, at: number): number {
  const result = loadPhone(file).present(lockId, hello, command, at);
  process.stdout.write(`${JSON.stringify('presentation' in result ? result.presentation : result)}\n`);
  return 'presentation' in result ? 0 : 1;
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
