// SQL for password-grant attempts per user of a tenant (brute-force lockout, docs/api-reference.md 3.2).
import type { Queryable } from '../database.js';

export interface LoginAttempt {
  /** This attempt's number in the window, at most `threshold + 1`: above the threshold means refused unchecked. */
  attempts: number;
  lockedUntil: number | null;
}

export interface LoginAttemptInput {
  /** The client's tenant, and the tenant name its login names: only a match is counted. */
  tenantId: string;
  tenantName: string;
  username: string;
  now: number;
  /** Attempts whose window started before this no longer count. */
  windowStart: number;
  threshold: number;
  /** The end of the lock that the attempt reaching `threshold` starts. */
  lockedUntil: number;
}

/**
 * A row starts over when its lock has ended, or, never locked, when its window has passed. Both the count and the
 * prune below use it, so a pruned row is exactly one that the next attempt would have restarted. `$1` is now, `$2`
 * the window's start, both cast: on a cluster the statement is planned again on the node that holds the tenant, which
 * must know every parameter's type from the text alone.
 */
const STALE = 'CASE WHEN f.locked_until IS NOT NULL THEN f.locked_until <= $1::bigint ELSE f.first_attempt_at < $2::bigint END';

/** The tenant named by the login is the client's own (tenants is a table every node holds). */
const TENANT_NAMED = 'SELECT 1 FROM tenants WHERE id = $1::uuid AND name = $2::text';

/** The client's tenant's row for the user, only read: what a login of another tenant spends instead of the count. */
const PEEK_ATTEMPT = 'SELECT attempts FROM login_failures WHERE tenant_id = $1::uuid AND username = $2::text';

/**
 * One more attempt on the tenant's row for the user: a plain upsert of one tenant's row, every parameter cast (see
 * STALE). `$3` is the tenant.
 */
const COUNT_ATTEMPT = `INSERT INTO login_failures AS f (tenant_id, username, attempts, first_attempt_at, locked_until)
     VALUES ($3::uuid, $4::text, 1, $1::bigint, CASE WHEN $5::int <= 1 THEN $6::bigint END)
     ON CONFLICT (tenant_id, username) DO UPDATE SET
       attempts = CASE WHEN ${STALE} THEN 1 ELSE LEAST(f.attempts + 1, $5::int + 1) END,
       first_attempt_at = CASE WHEN ${STALE} THEN $1::bigint ELSE f.first_attempt_at END,
       locked_until = CASE
         WHEN ${STALE} THEN CASE WHEN $5::int <= 1 THEN $6::bigint END
         WHEN f.locked_until IS NOT NULL THEN f.locked_until
         WHEN f.attempts + 1 >= $5::int THEN $6::bigint
       END
     RETURNING attempts, locked_until`;

/**
 * Counts one attempt, before its password is checked: concurrent attempts on the same row are serialised by the
 * upsert, so each gets its own number and at most `threshold` of them are ever numbered within it
 * (docs/api-reference.md 3.2, docs/security-cases.md G40). The attempt that reaches the threshold starts the lock; if
 * its password is right, the caller clears the row. Null, and nothing counted, when `tenantName` is not the name of
 * `tenantId`: read first from the tenants table (on a cluster a copy on every node, so no hop), then the upsert, which
 * touches the one tenant's row alone. A login of another tenant reads the row the upsert would have counted instead,
 * and leaves it alone: the same number of statements, so that it takes as long as one of the client's own tenant
 * (docs/security-cases.md B10). Spared that statement, it was faster by one round trip, which a loaded machine made
 * a third of the whole answer.
 */
export async function countLoginAttempt(db: Queryable, input: LoginAttemptInput): Promise<LoginAttempt | null> {
  const { rows: named } = await db.query(TENANT_NAMED, [input.tenantId, input.tenantName]);
  if (named.length === 0) {
    await db.query(PEEK_ATTEMPT, [input.tenantId, input.username]);
    return null;
  }
  const { rows } = await db.query<{ attempts: number; locked_until: number | null }>(COUNT_ATTEMPT, [
    input.now,
    input.windowStart,
    input.tenantId,
    input.username,
    input.threshold,
    input.lockedUntil,
  ]);
  const row = rows[0];
  return row ? { attempts: row.attempts, lockedUntil: row.locked_until } : null;
}

export async function clearLoginAttempts(db: Queryable, tenantId: string, username: string): Promise<void> {
  await db.query('DELETE FROM login_failures WHERE tenant_id = $1 AND username = $2', [tenantId, username]);
}

/**
 * Deletes up to `limit` of the tenant's rows whose window and lock have both passed (they count for nothing any more);
 * returns how many. One tenant per statement (docs/house-style.md convention 6).
 */
export async function deleteStaleLoginAttempts(db: Queryable, tenantId: string, now: number, windowStart: number, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM login_failures WHERE tenant_id = $3::uuid AND username IN (
       SELECT f.username FROM login_failures f WHERE f.tenant_id = $3::uuid AND ${STALE} LIMIT $4::int)`,
    [now, windowStart, tenantId, limit],
  );
  return rowCount;
}
