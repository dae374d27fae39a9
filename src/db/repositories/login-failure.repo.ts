// SQL for password-grant failures per `user@tenant` (brute-force lockout, contract 3.2).
import type { Queryable } from '../database.js';

export interface LoginFailureRecord {
  failures: number;
  lockedUntil: number | null;
}

export async function findLoginFailure(db: Queryable, login: string): Promise<LoginFailureRecord | null> {
  const { rows } = await db.query<{ failures: number; locked_until: number | null }>(
    'SELECT failures, locked_until FROM login_failures WHERE login = $1',
    [login],
  );
  return rows[0] ? { failures: rows[0].failures, lockedUntil: rows[0].locked_until } : null;
}

/**
 * Counts one failure atomically; a window older than `windowStart` starts over. Locks once `threshold` is reached.
 * Returns the new count.
 */
export async function recordLoginFailure(
  db: Queryable,
  login: string,
  now: number,
  windowStart: number,
  threshold: number,
  lockedUntil: number,
): Promise<number> {
  const { rows } = await db.query<{ failures: number }>(
    `INSERT INTO login_failures AS f (login, failures, first_failure_at, locked_until)
     VALUES ($1, 1, $2, CASE WHEN 1 >= $4 THEN $5::bigint END)
     ON CONFLICT (login) DO UPDATE SET
       failures = CASE WHEN f.first_failure_at < $3 THEN 1 ELSE f.failures + 1 END,
       first_failure_at = CASE WHEN f.first_failure_at < $3 THEN $2 ELSE f.first_failure_at END,
       locked_until = CASE
         WHEN (CASE WHEN f.first_failure_at < $3 THEN 1 ELSE f.failures + 1 END) >= $4 THEN $5::bigint
         ELSE f.locked_until END
     RETURNING failures`,
    [login, now, windowStart, threshold, lockedUntil],
  );
  return rows[0]?.failures ?? 1;
}

export async function clearLoginFailures(db: Queryable, login: string): Promise<void> {
  await db.query('DELETE FROM login_failures WHERE login = $1', [login]);
}
