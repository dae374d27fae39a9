// A key proof (docs/api-reference.md 11.1): the compact JWS by which a phone or a lock shows, when its public key is
// registered, that it holds the private key. Pure: the nonce's single use and its owner are the caller's to check.
import type { KeyObject } from 'node:crypto';
import { HOLDER_KEY_ALGORITHM, parseHolderJws, verifyHolderSignature, type ParsedHolderJws } from './holder-keys.js';

/** The proof's `typ` (RFC 8725 3.11): never taken for a ticket proof, a client assertion or anything else the key signs. */
export const KEY_PROOF_TYPE = 'key-proof+jwt';

/** How long a nonce of `POST /deviceapi/nonces` may be used, and how far a proof's `iat` may lie in the past. */
export const KEY_PROOF_MAX_AGE_MS = 5 * 60_000;
/** How far ahead of the server's clock a proof's `iat` may be: a phone's clock runs a little fast. */
const KEY_PROOF_FUTURE_SKEW_MS = 60_000;

export type KeyProofReading = { proof: ParsedHolderJws; nonce: string } | { error: string };

/** The proof's parts and its nonce, before anything is verified; the nonce is what the caller consumes first. */
export function readKeyProof(value: string): KeyProofReading {
  const proof = parseHolderJws(value, 4096);
  if (proof === null) return { error: 'proof is not a compact JWS whose header and payload are JSON objects' };
  const nonce = proof.payload['nonce'];
  if (typeof nonce !== 'string' || nonce.length === 0 || nonce.length > 200) {
    return { error: 'proof has no nonce: ask POST /deviceapi/nonces for one and sign it' };
  }
  return { proof, nonce };
}

/**
 * Why the proof does not show possession of `key` for this service now, or null when it does: the header is exactly
 * ES256 with `typ` `key-proof+jwt` (RFC 8725 3.1: no `none`, no other algorithm), the signature verifies with the key
 * being registered, `aud` is the service's public URL, and `iat` (seconds) is within 5 minutes.
 */
export function keyProofError(proof: ParsedHolderJws, key: KeyObject, audience: string, now: number): string | null {
  if (proof.header['alg'] !== HOLDER_KEY_ALGORITHM) return `proof must be signed with ${HOLDER_KEY_ALGORITHM}; its header says alg ${JSON.stringify(proof.header['alg'] ?? null)}`;
  if (proof.header['typ'] !== KEY_PROOF_TYPE) return `proof header must say typ "${KEY_PROOF_TYPE}"`;
  if (!verifyHolderSignature(proof, key)) return 'proof signature does not verify with publicKey: sign it with the private key of the key being registered';
  if (proof.payload['aud'] !== audience) return `proof aud must be exactly ${audience}`;
  const iat = proof.payload['iat'];
  if (typeof iat !== 'number' || !Number.isSafeInteger(iat)) return 'proof iat must be Unix seconds';
  if (iat * 1000 < now - KEY_PROOF_MAX_AGE_MS || iat * 1000 > now + KEY_PROOF_FUTURE_SKEW_MS) {
    return 'proof iat is more than 5 minutes from the server\'s clock: sign a new proof now';
  }
  return null;
}
