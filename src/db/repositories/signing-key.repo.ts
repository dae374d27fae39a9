// SQL for signing keys (access tokens and ticket credentials).
import type { Queryable } from '../database.js';

export type KeyPurpose = 'access_token' | 'ticket';

/** Told the purpose whenever a key is added: every instance re-reads that purpose's keys at once. */
export const SIGNING_KEYS_CHANNEL = 'acs_signing_keys';

export interface SigningKeyRecord {
  kid: string;
  tenantId: string | null;
  purpose: KeyPurpose;
  alg: string;
  publicJwk: Record<string, unknown>;
  privateJwkEncrypted: Buffer;
  createdAt: number;
  retiredAt: number | null;
}

interface SigningKeyRow {
  kid: string;
  tenant_id: string | null;
  purpose: KeyPurpose;
  alg: string;
  public_jwk: Record<string, unknown>;
  private_jwk_encrypted: Buffer | Uint8Array;
  created_at: number;
  retired_at: number | null;
}

const COLUMNS = 'kid, tenant_id, purpose, alg, public_jwk, private_jwk_encrypted, created_at, retired_at';

const toRecord = (row: SigningKeyRow): SigningKeyRecord => ({
  kid: row.kid,
  tenantId: row.tenant_id,
  purpose: row.purpose,
  alg: row.alg,
  publicJwk: row.public_jwk,
  privateJwkEncrypted: Buffer.from(row.private_jwk_encrypted),
  createdAt: row.created_at,
  retiredAt: row.retired_at,
});

/** Keys still worth knowing: the ones signing now and the retired ones whose tokens may not have expired yet. */
export async function listLiveKeys(db: Queryable, purpose: KeyPurpose, retiredAfter: number): Promise<SigningKeyRecord[]> {
  const { rows } = await db.query<SigningKeyRow>(
    `SELECT ${COLUMNS} FROM signing_keys
      WHERE purpose = $1 AND (retired_at IS NULL OR retired_at > $2)
      ORDER BY created_at DESC, kid`,
    [purpose, retiredAfter],
  );
  return rows.map(toRecord);
}

export async function insertKey(db: Queryable, key: SigningKeyRecord): Promise<void> {
  await db.query(
    `INSERT INTO signing_keys (${COLUMNS}, activates_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $7)`,
    [key.kid, key.tenantId, key.purpose, key.alg, JSON.stringify(key.publicJwk), key.privateJwkEncrypted, key.createdAt, key.retiredAt],
  );
  // Delivered at commit, to every instance listening (PostgreSQL NOTIFY semantics): a key rotated on one instance
  // (or by the CLI) is published and signs on the others without waiting for their periodic re-read.
  await db.query('SELECT pg_notify($1, $2)', [SIGNING_KEYS_CHANNEL, key.purpose]);
}

/** Retires every active key of the purpose (and tenant) but `keepKid`; returns the retired kids. */
export async function retireKeysExcept(
  db: Queryable,
  purpose: KeyPurpose,
  tenantId: string | null,
  keepKid: string,
  now: number,
): Promise<string[]> {
  const { rows } = await db.query<{ kid: string }>(
    `UPDATE signing_keys SET retired_at = $4
      WHERE purpose = $1 AND tenant_id IS NOT DISTINCT FROM $2 AND kid <> $3 AND retired_at IS NULL
      RETURNING kid`,
    [purpose, tenantId, keepKid, now],
  );
  return rows.map((row) => row.kid);
}

export async function countActiveKeys(db: Queryable, purpose: KeyPurpose, tenantId: string | null): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM signing_keys WHERE purpose = $1 AND tenant_id IS NOT DISTINCT FROM $2 AND retired_at IS NULL',
    [purpose, tenantId],
  );
  return rows[0]?.n ?? 0;
}
