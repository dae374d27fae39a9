// The per-lock access-log budget (ACCESS_LOG_ENTRIES_PER_LOCK_PER_MINUTE, docs/api-reference.md 8.5): every uploader of a
// lock together (its own client and every phone relaying for it) stores at most so many new entries a minute.
import type { Queryable } from '../db/database.js';
import { chargeAccessLogBudget, holdAccessLogBudget, type HeldBudget } from '../db/repositories/access-log-bounds.repo.js';
import { TooManyRequestsError } from '../errors.js';

/** The budget's window: a fixed minute that starts with the first new entry after the previous one ran out. */
export const ACCESS_LOG_BUDGET_WINDOW_MS = 60_000;

export interface AccessLogBudgetOptions {
  /** ACCESS_LOG_ENTRIES_PER_LOCK_PER_MINUTE. */
  entriesPerMinute: number;
}

/**
 * Charges uploads against their lock's budget. The count lives in the database (the lock's telemetry row, migration 022),
 * not in an instance's memory, so two instances behind one load balancer share it, and it is charged in the upload's
 * transaction: a refused upload keeps nothing (its transaction rolls back), a stored one is always counted.
 */
export function createAccessLogBudget({ entriesPerMinute }: AccessLogBudgetOptions) {
  return {
    /**
     * Holds the lock's budget row for the upload's transaction (holdAccessLogBudget). Call it after the lock's row is
     * held, before the entries are inserted; then `charge` with what the inserts stored.
     */
    hold(tx: Queryable, tenantId: string, securedObjectId: string, now: number): Promise<HeldBudget> {
      return holdAccessLogBudget(tx, tenantId, securedObjectId, now);
    },

    /**
     * Counts the `fresh` entries the upload stored (those not stored before: re-sending what was stored is free and never
     * refused) against the lock's minute, or throws 429 with `Retry-After` (RFC 9110 10.2.3), the seconds until the
     * minute ends, when they do not fit: the transaction then rolls back, and nothing of the upload is kept. The whole
     * upload is refused, not cut: it is the lock's unacknowledged entries in order, and the lock sends all of them again
     * (docs/lock-integration.md 9). The lock's word and each phone's reports are counted in their own numbering
     * (docs/api-reference.md 8.5), against the one budget of the lock.
     */
    async charge(tx: Queryable, held: HeldBudget, fresh: number, now: number): Promise<void> {
      const charge = await chargeAccessLogBudget(tx, held, fresh, now, ACCESS_LOG_BUDGET_WINDOW_MS, entriesPerMinute);
      if (charge.charged) return;
      // A window started by an instance whose clock is ahead ends at most one window from now on this one's.
      const untilFree = charge.windowStartedAt === null ? ACCESS_LOG_BUDGET_WINDOW_MS : charge.windowStartedAt + ACCESS_LOG_BUDGET_WINDOW_MS - now;
      const seconds = Math.max(1, Math.ceil(Math.min(untilFree, ACCESS_LOG_BUDGET_WINDOW_MS) / 1000));
      throw new TooManyRequestsError(
        `The access log of secured object ${held.securedObjectId} took ${charge.used} of its ${entriesPerMinute} new entries this minute, ` +
          `from all its uploaders together; this upload brings ${fresh} more, so nothing of it was stored. ` +
          `Send it again after ${seconds} s.`,
        seconds,
      );
    },
  };
}

export type AccessLogBudget = ReturnType<typeof createAccessLogBudget>;
