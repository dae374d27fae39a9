// ES256 key pairs and signatures of the reference lock and phone (docs/lock-integration.md 4.3): P-256 keys generated
// or read from a private JWK, and the compact JWS they sign, its signature the 64-octet R || S of RFC 7518 3.4.
import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { holderKeyThumbprint, readHolderPublicKey, type HolderPublicKey } from '../shared/holder-keys.js';

export interface Es256KeyPair {
  privateKey: KeyObject;
  publicKey: HolderPublicKey;
  /** RFC 7638 thumbprint of the public key. */
  thumbprint: string;
}

/** A key pair from a private P-256 JWK (`kty`, `crv`, `x`, `y`, `d`), or a new one. Throws on anything else. */
export function es256KeyPair(privateJwk?: unknown): Es256KeyPair {
  let privateKey: KeyObject;
  if (privateJwk === undefined) {
    privateKey = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
  } else {
    const jwk = privateJwk as Record<string, unknown>;
    if (typeof jwk !== 'object' || jwk === null || jwk.kty !== 'EC' || jwk.crv !== 'P-256' || typeof jwk.d !== 'string') {
      throw new TypeError('the key must be a private P-256 JWK');
    }
    privateKey = createPrivateKey({ key: { kty: 'EC', crv: 'P-256', x: jwk.x, y: jwk.y, d: jwk.d } as never, format: 'jwk' });
  }
  const { kty, crv, x, y } = createPublicKey(privateKey).export({ format: 'jwk' });
  const reading = readHolderPublicKey({ kty, crv, x, y });
  if ('error' in reading) throw new TypeError(reading.error);
  return { privateKey, publicKey: reading.key, thumbprint: holderKeyThumbprint(reading.key) };
}

/** The private JWK of a key pair (test vectors only: a real lock or phone never exports its key). */
export function privateJwk(pair: Es256KeyPair): Record<string, string> {
  const { kty, crv, x, y, d } = pair.privateKey.export({ format: 'jwk' });
  return { kty: kty!, crv: crv!, x: x!, y: y!, d: d! };
}

const base64urlJson = (value: unknown) => Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');

/** `BASE64URL(UTF-8(header)) "." BASE64URL(UTF-8(payload)) "." BASE64URL(R || S)` (RFC 7515 7.1, RFC 7518 3.4). */
export function signEs256(privateKey: KeyObject, header: Record<string, unknown>, payload: Record<string, unknown>): string {
  const signingInput = `${base64urlJson({ alg: 'ES256', ...header })}.${base64urlJson(payload)}`;
  const signature = sign('sha256', Buffer.from(signingInput, 'ascii'), { key: privateKey, dsaEncoding: 'ieee-p1363' });
  return `${signingInput}.${signature.toString('base64url')}`;
}
