// The bulk-job worker (docs/api-reference.md 14, docs/operations.md "Bulk jobs"): every instance runs one; it claims a
// job under a lease and applies its items one by one, each in a transaction that also records its outcome.
//
// At most once per item: items run in batches, each batch one transaction that first fences the job (its claim must
// still be this worker's and the job still running, which locks the job's row), then applies each item through its
// single-item service (in a savepoint: a refused item rolls back alone and is recorded failed), then records the
// outcomes of items not yet recorded, and counts them. If any of that fails, nothing of it commits, and the items are
// still to run. A worker that dies leaves its lease to run out; another instance claims the job (a new claim) and goes
// on with the items not recorded.
//
// Lock order: the job's row, the tenant's change counter, then what the items' services lock, the event counter last
// (audit.repo.ts). Every single write that takes the change counter takes it first, so none holds a row a batch
// waits for while it waits for the batch. A cancellation takes the job's row, then the event counter.
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Database } from '../db/database.js';
import { withinTransaction } from '../db/nested-transaction.js';
import {
  advanceJob,
  claimJob,
  findRunnableJobs,
  finishJob,
  holdChangeCounter,
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
import { applyGroups, applyItem, applyMobileDevices, type Applied, type BatchOutcome, type WritersOn } from './job-items.js';
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

/**
 * A batch: at most this many items, and no more than BATCH_MS of them, in one transaction. The batch holds the
 * tenant's change and event counters to its end, so the tenant's other writes wait at most about that long.
 */
const ITEMS_PER_BATCH = 200;
const BATCH_MS = 100;
/** Items per set-based batch (devices, residents, lock groups): a few statements whatever their number. */
const SET_BASED_BATCH = 1000;
const SET_BASED_TYPES: ReadonlySet<string> = new Set(['mobile-devices', 'residents', 'lock-groups']);

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

  const outcome = (index: number, applied: Applied): ItemResult => ({ index, outcome: applied.outcome, resourceId: applied.resourceId, problem: null });
  const refusal = (index: number, error: ProblemError): ItemResult => ({ index, outcome: 'failed', resourceId: null, problem: problemOf(error) });
  /** A refusal the endpoint would answer with a 4xx is the item's outcome; anything else (the database gone, a bug) is not. */
  const isRefusal = (error: unknown): error is ProblemError => error instanceof ProblemError && error.status < 500;

  /** The items one by one, each in a savepoint, as many as fit in BATCH_MS (at least one). */
  async function oneByOne(job: JobRecord, context: ActionContext, nested: Database, items: JobItemRecord[], timed: boolean): Promise<ItemResult[]> {
    const type = job.type;
    // Never claimed (job.repo.ts claimJob): an erasure runs in the erasure service's own transactions.
    if (type === 'erasure') throw new Error(`job ${job.id} is an erasure, which this worker does not run`);
    const writers = writersOn(nested);
    const results: ItemResult[] = [];
    const until = performance.now() + BATCH_MS;
    for (const item of timed ? items.slice(0, ITEMS_PER_BATCH) : items) {
      if (timed && results.length > 0 && (performance.now() > until || stopping)) break;
      try {
        // A savepoint: a refused item rolls back alone.
        results.push(outcome(item.index, await nested.transaction(() => applyItem({ db: nested, writers, context }, type, item.item))));
      } catch (error) {
        // Anything but a refusal rolls the batch back, and its items run again.
        if (!isRefusal(error)) throw error;
        results.push(refusal(item.index, error));
      }
    }
    return results;
  }

  /**
   * The set-based path where a type has one (devices): the whole batch in a few statements, in a savepoint. Null when
   * the type has none, or the database refused a statement (a row no check foresaw): the items then run one by one,
   * so only the one at fault fails.
   */
  async function setBased(job: JobRecord, context: ActionContext, nested: Database, items: JobItemRecord[]): Promise<ItemResult[] | null> {
    const type = job.type;
    if (type !== 'mobile-devices' && type !== 'residents' && type !== 'lock-groups') return null;
    const toResult = (entry: BatchOutcome) => ('applied' in entry ? outcome(entry.index, entry.applied) : refusal(entry.index, entry.refused));
    try {
      if (type === 'mobile-devices') return (await nested.transaction(() => applyMobileDevices(nested, context, clock, items))).map(toResult);
      // One savepoint for the groups made set-based and the deferred items (names already there, or again) one by one
      // after them: if the database refuses anything of it, none of it stays, and the whole batch runs one by one.
      return await nested.transaction(async () => {
        const { outcomes, deferred } = await applyGroups(nested, context, clock, type, items);
        const later = new Set(deferred);
        return [...outcomes.map(toResult), ...(await oneByOne(job, context, nested, items.filter((item) => later.has(item.index)), false))];
      });
    } catch (error) {
      if (isRefusal(error)) throw error;
      log.warn({ err: error, jobId: job.id }, 'bulk job batch refused by the database; its items run one by one');
      return null;
    }
  }

  /**
   * Applies the next items, as many as fit in BATCH_MS, in one transaction, and records their outcomes in it; answers
   * how many ran, or null when the lease is lost (the job is cancelled or another worker's).
   */
  async function runBatch(job: JobRecord, context: ActionContext, items: JobItemRecord[]): Promise<number | null> {
    try {
      return await db.transaction(async (tx) => {
        if (!(await advanceJob(tx, job.tenantId, job.id, job.claim, { succeeded: 0, failed: 0 }, clock() + leaseMs))) throw new LeaseLost();
        await holdChangeCounter(tx, job.tenantId);
        const nested = withinTransaction(db, tx);
        const results = (await setBased(job, context, nested, items)) ?? (await oneByOne(job, context, nested, items, true));
        if ((await recordItemResults(tx, job.tenantId, job.id, results)) !== results.length) throw new LeaseLost();
        const failed = results.filter((result) => result.outcome === 'failed').length;
        const counts = { succeeded: results.length - failed, failed };
        if (!(await advanceJob(tx, job.tenantId, job.id, job.claim, counts, clock() + leaseMs))) throw new LeaseLost();
        return results.length;
      });
    } catch (error) {
      if (error instanceof LeaseLost) return null;
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
      const items = await nextJobItems(db, job.tenantId, job.id, SET_BASED_TYPES.has(job.type) ? SET_BASED_BATCH : ITEMS_PER_BATCH);
      if (items.length === 0) {
        await finish(job, context);
        return;
      }
      if ((await runBatch(job, context, items)) === null) return;
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
    /** A job was just sent to this instance: look now rather than at the end of the idle wait. */
    wake(): void {
      wake?.();
    },
    /** One round now (tests): claims and runs one job to its end or its lease's loss. */
    runOnce: tick,
  };
}

export type JobWorker = ReturnType<typeof createJobWorker>;
