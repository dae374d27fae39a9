// The exchange at the door (docs/lock-integration.md 4): the lock's hello, the phone's proof of its key and the lock's
// receipt, as pure rules shared by the reference lock and the reference phone. The lock's checks of a proof run in the
// one order of docs/lock-integration.md 3.3 (steps 7 and 8); the phone's checks of a hello in that of 4.2.
import { HOLDER_KEY_ALGORITHM, holderKeyThumbprint, readHolderPublicKey, sha256Base64url, verifyHolderSignature } from './holder-keys.js';
import type { LockReason } from './credential-check.js';
import { parseStrictCompactJws } from './strict-json.js';

/** The `typ` of each JWS of the exchange (RFC 8725 3.11: explicit types, so none passes for another). */
export const HELLO_TYPE = 'lock-hello+jwt';
export const PROOF_TYPE = 'ticket-proof+jwt';
export const RECEIPT_TYPE = 'lock-receipt+jwt';

/** docs/lock-integration.md 3.1: the longest proof and hello a lock or phone reads (a proof with its `jwk` is ~600). */
export const EXCHANGE_JWS_MAX_LENGTH = 2048;
/** docs/lock-integration.md 4.3: how far a proof's `iat` may lie from the lock's clock, either way. */
export const PROOF_IAT_TOLERANCE_SECONDS = 300;
/** docs/lock-integration.md 4.2: how far a hello's `iat` may lie from the phone's clock, either way. */
export const HELLO_IAT_TOLERANCE_SECONDS = 60;
/** A nonce: at least 128 random bits in base64url (22 characters), at most 128 characters. */
export const NONCE = /^[A-Za-z0-9_-]{22,128}$/;

export type HolderBinding = 'optional' | 'required';
export const HOLDER_BINDINGS: readonly HolderBinding[] = ['optional', 'required'];

/** What the lock knows when it checks a proof: the session its hello opened and what was asked. */
export interface ProofContext {
  /** The lock's own id: the only `aud` a proof may name. */
  lockId: string;
  /** The nonce of the lock's current hello; undefined when it sent none. */
  nonce: string | undefined;
  /** A decision was already taken under that nonce: one proof per hello. */
  nonceUsed: boolean;
  /** The compact credential shown, exactly as received: `ath` is its hash. */
  credential: string;
  /** The credential's `cnf.jkt`. */
  jkt: string;
  /** The command asked for. */
  command: string;
  /** The lock's clock, Unix milliseconds. */
  at: number;
}

export type ProofReason = Extract<LockReason, 'ok' | 'bad-proof' | 'key-mismatch' | 'wrong-lock' | 'wrong-nonce' | 'nonce-used' | 'credential-mismatch'>;

const isSafeInteger = (value: unknown): value is number => typeof value === 'number' && Number.isSafeInteger(value);

/**
 * Checks the proof shown with a bound credential, in the order of docs/lock-integration.md 3.3 step 8: its form and
 * header (`bad-proof`), whose key it holds (`key-mismatch`), its signature (`bad-proof`), its claims, for whom it was
 * made (`wrong-lock`), for which hello (`wrong-nonce`, `nonce-used`), for which credential (`credential-mismatch`),
 * for which command and when (`bad-proof`). The first that fails is the answer.
 */
export function checkProof(proof: unknown, context: ProofContext): ProofReason {
  if (proof === undefined || proof === null) return 'bad-proof';
  const parsed = parseStrictCompactJws(proof, EXCHANGE_JWS_MAX_LENGTH);
  if (!parsed) return 'bad-proof';
  const { header, payload } = parsed;
  // RFC 7515 4.1.11: no extension is understood here, so a `crit` header is refused, whatever it names.
  if (header['typ'] !== PROOF_TYPE || header['alg'] !== HOLDER_KEY_ALGORITHM || 'crit' in header) return 'bad-proof';
  // RFC 9449 4.2: the public key rides in the header; it is trusted only because its thumbprint is the credential's.
  const key = readHolderPublicKey(header['jwk']);
  if ('error' in key) return 'bad-proof';
  if (holderKeyThumbprint(key.key) !== context.jkt) return 'key-mismatch';
  if (!verifyHolderSignature(parsed, key.keyObject)) return 'bad-proof';
  const { aud, nonce, ath, cmd, iat } = payload;
  if (typeof aud !== 'string' || typeof nonce !== 'string' || typeof ath !== 'string' || typeof cmd !== 'string' || !isSafeInteger(iat)) return 'bad-proof';
  if (aud !== context.lockId) return 'wrong-lock';
  if (context.nonce === undefined || nonce !== context.nonce) return 'wrong-nonce';
  if (context.nonceUsed) return 'nonce-used';
  if (ath !== sha256Base64url(context.credential)) return 'credential-mismatch';
  if (cmd !== context.command) return 'bad-proof';
  if (Math.abs(iat * 1000 - context.at) > PROOF_IAT_TOLERANCE_SECONDS * 1000) return 'bad-proof';
  return 'ok';
}

/** A hello's claims once the phone has checked them (docs/lock-integration.md 4.1). */
export interface HelloClaims {
  iss: string;
  sub: string;
  nonce: string;
  serial: number;
  iat: number;
}

export type HelloCheck = { hello: HelloClaims } | { refused: 'malformed' | 'bad-signature' | 'wrong-issuer' | 'wrong-lock' | 'stale' };

/**
 * The phone's check of a lock's hello (docs/lock-integration.md 4.2), before it shows anything: form, type and
 * algorithm, the signature under the `lockKey` of its download, the issuer and lock id of its credential, and a fresh
 * `iat` on the phone's clock. A phone that refuses shows nothing to that lock.
 */
export function checkHello(hello: unknown, lockKey: unknown, expected: { issuer: string; lockId: string; at: number }): HelloCheck {
  const key = readHolderPublicKey(lockKey);
  const parsed = parseStrictCompactJws(hello, EXCHANGE_JWS_MAX_LENGTH);
  if ('error' in key || !parsed) return { refused: 'malformed' };
  const { header, payload } = parsed;
  if (header['typ'] !== HELLO_TYPE || header['alg'] !== HOLDER_KEY_ALGORITHM || 'crit' in header) return { refused: 'malformed' };
  if (!verifyHolderSignature(parsed, key.keyObject)) return { refused: 'bad-signature' };
  const { iss, sub, nonce, serial, iat } = payload;
  if (typeof iss !== 'string' || typeof sub !== 'string' || typeof nonce !== 'string' || !NONCE.test(nonce) || !isSafeInteger(serial) || !isSafeInteger(iat)) {
    return { refused: 'malformed' };
  }
  if (iss !== expected.issuer) return { refused: 'wrong-issuer' };
  if (sub !== expected.lockId) return { refused: 'wrong-lock' };
  if (Math.abs(iat * 1000 - expected.at) > HELLO_IAT_TOLERANCE_SECONDS * 1000) return { refused: 'stale' };
  return { hello: { iss, sub, nonce, serial, iat } };
}
