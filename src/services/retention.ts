// Retention (docs/api-reference.md 16.1): what is past a tenant's period goes in bounded batches, tenant by tenant, on a
// timer in every instance, so no sweep holds many row locks or writes much WAL at once.
import type { Logger } from 'pino';
import type { Queryable } from '../db/database.js';
import { listTenantRetentionChoices } from '../db/repositories/settings.repo.js';
import { listTenantIds } from '../db/repositories/tenant.repo.js';
import { effectiveRetention, type RetentionPeriods } from '../shared/retention-periods.js';

/** How often an instance sweeps. */
const SWEEP_INTERVAL_MS = 10 * 60_000;
/** Rows per statement. */
export const PRUNE_BATCH = 5_000;
/** At most this many batches per sweep, so one sweep never runs for long; the next one carries on. */
const PRUNE_MAX_BATCHES = 100;

/** Runs `deleteBatch(PRUNE_BATCH)` until it deletes less than a full batch (or the sweep's bound); answers the total. */
export async function pruneInBatches(deleteBatch: (limit: number) => Promise<number>): Promise<number> {
  let total = 0;
  for (let batch = 0; batch < PRUNE_MAX_BATCHES; batch++) {
    const deleted = await deleteBatch(PRUNE_BATCH);
    total += deleted;
    if (deleted < PRUNE_BATCH) break;
  }
  return total;
}

/**
 * Runs pruneInBatches for every tenant in turn, `deleteBatch` naming the tenant in each statement (docs/house-style.md
 * convention 6: on a cluster each is one shard group's); answers the total. Each tenant's share is bounded, so one
 * with a huge backlog is carried on at the next sweep and never holds up the others for long.
 */
export async function pruneEachTenant(db: Queryable, deleteBatch: (tenantId: string, limit: number) => Promise<number>): Promise<number> {
  let total = 0;
  for (const tenantId of await listTenantIds(db)) total += await pruneInBatches((limit) => deleteBatch(tenantId, limit));
  return total;
}

/**
 * pruneEachTenant with each tenant's retention periods in force (its own where it chose, else `defaults`), for the
 * prunes whose cut-off the tenant's settings decide.
 */
export async function pruneEachTenantByPeriods(
  db: Queryable,
  defaults: RetentionPeriods,
  deleteBatch: (tenantId: string, periods: RetentionPeriods, limit: number) => Promise<number>,
): Promise<number> {
  let total = 0;
  for (const { tenantId, retention } of await listTenantRetentionChoices(db)) {
    const periods = effectiveRetention(retention, defaults);
    total += await pruneInBatches((limit) => deleteBatch(tenantId, periods, limit));
  }
  return total;
}

/** Runs `prune` every sweep interval until the returned stop is called; a failed sweep is logged and retried next time. */
export function sweepPeriodically(prune: () => Promise<number>, log: Logger, what: string): () => void {
  const timer = setInterval(() => {
    prune().catch((error: unknown) => log.warn({ err: error }, `${what} prune failed`));
  }, SWEEP_INTERVAL_MS);
  timer.unref();
  return () => clearInterval(timer);
}
