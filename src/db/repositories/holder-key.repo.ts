// SQL reads of the phones' and locks' own public keys (docs/api-reference.md 3.1, 8.5): what the service verifies their
// signatures with. Registering and removing keys is the devices' and locks' own business (their repositories).
import type { Queryable } from '../database.js';

/** A registered P-256 public key as stored (a JWK, not yet read) and its RFC 7638 thumbprint. */
export interface StoredHolderKey {
  publicKey: unknown;
  thumbprint: string;
}

interface KeyRow {
  public_key: unknown;
  key_thumbprint: string | null;
}

const toKey = (row: KeyRow | undefined): StoredHolderKey | null =>
  row && row.public_key !== null && row.key_thumbprint !== null ? { publicKey: row.public_key, thumbprint: row.key_thumbprint } : null;

/**
 * The key of the mobile device the client is bound to (docs/api-reference.md 3.1, private_key_jwt); null when the client
 * is bound to no device, or its device has no key. One primary-key read of the client joined to its device.
 */
export async function findDeviceKeyOfClient(db: Queryable, tenantId: string, clientId: string): Promise<StoredHolderKey | null> {
  const { rows } = await db.query<KeyRow>(
    `SELECT md.public_key, md.key_thumbprint
       FROM oauth_clients c
       JOIN mobile_devices md ON md.tenant_id = c.tenant_id AND md.id = c.mobile_device_id
      WHERE c.tenant_id = $1 AND c.client_id = $2`,
    [tenantId, clientId],
  );
  return toKey(rows[0]);
}

/** The lock's registered key (docs/api-reference.md 8.5); null when the lock is unknown or has none. */
export async function findLockKey(db: Queryable, tenantId: string, securedObjectId: string): Promise<StoredHolderKey | null> {
  const { rows } = await db.query<KeyRow>('SELECT public_key, key_thumbprint FROM secured_objects WHERE tenant_id = $1 AND id = $2', [
    tenantId,
    securedObjectId,
  ]);
  return toKey(rows[0]);
}
