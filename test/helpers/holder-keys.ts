// Phone and lock key fixtures for tests (docs/api-reference.md 11.1): P-256 key pairs, key proofs signed with them,
// nonces, and the registrations of the Device API.
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import type { TestApp } from './app.js';
import { bearer } from './oauth.js';
import { holderKeyThumbprint, type HolderPublicKey } from '../../src/shared/holder-keys.js';

export interface HolderKeyPair {
  privateKey: KeyObject;
  publicKey: HolderPublicKey;
  /** The RFC 7638 thumbprint, computed here from the JWK. */
  thumbprint: string;
}

export function newKeyPair(): HolderKeyPair {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const { x, y } = publicKey.export({ format: 'jwk' });
  const jwk: HolderPublicKey = { kty: 'EC', crv: 'P-256', x: x!, y: y! };
  return { privateKey, publicKey: jwk, thumbprint: holderKeyThumbprint(jwk) };
}

const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** A compact ES256 JWS (RFC 7515) of `header` and `payload` signed by `key`. */
export function signJws(key: KeyObject, header: object, payload: object): string {
  const input = `${part(header)}.${part(payload)}`;
  return `${input}.${sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
}

/** A key proof (docs/api-reference.md 11.1) for `nonce`; `overrides` change the header or the payload. */
export function keyProof(
  t: TestApp,
  pair: HolderKeyPair,
  nonce: string,
  overrides: { header?: object; payload?: object; signer?: KeyObject } = {},
): string {
  return signJws(
    overrides.signer ?? pair.privateKey,
    { alg: 'ES256', typ: 'key-proof+jwt', ...overrides.header },
    { aud: t.config.PUBLIC_URL, nonce, iat: Math.floor(t.app.services.clock() / 1000), ...overrides.payload },
  );
}

export function nonceRequest(t: TestApp, token: string): Promise<LightMyRequestResponse> {
  return t.app.inject({ method: 'POST', url: '/deviceapi/nonces', headers: bearer(token) });
}

/** A fresh nonce for the client of `token`; fails the test unless 200. */
export async function nonceFor(t: TestApp, token: string): Promise<string> {
  const response = await nonceRequest(t, token);
  expect(response.statusCode, response.body).toBe(200);
  return (response.json() as { nonce: string }).nonce;
}

export type KeyHolder = 'mobiledevices' | 'securedobjects';

export function putKey(t: TestApp, token: string, holder: KeyHolder, id: string, body: object): Promise<LightMyRequestResponse> {
  return t.app.inject({ method: 'PUT', url: `/deviceapi/${holder}/${encodeURIComponent(id)}/key`, headers: bearer(token), payload: body });
}

/** Registers `pair` for the device or lock with a fresh nonce and a good proof; fails the test unless 200. */
export async function registerKey(t: TestApp, token: string, holder: KeyHolder, id: string, pair: HolderKeyPair): Promise<{ keyThumbprint: string; keyRegisteredTime: number }> {
  const response = await putKey(t, token, holder, id, { publicKey: pair.publicKey, proof: keyProof(t, pair, await nonceFor(t, token)) });
  expect(response.statusCode, response.body).toBe(200);
  return response.json();
}
