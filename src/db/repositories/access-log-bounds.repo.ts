// SQL that keeps access logs bounded (docs/api-reference.md 8.5): each lock's per-minute budget of new entries, shared by
// every uploader, and the retention prune of old entries, a tenant and a bounded batch at a time.
import type { Queryable } from '../database.js';

/** A lock's budget row as its upload's transaction holds it (holdAccessLogBudget). */
export interface HeldBudget {
  tenantId: string;
  securedObjectId: string;
  /** When the lock's current window began (ms). */
  windowStartedAt: number;
  /** New entries counted in that window so far. */
  windowEntries: number;
}

/** What charging an upload against its lock's budget found. */
export interface BudgetCharge {
  /** Whether the upload fits (and was counted); false: the caller must keep nothing of it (roll back). */
  charged: boolean;
  /** New entries counted in the lock's window before this upload (0 when the window had run out). */
  used: number;
  /** When the window that counted them began (ms); null: no window yet, or it had run out. */
  windowStartedAt: number | null;
}

/**
 * The lock's budget row, made when missing and row-locked to the end of the upload's transaction: no other upload of
 * the lock can be charged or store entries until then, so the entries this upload stores meanwhile are exactly the
 * ones it adds, and two uploads of one lock on two instances are charged one after the other (docs/api-reference.md
 * 8.5: the budget holds across instances). Call it after the lock's row is held, before the entries are inserted.
 * LOCK ORDER: the lock's row, then its budget row.
 */
export async function holdAccessLogBudget(db: Queryable, tenantId: string, securedObjectId: string, now: number): Promise<HeldBudget> {
  await db.query(
    `INSERT INTO access_log_budgets (tenant_id, secured_object_id, window_started_at, window_entries) VALUES ($1, $2, $3, 0)
     ON CONFLICT (tenant_id, secured_object_id) DO NOTHING`,
    [tenantId, securedObjectId, now],
  );
  const { rows } = await db.query<{ window_started_at: number | string; window_entries: number }>(
    'SELECT window_started_at, window_entries FROM access_log_budgets WHERE tenant_id = $1 AND secured_object_id = $2 FOR UPDATE',
    [tenantId, securedObjectId],
  );
  return { tenantId, securedObjectId, windowStartedAt: Number(rows[0]!.window_started_at), windowEntries: Number(rows[0]!.window_entries) };
}

/**
 * Counts the `fresh` entries the upload stored (its inserts' own count: ON CONFLICT DO NOTHING on the primary key, so
 * a re-sent entry is not one) against the held window of `windowMs`, and lets the upload through when the window then
 * holds at most `budget`. A window that ran out starts again at `now` with this upload's entries. An upload that added
 * nothing always fits and writes nothing: resending what was stored costs no budget. Counting what the inserts stored,
 * rather than looking the entries up first, costs no statement and no plan that could read the lock's whole log.
 */
export async function chargeAccessLogBudget(db: Queryable, held: HeldBudget, fresh: number, now: number, windowMs: number, budget: number): Promise<BudgetCharge> {
  // A window that started later than now (another instance's clock ahead of this one's) is still current.
  const expired = held.windowStartedAt + windowMs <= now;
  const used = expired ? 0 : held.windowEntries;
  const windowStartedAt = expired ? null : held.windowStartedAt;
  if (fresh === 0) return { charged: true, used, windowStartedAt };
  if (used + fresh > budget) return { charged: false, used, windowStartedAt };
  await db.query('UPDATE access_log_budgets SET window_started_at = $3, window_entries = $4 WHERE tenant_id = $1 AND secured_object_id = $2', [
    held.tenantId,
    held.securedObjectId,
    windowStartedAt ?? now,
    used + fresh,
  ]);
  return { charged: true, used, windowStartedAt };
}

/**
 * Deletes up to `limit` of the tenant's entries the server received before `before` (ms), oldest first: a range of
 * access_log_entries_received_idx (migration 022). By the server's receipt time, never by `lock_time`, which the lock
 * or a relaying phone states: a forged time far in the future would keep an entry for ever, one far in the past would
 * prune it at once. Rows another instance's prune holds are skipped, not waited for. Answers how many went.
 */
export async function pruneAccessLogEntries(db: Queryable, tenantId: string, before: number, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM access_log_entries WHERE tenant_id = $1 AND (secured_object_id, lock_registered_at, numbering, entry_no) IN (
       SELECT secured_object_id, lock_registered_at, numbering, entry_no FROM access_log_entries
        WHERE tenant_id = $1 AND received_at < $2::bigint
        ORDER BY received_at LIMIT $3 FOR UPDATE SKIP LOCKED)`,
    [tenantId, before, limit],
  );
  return rowCount ?? 0;
}
