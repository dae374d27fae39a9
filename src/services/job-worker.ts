// The bulk-job worker (docs/api-reference.md 14, docs/operations.md "Bulk jobs"): every instance runs one; it claims
// jobs under leases and applies their items in batches, each in a transaction that also records their outcomes.
//
// At most once per item: each batch is one transaction that first fences the job (its claim must still be this
// worker's and the job still running, which locks the job's row), then applies the items (set-based where the type
// allows it, else each through its single-item service in a savepoint: a refused item rolls back alone and is recorded
// failed), then records the outcomes of items not yet recorded, and counts them. If any of that fails, nothing of it
// commits, and the items are still to run. A worker that dies leaves its leases to run out; another instance claims
// the job (a new claim) and goes on with the items not recorded.
//
// Bounded retries: a batch that fails for a reason of the service's own (the database unavailable, a deadlock or
// serialization failure, a bug: what an endpoint answers 5xx) is tried once more after a pause, then its items one at
// a time, each up to RETRY.attempts times with growing pauses; an item that fails every time is recorded failed with
// the 5xx problem its endpoint would answer. A refusal (4xx) is recorded at once.
//
// Fairness: the worker holds at most one job per tenant (MAX_HELD_JOBS in all) and goes round them, one batch of each
// job per round, taking on new jobs (the oldest runnable job of each tenant it holds none of) at the start of each
// round: a tenant's 100,000-item job and another tenant's 10-item job progress side by side.
//
// Lock order: the job's row, the tenant's change counter, then what the items' services lock, the event counter last
// (audit.repo.ts). Every single write that takes the change counter takes it first, so none holds a row a batch
// waits for while it waits for the batch. A cancellation takes the job's row, then the event counter.
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Database, TransactionScope } from '../db/database.js';
import { meaningOfDatabaseError } from '../db/errors.js';
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
import { BadRequestError, ProblemError, ServiceUnavailableError } from '../errors.js';
import type { JobType } from '../shared/bulk-jobs.js';
import { recordChange } from './audit.service.js';
import type { ActionContext, Clock } from './context.js';
import {
  applyAccessPermissions,
  applyGroups,
  applyItem,
  applyMobileDevices,
  type Applied,
  type BatchOutcome,
  type ItemScope,
  type WritersOn,
} from './job-items.js';
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
  /** How often an item failing with a 5xx is tried, and the first pause between tries (RETRY). */
  retry?: { attempts: number; pauseMs: number };
  /** Items per batch of every type, instead of BATCH_ITEMS (tests). */
  batchItems?: number;
}

/**
 * Items per batch, by type: the set-based types a few statements whatever their number (access permissions fewer, each
 * making a ticket per device and lock); the others one by one, and then no more than BATCH_MS of them. A batch holds the
 * tenant's change and event counters to its end, so the tenant's other writes wait at most about that long.
 */
const BATCH_ITEMS: Record<JobType, number> = {
  'mobile-devices': 1000,
  residents: 1000,
  'lock-groups': 1000,
  'access-permissions': 500,
  'secured-objects': 200,
  tickets: 200,
};
const BATCH_MS = 100;
/** A 5xx item is tried this often in all; the pause before the n-th retry is pauseMs · 4^(n-1), with jitter. */
const RETRY = { attempts: 4, pauseMs: 100 };
/** Jobs one worker runs side by side (one per tenant). */
const MAX_HELD_JOBS = 8;

/** The job's claim is no longer this worker's (cancelled, or claimed by another instance): stop, commit nothing. */
class LeaseLost extends Error {
  constructor() {
    super('The job is no longer this worker\'s to run.');
    this.name = 'LeaseLost';
  }
}

/**
 * What an endpoint answers for `error` (plugins/problem-details.ts renders the same): a refusal of the request (4xx,
 * the database's refusal of text it cannot store included), a 503 when the database is unavailable or a concurrent
 * change rolled the item back, else a 500 that reveals nothing.
 */
export function problemOfFailure(error: unknown): ProblemError {
  if (error instanceof ProblemError) return error;
  const database = meaningOfDatabaseError(error);
  if (database) return database.status === 503 ? new ServiceUnavailableError(database.detail) : new BadRequestError(database.detail);
  return new ProblemError(500, 'internal', 'Internal Server Error', { detail: 'An unexpected error occurred while the item was applied.' });
}

/** The item's refusal when `error` is one its endpoint answers with a 4xx (recorded at once), else null (retried). */
function refusalOf(error: unknown): ProblemError | null {
  if (error instanceof LeaseLost) return null;
  const problem = problemOfFailure(error);
  return problem.status < 500 ? problem : null;
}

