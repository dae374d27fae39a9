// SQL for access logs (docs/api-reference.md 8.5): storing what a lock reports, idempotent on (lock, entryNo), and the operator's pages.
import type { Queryable } from '../database.js';
import type { ContactEvents } from './lock-telemetry.repo.js';

/** One entry as a lock reports it (docs/api-reference.md 8.5). */
export interface ReportedEntry {
  entryNo: number;
  lockTime: number;
  tokenId?: string | undefined;
  command: string;
  channel: string;
  result: 'granted' | 'denied';
  reason?: string | undefined;
}

/** The lock's own numbering (migration 021): what the lock's client uploads and its signed receipts hold. */
export const LOCK_NUMBERING = 'lock';

/**
 * The numbering of a phone's unsigned reports: its own, apart from the lock's and from every other phone's
 * (docs/api-reference.md 8.5). The prefix keeps a phone whose id is `lock` out of the lock's numbering.
 */
export const phoneNumbering = (mobileDeviceId: string): string => `phone:${mobileDeviceId}`;

/** What an upload adds to each stored entry. */
export interface UploadStamp {
  receivedAt: number;
  /** `lock`, or the id of the phone that relayed the log. */
  via: string;
  /** LOCK_NUMBERING for the lock's own word, phoneNumbering(phone) for a phone's report. */
  numbering: string;
  /** The lock's own word (its client's upload, or a receipt verified with its key): true exactly in LOCK_NUMBERING. */
  signed: boolean;
  /** The lock's clock minus the server's (ms) as estimated for this upload; null when never estimated. */
  clockOffsetMs: number | null;
}

/** Who uploaded, and what the contact with the lock left for the event log (recordLockContact with `events: 'defer'`). */
export interface UploadEvents {
  actor: string;
  requestId: string | null;
  contact: ContactEvents;
}

/** The entries an upload stored; null when the lock is no longer registered (deleted meanwhile). */
export interface StoredUpload {
  accepted: number;
}

/**
 * Stores an upload's entries in one call of insert_access_log_entries (migration 037), skipping every (lock,
 * registration, numbering, entryNo) already stored (a re-sent upload, or a duplicate within this one). The registration
 * is the lock's current `created_at`, read there: a lock deleted and registered again with the same id counts from its
 * own first entry. An entry's phone is the device of the ticket its `tokenId` names when that is a ticket of this
 * tenant for this lock; any other value (a credential of another tenant, a malformed id) names no phone. Answers null,
 * storing nothing, when the lock is gone.
 *
 * The same call appends the upload's events (docs/api-reference.md 10): the contact's deferred ones
 * (`ticket.revocation_applied`, `secured_object.clock_drift`), then `access_log.granted` and `access_log.denied`, each
 * naming up to 1,000 of the entries it stored (`entryNos`). It takes the event counter: call it after every row lock.
 * Each of its writes is a statement of its own, so a Citus cluster runs them on the tenant's node alone (docs/scaling.md).
 */
export async function insertAccessLogEntries(
  db: Queryable,
  tenantId: string,
  securedObjectId: string,
  entries: ReportedEntry[],
  stamp: UploadStamp,
  events: UploadEvents,
): Promise<StoredUpload | null> {
  const { rows } = await db.query<{ registered: boolean; accepted: number }>(
    `SELECT registered, accepted
       FROM insert_access_log_entries($1::uuid, $2::text, $3::bigint[], $4::bigint[], $5::text[], $6::text[], $7::text[],
                                      $8::text[], $9::text[], $10::bigint, $11::text, $12::bigint, $13::text, $14::boolean,
                                      $15::text, $16::text, $17::uuid[], $18::bigint)`,
    [
      tenantId,
      securedObjectId,
      entries.map((entry) => entry.entryNo),
      entries.map((entry) => entry.lockTime),
      entries.map((entry) => entry.tokenId ?? null),
      entries.map((entry) => entry.command),
      entries.map((entry) => entry.channel),
      entries.map((entry) => entry.result),
      entries.map((entry) => entry.reason ?? null),
      stamp.receivedAt,
      stamp.via,
      stamp.clockOffsetMs,
      stamp.numbering,
      stamp.signed,
      events.actor,
      events.requestId,
      events.contact.revocationsApplied,
      events.contact.driftOffsetMs,
    ],
  );
  const row = rows[0]!;
  return row.registered ? { accepted: Number(row.accepted) } : null;
}

/**
 * Raises the lock's log high mark (where the next gap starts, docs/api-reference.md 8.5) to `entryNo`; never lowers it. The
 * lock's telemetry row exists and is row-locked by this transaction's recordLockContact, so uploads of one lock
 * raise it one after another.
 */
export async function raiseLogHigh(db: Queryable, tenantId: string, securedObjectId: string, entryNo: number): Promise<void> {
  await db.query(
    `UPDATE lock_telemetry SET log_high = greatest(coalesce(log_high, 0), $3::bigint)
      WHERE tenant_id = $1 AND secured_object_id = $2`,
    [tenantId, securedObjectId, entryNo],
  );
}

/**
 * Whether the lock exists in the tenant and the phone holds or has held a ticket for it (any status), both as they are
 * registered now: a ticket of an earlier lock or phone with the same id does not count. One index probe each.
 */
