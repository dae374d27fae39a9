// SQL for lock telemetry (docs/api-reference.md 8.4, 8.5): when each lock was last seen, how far it has applied the change
// log (and so which revocations have reached the door), its clock's offset, and the revocations still on their way.
import type { Queryable } from '../database.js';
import { keysetPage, type KeysetColumns, type KeysetPosition } from '../../shared/keyset.js';
import { LOCK_SERIAL_SQL, LOCK_STATE_MODE_SQL, LOCK_STATE_SEQ_SQL } from './change-log.repo.js';
import { CLOCK_DRIFT_LIMIT_MS } from '../../shared/clock-drift.js';
import { TICKET_COLUMNS, toTicketRecord, type TicketRecord, type TicketRow } from './ticket.repo.js';

/**
 * How much longer than the server thinks a credential may be alive at the lock, in SQL (ms, at most 0, to add to
 * "now"): a lock whose clock runs behind (a negative offset, docs/api-reference.md 8.5) still accepts a credential the server
 * thinks expired, so "a credential still alive there" is `credential_expires_at > now + least(offset, 0)`. A clock
 * ahead closes the door early; it never widens anything. 0 while the offset was never estimated. A primary-key look-up.
 *
 * The margin never exceeds `maxMarginMs` (a placeholder; the callers pass one CREDENTIAL_MAX_LIFETIME). The offset comes
 * from the lock's own word, its client's upload or a signed receipt (docs/api-reference.md 8.5), but a lock's clock can
 * be reset and a lock's credentials or key stolen: unbounded, one `lockTime` ten years back
 * would put every revocation of the lock's history back into its syncs, its revocation lists and its pending count,
 * which docs/api-reference.md 8.2 bounds by one lifetime. Bounded, a lie at most doubles that window. A lock whose clock
 * really is more than a lifetime behind keeps accepting credentials whose revocations have dropped out of its lists:
 * no list can protect it, its clock must be set (the secured object's `clockDrift` and the explain's `clock-drift`
 * say so, with the true estimate).
 */
export const CLOCK_MARGIN_SQL = (tenantId: string, securedObjectId: string, maxMarginMs: string): string =>
  `coalesce((SELECT greatest(least(clock_offset_ms, 0), -(${maxMarginMs}::bigint)) FROM lock_telemetry WHERE tenant_id = ${tenantId} AND secured_object_id = ${securedObjectId}), 0)`;

export interface LockTelemetry {
  /** When a sync or log upload for the lock last reached the server (ms). */
  lastSeenAt: number;
  /** The change-log position the lock has applied everything up to (docs/api-reference.md 8.4); 0: nothing acknowledged. */
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
   * The change-log position the lock says it has applied everything up to (docs/api-reference.md 8.4): the sync cursor's
   * position, or an upload's `appliedSerial`. Absent: the contact acknowledges nothing. It is capped at the lock's own
   * serial (its last change, key-set changes included; never beyond the tenant's last committed change), so no caller
   * acknowledges a change that has not happened, and a cursor forged at the tenant's last change or copied from another
   * lock claims no more than the lock's own history. Locks do not sign, so a position at or below the serial cannot be
   * checked: a client that holds the lock's credentials can claim the lock applied all of it (what it could do anyway by
   * ignoring what it is sent), and nothing beyond.
   */
  appliedThrough?: number;
  /** The lock's clock minus the server's (ms), when the contact carried the lock's time. */
  clockOffsetMs?: number;
  /** Who made the contact, as its events record it (default `secured_object:<id>`), and the request's id. */
  actor?: string;
  requestId?: string | null;
  /**
   * `append` (default): the contact's events are written by its own statement. `defer`: they are answered instead
   * (ContactEvents), for a transaction that locks rows after the contact and so must take the event counter later
   * (audit.repo.ts, lock order).
   */
  events?: 'append' | 'defer';
}

