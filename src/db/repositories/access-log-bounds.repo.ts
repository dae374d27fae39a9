// SQL that keeps access logs bounded (docs/api-reference.md 8.5): each lock's per-minute budget of new entries, shared by
// every uploader, and the retention prune of old entries, a tenant and a bounded batch at a time.
import type { Queryable } from '../database.js';

/** What charging an upload against its lock's budget found. */
export interface BudgetCharge {
  /** Whether the upload fits (and was counted); false: the caller must store nothing of it. */
  charged: boolean;
  /** Distinct entry numbers of the upload not stored yet for the lock as registered now: what it would add. */
  fresh: number;
  /** New entries counted in the lock's window before this upload (0 when the window had run out). */
  used: number;
  /** When the window that counted them began (ms); null: no window yet, or it had run out. */
  windowStartedAt: number | null;
}

/**
 * Counts an upload's new entries against its lock's window of `windowMs` and lets it through when the window then
 * holds at most `budget`, in one statement. A window that ran out starts again at `now` with this upload's entries. An
 * upload that adds nothing (a re-sent one) always fits and writes nothing: resending what was stored costs no budget.
 *
 * Call it after recordLockContact, which upserted and row-locked the lock's telemetry row in this transaction, and
 * after the lock's row is held: no other upload of the lock can store entries before this transaction ends, so the
 * count of new entries made here is exactly what the insert that follows stores, and two uploads of one lock on two
 * instances are charged one after the other (docs/api-reference.md 8.5: the budget holds across instances).
 */
export async function chargeAccessLogBudget(
  db: Queryable,
  tenantId: string,
  securedObjectId: string,
  entryNos: readonly number[],
  now: number,
  windowMs: number,
  budget: number,
): Promise<BudgetCharge> {
  const { rows } = await db.query<{ charged: boolean; fresh: number; used: number; started_at: number | string | null }>(
    `WITH lock AS (
       SELECT created_at FROM secured_objects WHERE tenant_id = $1 AND id = $2
     ), fresh AS (
       SELECT count(DISTINCT e.entry_no)::int AS n
         FROM unnest($3::bigint[]) AS e (entry_no)
        WHERE NOT EXISTS (SELECT 1 FROM access_log_entries a, lock
                           WHERE a.tenant_id = $1 AND a.secured_object_id = $2
                             AND a.lock_registered_at = lock.created_at AND a.entry_no = e.entry_no)
     ), budget AS (
       -- A window that started later than now (another instance's clock ahead of this one's) is still current.
       SELECT CASE WHEN expired THEN NULL ELSE log_window_started_at END AS started_at,
              CASE WHEN expired THEN 0 ELSE log_window_entries END AS used
         FROM (SELECT log_window_started_at, log_window_entries,
                      log_window_started_at IS NULL OR log_window_started_at + $5::bigint <= $4::bigint AS expired
                 FROM lock_telemetry WHERE tenant_id = $1 AND secured_object_id = $2) AS current
     ), charged AS (
       UPDATE lock_telemetry t
          SET log_window_started_at = coalesce(b.started_at, $4::bigint),
              log_window_entries = b.used + f.n
         FROM budget b, fresh f
        WHERE t.tenant_id = $1 AND t.secured_object_id = $2 AND f.n > 0 AND b.used + f.n <= $6::bigint
       RETURNING 1
     )
     SELECT f.n = 0 OR EXISTS (SELECT 1 FROM charged) AS charged, f.n AS fresh,
            coalesce(b.used, 0) AS used, b.started_at
       FROM fresh f LEFT JOIN budget b ON true`,
    [tenantId, securedObjectId, entryNos, now, windowMs, budget],
  );
  const row = rows[0]!;
  return {
    charged: row.charged,
    fresh: Number(row.fresh),
    used: Number(row.used),
    windowStartedAt: row.started_at === null ? null : Number(row.started_at),
  };
}

/**
 * Deletes up to `limit` of the tenant's entries the server received before `before` (ms), oldest first: a range of
 * access_log_entries_received_idx (migration 022). By the server's receipt time, never by `lock_time`, which the lock
 * or a relaying phone states: a forged time far in the future would keep an entry for ever, one far in the past would
 * prune it at once. Rows another instance's prune holds are skipped, not waited for. Answers how many went.
 */
export async function pruneAccessLogEntries(db: Queryable, tenantId: string, before: number, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM access_log_entries WHERE tenant_id = $1 AND (secured_object_id, lock_registered_at, entry_no) IN (
       SELECT secured_object_id, lock_registered_at, entry_no FROM access_log_entries
        WHERE tenant_id = $1 AND received_at < $2::bigint
        ORDER BY received_at LIMIT $3 FOR UPDATE SKIP LOCKED)`,
    [tenantId, before, limit],
  );
  return rowCount ?? 0;
}
