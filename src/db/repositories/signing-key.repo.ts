// SQL for signing keys (access tokens and ticket credentials) and the change position of each tenant's ticket-key set.
import type { Queryable } from '../database.js';
import { KEY_SET_SEQ_SQL } from './change-log.repo.js';

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
  /** From when it signs (docs/api-reference.md 8.1: a ticket key is announced one credential lifetime ahead). */
  activatesAt: number;
  /** Its last signature: a newer key signs from then on (may lie ahead while the successor is announced). */
  retiredAt: number | null;
  /** Dropped from publication at once (an emergency rotation): it never verifies again. */
  withdrawnAt: number | null;
}

interface SigningKeyRow {
  kid: string;
  tenant_id: string | null;
  purpose: KeyPurpose;
  alg: string;
  public_jwk: Record<string, unknown>;
  private_jwk_encrypted: Buffer | Uint8Array;
  created_at: number;
  activates_at: number;
  retired_at: number | null;
  withdrawn_at: number | null;
}

const COLUMNS = 'kid, tenant_id, purpose, alg, public_jwk, private_jwk_encrypted, created_at, activates_at, retired_at, withdrawn_at';

const toRecord = (row: SigningKeyRow): SigningKeyRecord => ({
  kid: row.kid,
  tenantId: row.tenant_id,
  purpose: row.purpose,
  alg: row.alg,
  publicJwk: row.public_jwk,
  privateJwkEncrypted: Buffer.from(row.private_jwk_encrypted),
  createdAt: Number(row.created_at),
  activatesAt: Number(row.activates_at),
  retiredAt: row.retired_at === null ? null : Number(row.retired_at),
  withdrawnAt: row.withdrawn_at === null ? null : Number(row.withdrawn_at),
});

/**
 * Keys still published: announced, signing, and retired ones whose credentials or tokens may not have expired yet
 * (retired after `retiredAfter`). Withdrawn keys never are.
 */
export async function listLiveKeys(db: Queryable, purpose: KeyPurpose, retiredAfter: number): Promise<SigningKeyRecord[]> {
  const { rows } = await db.query<SigningKeyRow>(
    `SELECT ${COLUMNS} FROM signing_keys
      WHERE purpose = $1 AND withdrawn_at IS NULL AND (retired_at IS NULL OR retired_at > $2)
      ORDER BY activates_at DESC, created_at DESC, kid`,
    [purpose, retiredAfter],
  );
  return rows.map(toRecord);
}

/** The same as listLiveKeys for one tenant, newest (by activation) first. */
export async function listLiveTenantKeys(
  db: Queryable,
  purpose: KeyPurpose,
  tenantId: string,
  retiredAfter: number,
): Promise<SigningKeyRecord[]> {
  const { rows } = await db.query<SigningKeyRow>(
    `SELECT ${COLUMNS} FROM signing_keys
      WHERE purpose = $1 AND tenant_id = $2 AND withdrawn_at IS NULL AND (retired_at IS NULL OR retired_at > $3)
      ORDER BY activates_at DESC, created_at DESC, kid`,
    [purpose, tenantId, retiredAfter],
  );
  return rows.map(toRecord);
}

