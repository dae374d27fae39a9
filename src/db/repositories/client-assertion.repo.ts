// SQL for the single-use ids of private_key_jwt client assertions (RFC 7523 3, item 7; docs/api-reference.md 3.1).
import type { Queryable } from '../database.js';

/**
 * Records that the client used `jti`, kept until `expiresAt` (the assertion's own `exp`, after which it is refused
 * anyway). True when this is its first use: of concurrent requests with one id on any instance, exactly one wins.
 */
export async function useClientAssertionId(
  db: Queryable,
  tenantId: string,
  clientId: string,
  jti: string,
  expiresAt: number,
): Promise<boolean> {
  const { rows } = await db.query(
    `INSERT INTO client_assertion_ids (tenant_id, client_id, jti, expires_at) VALUES ($1, $2, $3, $4)
     ON CONFLICT (tenant_id, client_id, jti) DO NOTHING RETURNING 1`,
    [tenantId, clientId, jti, expiresAt],
  );
  return rows.length > 0;
}

/** Deletes up to `limit` of the tenant's ids whose assertion expired at or before `now`; answers how many went. */
export async function pruneClientAssertionIds(db: Queryable, tenantId: string, now: number, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM client_assertion_ids WHERE tenant_id = $1 AND (client_id, jti) IN (
       SELECT client_id, jti FROM client_assertion_ids WHERE tenant_id = $1 AND expires_at <= $2::bigint LIMIT $3)`,
    [tenantId, now, limit],
  );
  return rowCount;
}