/** What a contact changed that the event log records (docs/api-reference.md 10), when its events were deferred. */
export interface ContactEvents {
  /** The tickets whose revocation this contact stamped applied (`ticket.revocation_applied`). */
  revocationsApplied: string[];
  /** The offset that first put the lock's clock beyond CLOCK_DRIFT_LIMIT_MS (`secured_object.clock_drift`); null: none. */
  driftOffsetMs: number | null;
}

/**
 * Records a contact with a lock in one call of record_lock_contact (migration 037): `last_seen_at` and
 * `applied_through` only rise, and every revocation of the lock's tickets (those made since the lock's current
 * registration: a lock registered again with a deleted lock's id is another lock, docs/api-reference.md 4.1) at or below
 * the applied position that had not reached the lock is stamped `revocation_applied_at` (an index range over the
 * pending revocations only, tickets_pending_revocations_idx). Returns the lock's telemetry after the contact.
 *
 * The same call appends its events (docs/api-reference.md 10): `ticket.revocation_applied`, one per 1,000 tickets it
 * stamped, and `secured_object.clock_drift` when this contact first puts the lock's clock beyond CLOCK_DRIFT_LIMIT_MS.
 * Nothing is appended, and the event counter is not touched, when neither happened (the sync's hot path). Each of the
 * function's writes is a statement of its own, so a Citus cluster runs them on the tenant's node alone (docs/scaling.md).
 *
 * LOCK ORDER: the lock's telemetry row, then its revoked ticket rows, then the event counter (only when there are
 * events; with `events: 'defer'` never: the caller appends them last). A revocation locks the tenant's change counter
 * and ticket rows and never this row, so the two cannot wait on each other in a cycle.
 */
export async function recordLockContact(
  db: Queryable,
  tenantId: string,
  securedObjectId: string,
  contact: LockContact,
): Promise<LockTelemetry & { events: ContactEvents }> {
  const append = (contact.events ?? 'append') === 'append';
  const { rows } = await db.query<LockTelemetryRow & { stamped_ids: string[]; drift_offset_ms: number | string | null }>(
    // The acknowledged position is capped here, at the lock's own serial (docs/api-reference.md 8.3): the last change
    // that concerns it, key-set changes included, the furthest any sync answer or revocation list for it ever reached
    // (tickets_sync_idx backwards). least() skips NULLs: without the CASE a contact that acknowledges nothing would
    // acknowledge everything.
    `SELECT ${COLUMNS}, stamped_ids, drift_offset_ms
       FROM record_lock_contact($1::uuid, $2::text, $3::bigint,
                                CASE WHEN $4::bigint IS NOT NULL THEN least($4::bigint, ${LOCK_SERIAL_SQL('$1::uuid', '$2::text')}) END,
                                $5::bigint, $6::bigint, $7::boolean, $8::text, $9::text)`,
    [
      tenantId,
      securedObjectId,
      contact.seenAt,
      contact.appliedThrough ?? null,
      contact.clockOffsetMs ?? null,
      CLOCK_DRIFT_LIMIT_MS,
      append,
      contact.actor ?? `secured_object:${securedObjectId}`,
      contact.requestId ?? null,
    ],
  );
  const row = rows[0]!;
  return {
    ...toTelemetry(row),
    events: {
      revocationsApplied: row.stamped_ids,
      driftOffsetMs: row.drift_offset_ms === null ? null : Number(row.drift_offset_ms),
    },
  };
}

/** The lock's telemetry, or null when it was never seen. */
export async function findLockTelemetry(db: Queryable, tenantId: string, securedObjectId: string): Promise<LockTelemetry | null> {
  const { rows } = await db.query<LockTelemetryRow>(
    `SELECT ${COLUMNS} FROM lock_telemetry WHERE tenant_id = $1 AND secured_object_id = $2`,
    [tenantId, securedObjectId],
  );
  return rows[0] ? toTelemetry(rows[0]) : null;
}

/**
 * Row-locks the lock's telemetry and answers its log high mark as it stands (null: never seen, or no entry of the
 * lock's numbering yet). For an upload that must know, before it records its contact, what the lock had said before:
 * it is the same row recordLockContact locks first, so the lock order stays as that function describes.
 */
