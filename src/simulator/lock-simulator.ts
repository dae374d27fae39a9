// A lock simulator: the reference for what a lock does offline (docs/api-reference.md 6.3, 8.1–8.3). Provisioned with the
// trust answer (its tenant's issuer and key set, its own id, the maximum credential lifetime), it learns revocations
// and key changes by syncing (docs/api-reference.md 6.2) and from revocation lists a phone carries (docs/api-reference.md 8.3),
// decides as strictly as firmware must (anything malformed or missing is a refusal), and logs every decision for upload
// (docs/api-reference.md 8.5).
import { compactVerify, decodeProtectedHeader, importJWK, type JSONWebKeySet, type JWK } from 'jose';
import { CREDENTIAL_TYPE, REVOCATION_LIST_TYPE, checkCredential, isValidInstant, type CredentialCheckReason } from '../shared/credential-check.js';

/** The signature algorithms of ticket keys (src/shared/jws.ts); `none` and HMAC never. */
const ALGORITHMS = new Set(['EdDSA', 'ES256']);

export type LockDecisionReason = CredentialCheckReason | 'unknown signing key' | 'algorithm not permitted' | 'bad signature';

export type LockDecision =
  | { decision: 'open'; reason: 'valid'; ticketId: string }
  | { decision: 'deny'; reason: Exclude<LockDecisionReason, 'valid'>; ticketId?: string };

/** One logged decision, as an access-log upload carries it (docs/api-reference.md 8.5). */
export interface AccessLogEntry {
  /** From 1, rising by one per decision, never reused. */
  entryNo: number;
  /** The decision's instant by the lock's clock (ms); 0 when the lock had no valid clock reading. */
  lockTime: number;
  /** The presented credential's `jti`, when it had one that fits the upload format. */
  tokenId?: string;
  command: string;
  channel: string;
  result: 'granted' | 'denied';
  /** The decision's reason. */
  reason: string;
}

/** The body of `POST /deviceapi/securedobjects/{id}/accesslog` (a phone relaying it adds `securedObjectId`). */
export interface AccessLogUpload {
  /** The change-log position the lock has applied (docs/api-reference.md 8.4). */
  appliedSerial: number;
  /** The lock's clock at the upload (absent when it has no valid reading). */
  lockTime?: number;
  entries: AccessLogEntry[];
}

/** How many entries the lock keeps by default: beyond, the oldest are dropped and the server reports a gap. */
export const ACCESS_LOG_CAPACITY = 10_000;
/** The most entries one upload carries (the server's limit, src/schemas/access-log.ts). */
export const ACCESS_LOG_UPLOAD_MAX = 1000;
/** The largest time an upload carries (docs/api-reference.md 7.4). */
const MAX_MILLIS = 8_640_000_000_000_000;

/** `text` when it fits the upload format (1 to `max` printable ASCII characters), else undefined. */
function loggable(text: unknown, max: number): string | undefined {
  return typeof text === 'string' && text.length >= 1 && text.length <= max && /^[\x20-\x7e]+$/.test(text) ? text : undefined;
}

/** What an installer writes into a lock: `GET /deviceapi/securedobjects/{id}/trust` (docs/api-reference.md 8.1). */
export interface LockProvisioning {
  securedObjectId: string;
  issuer: string;
  keys: JSONWebKeySet;
  /** Seconds (docs/api-reference.md 8.2). */
  maxCredentialLifetime: number;
}

/** A sync answer (docs/api-reference.md 6.2, 8.1, 4.1). `keys`, `decommissioned` and `serial` may be absent. */
export interface SyncAnswer {
  tokens: { id: string }[];
  revocations: { tokenId: string; revocationDate: number }[];
  cursor: string;
  keys?: JSONWebKeySet;
  decommissioned?: boolean;
  /** The change-log position the lock has reached once it applied this answer. */
  serial?: number;
}

/** What applying a sync answer changed. */
export interface SyncApplied {
  /** Ticket ids not revoked before. */
  newlyRevoked: number;
  /** `unchanged`: no `keys` in the answer; `ignored`: a malformed set, the old one kept. */
  keys: 'unchanged' | 'replaced' | 'ignored';
}

