// SQL for the phone's and the lock's own keys (docs/api-reference.md 11.1, 11.4, 11.5): key-proof nonces, the registered
// public keys (what the service verifies the phones' and locks' signatures with), and the revoked phone keys every
// lock of the tenant must learn.
import type { Queryable } from '../database.js';
import type { HolderBinding } from '../../shared/holder-binding.js';
import type { HolderPublicKey } from '../../shared/holder-keys.js';
import { HOLDER_BINDING_SEQ_SQL, HOLDER_BINDING_SQL } from './change-log.repo.js';

/** A registered P-256 public key as stored (a JWK, not yet read) and its RFC 7638 thumbprint. */
export interface StoredHolderKey {
  publicKey: unknown;
  thumbprint: string;
}

/** A row's key columns: both null while the device or lock has no key. */
export interface HolderKeyRow {
  public_key: unknown;
  key_thumbprint: string | null;
}

export const toStoredHolderKey = (row: HolderKeyRow | undefined): StoredHolderKey | null =>
  row && row.public_key !== null && row.key_thumbprint !== null ? { publicKey: row.public_key, thumbprint: row.key_thumbprint } : null;

/** The lock's registered key (docs/api-reference.md 8.5); null when the lock is unknown or has none. */
export async function findLockKey(db: Queryable, tenantId: string, securedObjectId: string): Promise<StoredHolderKey | null> {
  const { rows } = await db.query<HolderKeyRow>('SELECT public_key, key_thumbprint FROM secured_objects WHERE tenant_id = $1 AND id = $2', [
    tenantId,
    securedObjectId,
  ]);
  return toStoredHolderKey(rows[0]);
}

/** A nonce of `POST /deviceapi/nonces`, bound to the client that asked, until `expiresAt` (ms). */
export async function insertKeyProofNonce(db: Queryable, tenantId: string, nonce: string, clientId: string, expiresAt: number): Promise<void> {
  await db.query('INSERT INTO key_proof_nonces (tenant_id, nonce, client_id, expires_at) VALUES ($1, $2, $3, $4)', [
    tenantId,
    nonce,
    clientId,
    expiresAt,
  ]);
}

/**
 * Uses the nonce up if `clientId` asked for it: deleted in the statement that reads it, so of two proofs with one nonce
 * exactly one gets it. Answers its expiry (ms), or null when the tenant has no such nonce of this client (never
 * issued, used already, or another client's, which stays usable by that client).
 */
export async function consumeKeyProofNonce(db: Queryable, tenantId: string, nonce: string, clientId: string): Promise<number | null> {
  const { rows } = await db.query<{ expires_at: number }>(
    'DELETE FROM key_proof_nonces WHERE tenant_id = $1 AND nonce = $2 AND client_id = $3 RETURNING expires_at',
    [tenantId, nonce, clientId],
  );
  return rows[0] ? Number(rows[0].expires_at) : null;
}

/** Retention: deletes up to `limit` of the tenant's nonces that expired at or before `now`; answers how many. */
export async function pruneKeyProofNonces(db: Queryable, tenantId: string, now: number, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM key_proof_nonces WHERE tenant_id = $1 AND nonce IN (
       SELECT nonce FROM key_proof_nonces WHERE tenant_id = $1 AND expires_at <= $2::bigint ORDER BY expires_at LIMIT $3)`,
    [tenantId, now, limit],
  );
  return rowCount;
}

/**
 * Retention: deletes up to `limit` of the tenant's key revocations that no lock needs any more, those whose last bound
 * credential expired before `before` (ms); answers how many.
 */
export async function pruneRevokedDeviceKeys(db: Queryable, tenantId: string, before: number, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM revoked_device_keys WHERE tenant_id = $1 AND key_thumbprint IN (
       SELECT key_thumbprint FROM revoked_device_keys WHERE tenant_id = $1 AND bound_until < $2::bigint ORDER BY bound_until LIMIT $3)`,
    [tenantId, before, limit],
  );
  return rowCount;
}

/** A device's key as a registration finds it, its row held until commit. */
export interface HeldDeviceKey {
  keyThumbprint: string | null;
  /** When the key was registered (ms); null while the device has none. */
  keyRegisteredAt: number | null;
  /** The latest `exp` (ms) of a credential bound to the key (download.repo.ts recordDownload); null: none yet. */
  keyBoundUntil: number | null;
}