export async function holdLockLogHigh(db: Queryable, tenantId: string, securedObjectId: string): Promise<number | null> {
  const { rows } = await db.query<{ log_high: number | null }>(
    'SELECT log_high FROM lock_telemetry WHERE tenant_id = $1 AND secured_object_id = $2 FOR UPDATE',
    [tenantId, securedObjectId],
  );
  return rows[0]?.log_high == null ? null : Number(rows[0].log_high);
}

/**
 * A lock registered again with a deleted lock's id is another lock (docs/api-reference.md 4.1): its telemetry starts anew.
 * Called in the registering transaction.
 */
export async function deleteLockTelemetry(db: Queryable, tenantId: string, securedObjectId: string): Promise<void> {
  await db.query('DELETE FROM lock_telemetry WHERE tenant_id = $1 AND secured_object_id = $2', [tenantId, securedObjectId]);
}

/** A lock's telemetry and how many of its revocations are still on their way to it. */
export interface LockPropagation {
  /** Null when the lock was never seen. */
  telemetry: LockTelemetry | null;
  /** Revoked tickets of the lock whose revocation it has not applied and whose credential may still be alive there. */
  pendingRevocations: number;
  /**
   * Revoked phone keys of the tenant (docs/api-reference.md 11.4) that the lock has not applied (revoked after its applied
   * position) while a credential bound to one may still be alive at its clock.
   */
  pendingKeyRevocations: number;
  /** The lock's state (docs/api-reference.md 15): its mode and serial; `normal` and 0 while no lockdown reached it. */
  lockState: { mode: 'lockdown' | 'normal'; serial: number };
}

/**
 * The predicate of a pending revocation over `tickets` aliased `t`, given the placeholder of "now" and the lock's
 * clock offset (an SQL expression, null when unknown) and the placeholder of the margin's bound: not applied by the
 * lock, and a credential that may still be alive at the lock's clock (CLOCK_MARGIN_SQL, bounded the same way). It implies tickets_pending_revocations_idx's predicate, so it is an
 * index range on (tenant, lock, credential expiry) over the pending revocations alone.
 */
const PENDING = (now: string, offset: string, maxMarginMs: string) =>
  `t.revoked_at IS NOT NULL AND t.revocation_applied_at IS NULL AND t.credential_expires_at IS NOT NULL
   AND t.credential_expires_at > ${now} + greatest(least(coalesce(${offset}, 0), 0), -(${maxMarginMs}::bigint))`;

/** What LOCK_PROPAGATION_COLUMNS select. */
export type LockPropagationRow = { [K in keyof LockTelemetryRow]: LockTelemetryRow[K] | null } & {
  pending: number;
  pending_keys: number;
  lock_state_mode: 'lockdown' | 'normal';
  lock_state_seq: number;
};

/**
 * The lock's telemetry and its pending revocations, as a select list over `lock_telemetry` left-joined as `lt` on the
 * tenant `$1` and the lock `$2`, at "now" `$3` with the margin's bound `$4`: a primary-key read and a count over an
 * index range of tickets_pending_revocations_idx (the lock's pending revocations only, never its whole history). A
 * deleted door's whose id was registered again are counted too: that door may still open for them, and nothing it
 * says reaches the server any more (record_lock_contact stamps only the current registration's, migration 037), so
 * they count until their credentials run out. Read with the lock's own row in one statement
 * (findSecuredObjectWithPropagation in secured-object.repo.ts).
 */
export const LOCK_PROPAGATION_COLUMNS = `${COLUMNS.split(', ').map((column) => `lt.${column}`).join(', ')},
            (SELECT count(*)::int FROM tickets t
              WHERE t.tenant_id = $1 AND t.secured_object_id = $2 AND ${PENDING('$3::bigint', 'lt.clock_offset_ms', '$4')}) AS pending,
            -- A range of revoked_device_keys_sync_idx: the tenant's key revocations after the lock's position, few.
            (SELECT count(*)::int FROM revoked_device_keys k
              WHERE k.tenant_id = $1 AND k.change_seq > coalesce(lt.applied_through, 0)
                AND k.bound_until > $3::bigint + greatest(least(coalesce(lt.clock_offset_ms, 0), 0), -($4::bigint))) AS pending_keys,
            ${LOCK_STATE_MODE_SQL('$1', '$2')} AS lock_state_mode,
            ${LOCK_STATE_SEQ_SQL('$1', '$2')} AS lock_state_seq`;

