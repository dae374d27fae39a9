// Bulk jobs (docs/api-reference.md 14): a job is sent with its items, which are stored with it; a worker applies them
// later (job-worker.ts). This service sends, reads, pages the results of and cancels jobs.
import { randomUUID } from 'node:crypto';
import type { Database } from '../db/database.js';
import {
  cancelJob,
  countActiveJobs,
  findJob,
  insertJob,
  insertJobItems,
  listJobResults,
  listJobs,
  type JobItemRecord,
  type JobRecord,
} from '../db/repositories/job.repo.js';
import { BadRequestError, ConflictError, NotFoundError, ProblemError, TooManyRequestsError, type FieldError } from '../errors.js';
import { CsvError, parseCsv } from '../shared/csv.js';
import { itemKey, itemsFromCsv, type ItemOutcome, type JobKind, type JobState, type JobType } from '../shared/bulk-jobs.js';
import { isUuid } from '../shared/identifiers.js';
import { decodeCursor, numberCursor, pageOf, type Page } from '../shared/pagination.js';
import { recordChange } from './audit.service.js';
import type { ActionContext, Clock } from './context.js';

/** A job as the API shows it (docs/api-reference.md 14); times absent until they happen. */
export interface Job {
  id: string;
  type: JobKind;
  state: JobState;
  total: number;
  processed: number;
  succeeded: number;
  failed: number;
  createdTime: number;
  startedTime?: number;
  finishedTime?: number;
}

/** The RFC 9457 body of an item's refusal, without what belongs to one request (instance, requestId). */
export interface ItemProblem {
  type: string;
  title: string;
  status: number;
  detail?: string;
  errors?: FieldError[];
  [extension: string]: unknown;
}

/** One item's outcome; `problem` is the RFC 9457 body its single-item endpoint would have answered. */
export interface JobResult {
  index: number;
  key: string;
  outcome: ItemOutcome;
  id?: string;
  problem?: ItemProblem;
}

export function toJob(record: JobRecord): Job {
  return {
    id: record.id,
    type: record.type,
    state: record.state,
    total: record.total,
    processed: record.processed,
    succeeded: record.succeeded,
    failed: record.failed,
    createdTime: record.createdAt,
    ...(record.startedAt !== null ? { startedTime: record.startedAt } : {}),
    ...(record.finishedAt !== null ? { finishedTime: record.finishedAt } : {}),
  };
}

const toResult = (record: JobItemRecord): JobResult => ({
  index: record.index,
  key: record.key,
  outcome: record.outcome!,
  ...(record.resourceId !== null ? { id: record.resourceId } : {}),
  ...(record.problem !== null ? { problem: record.problem as ItemProblem } : {}),
});

/** The RFC 9457 body of a refusal, as the endpoint renders it, without what belongs to one request (instance, requestId). */
export function problemOf(error: ProblemError): ItemProblem {
  return {
    ...error.extensions,
    type: error.type,
    title: error.title,
    status: error.status,
    ...(error.detail !== undefined ? { detail: error.detail } : {}),
    ...(error.errors !== undefined ? { errors: error.errors } : {}),
  };
}

/**
 * Checks one item against its single-item endpoint's body schema: null when it passes, else the problem body that
 * endpoint answers (400). Given by the route, which owns the request validation.
 */
export type ItemValidator = (type: JobType, item: unknown) => ItemProblem | null;

/** A job as sent: JSON items, or a CSV text (decoded as UTF-8 by the route) of the type's columns. */
export type JobInput = { type: JobType; items: unknown[] } | { type: JobType; csv: string };

export interface JobLimits {
  maxItems: number;
  /** JOB_MAX_BYTES: the largest body the route takes. */
  maxBytes: number;
  maxActivePerTenant: number;
}

export interface JobServiceOptions {
  db: Database;
  clock: Clock;
  limits: JobLimits;
  /** The worker's poll interval: how soon a client may look again (Retry-After). */
  retryAfterSeconds: number;
  /** Told after a job is stored: this instance's worker starts on it without waiting for its next look. */
  onSubmitted?: () => void;
}

/** Items per statement when a job is stored: bounds one statement's size (a few MB of JSON). */
const STORE_CHUNK = 2000;

const resultCursor = numberCursor('r1:');

