// Access-log retention (docs/api-reference.md 8.5, 16.1): entries the server received longer ago than the tenant's
// `accessLogDays` go, a tenant at a time in bounded batches, on a timer in every instance (as the event log's, services/retention.ts).
import type { Logger } from 'pino';
import type { Database } from '../db/database.js';
import { pruneAccessLogEntries } from '../db/repositories/access-log-bounds.repo.js';
import { DAY_MS, type RetentionPeriods } from '../shared/retention-periods.js';
import type { Clock } from './context.js';
import { pruneEachTenantByPeriods, sweepPeriodically } from './retention.js';

export interface AccessLogRetentionOptions {
  db: Database;
  clock: Clock;
  log: Logger;
  /** The instance's periods, for tenants that chose none. */
  retentionDefaults: RetentionPeriods;
}

export function createAccessLogRetention({ db, clock, log, retentionDefaults }: AccessLogRetentionOptions) {
  let stopSweeping: (() => void) | null = null;
  return {
    /**
     * Deletes every tenant's entries received before its retention period, oldest first; answers how many went. Each statement
     * names its tenant (docs/house-style.md convention 6), so on a cluster each is one shard group's, and each tenant's
     * sweep is bounded (pruneInBatches): a tenant with a huge backlog is carried on at the next sweep.
     */
    async prune(): Promise<number> {
      const now = clock();
      return pruneEachTenantByPeriods(db, retentionDefaults, (tenantId, periods, limit) =>
        pruneAccessLogEntries(db, tenantId, now - periods.accessLogDays * DAY_MS, limit),
      );
    },

    start(): void {
      stopSweeping = sweepPeriodically(() => this.prune(), log, 'access log');
    },

    stop(): void {
      stopSweeping?.();
      stopSweeping = null;
    },
  };
}

export type AccessLogRetention = ReturnType<typeof createAccessLogRetention>;
