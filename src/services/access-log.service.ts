// Access logs (docs/api-reference.md 8.5): locks upload their decisions, directly or in signed receipts a phone relays;
// phones' plain relays are kept as reports apart from the lock's word; operators page them.
import type { Database, Queryable } from '../db/database.js';
import {
  findRelayRight,
  insertAccessLogEntries,
  listAccessLogEntries,
  LOCK_NUMBERING,
  phoneNumbering,
  raiseLogHigh,
  type AccessLogFilter,
  type AccessLogPosition,
  type AccessLogRecord,
  type ReportedEntry,
} from '../db/repositories/access-log.repo.js';
import { findLockForClient } from '../db/repositories/lock-sync.repo.js';
import { findLockTelemetry, holdLockLogHigh, recordLockContact, type ContactEvents } from '../db/repositories/lock-telemetry.repo.js';
import { holdSecuredObjectForBinding } from '../db/repositories/secured-object.repo.js';
import { BadRequestError, ForbiddenError, NotFoundError } from '../errors.js';
import type { AccessLogBudget } from './access-log-budget.js';
import type { Clock } from './context.js';
import { createLockReceiptVerifier, type LockWord } from './lock-receipt.service.js';
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

/** A phone's relay (docs/api-reference.md 8.5): the lock's signed receipts, plain entries (a report), or both. */
export interface RelayedUpload {
  securedObjectId: string;
  /** Ignored: a relay's own claims are a report, never an acknowledgement or a clock reading. */
  appliedSerial?: number | undefined;
  lockTime?: number | undefined;
  entries?: ReportedEntry[] | undefined;
  receipts?: string[] | undefined;
}

/** One upload as it is stored: the lock's own word (trusted), and what a phone reports (stored apart, trusted for nothing). */
interface SortedUpload {
  word: LockWord | null;
  reports: ReportedEntry[];
}

/** Most entries one upload stores, receipts' and plain ones together (as schemas/access-log.ts bounds plain ones). */
const MAX_UPLOAD_ENTRIES = 1000;

const NO_CONTACT_EVENTS: ContactEvents = { revocationsApplied: [], driftOffsetMs: null };

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
  /** The lock's own word (its client, or a receipt verified with its key); false: a phone's report. */
  signed: boolean;
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
    signed: record.signed,
    ...(record.clockOffsetMs !== null ? { clockOffset: record.clockOffsetMs } : {}),
  };
}

/**
 * Cursors are opaque (docs/api-reference.md 7.3): the last entry's page position behind a version tag. `l2` adds the
 * numbering (migration 021); an `l1` cursor of a page served before it reads as the numbering that sorts first, so a
 * walk begun before an upgrade goes on (at most repeating the entry it stopped at).
 */
const CURSOR_TAG = 'l2';
const FORMER_CURSOR_TAG = 'l1';

function encodeLogCursor(record: AccessLogRecord): string {
  const position = [CURSOR_TAG, record.lockTime, record.securedObjectId, record.entryNo, record.lockRegisteredAt, record.numbering];
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
  if (!Array.isArray(value)) throw invalidCursor();
  const current = value[0] === CURSOR_TAG && value.length === 6;
  const former = value[0] === FORMER_CURSOR_TAG && value.length === 5;
  if (!current && !former) throw invalidCursor();
  const [, lockTime, securedObjectId, entryNo, lockRegisteredAt, numbering = ''] = value as unknown[];
  const isCount = (n: unknown): n is number => Number.isSafeInteger(n) && (n as number) >= 0;
  if (!isCount(lockTime) || !isCount(entryNo) || !isCount(lockRegisteredAt)) throw invalidCursor();
  if (typeof securedObjectId !== 'string' || securedObjectId.length === 0 || securedObjectId.length > 256 || securedObjectId.includes('\u0000')) {
    throw invalidCursor();
  }
  if (typeof numbering !== 'string' || numbering.length > 300 || numbering.includes('\u0000')) throw invalidCursor();
  return { lockTime, securedObjectId, entryNo, lockRegisteredAt, numbering };
}

export interface AccessLogServiceOptions {
  db: Database;
  clock: Clock;
  /** The lock's per-minute budget of new entries, shared by all its uploaders (access-log-budget.ts). */
  budget: AccessLogBudget;
}

