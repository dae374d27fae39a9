// The phone's and the lock's own keys (docs/api-reference.md 11): P-256 public JWKs, their RFC 7638 thumbprints, and
// the compact JWS they sign (key proofs, client assertions, lock hellos, ticket proofs, receipts). One strict reading
// for the service and the reference lock and phone alike, so that both refuse the same inputs.
import { createPublicKey, hash, verify, type KeyObject } from 'node:crypto';

/** A P-256 public key as a JWK with exactly the members RFC 7518 6.2.1 requires: no private `d`, nothing else. */
export interface HolderPublicKey {
  kty: 'EC';
  crv: 'P-256';
  x: string;
  y: string;
}

/** The only algorithm a phone or a lock signs with (docs/api-reference.md 11): ES256, the curve of phones' hardware. */
export const HOLDER_KEY_ALGORITHM = 'ES256';

/** A P-256 coordinate: 32 octets, unpadded base64url (RFC 7518 6.2.1.2: the full length, leading zeros kept). */
const COORDINATE = /^[A-Za-z0-9_-]{43}$/;

export type PublicKeyReading = { key: HolderPublicKey; keyObject: KeyObject } | { error: string };

/**
 * Reads a phone or lock public key. The reason a key is refused is a sentence a client can act on; a private member
 * (`d`) is named as such, because sending it means the private key left the device.
 */
export function readHolderPublicKey(value: unknown): PublicKeyReading {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { error: 'publicKey must be a JWK object' };
  const members = Object.keys(value);
  if (members.includes('d')) return { error: 'publicKey holds a private key member (d): send only the public key, and make a new key pair' };
  const extra = members.filter((name) => !['kty', 'crv', 'x', 'y'].includes(name));
  if (extra.length > 0) return { error: `publicKey may hold only kty, crv, x and y; remove ${extra.join(', ')}` };
  const { kty, crv, x, y } = value as Record<string, unknown>;
  if (kty !== 'EC' || crv !== 'P-256') return { error: 'publicKey must be a P-256 key: kty "EC", crv "P-256"' };
  if (typeof x !== 'string' || typeof y !== 'string' || !COORDINATE.test(x) || !COORDINATE.test(y)) {
    return { error: 'publicKey x and y must each be 32 octets in unpadded base64url' };
  }
  const key: HolderPublicKey = { kty, crv, x, y };
  try {
    // node:crypto refuses a point that is not on the curve.
    return { key, keyObject: createPublicKey({ key: { ...key }, format: 'jwk' }) };
  } catch {
    return { error: 'publicKey is not a point on P-256' };
  }
}

/** RFC 7638: SHA-256 over the required members in lexicographic order, no whitespace; base64url. */
export function holderKeyThumbprint(key: HolderPublicKey): string {
  const canonical = `{"crv":"${key.crv}","kty":"${key.kty}","x":"${key.x}","y":"${key.y}"}`;
  return hash('sha256', canonical, 'base64url');
}

/** base64url SHA-256 of a text: a proof's `ath` over the credential it is made for (docs/api-reference.md 11.3). */
export function sha256Base64url(text: string): string {
  return hash('sha256', text, 'base64url');
}

export interface ParsedHolderJws {
  header: Record<string, unknown>;
  payload: Record<string, unknown>;
  signingInput: string;
  signature: Buffer;
}

const PART = /^[A-Za-z0-9_-]*$/;

function parseJsonObject(part: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/**
 * Splits a compact JWS (RFC 7515 7.1) whose header and payload are JSON objects, without verifying it. Null for
 * anything else: a wrong number of parts, characters outside base64url, JSON that is not an object.
 */
export function parseHolderJws(jws: unknown, maxLength = 16_384): ParsedHolderJws | null {
  if (typeof jws !== 'string' || jws.length > maxLength) return null;
  const parts = jws.split('.');
  if (parts.length !== 3 || !parts.every((part) => PART.test(part))) return null;
  const header = parseJsonObject(parts[0]!);
  const payload = parseJsonObject(parts[1]!);
  if (header === null || payload === null) return null;
  return { header, payload, signingInput: `${parts[0]}.${parts[1]}`, signature: Buffer.from(parts[2]!, 'base64url') };
}

/** ES256 by its header and a 64-octet R || S: what either check verifies at all. */
const isHolderSigned = (parsed: ParsedHolderJws) => parsed.header['alg'] === HOLDER_KEY_ALGORITHM && parsed.signature.length === 64;

/**
 * Verifies an ES256 signature (RFC 7518 3.4: the 64-octet R || S form, which node:crypto reads as `ieee-p1363`).
 * The header's `alg` must be ES256 exactly: `none` and every other algorithm are refused (RFC 8725 3.1).
 */
export function verifyHolderSignature(parsed: ParsedHolderJws, key: KeyObject): boolean {
  if (!isHolderSigned(parsed)) return false;
  return verify('sha256', Buffer.from(parsed.signingInput), { key, dsaEncoding: 'ieee-p1363' }, parsed.signature);
}


/**
 * The same check on the libuv pool (node:crypto's callback form), beside the event loop rather than on it: for the
 * token endpoint, where a phone's assertion is verified on every request (private_key_jwt) and the verification is the
 * largest cost of the request's own, as signing is for every token (shared/jws.ts). The other checks stay synchronous:
 * the reference lock decides one exchange at a time, and key proofs and lock receipts come once per key or upload.
 */
export function verifyHolderSignatureOffLoop(parsed: ParsedHolderJws, key: KeyObject): Promise<boolean> {
  if (!isHolderSigned(parsed)) return Promise.resolve(false);
  return new Promise((resolve) => {
    verify('sha256', Buffer.from(parsed.signingInput), { key, dsaEncoding: 'ieee-p1363' }, parsed.signature, (error, valid) => {
      // A key node:crypto cannot use for ES256 verifies nothing; it is not the caller's error to answer.
      resolve(error === null && valid);
    });
  });
}
