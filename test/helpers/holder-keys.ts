// Phone and lock key fixtures for tests (docs/api-reference.md 11.1, 11.5): P-256 key pairs, key proofs signed with
// them, nonces, the registrations of the Device API, and what phones and locks sign with their keys: client assertions
// and receipts.
import { generateKeyPairSync, randomUUID, sign, type KeyObject } from 'node:crypto';
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

async function storeKey(t: TestApp, table: 'mobile_devices' | 'secured_objects', tenantId: string, id: string, key: HolderKeyPair): Promise<void> {
  const { rowCount } = await t.database.db.query(
    `UPDATE ${table} SET public_key = $3::jsonb, key_thumbprint = $4, key_registered_at = $5 WHERE tenant_id = $1 AND id = $2`,
    [tenantId, id, JSON.stringify(key.publicKey), key.thumbprint, Date.now()],
  );
  if (rowCount !== 1) throw new Error(`no ${table} row ${id} to put a key on`);
}

/** Puts `key` on the device directly in the database, as its registration (registerKey) leaves the row. */
export const putDeviceKey = (t: TestApp, tenantId: string, mobileDeviceId: string, key: HolderKeyPair) =>
  storeKey(t, 'mobile_devices', tenantId, mobileDeviceId, key);

/** Puts `key` on the lock directly in the database, as its registration leaves the row. */
export const putLockKey = (t: TestApp, tenantId: string, securedObjectId: string, key: HolderKeyPair) =>
  storeKey(t, 'secured_objects', tenantId, securedObjectId, key);

/** A private_key_jwt client assertion (RFC 7523 3) for `clientId`, valid now for a minute; `claims` override. */
export function clientAssertion(key: HolderKeyPair, clientId: string, audience: string | string[], claims: Record<string, unknown> = {}): string {
  const now = Math.floor(Date.now() / 1000);
  return signJws(key.privateKey, { alg: 'ES256', typ: 'JWT' }, { iss: clientId, sub: clientId, aud: audience, iat: now, exp: now + 60, jti: randomUUID(), ...claims });
}

/** What a lock signs into a receipt (docs/lock-integration.md 7). */
export interface ReceiptBody {
  appliedSerial?: number;
  lockTime: number;
  entries: Record<string, unknown>[];
}

/** A receipt of the lock `securedObjectId`, signed with `key`; `header` and `claims` override. */
export function receipt(
  key: HolderKeyPair,
  securedObjectId: string,
  body: ReceiptBody,
  header: Record<string, unknown> = {},
  claims: Record<string, unknown> = {},
): string {
  return signJws(key.privateKey, { alg: 'ES256', typ: 'lock-receipt+jwt', ...header }, { sub: securedObjectId, ...body, ...claims });
}