export function createAccessLogService({ db, clock, budget }: AccessLogServiceOptions) {
  const receipts = createLockReceiptVerifier({ db });

  /**
   * Records the lock's own word as a contact (docs/api-reference.md 8.4, 8.5): its `appliedSerial` acknowledges and its
   * `lockTime` feeds the clock estimate, unless the word is older than what the lock said before (LockWord). Answers
   * the lock's telemetry after the contact (its `logHigh` still the high mark before this upload) and the contact's
   * deferred events.
   */
  async function recordWord(tx: Queryable, tenantId: string, securedObjectId: string, word: LockWord, now: number) {
    const before = word.lockTimeEntryNo !== undefined ? await holdLockLogHigh(tx, tenantId, securedObjectId) : null;
    const clockIsCurrent = word.lockTimeEntryNo === undefined || word.lockTimeEntryNo > (before ?? 0);
    // docs/api-reference.md 8.5: `lockTime` is the lock's clock at that moment, so its difference to the server's is
    // the lock's offset. A receipt relayed late reads as a clock behind by the delay: phones relay as soon as they can.
    const clockOffsetMs = word.lockTime !== undefined && clockIsCurrent ? word.lockTime - now : undefined;
    // recordLockContact caps `appliedSerial` at the lock's own serial: even the lock's word acknowledges no change
    // that has not happened or that concerns no history of this lock.
    const telemetry = await recordLockContact(tx, tenantId, securedObjectId, {
      seenAt: now,
      ...(word.appliedSerial !== undefined ? { appliedThrough: word.appliedSerial } : {}),
      ...(clockOffsetMs !== undefined ? { clockOffsetMs } : {}),
      // Its events go with the entries' below, after the lock's row is held: the event counter last (audit.repo.ts).
      events: 'defer',
    });
    return { logHigh: telemetry.logHigh, clockOffsetMs: telemetry.clockOffsetMs, events: telemetry.events };
  }

  /**
   * Stores one upload in one transaction. The lock's word is recorded first: that upserts and row-locks the lock's
   * telemetry row, so concurrent uploads of one lock run one after another. A report alone records no contact: it
   * changes nothing the lock's word decides (acknowledgements, the clock estimate and its drift flag, when the lock
   * was last seen, the high mark) and reads the lock's last estimate for its entries. Then the lock's row is held
   * (FOR KEY SHARE: its deletion waits for this transaction) and the caller's checks run again (`recheck`): a lock
   * deleted, or deleted and registered again, since the first checks is seen here, and none can be until this
   * transaction ends, so the entries are never written to a lock other than the one the client speaks for. LOCK
   * ORDER: the telemetry row, the revoked tickets it stamps, the lock's row; a deletion locks the change counter, the
   * lock's row and the tickets not yet revoked, never the first two. Then the entries, the lock's word in the lock's
   * numbering and the reports in the relaying phone's (idempotent on lock, numbering and entryNo), then the lock's
   * high mark rises with the lock's word alone.
   */
  async function store(
    tenantId: string,
    actor: string,
    via: string,
    securedObjectId: string,
    upload: SortedUpload,
    recheck: (tx: Queryable) => Promise<void>,
  ): Promise<UploadAnswer> {
    const now = clock();
    const { word, reports } = upload;
    return db.transaction(async (tx) => {
      const contact = word
        ? await recordWord(tx, tenantId, securedObjectId, word, now)
        : { logHigh: null, clockOffsetMs: (await findLockTelemetry(tx, tenantId, securedObjectId))?.clockOffsetMs ?? null, events: NO_CONTACT_EVENTS };
      if (!(await holdSecuredObjectForBinding(tx, tenantId, securedObjectId))) throw new NotFoundError(`No secured object ${securedObjectId}.`);
      await recheck(tx);
      // docs/api-reference.md 8.5: over the lock's budget the whole upload is refused (429) and nothing of it is kept, the
      // lock's word and the reports alike: a phone's reports cannot grow the database without bound either. The
      // budget's row is held now; what the inserts below store is charged after them, and a refusal rolls them back.
      const held = await budget.hold(tx, tenantId, securedObjectId, now);
      const events = { actor, requestId: null };
      let accepted = 0;
      // Each entry carries the lock's estimate after this upload (its last one when this upload made none).
      const stamp = { receivedAt: now, via, clockOffsetMs: contact.clockOffsetMs };
      if (word) {
        const stored = await insertAccessLogEntries(tx, tenantId, securedObjectId, word.entries, { ...stamp, numbering: LOCK_NUMBERING, signed: true }, {
          ...events,
          contact: contact.events,
        });
        // Deleted since the checks: nothing of this upload is kept (the transaction rolls back).
        if (stored === null) throw new NotFoundError(`No secured object ${securedObjectId}.`);
        accepted += stored.accepted;
        if (word.entries.length > 0) await raiseLogHigh(tx, tenantId, securedObjectId, Math.max(...word.entries.map((entry) => entry.entryNo)));
      }
      if (reports.length > 0) {
        const stored = await insertAccessLogEntries(tx, tenantId, securedObjectId, reports, { ...stamp, numbering: phoneNumbering(via), signed: false }, {
          ...events,
          contact: NO_CONTACT_EVENTS,
        });
        if (stored === null) throw new NotFoundError(`No secured object ${securedObjectId}.`);
        accepted += stored.accepted;
      }
      await budget.charge(tx, held, accepted, now);
      const total = (word?.entries.length ?? 0) + reports.length;
      return {
        accepted,
        duplicates: total - accepted,
        // Gaps are the lock's numbering's: a report's numbers say nothing of what the lock has not delivered.
        gaps: word ? gapsAbove(contact.logHigh ?? 0, word.entries.map((entry) => entry.entryNo)) : [],
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
      // The lock's own client is the lock speaking: its whole upload is the lock's word, its lockTime taken as now.
      const word: LockWord = {
        ...(upload.appliedSerial !== undefined ? { appliedSerial: upload.appliedSerial } : {}),
        ...(upload.lockTime !== undefined ? { lockTime: upload.lockTime } : {}),
        entries: upload.entries,
      };
      return store(tenantId, `client:${binding.clientId}`, 'lock', securedObjectId, { word, reports: [] }, check);
    },

    /**
     * docs/api-reference.md 8.5: a phone relays what a lock gave it, through the phone's own client (the download's binding
     * rules). The lock must be one the phone holds or has held a ticket for: a phone cannot write logs for doors it
     * never had access to; any other lock answers as missing. Receipts verified with the lock's key are the lock's own
     * word; plain entries are the phone's report, and the relay's own `appliedSerial` and `lockTime` are ignored: a
     * phone whose ticket was revoked must not be able to say the lock applied the revocation (docs/api-reference.md 8.4).
     */
    async uploadFromPhone(tenantId: string, binding: DeviceBinding, mobileDeviceId: string, upload: RelayedUpload): Promise<UploadAnswer> {
      assertBinding(binding, 'mobileDeviceId', mobileDeviceId, RELAY_NEEDS_PHONE_BINDING);
      const { securedObjectId, entries = [], receipts: signed = [] } = upload;
      if (entries.length === 0 && signed.length === 0) {
        throw new BadRequestError('Send the lock\'s receipts, plain entries, or both.', [{ field: 'receipts', message: 'receipts or entries required' }]);
      }
      const check = async (q: Queryable) => {
        const right = await findRelayRight(q, tenantId, mobileDeviceId, securedObjectId);
        if (!right.deviceExists) throw new NotFoundError(`No mobile device ${mobileDeviceId}.`);
        if (!right.lockExists || !right.hasTicket) throw new NotFoundError(`No secured object ${securedObjectId}.`);
      };
      await check(db);
      const word = signed.length > 0 ? await receipts.verify(tenantId, securedObjectId, signed) : null;
      if ((word?.entries.length ?? 0) + entries.length > MAX_UPLOAD_ENTRIES) {
        throw new BadRequestError(`An upload holds at most ${MAX_UPLOAD_ENTRIES} entries, in its receipts and plain together; send several.`, [
          { field: 'receipts', message: `more than ${MAX_UPLOAD_ENTRIES} entries` },
        ]);
      }
      return store(tenantId, `client:${binding.clientId}`, mobileDeviceId, securedObjectId, { word, reports: entries }, check);
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
