// SQL for lock telemetry (docs/contract.md 8.4, 8.5): when each lock was last seen, how far it has applied the change
// log (and so which revocations have reached the door), and its clock's offset.
import type { Queryable } from '../database.js';

export interface LockTelemetry {
  /** When a sync or log upload for the lock last reached the server (ms). */
  lastSeenAt: number;
  /** The change-log position the lock has applied everything up to (docs/contract.md 8.4); 0: nothing acknowledged. */
  appliedThrough: number;
  /** The lock's clock minus the server's (ms), from the last upload that carried `lockTime`; null: never estimated. */
  clockOffsetMs: number | null;
  /** When that estimate was made (ms). */
  clockCheckedAt: number | null;
  /** The highest access-log entryNo stored for the lock; null: none. */
  logHigh: number | null;
}

interface LockTelemetryRow {
  last_seen_at: number;
  applied_through: number;
  clock_offset_ms: number | null;
  clock_checked_at: number | null;
  log_high: number | null;
}

const COLUMNS = 'last_seen_at, applied_through, clock_offset_ms, clock_checked_at, log_high';

const toTelemetry = (row: LockTelemetryRow): LockTelemetry => ({
  lastSeenAt: Number(row.last_seen_at),
  appliedThrough: Number(row.applied_through),
  clockOffsetMs: row.clock_offset_ms === null ? null : Number(row.clock_offset_ms),
  clockCheckedAt: row.clock_checked_at === null ? null : Number(row.clock_checked_at),
  logHigh: row.log_high === null ? null : Number(row.log_high),
});

/** What one contact with a lock (a sync, a log upload) tells the server. */
export interface LockContact {
  /** The server's time of the contact (ms). */
  seenAt: number;
  /**
   * The change-log position the lock says it has applied everything up to (docs/contract.md 8.4): the sync cursor's
   * position, or an upload's `appliedSerial`. Absent: the contact acknowledges nothing. It is capped at the tenant's
   * last committed change, so no caller can acknowledge a change that has not happened yet.
   */
  appliedThrough?: number;
  /** The lock's clock minus the server's (ms), when the contact carried the lock's time. */
  clockOffsetMs?: number;
}

/**
 * Records a contact with a lock in one statement: `last_seen_at` and `applied_through` only rise, and every revocation
 * of the lock's tickets at or below the applied position that had not reached the lock is stamped
 * `revocation_applied_at` (an index range over the pending revocations only, tickets_pending_revocations_idx).
 * Returns the lock's telemetry after the contact.
 *
 * LOCK ORDER: the lock's telemetry row, then its revoked ticket rows. A revocation locks the tenant's change counter
 * and ticket rows and never this row, so the two cannot wait on each other in a cycle.
 */
export async function recordLockContact(db: Queryable, tenantId: string, securedObjectId: string, contact: LockContact): Promise<LockTelemetry> {
  const { rows } = await db.query<LockTelemetryRow>(
    `WITH acknowledged AS (
       SELECT least($4::bigint, coalesce((SELECT last_seq FROM tenant_change_counters WHERE tenant_id = $1), 0)) AS position
     ), upserted AS (
       INSERT INTO lock_telemetry AS t (tenant_id, secured_object_id, last_seen_at, applied_through, clock_offset_ms, clock_checked_at)
       SELECT $1, $2, $3, coalesce(a.position, 0), $5, CASE WHEN $5::bigint IS NOT NULL THEN $3::bigint END FROM acknowledged a
       ON CONFLICT (tenant_id, secured_object_id) DO UPDATE SET
              last_seen_at = greatest(t.last_seen_at, EXCLUDED.last_seen_at),
              applied_through = greatest(t.applied_through, EXCLUDED.applied_through),
              clock_offset_ms = coalesce(EXCLUDED.clock_offset_ms, t.clock_offset_ms),
              clock_checked_at = coalesce(EXCLUDED.clock_checked_at, t.clock_checked_at)
       RETURNING ${COLUMNS}
     ), stamped AS (
       UPDATE tickets SET revocation_applied_at = $3
        WHERE tenant_id = $1 AND secured_object_id = $2
          AND revoked_at IS NOT NULL AND revocation_applied_at IS NULL AND credential_expires_at IS NOT NULL
          AND change_seq <= (SELECT applied_through FROM upserted)
     )
     SELECT ${COLUMNS} FROM upserted`,
    [tenantId, securedObjectId, contact.seenAt, contact.appliedThrough ?? null, contact.clockOffsetMs ?? null],
  );
  return toTelemetry(rows[0]!);
}

/** The lock's telemetry, or null when it was never seen. */
export async function findLockTelemetry(db: Queryable, tenantId: string, securedObjectId: string): Promise<LockTelemetry | null> {
  const { rows } = await db.query<LockTelemetryRow>(
    `SELECT ${COLUMNS} FROM lock_telemetry WHERE tenant_id = $1 AND secured_object_id = $2`,
    [tenantId, securedObjectId],
  );
  return rows[0] ? toTelemetry(rows[0]) : null;
}
