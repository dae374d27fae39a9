// Access logs (docs/api-reference.md 8.5): locks (directly, or relayed by a phone) upload their decisions; operators page them.
import type { Database, Queryable } from '../db/database.js';
import {
  findRelayRight,
  insertAccessLogEntries,
  listAccessLogEntries,
  raiseLogHigh,
  type AccessLogFilter,
  type AccessLogPosition,
  type AccessLogRecord,
  type ReportedEntry,
} from '../db/repositories/access-log.repo.js';
import { findLockForClient } from '../db/repositories/lock-sync.repo.js';
import { recordLockContact } from '../db/repositories/lock-telemetry.repo.js';
import { holdSecuredObjectForBinding } from '../db/repositories/secured-object.repo.js';
import { ForbiddenError, NotFoundError } from '../errors.js';
import type { AccessLogBudget } from './access-log-budget.js';
import type { Clock } from './context.js';
import { assertBinding, assertLockClientActive, type DeviceBinding } from '../shared/device-binding.js';
import { cutPage, invalidCursor, type Page } from '../shared/pagination.js';

/** An upload's body (docs/api-reference.md 8.5). */
export interface AccessLogUpload {
  /** The change-log position the lock says it has applied (docs/api-reference.md 8.4). */
  appliedSerial?: number | undefined;
  /** The lock's clock at the moment of the upload (ms). */
  lockTime?: number | undefined;
  entries: ReportedEntry[];
}

export interface UploadAnswer {
  /** Entries stored now. */
  accepted: number;
  /** Entries already stored (a re-sent upload), or repeated within this one. */
  duplicates: number;
  /** The entry numbers missing above the lock's previous high mark and below this upload's highest, as ranges. */
  gaps: [number, number][];
}

/** An entry as the Operator API answers it. */
export interface AccessLogEntry {
  securedObjectId: string;
  entryNo: number;
  lockTime: number;
  tokenId?: string;
  mobileDeviceId?: string;
  command: string;
  channel: string;
  result: 'granted' | 'denied';
  reason?: string;
  receivedTime: number;
  via: string;
  clockOffset?: number;
}

const LOG_NEEDS_LOCK_BINDING =
  'A lock uploads its access log through its own client: one bound to the secured object (POST /operatorapi/oauthclients ' +
  'with securedObjectId). A phone relays it with POST /deviceapi/mobiledevices/{id}/accesslog.';
const RELAY_NEEDS_PHONE_BINDING =
  'A phone relays a lock\'s access log through its own client: one bound to the mobile device (POST /operatorapi/oauthclients ' +
  'with mobileDeviceId).';

/**
 * The maximal ranges of entry numbers in (high, highest of `entryNos`) that `entryNos` does not hold: what the lock has
 * not delivered yet. Numbers at or below `high` fill older gaps and are not reported again. Only the upload is read
 * (sorted, so O(n log n) in its size), never the lock's history.
 */
export function gapsAbove(high: number, entryNos: readonly number[]): [number, number][] {
  const above = [...new Set(entryNos.filter((entryNo) => entryNo > high))].sort((a, b) => a - b);
  const gaps: [number, number][] = [];
  let previous = high;
  for (const entryNo of above) {
    if (entryNo > previous + 1) gaps.push([previous + 1, entryNo - 1]);
    previous = entryNo;
  }
  return gaps;
}

function toEntry(record: AccessLogRecord): AccessLogEntry {
  return {
    securedObjectId: record.securedObjectId,
    entryNo: record.entryNo,
    lockTime: record.lockTime,
    ...(record.tokenId !== null ? { tokenId: record.tokenId } : {}),
    ...(record.mobileDeviceId !== null ? { mobileDeviceId: record.mobileDeviceId } : {}),
    command: record.command,
    channel: record.channel,
    result: record.result,
    ...(record.reason !== null ? { reason: record.reason } : {}),
    receivedTime: record.receivedAt,
    via: record.via,
    ...(record.clockOffsetMs !== null ? { clockOffset: record.clockOffsetMs } : {}),
  };
}

