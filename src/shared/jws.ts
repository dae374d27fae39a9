// Compact JWS signing (RFC 7515 section 7.1) with node:crypto's callback form, which signs on the libuv pool: the
// signature (the largest cost of a token request) runs beside the event loop, on another core, without WebCrypto's
// per-call machinery (what jose signs with; it cost the token endpoint 15 % in a profile). Signing on the event
// loop instead left the second core idle and the token endpoint 40 % slower.
import { sign, type KeyObject } from 'node:crypto';
import { BoundedMap } from './bounded-map.js';

export type SigningAlgorithm = 'EdDSA' | 'ES256';

export interface SigningKey {
  kid: string;
  alg: SigningAlgorithm;
  privateKey: KeyObject;
}

const base64url = (json: unknown) => Buffer.from(JSON.stringify(json)).toString('base64url');

/**
 * The encoded protected header of each key and type: the same few bytes for every token and credential a key signs,
 * so encoded once (a key's `alg` and `kid` never change). Bounded: keys rotate, so old entries are dropped past 64.
 */
const encodedHeaders = new BoundedMap<string, string>(64);

function encodedHeader(key: SigningKey, typ: string): string {
  const cacheKey = `${key.alg}\u0000${key.kid}\u0000${typ}`;
  let encoded = encodedHeaders.get(cacheKey);
  if (encoded === undefined) {
    encoded = base64url({ alg: key.alg, kid: key.kid, typ });
    encodedHeaders.set(cacheKey, encoded);
  }
  return encoded;
}

/** `header.payload.signature`, the protected header naming `alg`, `kid` and `typ` (RFC 8725 3.11: explicit types). */
export function signCompactJws(key: SigningKey, typ: string, payload: Record<string, unknown>): Promise<string> {
  return signCompactJwsJson(key, typ, JSON.stringify(payload));
}

/**
 * The same, for a payload already serialised to a JSON object text (RFC 7515 7.1: the payload is any octet sequence;
 * here the UTF-8 of that text). For a caller that writes its claims directly, without building an object first.
 */
export function signCompactJwsJson(key: SigningKey, typ: string, payloadJson: string): Promise<string> {
  const signingInput = `${encodedHeader(key, typ)}.${Buffer.from(payloadJson).toString('base64url')}`;
  // The signing input is base64url and a dot, ASCII only: latin1 writes its bytes without UTF-8 encoding.
  const data = Buffer.from(signingInput, 'latin1');
  return new Promise((resolve, reject) => {
    const done = (error: Error | null, signature: Buffer) => {
      if (error) reject(error);
      else resolve(`${signingInput}.${signature.toString('base64url')}`);
    };
    // RFC 8037 3.1: Ed25519 hashes internally (no digest); RFC 7518 3.4: ES256 is R || S, not DER.
    if (key.alg === 'EdDSA') sign(null, data, key.privateKey, done);
    else sign('sha256', data, { key: key.privateKey, dsaEncoding: 'ieee-p1363' }, done);
  });
}
