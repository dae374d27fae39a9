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

/** The entry numbers of one numbering (docs/api-reference.md 8.5: the lock's own, or one relaying phone's) an upload brings. */
export interface NumberedEntries {
  numbering: string;
  entryNos: readonly number[];
}

/**
 * Counts an upload's new entries against its lock's window of `windowMs` and lets it through when the window then
 * holds at most `budget`. A window that ran out starts again at `now` with this upload's entries. An upload that adds
 * nothing (a re-sent one) always fits and writes nothing: resending what was stored costs no budget.
 *
 * The lock's budget row is upserted and row-locked first, then counted and charged: no other upload of the lock can
 * be charged or store entries before this transaction ends, so the count of new entries made here is exactly what the
 * inserts that follow store, and two uploads of one lock on two instances are charged one after the other
 * (docs/api-reference.md 8.5: the budget holds across instances). Call it after the lock's row is held, before the
 * entries are inserted. LOCK ORDER: the lock's row, then its budget row.
 */
export async function chargeAccessLogBudget(
  db: Queryable,
  tenantId: string,
  securedObjectId: string,
  upload: readonly NumberedEntries[],
  now: number,
  windowMs: number,
  budget: number,
): Promise<BudgetCharge> {
  await db.query(
    `INSERT INTO access_log_budgets (tenant_id, secured_object_id, window_started_at, window_entries) VALUES ($1, $2, $3, 0)
     ON CONFLICT (tenant_id, secured_object_id) DO NOTHING`,
    [tenantId, securedObjectId, now],
  );
  const { rows: held } = await db.query<{ window_started_at: number | string; window_entries: number }>(
    'SELECT window_started_at, window_entries FROM access_log_budgets WHERE tenant_id = $1 AND secured_object_id = $2 FOR UPDATE',
    [tenantId, securedObjectId],
  );
  const { rows } = await db.query<{ fresh: number }>(
    `SELECT count(DISTINCT (e.numbering, e.entry_no))::int AS fresh
       FROM unnest($3::text[], $4::bigint[]) AS e (numbering, entry_no)
      WHERE NOT EXISTS (SELECT 1 FROM access_log_entries a, secured_objects so
                         WHERE so.tenant_id = $1 AND so.id = $2
                           AND a.tenant_id = $1 AND a.secured_object_id = $2 AND a.lock_registered_at = so.created_at
                           AND a.numbering = e.numbering AND a.entry_no = e.entry_no)`,
    [
      tenantId,
      securedObjectId,
      upload.flatMap((part) => part.entryNos.map(() => part.numbering)),
      upload.flatMap((part) => part.entryNos),
    ],
  );
  const fresh = Number(rows[0]!.fresh);
  const startedAt = Number(held[0]!.window_started_at);
  // A window that started later than now (another instance's clock ahead of this one's) is still current.
  const expired = startedAt + windowMs <= now;
  const used = expired ? 0 : held[0]!.window_entries;
  const windowStartedAt = expired ? null : startedAt;
  if (fresh === 0) return { charged: true, fresh, used, windowStartedAt };
  if (used + fresh > budget) return { charged: false, fresh, used, windowStartedAt };
  await db.query('UPDATE access_log_budgets SET window_started_at = $3, window_entries = $4 WHERE tenant_id = $1 AND secured_object_id = $2', [
    tenantId,
    securedObjectId,
    windowStartedAt ?? now,
    used + fresh,
  ]);
  return { charged: true, fresh, used, windowStartedAt };
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
