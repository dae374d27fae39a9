// The bulk-job worker (docs/api-reference.md 14, docs/operations.md "Bulk jobs"): every instance runs one; it claims a
// job under a lease and applies its items one by one, each in a transaction that also records its outcome.
//
// At most once per item: an item's transaction first fences the job (its claim must still be this worker's and the job
// still running, which locks the job's row), then applies the item through its single-item service (a savepoint: a
// refusal rolls back only the item), then records the outcome of an item not yet recorded, and counts it. If any of
// that fails, nothing of it commits, and the item is still to run. A worker that dies leaves its lease to run out;
// another instance claims the job (a new claim) and goes on with the items not recorded.
//
// Lock order: the job's row, then what the item's service locks, its event counter last (audit.repo.ts). A
// cancellation takes the job's row, then the event counter: the same order.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Database } from '../db/database.js';
import { withinTransaction } from '../db/nested-transaction.js';
import {
  advanceJob,
  claimJob,
  findRunnableJobs,
  finishJob,
  nextJobItems,
  recordItemResults,
  releaseJob,
  type ItemResult,
  type JobItemRecord,
  type JobRecord,
} from '../db/repositories/job.repo.js';
import { ProblemError } from '../errors.js';
import { recordChange } from './audit.service.js';
import type { ActionContext, Clock } from './context.js';
import { applyItem, type WritersOn } from './job-items.js';
import { finishedData, problemOf } from './job.service.js';

export interface JobWorkerOptions {
  db: Database;
  clock: Clock;
  log: Logger;
  writersOn: WritersOn;
  /** JOB_WORKER_INTERVAL_MS: how often an idle worker looks for a job. */
  intervalMs: number;
  /** JOB_LEASE_SECONDS in ms: how long a claim holds without progress before another instance may take the job. */
  leaseMs: number;
}

/** Items read per query; each is still applied in a transaction of its own. */
const ITEMS_PER_READ = 200;

/** The job's claim is no longer this worker's (cancelled, or claimed by another instance): stop, commit nothing. */
class LeaseLost extends Error {
  constructor() {
    super('The job is no longer this worker\'s to run.');
    this.name = 'LeaseLost';
  }
}

export function createJobWorker(options: JobWorkerOptions) {
  const { db, clock, log, writersOn, leaseMs } = options;
  let timer: NodeJS.Timeout | null = null;
  /** Ends the idle wait at once (stop). */
  let wake: (() => void) | null = null;
  let running: Promise<void> | null = null;
  let stopping = false;

  /** Applies one item and records it; false when the lease is lost (the job is cancelled or another worker's). */
  async function runItem(job: JobRecord, context: ActionContext, item: JobItemRecord): Promise<boolean> {
    try {
      await db.transaction(async (tx) => {
        if (!(await advanceJob(tx, job.tenantId, job.id, job.claim, { succeeded: 0, failed: 0 }, clock() + leaseMs))) throw new LeaseLost();
        const nested = withinTransaction(db, tx);
        let result: ItemResult;
        try {
          const applied = await nested.transaction(() => applyItem({ db: nested, writers: writersOn(nested), context }, job.type, item.item));
          result = { index: item.index, outcome: applied.outcome, resourceId: applied.resourceId, problem: null };
        } catch (error) {
          // A refusal the endpoint would answer with a 4xx is the item's outcome; anything else (the database gone, a
          // bug) leaves the item to run again.
          if (!(error instanceof ProblemError) || error.status >= 500) throw error;
          result = { index: item.index, outcome: 'failed', resourceId: null, problem: problemOf(error) };
        }
        if ((await recordItemResults(tx, job.tenantId, job.id, [result])) !== 1) throw new LeaseLost();
        const counts = result.outcome === 'failed' ? { succeeded: 0, failed: 1 } : { succeeded: 1, failed: 0 };
        if (!(await advanceJob(tx, job.tenantId, job.id, job.claim, counts, clock() + leaseMs))) throw new LeaseLost();
      });
      return true;
    } catch (error) {
      if (error instanceof LeaseLost) return false;
      throw error;
    }
  }

  /** Ends the job with `job.finished` once every item ran (finishJob). */
  async function finish(job: JobRecord, context: ActionContext): Promise<void> {
    await db.transaction(async (tx) => {
      const now = clock();
      const finished = await finishJob(tx, job.tenantId, job.id, job.claim, now);
      if (!finished) return;
      await recordChange(tx, context, now, 'job.finished', `job:${job.id}`, finishedData(finished));
    });
  }

  /** Runs a claimed job until its items are done, the lease is lost, or the worker stops. */
  async function run(job: JobRecord): Promise<void> {
    const context: ActionContext = { tenantId: job.tenantId, actor: job.actor, requestId: job.requestId };
    while (!stopping) {
      const items = await nextJobItems(db, job.tenantId, job.id, ITEMS_PER_READ);
      if (items.length === 0) {
        await finish(job, context);
        return;
      }
      for (const item of items) {
        if (stopping) break;
        if (!(await runItem(job, context, item))) return;
      }
    }
    // Stopping with items left: another instance (or this one, restarted) takes the job at once.
    await releaseJob(db, job.tenantId, job.id, job.claim);
  }

  /** One round: claim the oldest runnable job any tenant has and run it. */
  async function tick(): Promise<boolean> {
    const now = clock();
    for (const candidate of await findRunnableJobs(db, now, 5)) {
      const job = await claimJob(db, candidate.tenantId, candidate.id, now, now + leaseMs);
      if (!job) continue;
      log.info({ jobId: job.id, tenantId: job.tenantId, type: job.type }, 'bulk job claimed');
      await run(job);
      return true;
    }
    return false;
  }

  async function loop(): Promise<void> {
    while (!stopping) {
      let worked = false;
      try {
        worked = await tick();
      } catch (error) {
        log.warn({ err: error }, 'bulk job worker round failed; the job is retried when its lease runs out');
      }
      if (!worked && !stopping) {
        await new Promise<void>((resolve) => {
          wake = resolve;
          timer = setTimeout(resolve, options.intervalMs);
          timer.unref();
        });
        timer = null;
        wake = null;
      } else if (!stopping) {
        // Yield between jobs, so a round of claims never starves the event loop.
        await sleep(0);
      }
    }
  }

  return {
    start(): void {
      if (running) return;
      stopping = false;
      running = loop();
    },
    /** Stops after the item under way; a job left unfinished gives its lease back. */
    async stop(): Promise<void> {
      stopping = true;
      if (timer) clearTimeout(timer);
      wake?.();
      await running;
      running = null;
      // Stopped: a round asked for later (runOnce) runs to its end again.
      stopping = false;
    },
    /** One round now (tests): claims and runs one job to its end or its lease's loss. */
    runOnce: tick,
  };
}

export type JobWorker = ReturnType<typeof createJobWorker>;