export type RevocationListResult =
  | { applied: true; serial: number; newlyRevoked: number; keys: SyncApplied['keys'] }
  | {
      applied: false;
      reason: 'malformed list' | 'not a revocation list' | 'unknown signing key' | 'algorithm not permitted' | 'bad signature' | 'wrong issuer' | 'wrong lock' | 'stale list';
    };

/** Why a compact JWS did not verify against the lock's key set. */
type JwsFailure = 'malformed' | 'wrong type' | 'unknown signing key' | 'algorithm not permitted' | 'bad signature';

const CREDENTIAL_FAILURES = {
  malformed: 'malformed credential',
  'wrong type': 'not a ticket credential',
  'unknown signing key': 'unknown signing key',
  'algorithm not permitted': 'algorithm not permitted',
  'bad signature': 'bad signature',
} as const satisfies Record<JwsFailure, LockDecisionReason>;

const LIST_FAILURES = {
  malformed: 'malformed list',
  'wrong type': 'not a revocation list',
  'unknown signing key': 'unknown signing key',
  'algorithm not permitted': 'algorithm not permitted',
  'bad signature': 'bad signature',
} as const;

/** One key of a ticket key set, checked for what verifying needs; a private key or an unknown type makes it unusable. */
function isUsableKey(key: unknown): key is JWK & { kid: string; alg: 'EdDSA' | 'ES256' } {
  if (typeof key !== 'object' || key === null || Array.isArray(key)) return false;
  const jwk = key as Record<string, unknown>;
  if (typeof jwk.kid !== 'string' || jwk.kid === '' || 'd' in jwk) return false;
  if (jwk.use !== undefined && jwk.use !== 'sig') return false;
  if (jwk.alg === 'EdDSA') return jwk.kty === 'OKP' && jwk.crv === 'Ed25519' && typeof jwk.x === 'string';
  if (jwk.alg === 'ES256') return jwk.kty === 'EC' && jwk.crv === 'P-256' && typeof jwk.x === 'string' && typeof jwk.y === 'string';
  return false;
}

/**
 * The key set by kid, or null when it is malformed: not `{keys: [...]}`, empty, a duplicate kid or any unusable key.
 * A whole set is taken or refused, so a broken update can never leave a lock with fewer or other keys than meant.
 */
export function parseKeySet(jwks: unknown): Map<string, JWK> | null {
  if (typeof jwks !== 'object' || jwks === null) return null;
  const keys = (jwks as { keys?: unknown }).keys;
  if (!Array.isArray(keys) || keys.length === 0 || !keys.every(isUsableKey)) return null;
  const byKid = new Map(keys.map((key) => [key.kid, key] as const));
  return byKid.size === keys.length ? byKid : null;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/** A compact JWS verified with a key of `keys`: its header and parsed payload, or why not. */
async function verifyJws(
  jws: unknown,
  typ: string,
  keys: ReadonlyMap<string, JWK>,
): Promise<{ header: Record<string, unknown>; payload: unknown } | { failure: JwsFailure }> {
  if (typeof jws !== 'string' || !COMPACT_JWS.test(jws)) return { failure: 'malformed' };
  let header: Record<string, unknown>;
  try {
    header = decodeProtectedHeader(jws) as Record<string, unknown>;
  } catch {
    return { failure: 'malformed' };
  }
  if (header.typ !== typ) return { failure: 'wrong type' };
  if (typeof header.alg !== 'string' || !ALGORITHMS.has(header.alg)) return { failure: 'algorithm not permitted' };
  const jwk = typeof header.kid === 'string' ? keys.get(header.kid) : undefined;
  // A key is for one algorithm (RFC 8725 3.1): an ES256 header under an EdDSA kid is not that key's signature.
  if (!jwk || jwk.alg !== header.alg) return { failure: 'unknown signing key' };
  let payload: Uint8Array;
  try {
    const key = await importJWK(jwk, header.alg);
    payload = (await compactVerify(jws, key, { algorithms: [header.alg] })).payload;
  } catch {
    return { failure: 'bad signature' };
  }
  try {
    return { header, payload: JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(payload)) as unknown };
  } catch {
    return { failure: 'malformed' };
  }
}