export async function insertKey(db: Queryable, key: SigningKeyRecord): Promise<void> {
  await db.query(
    `INSERT INTO signing_keys (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
    [
      key.kid,
      key.tenantId,
      key.purpose,
      key.alg,
      JSON.stringify(key.publicJwk),
      key.privateJwkEncrypted,
      key.createdAt,
      key.activatesAt,
      key.retiredAt,
      key.withdrawnAt,
    ],
  );
  // Delivered at commit, to every instance listening (PostgreSQL NOTIFY semantics): a key rotated on one instance
  // (or by the CLI) is published and signs on the others without waiting for their periodic re-read. The same
  // commit carries what the rotation did to the older keys (retired, withdrawn), so they follow at once too.
  await db.query('SELECT pg_notify($1, $2)', [SIGNING_KEYS_CHANNEL, key.purpose]);
}

/**
 * Gives every signing key of the purpose (and tenant) but `keepKid` its last signature at `retireAt`; returns the
 * retired kids. Keys already retired or withdrawn keep their times.
 */
export async function retireKeysExcept(
  db: Queryable,
  purpose: KeyPurpose,
  tenantId: string | null,
  keepKid: string,
  retireAt: number,
): Promise<string[]> {
  const { rows } = await db.query<{ kid: string }>(
    `UPDATE signing_keys SET retired_at = $4
      WHERE purpose = $1 AND tenant_id IS NOT DISTINCT FROM $2 AND kid <> $3 AND retired_at IS NULL AND withdrawn_at IS NULL
      RETURNING kid`,
    [purpose, tenantId, keepKid, retireAt],
  );
  return rows.map((row) => row.kid);
}

/**
 * Withdraws every still-published key of the purpose (and tenant) but `keepKid` at `now`: announced, signing and
 * retired ones alike stop being published and stop signing. Returns the withdrawn kids. Keys whose publication had
 * already ended (retired at or before `retiredAfter`) can never come back and are left as they are.
 */
export async function withdrawKeysExcept(
  db: Queryable,
  purpose: KeyPurpose,
  tenantId: string | null,
  keepKid: string,
  now: number,
  retiredAfter: number,
): Promise<string[]> {
  const { rows } = await db.query<{ kid: string }>(
    `UPDATE signing_keys SET withdrawn_at = $4, retired_at = LEAST(COALESCE(retired_at, $4), $4)
      WHERE purpose = $1 AND tenant_id IS NOT DISTINCT FROM $2 AND kid <> $3 AND withdrawn_at IS NULL
        AND (retired_at IS NULL OR retired_at > $5)
      RETURNING kid`,
    [purpose, tenantId, keepKid, now, retiredAfter],
  );
  return rows.map((row) => row.kid).sort();
}

/**
 * When the tenant's last emergency rotation happened: only an emergency rotation withdraws keys, all at its own instant
 * (withdrawKeysExcept). Null: none withdrew a key.
 */
export async function lastKeyWithdrawal(db: Queryable, purpose: KeyPurpose, tenantId: string): Promise<number | null> {
  const { rows } = await db.query<{ last: string | number | null }>(
    'SELECT max(withdrawn_at) AS last FROM signing_keys WHERE tenant_id = $1 AND purpose = $2',
    [tenantId, purpose],
  );
  return rows[0]?.last == null ? null : Number(rows[0].last);
}

/** The key announced and not signing yet (activating after `now`), if any. */
export async function findAnnouncedKey(
  db: Queryable,
  purpose: KeyPurpose,
  tenantId: string | null,
  now: number,
): Promise<{ kid: string; activatesAt: number } | null> {
  const { rows } = await db.query<{ kid: string; activates_at: number }>(
    `SELECT kid, activates_at FROM signing_keys
      WHERE purpose = $1 AND tenant_id IS NOT DISTINCT FROM $2 AND activates_at > $3 AND withdrawn_at IS NULL
      ORDER BY activates_at DESC LIMIT 1`,
    [purpose, tenantId, now],
  );
  const row = rows[0];
  return row ? { kid: row.kid, activatesAt: Number(row.activates_at) } : null;
}

/** Whether a key of the purpose (and tenant) signs at `now`. */
export async function hasSigningKey(db: Queryable, purpose: KeyPurpose, tenantId: string | null, now: number): Promise<boolean> {
  const { rows } = await db.query<{ found: boolean }>(
    `SELECT EXISTS (
       SELECT 1 FROM signing_keys
        WHERE purpose = $1 AND tenant_id IS NOT DISTINCT FROM $2 AND activates_at <= $3 AND withdrawn_at IS NULL
          AND (retired_at IS NULL OR retired_at > $3)
     ) AS found`,
    [purpose, tenantId, now],
  );
  return rows[0]?.found === true;
}

/** Keys that sign now or will (never retired, never withdrawn): none means the tenant (or server) needs a first key. */
export async function countUnretiredKeys(db: Queryable, purpose: KeyPurpose, tenantId: string | null): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM signing_keys
      WHERE purpose = $1 AND tenant_id IS NOT DISTINCT FROM $2 AND retired_at IS NULL AND withdrawn_at IS NULL`,
    [purpose, tenantId],
  );
  return rows[0]?.n ?? 0;
}

/**
 * docs/api-reference.md 8.1: the tenant's ticket-key set changed at change number `changeSeq` (taken with nextChangeSeq in
 * the same transaction). Sync answers and revocation lists compare a lock's position with it.
 */
export async function recordTicketKeySetChange(db: Queryable, tenantId: string, changeSeq: number, changedAt: number): Promise<void> {
  await db.query(
    `INSERT INTO ticket_key_set_changes (tenant_id, change_seq, changed_at) VALUES ($1, $2, $3)
     ON CONFLICT (tenant_id) DO UPDATE SET change_seq = EXCLUDED.change_seq, changed_at = EXCLUDED.changed_at`,
    [tenantId, changeSeq, changedAt],
  );
  // The key this change made (the only one not stamped yet) is announced at its position: a lock that has applied a
  // lower one does not know the key (docs/api-reference.md 8.6).
  await db.query(
    `UPDATE signing_keys SET announced_seq = $2 WHERE tenant_id = $1 AND purpose = 'ticket' AND announced_seq IS NULL`,
    [tenantId, changeSeq],
  );
}

/** Each published ticket key of the tenant and the change-log position that announced it (docs/api-reference.md 8.6). */
export async function listTicketKeyAnnouncements(db: Queryable, tenantId: string): Promise<Map<string, number>> {
  const { rows } = await db.query<{ kid: string; announced_seq: string | number | null }>(
    `SELECT kid, announced_seq FROM signing_keys WHERE tenant_id = $1 AND purpose = 'ticket' AND withdrawn_at IS NULL`,
    [tenantId],
  );
  return new Map(rows.map((row) => [row.kid, Number(row.announced_seq ?? 0)]));
}

/** The change number of the tenant's last ticket-key-set change (docs/api-reference.md 8.1); 0: none yet. */
export async function findTicketKeySetSeq(db: Queryable, tenantId: string): Promise<number> {
  const { rows } = await db.query<{ change_seq: number }>(`SELECT ${KEY_SET_SEQ_SQL('$1')} AS change_seq`, [tenantId]);
  return Number(rows[0]!.change_seq);
}
