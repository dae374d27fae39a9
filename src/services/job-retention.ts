// Bulk-job retention (docs/api-reference.md 14, 16.1): a finished job and its items (the rows sent, their natural keys
// and problems, which may name people) go once they are older than the tenant's `eventDays`, a tenant at a time, on a
// timer in every instance (as the event log's, services/retention.ts).
import type { Logger } from 'pino';
import type { Database } from '../db/database.js';
import { pruneFinishedJobs } from '../db/repositories/job.repo.js';
import { DAY_MS, type RetentionPeriods } from '../shared/retention-periods.js';
import type { Clock } from './context.js';
import { pruneEachTenantByPeriods, sweepPeriodically } from './retention.js';

/**
 * Jobs per statement: a job may hold 100,000 items, which its deletion takes with it, so a batch is a few jobs, not
 * the prunes' usual 5,000 rows; a tenant with more is carried on at the next sweep.
 */
export const JOBS_PER_PRUNE = 10;

export interface JobRetentionOptions {
  db: Database;
  clock: Clock;
  log: Logger;
  retentionDefaults: RetentionPeriods;
}

export function createJobRetention({ db, clock, log, retentionDefaults }: JobRetentionOptions) {
  let stopSweeping: (() => void) | null = null;
  return {
    /** Deletes the finished jobs each tenant's `eventDays` is past, with their items; answers how many jobs went. */
    async prune(): Promise<number> {
      const now = clock();
      return pruneEachTenantByPeriods(db, retentionDefaults, (tenantId, periods, limit) =>
        pruneFinishedJobs(db, tenantId, now - periods.eventDays * DAY_MS, Math.min(limit, JOBS_PER_PRUNE)),
      );
    },

    start(): void {
      stopSweeping = sweepPeriodically(() => this.prune(), log, 'bulk job');
    },

    stop(): void {
      stopSweeping?.();
      stopSweeping = null;
    },
  };
}

export type JobRetention = ReturnType<typeof createJobRetention>;