export class LockSimulator {
  readonly securedObjectId: string;
  readonly issuer: string;
  readonly maxCredentialLifetime: number;
  private readonly revoked = new Set<string>();
  private keys: Map<string, JWK>;
  /** Where the next sync continues; undefined until the first one. */
  cursor: string | undefined;
  /** The change-log position the lock has applied (docs/api-reference.md 8.3, 8.4): revocation lists at or below it are stale. */
  serial = 0;
  /** The backend deleted this lock (docs/api-reference.md 4.1): it opens for nobody. */
  decommissioned = false;
  /** The decisions not yet acknowledged by the server, oldest first (docs/api-reference.md 8.5). */
  private readonly log: AccessLogEntry[] = [];
  private nextEntryNo = 1;
  /** How many entries the log keeps: beyond, the oldest are dropped, as firmware with bounded memory does. */
  readonly logCapacity: number;

  /** Throws on a provisioning a lock could not decide with: an installer error, caught before the lock is mounted. */
  constructor(provisioning: LockProvisioning, options: { logCapacity?: number } = {}) {
    const logCapacity = options.logCapacity ?? ACCESS_LOG_CAPACITY;
    if (!Number.isSafeInteger(logCapacity) || logCapacity <= 0) throw new TypeError('logCapacity must be a positive integer');
    this.logCapacity = logCapacity;
    const { securedObjectId, issuer, keys, maxCredentialLifetime } = provisioning;
    if (typeof securedObjectId !== 'string' || securedObjectId === '') throw new TypeError('securedObjectId must be a non-empty string');
    if (typeof issuer !== 'string' || issuer === '') throw new TypeError('issuer must be a non-empty string');
    if (!Number.isSafeInteger(maxCredentialLifetime) || maxCredentialLifetime <= 0) throw new TypeError('maxCredentialLifetime must be a positive integer of seconds');
    const parsed = parseKeySet(keys);
    if (!parsed) throw new TypeError('keys must be a key set of EdDSA or ES256 public keys, each with its own kid');
    this.securedObjectId = securedObjectId;
    this.issuer = issuer;
    this.maxCredentialLifetime = maxCredentialLifetime;
    this.keys = parsed;
  }

  /** The kids the lock accepts now. */
  get kids(): string[] {
    return [...this.keys.keys()];
  }

  isRevoked(ticketId: string): boolean {
    return this.revoked.has(ticketId);
  }

  /**
   * Applies one sync answer (docs/api-reference.md 6.2). Revocations are only ever added: a ticket issued again after a
   * revocation has a new id, so a revoked id never becomes valid again. A malformed answer throws and changes
   * nothing (its cursor could skip changes); a malformed `keys` alone is ignored and the old set kept (docs/api-reference.md 8.1).
   */
  applySync(answer: SyncAnswer): SyncApplied {
    if (!isObject(answer) || typeof answer.cursor !== 'string' || !Array.isArray(answer.revocations)) throw new Error('malformed sync answer');
    if (!answer.revocations.every((revocation) => isObject(revocation) && typeof revocation.tokenId === 'string')) {
      throw new Error('malformed sync answer: a revocation without a tokenId');
    }
    if (answer.serial !== undefined && !(Number.isSafeInteger(answer.serial) && answer.serial >= 0)) throw new Error('malformed sync answer: serial');
    if (answer.decommissioned !== undefined && typeof answer.decommissioned !== 'boolean') throw new Error('malformed sync answer: decommissioned');
    const newlyRevoked = this.revoke(answer.revocations.map((revocation) => revocation.tokenId));
    const keys = this.takeKeys(answer.keys);
    // Once decommissioned, always: a later answer cannot bring a deleted lock back (docs/api-reference.md 4.1).
    if (answer.decommissioned === true) this.decommissioned = true;
    this.cursor = answer.cursor;
    // An old server sends no serial: the lock keeps its own. It never goes back, so a list it has applied stays applied.
    if (answer.serial !== undefined) this.serial = Math.max(this.serial, answer.serial);
    return { newlyRevoked, keys };
  }

  /** Syncs until the server has nothing more: `fetchPage(cursor)` calls GET /deviceapi/securedobjects/{id}/sync. */
  async sync(fetchPage: (cursor: string | undefined) => Promise<{ answer: SyncAnswer; more: boolean }>): Promise<void> {
    for (let page = 0; page < 10_000; page++) {
      const { answer, more } = await fetchPage(this.cursor);
      this.applySync(answer);
      if (!more) return;
    }
    throw new Error('sync did not finish');
  }