export function createJobService(options: JobServiceOptions) {
  const { db, clock, limits } = options;
  const notFound = (id: string) => new NotFoundError(`No job ${id}.`);

  function itemsOf(input: JobInput): unknown[] {
    if ('items' in input) return input.items;
    try {
      return itemsFromCsv(input.type, parseCsv(input.csv, limits.maxItems));
    } catch (error) {
      if (error instanceof CsvError) throw new BadRequestError(`Line ${error.line} of the CSV body: ${error.message}`, [{ field: 'body', message: error.message }]);
      throw error;
    }
  }

  return {
    retryAfterSeconds: options.retryAfterSeconds,
    maxBytes: limits.maxBytes,

    /**
     * Stores the job and its items in one transaction; items that fail their endpoint's body schema are stored as
     * failed already, with that endpoint's 400. Nothing is applied here: the worker does it.
     */
    async submit(context: ActionContext, input: JobInput, validate: ItemValidator): Promise<Job> {
      const items = itemsOf(input);
      if (items.length === 0) throw new BadRequestError('The job has no items.', [{ field: 'items', message: 'is empty' }]);
      if (items.length > limits.maxItems) {
        throw new BadRequestError(`The job has ${items.length} items; at most ${limits.maxItems} (JOB_MAX_ITEMS).`, [
          { field: 'items', message: `more than ${limits.maxItems}` },
        ]);
      }
      const records: JobItemRecord[] = items.map((item, index) => {
        const problem = validate(input.type, item);
        const object = typeof item === 'object' && item !== null && !Array.isArray(item) ? (item as Record<string, unknown>) : {};
        return {
          index,
          key: itemKey(input.type, object),
          item: object,
          outcome: problem ? 'failed' : null,
          resourceId: null,
          problem,
        };
      });
      const invalid = records.filter((record) => record.problem !== null).length;
      const job: JobRecord = {
        tenantId: context.tenantId,
        id: randomUUID(),
        type: input.type,
        state: 'queued',
        total: records.length,
        processed: invalid,
        succeeded: 0,
        failed: invalid,
        actor: context.actor,
        requestId: context.requestId,
        createdAt: clock(),
        startedAt: null,
        finishedAt: null,
        claim: 0,
      };
      await db.transaction(async (tx) => {
        // JOB_MAX_ACTIVE_PER_TENANT: counted in the transaction that adds the job (docs/operations.md); two jobs sent at
        // the very same moment may both pass the last free place.
        const active = await countActiveJobs(tx, context.tenantId);
        if (active >= limits.maxActivePerTenant) {
          throw new TooManyRequestsError(
            `The tenant has ${active} jobs queued or running; at most ${limits.maxActivePerTenant} (JOB_MAX_ACTIVE_PER_TENANT). Retry when one has finished.`,
            options.retryAfterSeconds * 10,
          );
        }
        await insertJob(tx, job);
        for (let start = 0; start < records.length; start += STORE_CHUNK) {
          await insertJobItems(tx, context.tenantId, job.id, records.slice(start, start + STORE_CHUNK));
        }
      });
      options.onSubmitted?.();
      return toJob(job);
    },

    async get(tenantId: string, id: string): Promise<Job> {
      const record = isUuid(id) ? await findJob(db, tenantId, id) : null;
      if (!record) throw notFound(id);
      return toJob(record);
    },

    async list(tenantId: string, limit: number, cursor?: string): Promise<Page<Job>> {
      const rows = await listJobs(db, tenantId, decodeCursor(cursor, isUuid), limit + 1);
      return pageOf(rows, limit, (row) => ({ createdAt: row.createdAt, id: row.id }), toJob);
    },

    /** The outcomes so far, in item order; `outcome` keeps only those. */
    async results(tenantId: string, id: string, outcome: ItemOutcome | undefined, limit: number, cursor?: string): Promise<Page<JobResult>> {
      await this.get(tenantId, id);
      const after = resultCursor.decode(cursor) ?? -1;
      const rows = await listJobResults(db, tenantId, id, outcome ?? null, after, limit + 1);
      const more = rows.length > limit;
      const page = more ? rows.slice(0, limit) : rows;
      return { items: page.map(toResult), nextCursor: more ? resultCursor.encode(page[page.length - 1]!.index) : null };
    },

    /**
     * Cancels what has not run (docs/api-reference.md 14): the items applied stay applied. A finished job answers as
     * it is. The cancellation is `job.finished` with state `cancelled`.
     */
    async cancel(context: ActionContext, id: string): Promise<Job> {
      if (!isUuid(id)) throw notFound(id);
      const now = clock();
      const cancelled = await db.transaction(async (tx) => {
        // The job's row first, the event counter last: the worker's item transactions take them in this order too.
        const record = await cancelJob(tx, context.tenantId, id, now);
        if (!record) return null;
        await recordChange(tx, context, now, 'job.finished', `job:${id}`, finishedData(record));
        return record;
      });
      if (cancelled) return toJob(cancelled);
      const job = await this.get(context.tenantId, id);
      // docs/api-reference.md 16.2: an erasure runs to its end; half an erasure would leave the person half erased.
      if (job.type === 'erasure' && (job.state === 'queued' || job.state === 'running')) {
        throw new ConflictError(`Job ${id} is an erasure, which runs to its end and cannot be cancelled.`);
      }
      return job;
    },
  };
}

/** The data of `job.finished` (docs/api-reference.md 10, 14). */
export function finishedData(record: JobRecord): Record<string, unknown> {
  return {
    jobId: record.id,
    type: record.type,
    state: record.state,
    total: record.total,
    processed: record.processed,
    succeeded: record.succeeded,
    failed: record.failed,
  };
}

export type JobService = ReturnType<typeof createJobService>;