export function createJobWorker(options: JobWorkerOptions) {
  const { db, clock, log, writersOn, leaseMs } = options;
  const retry = options.retry ?? RETRY;
  const batchItems = (type: JobType) => options.batchItems ?? BATCH_ITEMS[type];
  let timer: NodeJS.Timeout | null = null;
  /** Ends the idle wait at once (stop). */
  let wake: (() => void) | null = null;
  let running: Promise<void> | null = null;
  let stopping = false;
  /** The jobs this worker runs, one per tenant, by tenant id. */
  const held = new Map<string, JobRecord>();
  /** A round is under way (rounds never overlap: the loop and runOnce share them). */
  let inRound: Promise<boolean> | null = null;

  const outcome = (index: number, applied: Applied): ItemResult => ({ index, outcome: applied.outcome, resourceId: applied.resourceId, problem: null });
  const refusal = (index: number, error: ProblemError): ItemResult => ({ index, outcome: 'failed', resourceId: null, problem: problemOf(error) });
  const contextOf = (job: JobRecord): ActionContext => ({ tenantId: job.tenantId, actor: job.actor, requestId: job.requestId });

  /** The items one by one, each in a savepoint, as many as fit in BATCH_MS (at least one) when `timed`. */
  async function oneByOne(job: JobRecord, scope: ItemScope, items: readonly JobItemRecord[], timed: boolean): Promise<ItemResult[]> {
    const type = job.type;
    // Never claimed (job.repo.ts claimJob): an erasure runs in the erasure service's own transactions.
    if (type === 'erasure') throw new Error(`job ${job.id} is an erasure, which this worker does not run`);
    const results: ItemResult[] = [];
    const until = performance.now() + BATCH_MS;
    for (const item of items) {
      if (timed && results.length > 0 && (performance.now() > until || stopping)) break;
      try {
        // A savepoint: a refused item rolls back alone.
        results.push(outcome(item.index, await scope.db.transaction(() => applyItem(scope, type, item.item))));
      } catch (error) {
        // Anything but a refusal fails the batch (retried, then item by item).
        const refused = refusalOf(error);
        if (!refused) throw error;
        results.push(refusal(item.index, refused));
      }
    }
    return results;
  }

  /**
   * The set-based path where a type has one: the whole batch in a few statements, in a savepoint, and the items it
   * defers (a name or a resident and lock group again) one by one after it. Null when the type has none, or the
   * database refused a statement (a row no check foresaw): the items then run one by one, so only the one at fault fails.
   */
  async function setBased(job: JobRecord, scope: ItemScope, items: readonly JobItemRecord[]): Promise<ItemResult[] | null> {
    const type = job.type;
    if (type !== 'mobile-devices' && type !== 'residents' && type !== 'lock-groups' && type !== 'access-permissions') return null;
    if (items.length < 2) return null;
    const toResult = (entry: BatchOutcome) => ('applied' in entry ? outcome(entry.index, entry.applied) : refusal(entry.index, entry.refused));
    const { db: nested, context } = scope;
    try {
      if (type === 'mobile-devices') return (await nested.transaction(() => applyMobileDevices(nested, context, clock, items))).map(toResult);
      // One savepoint for the set-based items and the deferred ones after them: if the database refuses anything of
      // it, none of it stays, and the whole batch runs one by one.
      return await nested.transaction(async () => {
        const { outcomes, deferred } =
          type === 'access-permissions' ? await applyAccessPermissions(scope, items) : await applyGroups(nested, context, clock, type, items);
        const later = new Set(deferred);
        return [...outcomes.map(toResult), ...(await oneByOne(job, scope, items.filter((item) => later.has(item.index)), false))];
      });
    } catch (error) {
      log.warn({ err: error, jobId: job.id }, 'bulk job batch refused by the database; its items run one by one');
      return null;
    }
  }

  /**
   * One transaction of the job: fences it, runs `work` (the outcomes of some items), records them and counts them;
   * answers how many, or null when the lease is lost (the job is cancelled or another worker's).
   */
  async function commit(job: JobRecord, work: (tx: TransactionScope) => Promise<ItemResult[]>): Promise<number | null> {
    try {
      return await db.transaction(async (tx) => {
        if (!(await advanceJob(tx, job.tenantId, job.id, job.claim, { succeeded: 0, failed: 0 }, clock() + leaseMs))) throw new LeaseLost();
        const results = await work(tx);
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

  /** Applies the items (or the first of them that fit in BATCH_MS) in one transaction with their outcomes. */
  function runBatch(job: JobRecord, items: readonly JobItemRecord[]): Promise<number | null> {
    return commit(job, async (tx) => {
      await holdChangeCounter(tx, job.tenantId);
      const nested = withinTransaction(db, tx);
      const scope: ItemScope = { db: nested, writers: writersOn(nested), context: contextOf(job) };
      return (await setBased(job, scope, items)) ?? (await oneByOne(job, scope, items, true));
    });
  }

  const pause = (attempt: number) => retry.pauseMs * 4 ** (attempt - 1) * (0.75 + Math.random() / 2);

  /**
   * runBatch with bounded retries: a failed batch is tried once more after a pause, then item by item; an item alone is
   * tried up to retry.attempts times, then recorded failed with its 5xx problem. Answers how many items ran, or null
   * when the lease is lost.
   */
  async function runWithRetries(job: JobRecord, items: readonly JobItemRecord[]): Promise<number | null> {
    const tries = items.length > 1 ? 2 : retry.attempts;
    let failure: unknown = null;
    for (let attempt = 1; attempt <= tries; attempt += 1) {
      try {
        return await runBatch(job, items);
      } catch (error) {
        if (stopping) throw error;
        failure = error;
        log.warn({ err: error, jobId: job.id, items: items.length, attempt }, 'bulk job batch failed; it is tried again');
        if (attempt < tries) await sleep(pause(attempt));
      }
    }
    if (items.length > 1) {
      let ran = 0;
      for (const item of items) {
        if (stopping) break;
        const count = await runWithRetries(job, [item]);
        if (count === null) return null;
        ran += count;
      }
      return ran;
    }
    const [item] = items;
    log.error({ err: failure, jobId: job.id, index: item!.index }, 'bulk job item failed on every try; recorded failed');
    return commit(job, async () => [refusal(item!.index, problemOfFailure(failure))]);
  }

  /** Ends the job with `job.finished` once every item ran (finishJob). */
  async function finish(job: JobRecord): Promise<void> {
    await db.transaction(async (tx) => {
      const now = clock();
      const finished = await finishJob(tx, job.tenantId, job.id, job.claim, now);
      if (!finished) return;
      await recordChange(tx, contextOf(job), now, 'job.finished', `job:${job.id}`, finishedData(finished));
    });
  }

  /** One batch of a held job; false when the job has left this worker (finished, cancelled, another instance's). */
  async function slice(job: JobRecord): Promise<boolean> {
    const limit = batchItems(job.type as JobType);
    const items = await nextJobItems(db, job.tenantId, job.id, limit);
    if (items.length > 0) {
      const ran = await runWithRetries(job, items);
      if (ran === null) return false;
      // Fewer items than asked for, and all of them ran: none is left.
      if (items.length === limit || ran < items.length) return true;
    }
    await finish(job);
    return false;
  }

  /** Takes on the oldest runnable job of each tenant this worker holds none of, as many as MAX_HELD_JOBS allows. */
  async function claimMore(): Promise<void> {
    if (held.size >= MAX_HELD_JOBS || stopping) return;
    const now = clock();
    for (const candidate of await findRunnableJobs(db, now, [...held.keys()], MAX_HELD_JOBS - held.size)) {
      const job = await claimJob(db, candidate.tenantId, candidate.id, now, now + leaseMs);
      if (!job) continue;
      held.set(job.tenantId, job);
      log.info({ jobId: job.id, tenantId: job.tenantId, type: job.type }, 'bulk job claimed');
    }
  }

  /** One round: new jobs taken on, then one batch of each held job; false when there was nothing to run. */
  async function round(): Promise<boolean> {
    await claimMore();
    if (held.size === 0) return false;
    for (const [tenantId, job] of [...held]) {
      if (stopping) break;
      try {
        if (!(await slice(job))) held.delete(tenantId);
      } catch (error) {
        // The database gone, most likely: the job is taken on again when its lease runs out.
        held.delete(tenantId);
        log.warn({ err: error, jobId: job.id }, 'bulk job batch failed; the job is retried when its lease runs out');
      }
    }
    return true;
  }

  function oneRound(): Promise<boolean> {
    if (!inRound) {
      inRound = round().finally(() => {
        inRound = null;
      });
    }
    return inRound;
  }

  async function loop(): Promise<void> {
    while (!stopping) {
      let worked = false;
      try {
        worked = await oneRound();
      } catch (error) {
        log.warn({ err: error }, 'bulk job worker round failed; its jobs are retried when their leases run out');
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
        // Yield between rounds, so a round of claims never starves the event loop.
        await sleep(0);
      }
    }
  }

  /** Gives back the leases of the jobs held: another instance (or this one, restarted) takes them at once. */
  async function releaseAll(): Promise<void> {
    for (const [tenantId, job] of [...held]) {
      held.delete(tenantId);
      await releaseJob(db, job.tenantId, job.id, job.claim).catch((error: unknown) => log.warn({ err: error, jobId: job.id }, 'bulk job lease not given back'));
    }
  }

  return {
    start(): void {
      if (running) return;
      stopping = false;
      running = loop();
    },
    /** Stops after the batch under way; the jobs left unfinished give their leases back. */
    async stop(): Promise<void> {
      stopping = true;
      if (timer) clearTimeout(timer);
      wake?.();
      await running;
      await inRound?.catch(() => undefined);
      running = null;
      await releaseAll();
      // Stopped: a round asked for later (runOnce) runs to its end again.
      stopping = false;
    },
    /** A job was just sent to this instance: look now rather than at the end of the idle wait. */
    wake(): void {
      wake?.();
    },
    /** One round now (tests): one batch of each job held or taken on. */
    runRound: oneRound,
    /** Rounds now (tests) until the jobs taken on have ended; false when there was nothing to run. */
    async runOnce(): Promise<boolean> {
      let worked = false;
      while (await oneRound()) {
        worked = true;
        if (held.size === 0) break;
      }
      return worked;
    },
  };
}

export type JobWorker = ReturnType<typeof createJobWorker>;