/**
 * The device's current key, its row locked (FOR NO KEY UPDATE) until commit: a download that binds credentials to the
 * key locks the row too (download.repo.ts recordDownload), so it either raised `key_bound_until` before this reads it,
 * or sees the new key and hands out nothing bound to the old one. Null when the tenant has no such device.
 */
export async function holdDeviceKey(db: Queryable, tenantId: string, mobileDeviceId: string): Promise<HeldDeviceKey | null> {
  const { rows } = await db.query<{ key_thumbprint: string | null; key_registered_at: number | null; key_bound_until: number | null }>(
    'SELECT key_thumbprint, key_registered_at, key_bound_until FROM mobile_devices WHERE tenant_id = $1 AND id = $2 FOR NO KEY UPDATE',
    [tenantId, mobileDeviceId],
  );
  const row = rows[0];
  if (!row) return null;
  return {
    keyThumbprint: row.key_thumbprint,
    keyRegisteredAt: row.key_registered_at === null ? null : Number(row.key_registered_at),
    keyBoundUntil: row.key_bound_until === null ? null : Number(row.key_bound_until),
  };
}

/**
 * Who else holds the thumbprint in the tenant: another device's or lock's active key (the holder registering it, `self`,
 * is not another), or a revoked phone key a lock may still refuse.
 */
