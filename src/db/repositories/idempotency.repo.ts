// SQL for Idempotency-Key records (docs/api-reference.md 4.3), one key space per client: reserve, complete, release, replay.
import type { Queryable } from '../database.js';

export interface IdempotencyRecord {
  requestHash: Buffer;
  createdAt: number;
  expiresAt: number;
  response: { status: number; headers: Record<string, string>; body: string } | null;
}

interface IdempotencyRow {
  request_hash: Buffer | Uint8Array;
  created_at: number;
  expires_at: number;
  response_status: number | null;
  response_headers: Record<string, string> | null;
  response_body: string | null;
}

/** Whose key it is: a key belongs to one OAuth client of one tenant (migration 008). */
export interface IdempotencyOwner {
  tenantId: string;
  clientId: string;
}

/**
 * Reserves the key for this request, atomically: true when this request owns it now (new, or the old record had
 * expired). Of concurrent requests with one key exactly one gets true. `expiresAt` is the reservation's lease: a
 * request that never answers (its instance was killed) holds the key only until then, not for the whole 24 h.
 */
export async function reserveIdempotencyKey(
  db: Queryable,
  owner: IdempotencyOwner,
  key: string,
  requestHash: Buffer,
  now: number,
  expiresAt: number,
): Promise<boolean> {
  const { rows } = await db.query(
    `INSERT INTO idempotency_keys AS k (tenant_id, client_id, key, request_hash, created_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (tenant_id, client_id, key) DO UPDATE
       SET request_hash = EXCLUDED.request_hash, created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at,
           response_status = NULL, response_headers = NULL, response_body = NULL
       WHERE k.expires_at <= EXCLUDED.created_at
     RETURNING 1`,
    [owner.tenantId, owner.clientId, key, requestHash, now, expiresAt],
  );
  return rows.length > 0;
}

export async function findIdempotencyKey(db: Queryable, owner: IdempotencyOwner, key: string): Promise<IdempotencyRecord | null> {
  const { rows } = await db.query<IdempotencyRow>(
    `SELECT request_hash, created_at, expires_at, response_status, response_headers, response_body
       FROM idempotency_keys WHERE tenant_id = $1 AND client_id = $2 AND key = $3`,
    [owner.tenantId, owner.clientId, key],
  );
  const row = rows[0];
  if (!row) return null;
  return {
    requestHash: Buffer.from(row.request_hash),
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    response:
      row.response_status === null
        ? null
        : { status: row.response_status, headers: row.response_headers ?? {}, body: row.response_body ?? '' },
  };
}

/** Stores the answer and keeps it for `ttlMs` from the reservation (the lease ends: the key now replays). */
export async function completeIdempotencyKey(
  db: Queryable,
  owner: IdempotencyOwner,
  key: string,
  response: { status: number; headers: Record<string, string>; body: string },
  ttlMs: number,
): Promise<void> {
  await db.query(
    `UPDATE idempotency_keys SET response_status = $4, response_headers = $5, response_body = $6, expires_at = created_at + $7::bigint
      WHERE tenant_id = $1 AND client_id = $2 AND key = $3`,
    [owner.tenantId, owner.clientId, key, response.status, JSON.stringify(response.headers), response.body, ttlMs],
  );
}

/** Forgets a reservation whose request failed without an answer worth replaying (5xx), so a retry runs again. */
export async function releaseIdempotencyKey(db: Queryable, owner: IdempotencyOwner, key: string): Promise<void> {
  await db.query(
    'DELETE FROM idempotency_keys WHERE tenant_id = $1 AND client_id = $2 AND key = $3 AND response_status IS NULL',
    [owner.tenantId, owner.clientId, key],
  );
}

/**
 * Deletes up to `limit` of the tenant's keys that expired by `now`; answers how many went. One tenant per statement
 * (docs/house-style.md convention 6).
 */
export async function deleteExpiredIdempotencyKeys(db: Queryable, tenantId: string, now: number, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM idempotency_keys WHERE tenant_id = $1 AND (client_id, key) IN (
       SELECT client_id, key FROM idempotency_keys WHERE tenant_id = $1 AND expires_at <= $2::bigint LIMIT $3)`,
    [tenantId, now, limit],
  );
  return rowCount;
}