/** Cursors are opaque (docs/api-reference.md 7.3): the last entry's page position behind a version tag. */
const CURSOR_TAG = 'l1';

function encodeLogCursor(record: AccessLogRecord): string {
  const position = [CURSOR_TAG, record.lockTime, record.securedObjectId, record.entryNo, record.lockRegisteredAt];
  return Buffer.from(JSON.stringify(position), 'utf8').toString('base64url');
}

function decodeLogCursor(cursor: string | undefined): AccessLogPosition | null {
  if (cursor === undefined) return null;
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw invalidCursor();
  }
  if (!Array.isArray(value) || value.length !== 5 || value[0] !== CURSOR_TAG) throw invalidCursor();
  const [, lockTime, securedObjectId, entryNo, lockRegisteredAt] = value as unknown[];
  const isCount = (n: unknown): n is number => Number.isSafeInteger(n) && (n as number) >= 0;
  if (!isCount(lockTime) || !isCount(entryNo) || !isCount(lockRegisteredAt)) throw invalidCursor();
  if (typeof securedObjectId !== 'string' || securedObjectId.length === 0 || securedObjectId.length > 256 || securedObjectId.includes('\u0000')) {
    throw invalidCursor();
  }
  return { lockTime, securedObjectId, entryNo, lockRegisteredAt };
}

export interface AccessLogServiceOptions {
  db: Database;
  clock: Clock;
  /** The lock's hourly budget of new entries, shared by all its uploaders (access-log-budget.ts). */
  budget: AccessLogBudget;
}

