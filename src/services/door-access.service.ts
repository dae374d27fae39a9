// "Who can open this door at a time" (docs/api-reference.md 13): the lock's tickets whose credential would open at
// that instant, schedule included, with the phone, the person and the key behind each.
import type { Database } from '../db/database.js';
import { listDoorAccess, type DoorAccessRow } from '../db/repositories/door-access.repo.js';
import { findSecuredObject } from '../db/repositories/secured-object.repo.js';
import { NotFoundError } from '../errors.js';
import { decodeCursor, encodeCursor, type Page } from '../shared/pagination.js';
import { isUuid } from '../shared/identifiers.js';
import { expandSchedule } from '../shared/schedule/expansion.js';
import { DAY, type Schedule } from '../shared/schedule/types.js';
import type { Clock } from './context.js';

export interface DoorAccess {
  mobileDeviceId: string;
  residentId?: string;
  residentName?: string;
  tokenId: string;
  accessPermissionId?: string;
  beginDate: number;
  endDate: number;
  schedule?: Schedule;
  /** The schedule window that lets the ticket open at `at`: UTC milliseconds. */
  nextWindow?: { start: number; end: number };
  /** The phone has a registered key, so its credential is bound to it (docs/api-reference.md 11.2). */
  keyBound: boolean;
  /** Present (true) for a ticket that opens during a lockdown too (docs/api-reference.md 15). */
  override?: true;
}

export interface DoorAccessServiceOptions {
  db: Database;
  clock: Clock;
}

/** Candidate tickets read per round: a page is filled across rounds when schedules leave some out. */
const MAX_ROUNDS = 10;

/**
 * docs/api-reference.md 9: the window of `schedule`, read in the lock's `timeZone`, that contains `at`, or null when
 * `at` is outside every window. A window lasts at most one wall-clock day, so one that contains `at` starts within the
 * day before it, and expanding from there gives it whole.
 */
export function windowAt(schedule: Schedule, timeZone: string, at: number): { start: number; end: number } | null {
  const from = Math.max(0, at - DAY - 1);
  for (const [start, end] of expandSchedule(schedule, timeZone, from, at + DAY)) {
    if (start <= at && at < end) return { start, end };
  }
  return null;
}

function toDoorAccess(row: DoorAccessRow, window: { start: number; end: number } | null): DoorAccess {
  return {
    mobileDeviceId: row.mobileDeviceId,
    ...(row.residentId !== null ? { residentId: row.residentId } : {}),
    ...(row.residentName !== null ? { residentName: row.residentName } : {}),
    tokenId: row.ticketId,
    ...(row.accessPermissionId !== null ? { accessPermissionId: row.accessPermissionId } : {}),
    beginDate: row.beginDate,
    endDate: row.endDate,
    ...(row.schedule !== null ? { schedule: row.schedule } : {}),
    ...(window ? { nextWindow: window } : {}),
    keyBound: row.keyBound,
    ...(row.override ? { override: true as const } : {}),
  };
}

export function createDoorAccessService({ db, clock }: DoorAccessServiceOptions) {
  return {
    /**
     * A page of who can open the lock at `at` (default now), in ticket creation order. Tickets come from one
     * statement per round; a schedule that is closed at `at` leaves its ticket out, so a page may be filled over a few
     * rounds, and at most MAX_ROUNDS are read before a shorter page is answered with its cursor.
     */
    async whoCanOpen(tenantId: string, securedObjectId: string, at: number | undefined, limit: number, cursor?: string): Promise<Page<DoorAccess>> {
      let after = decodeCursor(cursor, isUuid);
      const lock = await findSecuredObject(db, tenantId, securedObjectId);
      if (!lock) throw new NotFoundError(`No secured object ${securedObjectId}.`);
      const instant = at ?? clock();
      const items: DoorAccess[] = [];
      let more = false;
      for (let round = 0; round < MAX_ROUNDS; round++) {
        const rows = await listDoorAccess(db, tenantId, securedObjectId, instant, after, limit + 1);
        for (const row of rows) {
          const window = row.schedule ? windowAt(row.schedule, lock.timeZone, instant) : null;
          if (row.schedule && !window) {
            after = { createdAt: row.createdAt, id: row.ticketId };
            continue;
          }
          if (items.length === limit) {
            more = true;
            break;
          }
          items.push(toDoorAccess(row, window));
          after = { createdAt: row.createdAt, id: row.ticketId };
        }
        if (more || rows.length <= limit) break;
        // The last round read a full batch without filling the page: another round, or, at the bound, a short page.
        if (round === MAX_ROUNDS - 1) more = true;
      }
      return { items, nextCursor: more && after ? encodeCursor(after) : null };
    },
  };
}

export type DoorAccessService = ReturnType<typeof createDoorAccessService>;
