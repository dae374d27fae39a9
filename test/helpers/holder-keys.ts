// Phone and lock keys for tests (docs/api-reference.md 3.1, 8.5): a P-256 pair, its public key put on a device or lock directly in
// the database (as a key registration leaves it), and ES256 compact JWS signed with it: client assertions, receipts.
import { generateKeyPairSync, randomUUID, sign, type KeyObject } from 'node:crypto';
import { holderKeyThumbprint, type HolderPublicKey } from '../../src/shared/holder-keys.js';
import type { TestApp } from './app.js';

export interface HolderKeyPair {
  privateKey: KeyObject;
  publicJwk: HolderPublicKey;
  thumbprint: string;
}

/** A new P-256 key pair, as a phone's secure hardware or a lock makes one. */
export function holderKeyPair(): HolderKeyPair {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const { kty, crv, x, y } = publicKey.export({ format: 'jwk' });
  const publicJwk = { kty, crv, x, y } as HolderPublicKey;
  return { privateKey, publicJwk, thumbprint: holderKeyThumbprint(publicJwk) };
}

async function putKey(t: TestApp, table: 'mobile_devices' | 'secured_objects', tenantId: string, id: string, key: HolderKeyPair): Promise<void> {
  const { rowCount } = await t.database.db.query(
    `UPDATE ${table} SET public_key = $3::jsonb, key_thumbprint = $4, key_registered_at = $5 WHERE tenant_id = $1 AND id = $2`,
    [tenantId, id, JSON.stringify(key.publicJwk), key.thumbprint, Date.now()],
  );
  if (rowCount !== 1) throw new Error(`no ${table} row ${id} to put a key on`);
}

/** Registers `key` as the device's key (docs/api-reference.md 3.1), as its registration would leave the row. */
export const putDeviceKey = (t: TestApp, tenantId: string, mobileDeviceId: string, key: HolderKeyPair) =>
  putKey(t, 'mobile_devices', tenantId, mobileDeviceId, key);

/** Registers `key` as the lock's key (docs/api-reference.md 3.1). */
export const putLockKey = (t: TestApp, tenantId: string, securedObjectId: string, key: HolderKeyPair) =>
  putKey(t, 'secured_objects', tenantId, securedObjectId, key);

const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** A compact JWS (RFC 7515 7.1) signed ES256 with `privateKey` (the R || S form of RFC 7518 3.4). */
export function signEs256(privateKey: KeyObject, header: Record<string, unknown>, payload: Record<string, unknown>): string {
  const signingInput = `${part({ alg: 'ES256', ...header })}.${part(payload)}`;
  const signature = sign('sha256', Buffer.from(signingInput), { key: privateKey, dsaEncoding: 'ieee-p1363' });
  return `${signingInput}.${signature.toString('base64url')}`;
}

/** A private_key_jwt client assertion (RFC 7523 3) for `clientId`, valid now for a minute; `claims` override. */
export function clientAssertion(key: HolderKeyPair, clientId: string, audience: string | string[], claims: Record<string, unknown> = {}): string {
  const now = Math.floor(Date.now() / 1000);
  return signEs256(key.privateKey, { typ: 'JWT' }, { iss: clientId, sub: clientId, aud: audience, iat: now, exp: now + 60, jti: randomUUID(), ...claims });
}

/** What a lock signs into a receipt (docs/lock-integration.md 4.4). */
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
  return signEs256(key.privateKey, { typ: 'lock-receipt+jwt', ...header }, { sub: securedObjectId, ...body, ...claims });
}