  /**
   * Applies a revocation list a phone carried (docs/api-reference.md 8.3): signed under a key of the lock's set, for this
   * lock and issuer, with a serial above the lock's own. Older lists are ignored (a phone may carry a stale one).
   * Its revocations are added (never forgotten), its serial taken, its key set replaces the lock's.
   */
  async applyRevocationList(jws: string): Promise<RevocationListResult> {
    const verified = await verifyJws(jws, REVOCATION_LIST_TYPE, this.keys);
    if ('failure' in verified) return { applied: false, reason: LIST_FAILURES[verified.failure] };
    const list = verified.payload;
    if (!isObject(list)) return { applied: false, reason: 'malformed list' };
    const { iss, aud, serial, iat, revoked } = list;
    if (typeof iss !== 'string' || typeof aud !== 'string' || !Number.isSafeInteger(serial) || !Number.isSafeInteger(iat)) return { applied: false, reason: 'malformed list' };
    if (!Array.isArray(revoked) || !revoked.every((id) => typeof id === 'string')) return { applied: false, reason: 'malformed list' };
    if (iss !== this.issuer) return { applied: false, reason: 'wrong issuer' };
    if (aud !== this.securedObjectId) return { applied: false, reason: 'wrong lock' };
    if ((serial as number) <= this.serial) return { applied: false, reason: 'stale list' };
    const newlyRevoked = this.revoke(revoked as string[]);
    this.serial = serial as number;
    return { applied: true, serial: this.serial, newlyRevoked, keys: this.takeKeys(list.keys) };
  }

  /** Decides whether the presented credential lets `command` through over `channel` at `atMs`, and why; logs the decision. */
  async decide(credential: string, command: string, atMs: number, channel = 'btlespp'): Promise<LockDecision> {
    const decision = await this.decideUnlogged(credential, command, atMs, channel);
    this.record(decision, command, atMs, channel);
    return decision;
  }

  /** The decisions not yet acknowledged, oldest first (copies). */
  get accessLog(): AccessLogEntry[] {
    return this.log.map((entry) => ({ ...entry }));
  }

  /**
   * The body of the next access-log upload (docs/api-reference.md 8.5): the lock's applied serial (8.4), its clock now and
   * its oldest entries not yet acknowledged, at most one upload's worth; null when there is nothing to send. A phone
   * relaying it later sends `lockTime` plus the time elapsed since it read the lock.
   */
  accessLogUpload(lockNow: number): AccessLogUpload | null {
    if (this.log.length === 0) return null;
    return {
      appliedSerial: this.serial,
      ...(isValidInstant(lockNow) && lockNow >= 0 && lockNow <= MAX_MILLIS ? { lockTime: lockNow } : {}),
      entries: this.log.slice(0, ACCESS_LOG_UPLOAD_MAX).map((entry) => ({ ...entry })),
    };
  }

  /** Drops the entries up to `upToEntryNo` once the server answered 2xx to their upload; answers how many. */
  acknowledgeAccessLog(upToEntryNo: number): number {
    if (!Number.isSafeInteger(upToEntryNo)) return 0;
    const kept = this.log.findIndex((entry) => entry.entryNo > upToEntryNo);
    return this.log.splice(0, kept === -1 ? this.log.length : kept).length;
  }

  /** Appends a decision to the log, dropping the oldest entry when it is full; never fails the decision. */
  private record(decision: LockDecision, command: unknown, atMs: unknown, channel: unknown): void {
    const tokenId = loggable(decision.ticketId, 256);
    this.log.push({
      entryNo: this.nextEntryNo++,
      lockTime: isValidInstant(atMs) && atMs >= 0 && atMs <= MAX_MILLIS ? atMs : 0,
      ...(tokenId !== undefined ? { tokenId } : {}),
      command: loggable(command, 16) ?? '?',
      channel: loggable(channel, 32) ?? '?',
      result: decision.decision === 'open' ? 'granted' : 'denied',
      reason: decision.reason,
    });
    if (this.log.length > this.logCapacity) this.log.shift();
  }