export async function findKeyThumbprintUse(
  db: Queryable,
  tenantId: string,
  keyThumbprint: string,
  self: { mobileDeviceId?: string; securedObjectId?: string },
): Promise<'device' | 'lock' | 'revoked' | null> {
  const { rows } = await db.query<{ device: boolean; lock: boolean; revoked: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM mobile_devices
                     WHERE tenant_id = $1 AND key_thumbprint = $2 AND id IS DISTINCT FROM $3::text) AS device,
            EXISTS (SELECT 1 FROM secured_objects
                     WHERE tenant_id = $1 AND key_thumbprint = $2 AND id IS DISTINCT FROM $4::text) AS lock,
            EXISTS (SELECT 1 FROM revoked_device_keys WHERE tenant_id = $1 AND key_thumbprint = $2) AS revoked`,
    [tenantId, keyThumbprint, self.mobileDeviceId ?? null, self.securedObjectId ?? null],
  );
  const row = rows[0]!;
  return row.device ? 'device' : row.lock ? 'lock' : row.revoked ? 'revoked' : null;
}

/** Sets (or with null, clears) the device's key; no credential is bound to a new key yet. */
export async function setDeviceKey(
  db: Queryable,
  tenantId: string,
  mobileDeviceId: string,
  key: { publicKey: HolderPublicKey; keyThumbprint: string; registeredAt: number } | null,
): Promise<void> {
  await db.query(
    `UPDATE mobile_devices SET public_key = $3::jsonb, key_thumbprint = $4, key_registered_at = $5, key_bound_until = NULL
      WHERE tenant_id = $1 AND id = $2`,
    [tenantId, mobileDeviceId, key === null ? null : JSON.stringify(key.publicKey), key?.keyThumbprint ?? null, key?.registeredAt ?? null],
  );
}

/** A revoked phone key as locks learn it (docs/api-reference.md 11.4). */
export interface DeviceKeyRevocation {
  keyThumbprint: string;
  mobileDeviceId: string;
  revokedAt: number;
  /** Until when a credential bound to it may be alive (ms): the entry is sent to locks until then. */
  boundUntil: number;
  /** The tenant's change number taken for it (change-log.repo.ts): sync answers carry it in change-log order. */
  changeSeq: number;
}

export async function insertDeviceKeyRevocation(db: Queryable, tenantId: string, revocation: DeviceKeyRevocation): Promise<void> {
  await db.query(
    `INSERT INTO revoked_device_keys (tenant_id, key_thumbprint, mobile_device_id, revoked_at, bound_until, change_seq)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (tenant_id, key_thumbprint) DO UPDATE SET bound_until = greatest(revoked_device_keys.bound_until, EXCLUDED.bound_until),
            change_seq = EXCLUDED.change_seq, revoked_at = EXCLUDED.revoked_at`,
    [tenantId, revocation.keyThumbprint, revocation.mobileDeviceId, revocation.revokedAt, revocation.boundUntil, revocation.changeSeq],
  );
}

/**
 * Sets the lock's key while it has none (docs/api-reference.md 11.1: replacing it takes the operator's DELETE first).
 * 'taken' names the key it has (as before this statement); 'missing': no such lock in the tenant.
 */
export async function setLockKeyIfNone(
  db: Queryable,
  tenantId: string,
  securedObjectId: string,
  key: { publicKey: HolderPublicKey; keyThumbprint: string; registeredAt: number },
): Promise<{ outcome: 'set' | 'missing' } | { outcome: 'taken'; keyThumbprint: string | null; registeredAt: number | null }> {
  const { rows } = await db.query<{ set: boolean; key_thumbprint: string | null; key_registered_at: number | null }>(
    `WITH updated AS (
       UPDATE secured_objects SET public_key = $3::jsonb, key_thumbprint = $4, key_registered_at = $5
        WHERE tenant_id = $1 AND id = $2 AND public_key IS NULL
        RETURNING id
     )
     SELECT EXISTS (SELECT 1 FROM updated) AS set, key_thumbprint, key_registered_at
       FROM secured_objects WHERE tenant_id = $1 AND id = $2`,
    [tenantId, securedObjectId, JSON.stringify(key.publicKey), key.keyThumbprint, key.registeredAt],
  );
  const row = rows[0];
  if (!row) return { outcome: 'missing' };
  if (row.set) return { outcome: 'set' };
  // Null: a concurrent registration set it after this statement's snapshot was taken.
  return { outcome: 'taken', keyThumbprint: row.key_thumbprint, registeredAt: row.key_registered_at === null ? null : Number(row.key_registered_at) };
}

/** Removes the lock's key; answers the thumbprint it had, 'none' when it had none, null when there is no such lock. */
export async function clearLockKey(db: Queryable, tenantId: string, securedObjectId: string): Promise<string | 'none' | null> {
  const { rows } = await db.query<{ old_thumbprint: string | null }>(
    `UPDATE secured_objects so SET public_key = NULL, key_thumbprint = NULL, key_registered_at = NULL
       FROM (SELECT key_thumbprint FROM secured_objects WHERE tenant_id = $1 AND id = $2 FOR NO KEY UPDATE) old
      WHERE so.tenant_id = $1 AND so.id = $2
      RETURNING old.key_thumbprint AS old_thumbprint`,
    [tenantId, securedObjectId],
  );
  if (!rows[0]) return null;
  return rows[0].old_thumbprint ?? 'none';
}

/** The tenant's revoked phone keys a lock may still meet a credential of (bound_until after `now`), by thumbprint. */
export async function listAliveRevokedKeys(db: Queryable, tenantId: string, now: number): Promise<string[]> {
  const { rows } = await db.query<{ key_thumbprint: string }>(
    'SELECT key_thumbprint FROM revoked_device_keys WHERE tenant_id = $1 AND bound_until > $2::bigint ORDER BY key_thumbprint',
    [tenantId, now],
  );
  return rows.map((row) => row.key_thumbprint);
}

/** What explain needs of a lock's holder binding (docs/api-reference.md 8.6): the policy, and the phone keys revoked. */
export interface LockBindingFacts {
  holderBinding: HolderBinding;
  /** The change-log position of the policy's last change (0: never changed). */
  holderBindingSeq: number;
  /** Of the thumbprints asked about, each one revoked and still needed by locks, with the position that revoked it. */
  revokedKeys: Map<string, number>;
}

/** The lock's effective holder-binding policy and, of `thumbprints`, the revoked keys still alive at `now`. */
export async function findLockBindingFacts(
  db: Queryable,
  tenantId: string,
  securedObjectId: string,
  thumbprints: readonly string[],
  now: number,
): Promise<LockBindingFacts> {
  const { rows } = await db.query<{ holder_binding: HolderBinding; holder_binding_seq: number | string; revoked: { jkt: string; seq: number }[] | null }>(
    `SELECT ${HOLDER_BINDING_SQL('$1', '$2')} AS holder_binding, ${HOLDER_BINDING_SEQ_SQL('$1', '$2')} AS holder_binding_seq,
            (SELECT json_agg(json_build_object('jkt', key_thumbprint, 'seq', change_seq))
               FROM revoked_device_keys
              WHERE tenant_id = $1 AND key_thumbprint = ANY($3::text[]) AND bound_until > $4::bigint) AS revoked`,
    [tenantId, securedObjectId, thumbprints, now],
  );
  const row = rows[0]!;
  return {
    holderBinding: row.holder_binding,
    holderBindingSeq: Number(row.holder_binding_seq),
    revokedKeys: new Map((row.revoked ?? []).map((entry) => [entry.jkt, Number(entry.seq)])),
  };
}
