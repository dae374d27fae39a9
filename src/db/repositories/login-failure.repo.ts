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
 * A row starts over when its lock has ended, or, never locked, when its window has passed. Both this statement and
 * the prune below use it, so a pruned row is exactly one that the next attempt would have restarted.
 */
const STALE = 'CASE WHEN f.locked_until IS NOT NULL THEN f.locked_until <= $1 ELSE f.first_attempt_at < $2 END';

/**
 * Counts one attempt, before its password is checked, in one statement: concurrent attempts on the same row are
 * serialised by the upsert, so each gets its own number and at most `threshold` of them are ever numbered within it
 * (docs/api-reference.md 3.2, docs/security-cases.md G40). The attempt that reaches the threshold starts the lock; if its password is
 * right, the caller clears the row. Null, and nothing counted, when `tenantName` is not the name of `tenantId`: the
 * same statement decides both, so a login of another tenant costs the same round trip as one of the client's own.
 */
export async function countLoginAttempt(db: Queryable, input: LoginAttemptInput): Promise<LoginAttempt | null> {
  const { rows } = await db.query<{ attempts: number; locked_until: number | null }>(
    `INSERT INTO login_failures AS f (tenant_id, username, attempts, first_attempt_at, locked_until)
     SELECT t.id, $4::text, 1, $1::bigint, CASE WHEN $5::int <= 1 THEN $6::bigint END
       FROM tenants t
      WHERE t.id = $3 AND t.name = $7
     ON CONFLICT (tenant_id, username) DO UPDATE SET
       attempts = CASE WHEN ${STALE} THEN 1 ELSE LEAST(f.attempts + 1, $5::int + 1) END,
       first_attempt_at = CASE WHEN ${STALE} THEN $1 ELSE f.first_attempt_at END,
       locked_until = CASE
         WHEN ${STALE} THEN CASE WHEN $5::int <= 1 THEN $6::bigint END
         WHEN f.locked_until IS NOT NULL THEN f.locked_until
         WHEN f.attempts + 1 >= $5::int THEN $6::bigint
       END
     RETURNING attempts, locked_until`,
    [input.now, input.windowStart, input.tenantId, input.username, input.threshold, input.lockedUntil, input.tenantName],
  );
  const row = rows[0];
  return row ? { attempts: row.attempts, lockedUntil: row.locked_until } : null;
}

export async function clearLoginAttempts(db: Queryable, tenantId: string, username: string): Promise<void> {
  await db.query('DELETE FROM login_failures WHERE tenant_id = $1 AND username = $2', [tenantId, username]);
}

/** Deletes the rows whose window and lock have both passed (they count for nothing any more); returns how many. */
export async function deleteStaleLoginAttempts(db: Queryable, now: number, windowStart: number): Promise<number> {
  const { rowCount } = await db.query(`DELETE FROM login_failures f WHERE ${STALE}`, [now, windowStart]);
  return rowCount;
}
