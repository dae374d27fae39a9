// A lock simulator: the reference for what a lock does (docs/lock-integration.md, docs/api-reference.md 6.3, 8.1–8.5).
// Provisioned with the trust answer (its tenant's issuer and key set, its own id, the maximum credential lifetime, the
// holder-binding policy and its starting serial) and its own P-256 key pair, it learns revocations, revoked phone keys
// and key changes by syncing (docs/api-reference.md 6.2) and from revocation lists a phone carries (docs/api-reference.md
// 8.3), greets a phone with a signed hello, decides on a credential and its proof as strictly as firmware must, in the
// one order of docs/lock-integration.md 3.3 (anything malformed or missing is a refusal), logs every decision and signs
// receipts of them (docs/lock-integration.md 4).
import { createPublicKey, randomBytes, verify, type KeyObject } from 'node:crypto';
import type { JSONWebKeySet, JWK } from 'jose';
import {
  CREDENTIAL_LIMITS,
  CREDENTIAL_TYPE,
  LOCK_STATE_TYPE,
  REVOCATION_LIST_TYPE,
  checkCredential,
  isValidInstant,
  parseCredentialClaims,
  type LockReason,
} from '../shared/credential-check.js';
import { HELLO_TYPE, HOLDER_BINDINGS, NONCE, RECEIPT_TYPE, checkProof, type HolderBinding } from '../shared/door-exchange.js';
import type { LockLogEntry } from '../shared/lock-receipt.js';
import { parseStrictCompactJws } from '../shared/strict-json.js';
import { es256KeyPair, signEs256, type Es256KeyPair } from './es256.js';
import type { HolderPublicKey } from '../shared/holder-keys.js';

/** The signature algorithms of ticket keys (src/shared/jws.ts); `none` and HMAC never. */
const ALGORITHMS = new Set(['EdDSA', 'ES256']);

export type { LockReason } from '../shared/credential-check.js';
/** Kept for callers that named the lock's reasons by their earlier type name. */
export type LockDecisionReason = LockReason;

export type LockDecision =
  | { decision: 'open'; reason: 'ok'; ticketId: string }
  | { decision: 'deny'; reason: Exclude<LockReason, 'ok'>; ticketId?: string };