export const toLockPropagation = (row: LockPropagationRow): LockPropagation => ({
  telemetry: row.last_seen_at === null ? null : toTelemetry(row as LockTelemetryRow),
  pendingRevocations: row.pending,
  pendingKeyRevocations: row.pending_keys,
  lockState: { mode: row.lock_state_mode, serial: Number(row.lock_state_seq) },
});

export interface RevocationFilter {
  /** true: applied by their lock; false: pending (PENDING); absent: both. */
  applied?: boolean | undefined;
  securedObjectId?: string | undefined;
  /**
   * docs/api-reference.md 13: only the tickets of this resident, the ones "revoke everywhere" reaches: of its devices
   * and of its access permissions. A UUID (the caller answers nothing for another form).
   */
  residentId?: string | undefined;
}

/** Revocations page in their tickets' creation order, as the tickets do (docs/api-reference.md 7.3). */
const REVOCATION_KEYSET: KeysetColumns = { createdAt: 't.created_at', id: 't.id', idType: 'uuid' };

/**
 * Revoked tickets of the tenant whose revocation reached their lock (`applied`), is still on its way (pending), or
 * either, in creation order. A deleted lock's tickets are included: the door still exists until it applied them.
 * Revocations the lock never needed (never downloaded) or no longer needs (every credential expired before it was
 * applied) are neither. Each ticket is judged at its own lock's clock (its telemetry, a primary-key join).
 */
export async function listRevocations(
  db: Queryable,
  tenantId: string,
  filter: RevocationFilter,
  now: number,
  after: KeysetPosition | null,
  limit: number,
  maxClockMarginMs: number,
): Promise<TicketRecord[]> {
  const params: unknown[] = [tenantId];
  const conditions = ['t.tenant_id = $1', 't.revoked_at IS NOT NULL'];
  if (filter.securedObjectId !== undefined) {
    params.push(filter.securedObjectId);
    conditions.push(`t.secured_object_id = $${params.length}`);
  }
  if (filter.residentId !== undefined) {
    params.push(filter.residentId);
    const resident = `$${params.length}::uuid`;
    conditions.push(
      `(t.mobile_device_id IN (SELECT rd.mobile_device_id FROM resident_devices rd WHERE rd.tenant_id = $1 AND rd.resident_id = ${resident})` +
        ` OR t.access_permission_id IN (SELECT p.id FROM access_permissions p WHERE p.tenant_id = $1 AND p.resident_id = ${resident}))`,
    );
  }
  const applied = 't.revocation_applied_at IS NOT NULL';
  // "now" is bound only when a predicate uses it: PostgreSQL refuses a parameter no clause mentions.
  const pending = () => {
    params.push(now, maxClockMarginMs);
    return PENDING(`$${params.length - 1}::bigint`, 'lt.clock_offset_ms', `$${params.length}`);
  };
  conditions.push(filter.applied === true ? applied : filter.applied === false ? pending() : `(${applied} OR ${pending()})`);
  const page = keysetPage(params, REVOCATION_KEYSET, after, limit);
  conditions.push(page.condition);
  const { rows } = await db.query<TicketRow>(
    `SELECT ${TICKET_COLUMNS.split(', ').map((column) => `t.${column}`).join(', ')}
       FROM tickets t
       LEFT JOIN lock_telemetry lt ON lt.tenant_id = $1 AND lt.secured_object_id = t.secured_object_id
      WHERE ${conditions.join(' AND ')} ${page.orderAndLimit}`,
    params,
  );
  return rows.map(toTicketRecord);
}