export async function findRelayRight(
  db: Queryable,
  tenantId: string,
  mobileDeviceId: string,
  securedObjectId: string,
): Promise<{ deviceExists: boolean; lockExists: boolean; hasTicket: boolean }> {
  const { rows } = await db.query<{ device_exists: boolean; lock_exists: boolean; has_ticket: boolean }>(
    `SELECT md.id IS NOT NULL AS device_exists, so.id IS NOT NULL AS lock_exists,
            EXISTS (
              SELECT 1 FROM tickets t
               WHERE t.tenant_id = $1 AND t.mobile_device_id = $2 AND t.secured_object_id = $3
                 AND t.created_at >= md.created_at AND t.created_at >= so.created_at
            ) AS has_ticket
       FROM (SELECT 1) AS one
       LEFT JOIN mobile_devices md ON md.tenant_id = $1 AND md.id = $2
       LEFT JOIN secured_objects so ON so.tenant_id = $1 AND so.id = $3`,
    [tenantId, mobileDeviceId, securedObjectId],
  );
  const row = rows[0]!;
  return { deviceExists: row.device_exists, lockExists: row.lock_exists, hasTicket: row.has_ticket };
}

/** A stored entry as the operator reads it. */
export interface AccessLogRecord {
  securedObjectId: string;
  lockRegisteredAt: number;
  entryNo: number;
  lockTime: number;
  tokenId: string | null;
  mobileDeviceId: string | null;
  command: string;
  channel: string;
  result: 'granted' | 'denied';
  reason: string | null;
  receivedAt: number;
  via: string;
  clockOffsetMs: number | null;
  numbering: string;
  signed: boolean;
}

interface AccessLogRow {
  secured_object_id: string;
  lock_registered_at: number;
  entry_no: number;
  lock_time: number;
  token_id: string | null;
  mobile_device_id: string | null;
  command: string;
  channel: string;
  result: 'granted' | 'denied';
  reason: string | null;
  received_at: number;
  via: string;
  clock_offset_ms: number | null;
  numbering: string;
  signed: boolean;
}

const COLUMNS =
  'secured_object_id, lock_registered_at, entry_no, lock_time, token_id, mobile_device_id, command, channel, result, reason, received_at, via, clock_offset_ms, numbering, signed';

const toRecord = (row: AccessLogRow): AccessLogRecord => ({
  securedObjectId: row.secured_object_id,
  lockRegisteredAt: Number(row.lock_registered_at),
  entryNo: Number(row.entry_no),
  lockTime: Number(row.lock_time),
  tokenId: row.token_id,
  mobileDeviceId: row.mobile_device_id,
  command: row.command,
  channel: row.channel,
  result: row.result,
  reason: row.reason,
  receivedAt: Number(row.received_at),
  via: row.via,
  clockOffsetMs: row.clock_offset_ms === null ? null : Number(row.clock_offset_ms),
  numbering: row.numbering,
  signed: row.signed,
});

export interface AccessLogFilter {
  securedObjectId?: string | undefined;
  mobileDeviceId?: string | undefined;
  tokenId?: string | undefined;
  result?: 'granted' | 'denied' | undefined;
  /** Inclusive, on the lock's time. */
  from?: number | undefined;
  /** Exclusive, on the lock's time. */
  to?: number | undefined;
}

/** The last entry of the previous page: the page order's columns, which together name one entry. */
export interface AccessLogPosition {
  lockTime: number;
  securedObjectId: string;
  entryNo: number;
  lockRegisteredAt: number;
  numbering: string;
}

/**
 * A page of the tenant's entries in (lock time, lock, entryNo, registration, numbering) order, after `after`: each
 * filter has an index ending in that order (migration 021), so a page is one range scan wherever it starts.
 */
export async function listAccessLogEntries(
  db: Queryable,
  tenantId: string,
  filter: AccessLogFilter,
  after: AccessLogPosition | null,
  limit: number,
): Promise<AccessLogRecord[]> {
  const params: unknown[] = [tenantId, limit];
  const conditions = ['tenant_id = $1'];
  const add = (sql: (placeholder: string) => string, value: unknown) => {
    params.push(value);
    conditions.push(sql(`$${params.length}`));
  };
  if (filter.securedObjectId !== undefined) add((p) => `secured_object_id = ${p}`, filter.securedObjectId);
  if (filter.mobileDeviceId !== undefined) add((p) => `mobile_device_id = ${p}`, filter.mobileDeviceId);
  if (filter.tokenId !== undefined) add((p) => `token_id = ${p}`, filter.tokenId);
  if (filter.result !== undefined) add((p) => `result = ${p}`, filter.result);
  if (filter.from !== undefined) add((p) => `lock_time >= ${p}::bigint`, filter.from);
  if (filter.to !== undefined) add((p) => `lock_time < ${p}::bigint`, filter.to);
  if (after) {
    params.push(after.lockTime, after.securedObjectId, after.entryNo, after.lockRegisteredAt, after.numbering);
    const n = params.length;
    conditions.push(
      `(lock_time, secured_object_id, entry_no, lock_registered_at, numbering) > ($${n - 4}::bigint, $${n - 3}::text, $${n - 2}::bigint, $${n - 1}::bigint, $${n}::text)`,
    );
    // Implied by the row comparison, and a bound of the lock index too, whose order has the lock before the time.
    conditions.push(`lock_time >= $${n - 4}::bigint`);
  }
  const { rows } = await db.query<AccessLogRow>(
    `SELECT ${COLUMNS} FROM access_log_entries
      WHERE ${conditions.join(' AND ')}
      ORDER BY lock_time, secured_object_id, entry_no, lock_registered_at, numbering LIMIT $2`,
    params,
  );
  return rows.map(toRecord);
}