export function createAccessLogService({ db, clock, budget }: AccessLogServiceOptions) {
  /**
   * Stores one upload in one transaction. The contact is recorded first: it upserts and row-locks the lock's telemetry
   * row, so concurrent uploads of one lock run one after another, and its `logHigh` is the high mark before this
   * upload. Then the lock's row is held (FOR KEY SHARE: its deletion waits for this transaction) and the caller's
   * checks run again (`recheck`): a lock deleted, or deleted and registered again, since the first checks is seen
   * here, and none can be until this transaction ends, so the entries are never written to a lock other than the one
   * the client speaks for. LOCK ORDER: the telemetry row, the revoked tickets it stamps, the lock's row; a deletion
   * locks the change counter, the lock's row and the tickets not yet revoked, never the first two. Then the entries
   * (idempotent on lock and entryNo), then the high mark rises.
   */
  async function store(
    tenantId: string,
    actor: string,
    via: string,
    securedObjectId: string,
    upload: AccessLogUpload,
    recheck: (tx: Queryable) => Promise<void>,
  ): Promise<UploadAnswer> {
    const now = clock();
    // docs/api-reference.md 8.5: the upload's `lockTime` is the lock's clock at the moment of the upload (a relaying phone
    // adds the time elapsed since it read the lock), so the difference to the server's clock is the lock's offset.
    const clockOffsetMs = upload.lockTime !== undefined ? upload.lockTime - now : undefined;
    return db.transaction(async (tx) => {
      // docs/api-reference.md 8.4, 8.5: locks do not sign their logs, so `appliedSerial` (above all from a relay) cannot be
      // verified: a phone could claim a lock applied a revocation it never saw. recordLockContact caps it at the
      // lock's own serial, so it can never acknowledge a change that has not happened or that concerns no history of
      // this lock; no more can be checked.
      const telemetry = await recordLockContact(tx, tenantId, securedObjectId, {
        seenAt: now,
        ...(upload.appliedSerial !== undefined ? { appliedThrough: upload.appliedSerial } : {}),
        ...(clockOffsetMs !== undefined ? { clockOffsetMs } : {}),
        // Its events go with the entries' below, after the lock's row is held: the event counter last (audit.repo.ts).
        events: 'defer',
      });
      if (!(await holdSecuredObjectForBinding(tx, tenantId, securedObjectId))) throw new NotFoundError(`No secured object ${securedObjectId}.`);
      await recheck(tx);
      const entryNos = upload.entries.map((entry) => entry.entryNo);
      // docs/api-reference.md 8.5: over the lock's budget the whole upload is refused (429) before anything is written.
      await budget.charge(tx, tenantId, securedObjectId, entryNos, now);
      // Each entry carries its upload's estimate, or the lock's last one when this upload has none.
      const stored = await insertAccessLogEntries(
        tx,
        tenantId,
        securedObjectId,
        upload.entries,
        { receivedAt: now, via, clockOffsetMs: telemetry.clockOffsetMs },
        { actor, requestId: null, contact: telemetry.events },
      );
      // Deleted since the checks: nothing of this upload is kept (the transaction rolls back).
      if (stored === null) throw new NotFoundError(`No secured object ${securedObjectId}.`);
      await raiseLogHigh(tx, tenantId, securedObjectId, Math.max(...entryNos));
      return {
        accepted: stored.accepted,
        duplicates: upload.entries.length - stored.accepted,
        gaps: gapsAbove(telemetry.logHigh ?? 0, entryNos),
      };
    });
  }

  return {
    /**
     * docs/api-reference.md 8.5: a lock uploads its own log through its own client. Another lock's id answers as missing
     * (assertBinding); a client of a deleted lock only syncs (docs/api-reference.md 4.1). An unbound sync client, which may
     * sync any lock (docs/api-reference.md 6.2), may not write a lock's log: for a lock of the tenant it is told which client to use.
     */
    async uploadFromLock(tenantId: string, binding: DeviceBinding, securedObjectId: string, upload: AccessLogUpload): Promise<UploadAnswer> {
      assertBinding(binding, 'securedObjectId', securedObjectId, null);
      const check = async (q: Queryable) => assertLockClientActive(await findLockForClient(q, tenantId, securedObjectId, binding.clientId), securedObjectId);
      await check(db);
      if (binding.securedObjectId === undefined) throw new ForbiddenError(LOG_NEEDS_LOCK_BINDING);
      return store(tenantId, `client:${binding.clientId}`, 'lock', securedObjectId, upload, check);
    },

    /**
     * docs/api-reference.md 8.5: a phone relays what a lock gave it, through the phone's own client (the download's binding
     * rules). The lock must be one the phone holds or has held a ticket for: a phone cannot write logs, or
     * acknowledge revocations (docs/api-reference.md 8.4), for doors it never had access to; any other lock answers as missing.
     */
    async uploadFromPhone(
      tenantId: string,
      binding: DeviceBinding,
      mobileDeviceId: string,
      upload: AccessLogUpload & { securedObjectId: string },
    ): Promise<UploadAnswer> {
      assertBinding(binding, 'mobileDeviceId', mobileDeviceId, RELAY_NEEDS_PHONE_BINDING);
      const { securedObjectId, ...rest } = upload;
      const check = async (q: Queryable) => {
        const right = await findRelayRight(q, tenantId, mobileDeviceId, securedObjectId);
        if (!right.deviceExists) throw new NotFoundError(`No mobile device ${mobileDeviceId}.`);
        if (!right.lockExists || !right.hasTicket) throw new NotFoundError(`No secured object ${securedObjectId}.`);
      };
      await check(db);
      return store(tenantId, `client:${binding.clientId}`, mobileDeviceId, securedObjectId, rest, check);
    },

    /** docs/api-reference.md 8.5, 7.3: the tenant's entries in lock-time order, filtered, a page at a time. */
    async list(tenantId: string, filter: AccessLogFilter, limit: number, cursor?: string): Promise<Page<AccessLogEntry>> {
      const rows = await listAccessLogEntries(db, tenantId, filter, decodeLogCursor(cursor), limit + 1);
      const page = cutPage(rows, limit);
      return { items: page.rows.map(toEntry), nextCursor: page.more && page.last ? encodeLogCursor(page.last) : null };
    },
  };
}

export type AccessLogService = ReturnType<typeof createAccessLogService>;