/** One logged decision, as an access-log upload and a receipt carry it: the reference lock always words a reason. */
export interface AccessLogEntry extends LockLogEntry {
  reason: LockReason;
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
/** The most entries one upload carries (the server's limit, src/schemas/access-log.ts), and one receipt. */
export const ACCESS_LOG_UPLOAD_MAX = 1000;
/** The largest time an upload carries (docs/api-reference.md 7.4). */
const MAX_MILLIS = 8_640_000_000_000_000;

/** docs/lock-integration.md 3.1: the most a lock takes in from its trust, a sync answer or a revocation list. */
export const LOCK_LIMITS = {
  /** Keys of the tenant's key set. */
  keys: 16,
  /** Ticket ids, and phone-key thumbprints, in one revocation list or sync answer. */
  revocations: 10_000,
  /** Characters of a revocation list (compact JWS). */
  revocationListLength: 1_048_576,
  /** Characters of a lock state (compact JWS, docs/lock-integration.md 11). */
  lockStateLength: 4096,
} as const;

/** `text` when it fits the upload format (1 to `max` printable ASCII characters), else undefined. */
function loggable(text: unknown, max: number): string | undefined {
  return typeof text === 'string' && text.length >= 1 && text.length <= max && /^[\x20-\x7e]+$/.test(text) ? text : undefined;
}

/** What an installer writes into a lock: `GET /deviceapi/securedobjects/{id}/trust` (docs/lock-integration.md 1). */
export interface LockProvisioning {
  securedObjectId: string;
  issuer: string;
  keys: JSONWebKeySet;
  /** Seconds (docs/api-reference.md 8.2). */
  maxCredentialLifetime: number;
  /** The tenant's or the lock's policy; `optional` when the answer has none (a server from before bound credentials). */
  holderBinding?: HolderBinding;
  /** The RFC 7638 thumbprint of the lock key the service registered: checked against the lock's own key when given. */
  keyThumbprint?: string;
  /** The starting revocation serial: a revocation list at or below it is stale (docs/lock-integration.md 6). */
  serial?: number;
  /**
   * The ticket ids and phone-key thumbprints revoked before provisioning (docs/lock-integration.md 1): a lock that starts
   * at `serial` ignores every list at or below it, so it learns these from the trust answer or never.
   */
  revoked?: string[];
  revokedKeys?: string[];
}

export interface LockOptions {
  logCapacity?: number;
  /** The lock's own key: a private P-256 JWK. Without it the lock makes a new key pair, as at provisioning. */
  key?: unknown;
  /** Random octets for nonces (tests pass a fixed source). */
  randomBytes?: (size: number) => Buffer;
}

/** A sync answer (docs/api-reference.md 6.2, 8.1, 4.1). Everything but `tokens`, `revocations` and `cursor` may be absent. */
export interface SyncAnswer {
  tokens: { id: string }[];
  revocations: { tokenId: string; revocationDate: number }[];
  cursor: string;
  keys?: JSONWebKeySet;
  decommissioned?: boolean;
  /** The change-log position the lock has reached once it applied this answer. */
  serial?: number;
  holderBinding?: HolderBinding;
  /** Revoked phone keys: every credential bound to one is refused `key-revoked`. */
  revokedKeys?: { jkt: string; revocationDate: number }[];
  /** The lock's signed state (docs/lock-integration.md 11): on a full sync and after it changed. */
  lockState?: string;
}

/** What applying a sync answer changed. */
export interface SyncApplied {
  /** Ticket ids not revoked before. */
  newlyRevoked: number;
  /** `unchanged`: no `keys` in the answer. */
  keys: 'unchanged' | 'replaced';
}

/** What a lock state did (docs/lock-integration.md 11): applied, or why the lock kept its own. */
export type LockStateResult =
  | { applied: true; serial: number; mode: 'lockdown' | 'normal' }
  | { applied: false; reason: 'malformed' | 'unknown-key' | 'bad-signature' | 'wrong-issuer' | 'wrong-lock' | 'stale' };

export type RevocationListResult =
  | { applied: true; serial: number; newlyRevoked: number; keys: SyncApplied['keys'] }
  | { applied: false; reason: 'malformed' | 'unknown-key' | 'bad-signature' | 'wrong-issuer' | 'wrong-lock' | 'stale' };

/** One ticket key the lock verifies with. */
interface TicketKey {
  alg: 'EdDSA' | 'ES256';
  key: KeyObject;
}

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
 * The key set by kid, or null when it is malformed: not `{keys: [...]}`, empty, above LOCK_LIMITS.keys, a duplicate
 * kid or any unusable key. A whole set is taken or refused, so a broken update can never leave a lock with fewer or
 * other keys than meant. Members a key does not need are ignored (docs/lock-integration.md 3.1).
 */
export function parseKeySet(jwks: unknown): Map<string, JWK> | null {
  if (typeof jwks !== 'object' || jwks === null) return null;
  const keys = (jwks as { keys?: unknown }).keys;
  if (!Array.isArray(keys) || keys.length === 0 || keys.length > LOCK_LIMITS.keys || !keys.every(isUsableKey)) return null;
  const byKid = new Map(keys.map((key) => [key.kid, key] as const));
  return byKid.size === keys.length ? byKid : null;
}

/** The verifying keys of a parsed set, or null when one is not a key node:crypto can read (a point off the curve). */
function ticketKeys(keys: Map<string, JWK>): Map<string, TicketKey> | null {
  const result = new Map<string, TicketKey>();
  try {
    for (const [kid, jwk] of keys) {
      const { kty, crv, x, y } = jwk;
      result.set(kid, { alg: jwk.alg as TicketKey['alg'], key: createPublicKey({ key: { kty, crv, x, ...(y !== undefined ? { y } : {}) } as never, format: 'jwk' }) });
    }
  } catch {
    return null;
  }
  return result;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
/** RFC 7638 SHA-256 thumbprint, base64url. */
const THUMBPRINT = /^[A-Za-z0-9_-]{43}$/;
const isThumbprint = (value: unknown): value is string => typeof value === 'string' && THUMBPRINT.test(value);
const isHolderBinding = (value: unknown): value is HolderBinding => HOLDER_BINDINGS.includes(value as HolderBinding);

type JwsFailure = 'malformed' | 'unknown-key' | 'bad-signature';

/**
 * A compact JWS of the tenant (a credential or a revocation list) checked with the lock's key set, in the order of
 * docs/lock-integration.md 3.3 steps 1–3: its form (strict JSON, 3.1), its header (`typ` exactly, no `crit`, `alg`
 * EdDSA or ES256, a `kid`), the key (its `kid` in the set, for that `alg`), the signature.
 */
function verifyTenantJws(
  jws: unknown,
  typ: string,
  keys: ReadonlyMap<string, TicketKey>,
  maxLength: number,
): { header: Record<string, unknown>; payload: Record<string, unknown> } | { failure: JwsFailure } {
  const parsed = parseStrictCompactJws(jws, maxLength);
  if (!parsed) return { failure: 'malformed' };
  const { header } = parsed;
  // RFC 7515 4.1.11: the lock understands no extension, so any `crit` is refused. Other unknown members are ignored:
  // none of them (jku, x5u, jwk) ever chooses the key, which comes from the lock's own set by `kid`.
  if (header.typ !== typ || 'crit' in header || typeof header.alg !== 'string' || !ALGORITHMS.has(header.alg) || typeof header.kid !== 'string') {
    return { failure: 'malformed' };
  }
  const key = keys.get(header.kid);
  // A key is for one algorithm (RFC 8725 3.1): an ES256 header under an EdDSA kid is not that key's signature.
  if (!key || key.alg !== header.alg) return { failure: 'unknown-key' };
  const data = Buffer.from(parsed.signingInput, 'ascii');
  // RFC 8037 3.1: Ed25519 signs the message itself; RFC 7518 3.4: ES256 is the 64-octet R || S.
  const good =
    parsed.signature.length === 64 &&
    (key.alg === 'EdDSA' ? verify(null, data, key.key, parsed.signature) : verify('sha256', data, { key: key.key, dsaEncoding: 'ieee-p1363' }, parsed.signature));
  if (!good) return { failure: 'bad-signature' };
  return { header, payload: parsed.payload };
}

/** What a hello opened: the nonce the next decision must be proved under, and whether a decision already used it. */
interface Session {
  nonce: string;
  used: boolean;
}

export class LockSimulator {
  readonly securedObjectId: string;
  readonly issuer: string;
  readonly maxCredentialLifetime: number;
  private readonly revoked = new Set<string>();
  private readonly revokedKeys = new Set<string>();
  private keys: Map<string, TicketKey>;
  private readonly key: Es256KeyPair;
  private readonly random: (size: number) => Buffer;
  private session: Session | undefined;
  /** Where the next sync continues; undefined until the first one. */
  cursor: string | undefined;
  /** The change-log position the lock has applied (docs/api-reference.md 8.3, 8.4): revocation lists at or below it are stale. */
  serial: number;
  /** The latest policy the lock learnt (trust, sync or an applied list): `required` refuses unbound credentials. */
  holderBinding: HolderBinding;
  /** The backend deleted this lock (docs/api-reference.md 4.1): it opens for nobody. */
  decommissioned = false;
  /** In lockdown the lock refuses every credential that would otherwise open but an override's, `lockdown` (docs/lock-integration.md 3.3 step 9). */
  lockdown = false;
  /** The serial of the lock state it applied last (docs/lock-integration.md 11); a state at or below it is stale. */
  lockStateSerial = 0;
  /** Why the last lock state it was handed was refused; undefined once one was applied (what a lock reports to its installer). */
  lockStateRefusal: Exclude<LockStateResult, { applied: true }>['reason'] | undefined;
  /** The decisions not yet acknowledged by the server, oldest first (docs/api-reference.md 8.5). */
  private readonly log: AccessLogEntry[] = [];
  /** The decisions no receipt has carried yet, oldest first (docs/lock-integration.md 4.4). */
  private readonly unreceipted: AccessLogEntry[] = [];
  private nextEntryNo = 1;
  /** How many entries the log keeps: beyond, the oldest are dropped, as firmware with bounded memory does. */
  readonly logCapacity: number;

  /** Throws on a provisioning a lock could not decide with: an installer error, caught before the lock is mounted. */
  constructor(provisioning: LockProvisioning, options: LockOptions = {}) {
    const logCapacity = options.logCapacity ?? ACCESS_LOG_CAPACITY;
    if (!Number.isSafeInteger(logCapacity) || logCapacity <= 0) throw new TypeError('logCapacity must be a positive integer');
    this.logCapacity = logCapacity;
    const { securedObjectId, issuer, keys, maxCredentialLifetime, holderBinding, keyThumbprint, serial } = provisioning;
    if (typeof securedObjectId !== 'string' || securedObjectId === '') throw new TypeError('securedObjectId must be a non-empty string');
    if (typeof issuer !== 'string' || issuer === '') throw new TypeError('issuer must be a non-empty string');
    if (!Number.isSafeInteger(maxCredentialLifetime) || maxCredentialLifetime <= 0) throw new TypeError('maxCredentialLifetime must be a positive integer of seconds');
    const parsed = parseKeySet(keys);
    const verifying = parsed && ticketKeys(parsed);
    if (!verifying) throw new TypeError('keys must be a key set of EdDSA or ES256 public keys, each with its own kid');
    if (holderBinding !== undefined && !isHolderBinding(holderBinding)) throw new TypeError('holderBinding must be "optional" or "required"');
    if (serial !== undefined && !(Number.isSafeInteger(serial) && serial >= 0)) throw new TypeError('serial must be a non-negative integer');
    this.key = es256KeyPair(options.key);
    // The service registered another key than this lock holds: its receipts would never verify, so it is not mounted.
    if (options.key !== undefined && keyThumbprint !== undefined && keyThumbprint !== this.key.thumbprint) {
      throw new TypeError('keyThumbprint is not the thumbprint of the lock key: the service holds another key for this lock');
    }
    this.random = options.randomBytes ?? randomBytes;
    this.securedObjectId = securedObjectId;
    this.issuer = issuer;
    this.maxCredentialLifetime = maxCredentialLifetime;
    this.keys = verifying;
    this.holderBinding = holderBinding ?? 'optional';
    this.serial = serial ?? 0;
    for (const [name, ids, into] of [
      ['revoked', provisioning.revoked, this.revoked],
      ['revokedKeys', provisioning.revokedKeys, this.revokedKeys],
    ] as const) {
      if (ids === undefined) continue;
      if (!Array.isArray(ids) || ids.length > LOCK_LIMITS.revocations || !ids.every((id) => typeof id === 'string' && id !== '')) {
        throw new TypeError(`${name} must be a list of at most ${LOCK_LIMITS.revocations} non-empty strings`);
      }
      for (const id of ids) into.add(id);
    }
  }

  /** The kids the lock accepts now. */
  get kids(): string[] {
    return [...this.keys.keys()];
  }

  /** The lock's public key, as the installer registers it (`PUT /deviceapi/securedobjects/{id}/key`). */
  get publicKey(): HolderPublicKey {
    return { ...this.key.publicKey };
  }

  /** The RFC 7638 thumbprint of the lock's key: the trust answer's `keyThumbprint`. */
  get keyThumbprint(): string {
    return this.key.thumbprint;
  }

  isRevoked(ticketId: string): boolean {
    return this.revoked.has(ticketId);
  }

  isKeyRevoked(jkt: string): boolean {
    return this.revokedKeys.has(jkt);
  }

  /**
   * Applies one sync answer (docs/api-reference.md 6.2, docs/lock-integration.md 5). Revocations are only ever added: a
   * ticket issued again after a revocation has a new id, so a revoked id never becomes valid again. An answer with any
   * malformed part (its key set included) throws and changes nothing (docs/lock-integration.md 3.1: a signed or
   * authenticated answer is taken whole or not at all; the lock keeps deciding with what it had).
   */
  applySync(answer: SyncAnswer): SyncApplied {
    if (!isObject(answer) || typeof answer.cursor !== 'string' || !Array.isArray(answer.revocations)) throw new Error('malformed sync answer');
    if (answer.revocations.length > LOCK_LIMITS.revocations || !answer.revocations.every((revocation) => isObject(revocation) && typeof revocation.tokenId === 'string')) {
      throw new Error('malformed sync answer: a revocation without a tokenId');
    }
    if (answer.serial !== undefined && !(Number.isSafeInteger(answer.serial) && answer.serial >= 0)) throw new Error('malformed sync answer: serial');
    if (answer.decommissioned !== undefined && typeof answer.decommissioned !== 'boolean') throw new Error('malformed sync answer: decommissioned');
    if (answer.holderBinding !== undefined && !isHolderBinding(answer.holderBinding)) throw new Error('malformed sync answer: holderBinding');
    const { revokedKeys } = answer;
    if (
      revokedKeys !== undefined &&
      !(Array.isArray(revokedKeys) && revokedKeys.length <= LOCK_LIMITS.revocations && revokedKeys.every((entry) => isObject(entry) && isThumbprint(entry.jkt)))
    ) {
      throw new Error('malformed sync answer: revokedKeys');
    }
    const keys = answer.keys === undefined ? undefined : this.readKeys(answer.keys);
    if (keys === null) throw new Error('malformed sync answer: keys');
    // docs/lock-integration.md 11: checked with the key set the answer brings (it may be signed by a key new in it). A
    // state the lock cannot trust fails the whole answer: the lock keeps its state and its cursor, says why, and the
    // next sync brings the state again; a stale one is merely not applied.
    const state = answer.lockState === undefined ? undefined : this.readLockState(answer.lockState, keys ?? this.keys);
    if (state !== undefined && !state.ok && state.reason !== 'stale') {
      this.lockStateRefusal = state.reason;
      throw new Error(`sync answer refused: its lock state is ${state.reason}`);
    }
    const newlyRevoked = this.revoke(answer.revocations.map((revocation) => revocation.tokenId));
    for (const entry of revokedKeys ?? []) this.revokedKeys.add(entry.jkt);
    if (keys) this.keys = keys;
    if (answer.holderBinding !== undefined) this.holderBinding = answer.holderBinding;
    // Once decommissioned, always: a later answer cannot bring a deleted lock back (docs/api-reference.md 4.1).
    if (answer.decommissioned === true) this.decommissioned = true;
    if (state?.ok) this.takeLockState(state);
    this.cursor = answer.cursor;
    // An old server sends no serial: the lock keeps its own. It never goes back, so a list it has applied stays applied.
    if (answer.serial !== undefined) this.serial = Math.max(this.serial, answer.serial);
    return { newlyRevoked, keys: keys ? 'replaced' : 'unchanged' };
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
   * Applies a revocation list a phone carried (docs/api-reference.md 8.3, docs/lock-integration.md 6): signed under a
   * key of the lock's set, for this lock and issuer, with a serial above the lock's own; every part well-formed, or
   * none of it is taken. Older lists are ignored (a phone may carry a stale one). Its revocations and revoked keys are
   * added (never forgotten), its serial, holder-binding policy and key set taken.
   */
  async applyRevocationList(jws: string): Promise<RevocationListResult> {
    const verified = verifyTenantJws(jws, REVOCATION_LIST_TYPE, this.keys, LOCK_LIMITS.revocationListLength);
    if ('failure' in verified) return { applied: false, reason: verified.failure };
    const list = verified.payload;
    const { iss, aud, serial, iat, revoked, revokedKeys, holderBinding } = list;
    const malformed = { applied: false, reason: 'malformed' } as const;
    if (typeof iss !== 'string' || typeof aud !== 'string' || !Number.isSafeInteger(serial) || (serial as number) < 0 || !Number.isSafeInteger(iat)) return malformed;
    if (!Array.isArray(revoked) || revoked.length > LOCK_LIMITS.revocations || !revoked.every((id) => typeof id === 'string' && id !== '')) return malformed;
    if (revokedKeys !== undefined && !(Array.isArray(revokedKeys) && revokedKeys.length <= LOCK_LIMITS.revocations && revokedKeys.every(isThumbprint))) return malformed;
    if (holderBinding !== undefined && !isHolderBinding(holderBinding)) return malformed;
    const keys = list.keys === undefined ? undefined : this.readKeys(list.keys);
    if (keys === null) return malformed;
    if (iss !== this.issuer) return { applied: false, reason: 'wrong-issuer' };
    if (aud !== this.securedObjectId) return { applied: false, reason: 'wrong-lock' };
    if ((serial as number) <= this.serial) return { applied: false, reason: 'stale' };
    const newlyRevoked = this.revoke(revoked as string[]);
    for (const jkt of (revokedKeys as string[] | undefined) ?? []) this.revokedKeys.add(jkt);
    if (holderBinding !== undefined) this.holderBinding = holderBinding;
    if (keys) this.keys = keys;
    this.serial = serial as number;
    return { applied: true, serial: this.serial, newlyRevoked, keys: keys ? 'replaced' : 'unchanged' };
  }

  /**
   * Applies a lock state from a sync answer or a phone (docs/api-reference.md 15, docs/lock-integration.md 11): verified
   * like a revocation list (typ `lock-state+jwt`, a key of the lock's set, the signature, `iss`, `aud`), every claim
   * well-formed, its serial above the lock's own lock-state serial. Anything else changes nothing: the lock keeps the
   * mode it has (fails closed: a forged "normal" never ends a lockdown) and records why.
   */
  applyLockState(jws: string): LockStateResult {
    const state = this.readLockState(jws, this.keys);
    if (!state.ok) {
      if (state.reason !== 'stale') this.lockStateRefusal = state.reason;
      return { applied: false, reason: state.reason };
    }
    this.takeLockState(state);
    return { applied: true, serial: state.serial, mode: state.mode };
  }

  /**
   * Opens a session (docs/lock-integration.md 4.1): a fresh nonce of 256 random bits, and the hello that carries it,
   * signed with the lock's key. The session's one decision must be proved under that nonce. `nonce` is for tests and
   * the command line only ("a lock that issued this nonce"): a lock never takes its nonce from outside.
   */
  hello(atMs: number, nonce?: string): string {
    if (!isValidInstant(atMs)) throw new TypeError('the lock has no valid clock reading');
    const value = nonce ?? this.random(32).toString('base64url');
    if (!NONCE.test(value)) throw new TypeError('a nonce is 22 to 128 base64url characters (at least 128 bits)');
    this.session = { nonce: value, used: false };
    return signEs256(this.key.privateKey, { typ: HELLO_TYPE }, { iss: this.issuer, sub: this.securedObjectId, nonce: value, serial: this.serial, iat: Math.floor(atMs / 1000) });
  }

  /** Marks the session's nonce used without a decision (tests: a lock that already decided under it). */
  endSession(): void {
    if (this.session) this.session.used = true;
  }

  /**
   * Decides whether the presented credential (and its proof, for a bound one) lets `command` through over `channel`
   * at `atMs`, and why; logs the decision. Every decision uses up the session's nonce, whatever it was.
   */
  async decide(credential: string, command: string, atMs: number, channel = 'btlespp', proof: string | null = null): Promise<LockDecision> {
    const session = this.session;
    const nonceUsed = session?.used ?? false;
    if (session) session.used = true;
    const decision = this.decideUnlogged(credential, command, atMs, channel, proof, session?.nonce, nonceUsed);
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

  /**
   * A receipt (docs/lock-integration.md 4.4): the lock's own signed word on its applied serial, its clock and the
   * entries since the last receipt (at most one upload's worth; the next receipt carries the rest), for a phone to
   * relay. Those entries are then the phone's to deliver: the next receipt starts after them.
   */
  receipt(lockNow: number): string {
    if (!isValidInstant(lockNow) || lockNow < 0 || lockNow > MAX_MILLIS) throw new TypeError('the lock has no valid clock reading');
    const entries = this.unreceipted.splice(0, ACCESS_LOG_UPLOAD_MAX);
    return signEs256(this.key.privateKey, { typ: RECEIPT_TYPE }, { sub: this.securedObjectId, appliedSerial: this.serial, lockTime: lockNow, entries });
  }

  /** Appends a decision to the log, dropping the oldest entry when it is full; never fails the decision. */
  private record(decision: LockDecision, command: unknown, atMs: unknown, channel: unknown): void {
    const tokenId = loggable(decision.ticketId, 256);
    const entry: AccessLogEntry = {
      entryNo: this.nextEntryNo++,
      lockTime: isValidInstant(atMs) && atMs >= 0 && atMs <= MAX_MILLIS ? atMs : 0,
      ...(tokenId !== undefined ? { tokenId } : {}),
      command: loggable(command, 16) ?? '?',
      channel: loggable(channel, 32) ?? '?',
      result: decision.decision === 'open' ? 'granted' : 'denied',
      reason: decision.reason,
    };
    this.log.push(entry);
    if (this.log.length > this.logCapacity) this.log.shift();
    this.unreceipted.push({ ...entry });
    if (this.unreceipted.length > this.logCapacity) this.unreceipted.shift();
  }

  /** The decision, in the one order of docs/lock-integration.md 3.3; the first check that fails is the reason. */
  private decideUnlogged(
    credential: string,
    command: string,
    atMs: number,
    channel: string,
    proof: string | null,
    nonce: string | undefined,
    nonceUsed: boolean,
  ): LockDecision {
    // Step 0: the lock's own state. Without a clock reading it can judge with it cannot read a credential's dates.
    if (!isValidInstant(atMs)) return { decision: 'deny', reason: 'malformed' };
    if (this.decommissioned) return { decision: 'deny', reason: 'decommissioned' };
    // Steps 1–3: form, header, key and signature.
    const verified = verifyTenantJws(credential, CREDENTIAL_TYPE, this.keys, CREDENTIAL_LIMITS.credentialLength);
    if ('failure' in verified) return { decision: 'deny', reason: verified.failure };
    const { payload } = verified;
    const jti = typeof payload.jti === 'string' ? payload.jti : undefined;
    const deny = (reason: Exclude<LockReason, 'ok'>): LockDecision => ({ decision: 'deny', reason, ...(jti !== undefined ? { ticketId: jti } : {}) });
    // Steps 4–6: the claims, whose, when, what, revoked.
    const check = checkCredential(verified.header, payload, this.state(), { command, channel, at: atMs });
    if (check.decision === 'deny') return deny(check.reason);
    const claims = parseCredentialClaims(payload)!;
    // Step 7: binding. A bound credential always needs its proof, whatever the policy: its `cnf` says so.
    if (claims.cnf === undefined) {
      if (this.holderBinding === 'required') return deny('binding-required');
    } else {
      if (this.revokedKeys.has(claims.cnf.jkt)) return deny('key-revoked');
      // Step 8: the proof.
      const proofReason = checkProof(proof, { lockId: this.securedObjectId, nonce, nonceUsed, credential, jkt: claims.cnf.jkt, command, at: atMs });
      if (proofReason !== 'ok') return deny(proofReason);
    }
    // Step 9: last, so that the override is read only from a credential that passed all else (docs/lock-integration.md 11).
    if (this.lockdown && claims.ovr !== true) return deny('lockdown');
    return { decision: 'open', reason: 'ok', ticketId: claims.jti };
  }

  /** A lock state checked with `keys`, or why it is not taken. */
  private readLockState(
    jws: unknown,
    keys: ReadonlyMap<string, TicketKey>,
  ): { ok: true; serial: number; mode: 'lockdown' | 'normal' } | { ok: false; reason: Exclude<LockStateResult, { applied: true }>['reason'] } {
    const verified = verifyTenantJws(jws, LOCK_STATE_TYPE, keys, LOCK_LIMITS.lockStateLength);
    if ('failure' in verified) return { ok: false, reason: verified.failure };
    const { iss, aud, serial, mode, iat } = verified.payload;
    if (typeof iss !== 'string' || typeof aud !== 'string' || !Number.isSafeInteger(serial) || (serial as number) < 0 || !Number.isSafeInteger(iat)) {
      return { ok: false, reason: 'malformed' };
    }
    if (mode !== 'lockdown' && mode !== 'normal') return { ok: false, reason: 'malformed' };
    if (iss !== this.issuer) return { ok: false, reason: 'wrong-issuer' };
    if (aud !== this.securedObjectId) return { ok: false, reason: 'wrong-lock' };
    if ((serial as number) <= this.lockStateSerial) return { ok: false, reason: 'stale' };
    return { ok: true, serial: serial as number, mode };
  }

  private takeLockState(state: { serial: number; mode: 'lockdown' | 'normal' }): void {
    this.lockdown = state.mode === 'lockdown';
    this.lockStateSerial = state.serial;
    this.lockStateRefusal = undefined;
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

  /** The verifying keys of a key set, or null when it is malformed (the whole answer or list is then refused). */
  private readKeys(jwks: unknown): Map<string, TicketKey> | null {
    const parsed = parseKeySet(jwks);
    return parsed && ticketKeys(parsed);
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
