// Access-log retention (ACCESS_LOG_RETENTION_DAYS, docs/api-reference.md 8.5): entries the server received longer ago
// go, a tenant at a time in bounded batches, on a timer in every instance (as the event log's, services/retention.ts).
import type { Logger } from 'pino';
import type { Database } from '../db/database.js';
import { pruneAccessLogEntries } from '../db/repositories/access-log-bounds.repo.js';
import type { Clock } from './context.js';
import { pruneEachTenant, sweepPeriodically } from './retention.js';

export interface AccessLogRetentionOptions {
  db: Database;
  clock: Clock;
  log: Logger;
  /** ACCESS_LOG_RETENTION_DAYS in ms. */
  retentionMs: number;
}

export function createAccessLogRetention({ db, clock, log, retentionMs }: AccessLogRetentionOptions) {
  let stopSweeping: (() => void) | null = null;
  return {
    /**
     * Deletes every tenant's entries received before the retention, oldest first; answers how many went. Each statement
     * names its tenant (docs/house-style.md convention 6), so on a cluster each is one shard group's, and each tenant's
     * sweep is bounded (pruneInBatches): a tenant with a huge backlog is carried on at the next sweep.
     */
    async prune(): Promise<number> {
      const before = clock() - retentionMs;
      return pruneEachTenant(db, (tenantId, limit) => pruneAccessLogEntries(db, tenantId, before, limit));
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