  private async decideUnlogged(credential: string, command: string, atMs: number, channel: string): Promise<LockDecision> {
    // A lock without a valid clock reading opens nothing: checked first, before any work on the credential.
    if (!isValidInstant(atMs)) return { decision: 'deny', reason: 'invalid time' };
    const verified = await verifyJws(credential, CREDENTIAL_TYPE, this.keys);
    if ('failure' in verified) return { decision: 'deny', reason: CREDENTIAL_FAILURES[verified.failure] };
    const { payload } = verified;
    const jti = isObject(payload) && typeof payload.jti === 'string' ? payload.jti : undefined;
    const check = checkCredential(verified.header, payload, this.state(), { command, channel, at: atMs });
    if (check.decision === 'open') return { decision: 'open', reason: 'valid', ticketId: jti! };
    return { decision: 'deny', reason: check.reason, ...(jti !== undefined ? { ticketId: jti } : {}) };
  }

  private state() {
    return {
      issuer: this.issuer,
      securedObjectId: this.securedObjectId,
      maxCredentialLifetime: this.maxCredentialLifetime,
      revoked: this.revoked,
      decommissioned: this.decommissioned,
    };
  }

  /**
   * Replaces the key set with `jwks` when it is well-formed (docs/api-reference.md 8.1: key rotation reaches the lock by
   * sync or a revocation list). A malformed set is ignored and the old one kept: never emptied, never half-replaced.
   */
  private takeKeys(jwks: unknown): SyncApplied['keys'] {
    if (jwks === undefined) return 'unchanged';
    const parsed = parseKeySet(jwks);
    if (!parsed) return 'ignored';
    this.keys = parsed;
    return 'replaced';
  }

  private revoke(ticketIds: string[]): number {
    const before = this.revoked.size;
    for (const id of ticketIds) this.revoked.add(id);
    return this.revoked.size - before;
  }
}

/** docs/lock-sync.md: the backoff of a refused sync: exponential from `baseMs`, bounded by `capMs`, full jitter. */
export const SYNC_BACKOFF = { baseMs: 1000, capMs: 300_000 } as const;

/**
 * How long to wait before retrying a refused sync (docs/lock-sync.md): a uniformly random delay up to
 * min(cap, base * 2^attempt) (full jitter spreads a fleet that failed together), and never less than the server's
 * `Retry-After` (RFC 9110 10.2.3: delay-seconds or an HTTP-date). `attempt` counts the refusals in a row from 0.
 */
export function syncRetryDelayMs(attempt: number, retryAfter: string | null, now: number, random: () => number = Math.random): number {
  const bound = Math.min(SYNC_BACKOFF.capMs, SYNC_BACKOFF.baseMs * 2 ** Math.max(0, attempt));
  const jittered = Math.floor(random() * bound);
  return Math.max(jittered, retryAfterMs(retryAfter, now));
}

/** `Retry-After` in ms from now; 0 when absent or unreadable (the backoff alone then decides). */
function retryAfterMs(value: string | null, now: number): number {
  if (value === null) return 0;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Math.min(Number(trimmed) * 1000, SYNC_BACKOFF.capMs);
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? 0 : Math.min(Math.max(0, at - now), SYNC_BACKOFF.capMs);
}

/** What a lock needs of an HTTP answer to decide whether to retry. */
export interface SyncHttpAnswer {
  status: number;
  headers: { get(name: string): string | null };
}

export interface SyncRetryOptions {
  /** Waits `ms`; a test passes one that records instead of sleeping. */
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
  clock?: () => number;
  /** Refusals in a row before giving up (the answer is then returned as it is). */
  maxAttempts?: number;
}

/**
 * Sends one sync request, retrying while the server refuses it for load (503, 429) or the connection fails, as
 * docs/lock-sync.md says a lock must: backoff with full jitter, honouring Retry-After. Any other answer is returned.
 */
export async function withSyncBackoff<T extends SyncHttpAnswer>(send: () => Promise<T>, options: SyncRetryOptions = {}): Promise<T> {
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const clock = options.clock ?? Date.now;
  const maxAttempts = options.maxAttempts ?? 8;
  for (let attempt = 0; ; attempt++) {
    let answer: T;
    try {
      answer = await send();
    } catch (error) {
      if (attempt + 1 >= maxAttempts) throw error;
      await sleep(syncRetryDelayMs(attempt, null, clock(), options.random));
      continue;
    }
    if ((answer.status !== 503 && answer.status !== 429) || attempt + 1 >= maxAttempts) return answer;
    await sleep(syncRetryDelayMs(attempt, answer.headers.get('retry-after'), clock(), options.random));
  }
}
