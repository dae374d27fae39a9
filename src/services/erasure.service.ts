// Erasure of a person's data on request (docs/api-reference.md 16.2): every personal value of a resident, a device or a
// user replaced by a pseudonym wherever the service keeps it, and their access logs deleted, in bounded transactions
// that another instance resumes where one stopped; the record of the request stays.
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Database, Queryable } from '../db/database.js';
import {
  claimErasure,
  deleteAccessLogsOfDevices,
  eventBatchEnd,
  eventsMentioning,
  findErasure,
  findMobileDeviceSubject,
  findResidentSubject,
  findUserSubject,
  finishErasure,
  idempotentAnswersMentioning,
  insertErasure,
  jobItemsMentioning,
  listAbandonedErasures,
  listErasures,
  pseudonymizeAttemptErrors,
  pseudonymizeFirstHand,
  recordErasureProgress,
  renewErasureLease,
  rewriteEventData,
  rewriteIdempotentAnswers,
  rewriteJobItems,
  type ErasureRecord,
  type ErasureSubject,
  type ErasureSubjectKind,
} from '../db/repositories/erasure.repo.js';
import { finishErasureJob, insertJob, insertJobItems, markJobStarted } from '../db/repositories/job.repo.js';
import { BadRequestError, NotFoundError } from '../errors.js';
import { isUuid } from '../shared/identifiers.js';
import { decodeCursor, encodeCursor, type Page } from '../shared/pagination.js';
import { recordChange } from './audit.service.js';
import type { ActionContext, Clock } from './context.js';
import { finishedData, toJob, type Job } from './job.service.js';

/** Rows per transaction: each batch holds its locks briefly, so the API goes on while a large erasure runs. */
export const ERASURE_BATCH = 5_000;
/** How long an instance holds an erasure it works on; renewed with every batch. */
const LEASE_MS = 60_000;
/** How often an instance looks for erasures another one left unfinished. */
const RESUME_INTERVAL_MS = 30_000;

export interface ErasureRequest {
  residentId?: string | undefined;
  mobileDeviceId?: string | undefined;
  username?: string | undefined;
  /** Delete the person's access-log entries only, and keep the names. */
  accessLogsOnly?: boolean | undefined;
}

/**
 * `value` with each string that is one of `values` replaced by its pseudonym; keys stay. Whole strings only: a name is
 * stored as a value of its own, and replacing it inside other strings would change other people's text (a short name
 * inside a longer word).
 */
export function pseudonymizeJson(value: unknown, values: readonly string[], pseudonyms: readonly string[]): unknown {
  if (typeof value === 'string') {
    const index = values.indexOf(value);
    return index < 0 ? value : pseudonyms[index];
  }
  if (Array.isArray(value)) return value.map((item) => pseudonymizeJson(item, values, pseudonyms));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, pseudonymizeJson(item, values, pseudonyms)]));
  }
  return value;
}

/** `value` with every occurrence of each value replaced inside its strings: free text such as a problem's detail. */
export function pseudonymizeTextIn(value: unknown, values: readonly string[], pseudonyms: readonly string[]): unknown {
  if (typeof value === 'string') return pseudonymizeText(value, values, pseudonyms);
  if (Array.isArray(value)) return value.map((item) => pseudonymizeTextIn(item, values, pseudonyms));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, pseudonymizeTextIn(item, values, pseudonyms)]));
  }
  return value;
}

/** Free text (a receiver's error message) with every occurrence of each value replaced, longest first. */
export function pseudonymizeText(text: string, values: readonly string[], pseudonyms: readonly string[]): string {
  return values.reduce((result, value, index) => result.split(value).join(pseudonyms[index]!), text);
}

/** A value as it appears inside a JSON text: JSON's escaping, without the quotes (what the stored text holds). */
const jsonNeedle = (value: string) => JSON.stringify(value).slice(1, -1);

export interface ErasureServiceOptions {
  db: Database;
  clock: Clock;
  log: Logger;
}

export function createErasureService({ db, clock, log }: ErasureServiceOptions) {
  const running = new Set<Promise<void>>();
  let timer: NodeJS.Timeout | null = null;
  let stopped = false;

  /** The person as the tenant holds them now; null when they are gone (deleted after the request). */
  async function subjectOf(q: Queryable, record: Pick<ErasureRecord, 'tenantId' | 'subjectKind' | 'subjectId'>): Promise<ErasureSubject | null> {
    switch (record.subjectKind) {
      case 'resident':
        return findResidentSubject(q, record.tenantId, record.subjectId);
      case 'mobile-device':
        return findMobileDeviceSubject(q, record.tenantId, record.subjectId);
      case 'user':
        return findUserSubject(q, record.tenantId, { userId: record.subjectId });
    }
  }

  /**
   * The pseudonym of each value: the erasure's own prefix and the value's place in the subject's list. The list is read
   * again from the first-hand rows on a resume, which change only in the last transaction, so it names the same.
   */
  const pseudonymsOf = (erasureId: string, values: readonly string[]) => values.map((_, index) => `erased-${erasureId.slice(0, 8)}-${index + 1}`);


  /** Rewrites the events in (after, through] that mention the values; answers how many changed. */
  async function rewriteEvents(tx: Queryable, record: ErasureRecord, after: number, through: number, values: string[], pseudonyms: string[]): Promise<number> {
    const candidates = await eventsMentioning(tx, record.tenantId, after, through, values.map(jsonNeedle));
    const changes = candidates
      .map((event) => ({ seq: event.seq, before: JSON.stringify(event.data), data: pseudonymizeJson(event.data, values, pseudonyms) }))
      .filter((change) => JSON.stringify(change.data) !== change.before);
    await rewriteEventData(tx, record.tenantId, changes);
    return changes.length;
  }

  async function work(initial: ErasureRecord, heldUntil: number): Promise<void> {
    let record = initial;
    let lease = heldUntil;
    /**
     * One batch in one transaction, under the lease: renewed first (compare and set on the lease this instance holds),
     * so a batch commits only while no other instance has taken the erasure over; null when one has (or on stop).
     */
    async function underLease<T>(batch: (tx: Queryable) => Promise<T>): Promise<{ value: T } | null> {
      if (stopped) return null;
      const next = clock() + LEASE_MS;
      const done = await db.transaction(async (tx) => {
        if (!(await renewErasureLease(tx, record.tenantId, record.id, lease, next))) return null;
        return { value: await batch(tx) };
      });
      if (done) lease = next;
      return done;
    }

    const subject = await subjectOf(db, record);
    const values = subject?.values ?? [];
    const pseudonyms = pseudonymsOf(record.id, values);

    // The access logs, a batch per transaction.
    for (let deleted = ERASURE_BATCH; subject && subject.mobileDeviceIds.length > 0 && deleted === ERASURE_BATCH; ) {
      const done = await underLease(async (tx) => {
        const count = await deleteAccessLogsOfDevices(tx, record.tenantId, subject.mobileDeviceIds, ERASURE_BATCH);
        await recordErasureProgress(tx, record.tenantId, record.id, record.eventCursor, { access_log_entries: count });
        return count;
      });
      if (!done) return;
      deleted = done.value;
    }

    // The events, a batch of the tenant's sequence per transaction, from where the last instance stopped.
    if (!record.accessLogsOnly && values.length > 0) {
      for (;;) {
        const cursor = record.eventCursor;
        const done = await underLease(async (tx) => {
          const through = await eventBatchEnd(tx, record.tenantId, cursor, ERASURE_BATCH);
          if (through === null) return null;
          const changed = await rewriteEvents(tx, record, cursor, through, values, pseudonyms);
          await recordErasureProgress(tx, record.tenantId, record.id, through, { audit_events: changed });
          return through;
        });
        if (!done) return;
        if (done.value === null) break;
        record = { ...record, eventCursor: done.value };
      }
    }

    // Last, in one transaction: the events written meanwhile, the cached answers and delivery errors, the first-hand
    // rows, and the record with its event.
    await underLease(async (tx) => {
      const counts: Record<string, number> = {};
      if (!record.accessLogsOnly && subject && values.length > 0) {
        const tail = await eventBatchEnd(tx, record.tenantId, record.eventCursor, null);
        if (tail !== null) counts.audit_events = await rewriteEvents(tx, record, record.eventCursor, tail, values, pseudonyms);
        const answers = await idempotentAnswersMentioning(tx, record.tenantId, values.map(jsonNeedle));
        const rewritten = answers
          .map((answer) => ({ key: answer.key, before: answer.body, body: rewriteBody(answer.body, values, pseudonyms) }))
          .filter((answer) => answer.body !== answer.before);
        await rewriteIdempotentAnswers(tx, record.tenantId, rewritten);
        counts.idempotency_keys = rewritten.length;
        counts.webhook_attempts = await pseudonymizeAttemptErrors(tx, record.tenantId, values, pseudonyms);
        // Bulk jobs (docs/api-reference.md 14): the rows sent, their natural keys, and the problems' free text.
        const jobItems = (await jobItemsMentioning(tx, record.tenantId, values.map(jsonNeedle))).map((item) => ({
          ...item,
          key: String(pseudonymizeJson(item.key, values, pseudonyms)),
          item: pseudonymizeJson(item.item, values, pseudonyms),
          problem: pseudonymizeTextIn(item.problem, values, pseudonyms),
        }));
        await rewriteJobItems(tx, record.tenantId, jobItems);
        counts.job_items = jobItems.length;
        const byValue = new Map(values.map((value, index) => [value, pseudonyms[index]!]));
        Object.assign(
          counts,
          await pseudonymizeFirstHand(
            tx,
            record.tenantId,
            { kind: record.subjectKind, id: record.subjectId, mobileDeviceIds: subject.mobileDeviceIds, userId: subject.userId },
            (value) => byValue.get(value) ?? value,
            values,
          ),
        );
      }
      await recordErasureProgress(tx, record.tenantId, record.id, record.eventCursor, counts);
      const finished = await finishErasure(tx, record.tenantId, record.id, clock());
      const job = await finishErasureJob(tx, record.tenantId, record.id, record.subjectId, clock());
      await recordChange(
        tx,
        { tenantId: record.tenantId, actor: record.requestedBy, requestId: record.requestId },
        clock(),
        'erasure.finished',
        `erasure:${record.id}`,
        { erasureId: record.id, subjectKind: record.subjectKind, subjectId: record.subjectId, rows: finished?.rowsChanged ?? {} },
      );
      if (job) {
        await recordChange(tx, { tenantId: record.tenantId, actor: record.requestedBy, requestId: record.requestId }, clock(), 'job.finished', `job:${job.id}`, finishedData(job));
      }
    });
  }

  /** Runs an erasure this instance holds, in the background; a failure leaves it to the resume sweep. */
  function runInBackground(record: ErasureRecord, heldUntil: number): void {
    const task = work(record, heldUntil)
      .catch((error: unknown) => log.warn({ err: error, erasureId: record.id }, 'erasure stopped; another sweep resumes it'))
      .finally(() => running.delete(task));
    running.add(task);
  }

  return {
    /**
     * POST /operatorapi/erasures: records the request and starts it; 404 when the person is not (or no longer) there.
     * The record names the person by id only: a user by their id, never by the username asked for.
     */
    async request(context: ActionContext, request: ErasureRequest): Promise<{ erasure: ErasureRecord; job: Job }> {
      const named = (['residentId', 'mobileDeviceId', 'username'] as const).filter((field) => request[field] !== undefined);
      if (named.length !== 1) {
        throw new BadRequestError('Name exactly one person to erase: residentId, mobileDeviceId or username.', [
          { field: named.length === 0 ? 'residentId' : named[1]!, message: named.length === 0 ? 'is required (or mobileDeviceId, or username)' : 'only one of residentId, mobileDeviceId and username' },
        ]);
      }
      let kind: ErasureSubjectKind;
      let subjectId: string;
      let found: ErasureSubject | null;
      if (request.residentId !== undefined) {
        kind = 'resident';
        subjectId = request.residentId;
        found = isUuid(subjectId) ? await findResidentSubject(db, context.tenantId, subjectId) : null;
      } else if (request.mobileDeviceId !== undefined) {
        kind = 'mobile-device';
        subjectId = request.mobileDeviceId;
        found = await findMobileDeviceSubject(db, context.tenantId, subjectId);
      } else {
        kind = 'user';
        found = await findUserSubject(db, context.tenantId, { username: request.username! });
        subjectId = found?.userId ?? '';
      }
      if (!found) throw new NotFoundError(`No ${kind === 'mobile-device' ? 'mobile device' : kind} of this tenant matches ${named[0]}.`);
      const now = clock();
      const heldUntil = now + LEASE_MS;
      const record = await db.transaction(async (tx) => {
        const inserted = await insertErasure(
          tx,
          {
            tenantId: context.tenantId,
            id: randomUUID(),
            subjectKind: kind,
            subjectId,
            accessLogsOnly: request.accessLogsOnly === true,
            requestedBy: context.actor,
            requestId: context.requestId,
            requestedAt: now,
          },
          heldUntil,
        );
        // The erasure is a job too (docs/api-reference.md 14, 16.2), of one item: the person, by id. Its id is the
        // erasure's, so /operatorapi/jobs/{id} and /operatorapi/erasures/{id} read the same request.
        await insertJob(tx, {
          tenantId: context.tenantId,
          id: inserted.id,
          type: 'erasure',
          state: 'running',
          total: 1,
          processed: 0,
          succeeded: 0,
          failed: 0,
          actor: context.actor,
          requestId: context.requestId,
          createdAt: now,
          startedAt: now,
          finishedAt: null,
          claim: 0,
        });
        await markJobStarted(tx, context.tenantId, inserted.id, now);
        await insertJobItems(tx, context.tenantId, inserted.id, [
          { index: 0, key: subjectId, item: { subjectKind: kind, subjectId, accessLogsOnly: inserted.accessLogsOnly }, outcome: null, resourceId: null, problem: null },
        ]);
        await recordChange(tx, context, now, 'erasure.requested', `erasure:${inserted.id}`, {
          erasureId: inserted.id,
          subjectKind: kind,
          subjectId,
          accessLogsOnly: inserted.accessLogsOnly,
        });
        return inserted;
      });
      runInBackground(record, heldUntil);
      return {
        erasure: record,
        job: toJob({
          tenantId: record.tenantId,
          id: record.id,
          type: 'erasure',
          state: 'running',
          total: 1,
          processed: 0,
          succeeded: 0,
          failed: 0,
          actor: record.requestedBy,
          requestId: record.requestId,
          createdAt: now,
          startedAt: now,
          finishedAt: null,
          claim: 0,
        }),
      };
    },

    async get(tenantId: string, id: string): Promise<ErasureRecord> {
      const record = isUuid(id) ? await findErasure(db, tenantId, id) : null;
      if (!record) throw new NotFoundError(`No erasure ${id}.`);
      return record;
    },

    async list(tenantId: string, limit: number, cursor?: string): Promise<Page<ErasureRecord>> {
      const position = decodeCursor(cursor, isUuid);
      const rows = await listErasures(db, tenantId, position ? { requestedAt: position.createdAt, id: position.id } : null, limit + 1);
      const items = rows.slice(0, limit);
      const last = items.at(-1);
      return { items, nextCursor: rows.length > limit && last ? encodeCursor({ createdAt: last.requestedAt, id: last.id }) : null };
    },

    /** Takes over the erasures whose instance stopped (its lease over) and runs them; answers how many it took. */
    async resumeAbandoned(): Promise<number> {
      let taken = 0;
      for (const { tenantId, id } of await listAbandonedErasures(db, clock(), 10)) {
        const heldUntil = clock() + LEASE_MS;
        if (!(await claimErasure(db, tenantId, id, clock(), heldUntil))) continue;
        const record = await findErasure(db, tenantId, id);
        if (record?.state !== 'running') continue;
        runInBackground(record, heldUntil);
        taken++;
      }
      return taken;
    },

    /** Waits for the erasures this instance runs (tests, and a graceful stop). */
    async settled(): Promise<void> {
      while (running.size > 0) await Promise.allSettled([...running]);
    },

    start(): void {
      stopped = false;
      timer = setInterval(() => {
        this.resumeAbandoned().catch((error: unknown) => log.warn({ err: error }, 'erasure resume failed'));
      }, RESUME_INTERVAL_MS);
      timer.unref();
    },

    /** Stops taking batches; what runs stops at its next batch, and its lease lets another instance resume it. */
    async stop(): Promise<void> {
      stopped = true;
      if (timer) clearInterval(timer);
      timer = null;
      await this.settled();
    },
  };
}

/** A cached answer's body with the values replaced: as JSON where it parses (so the answer stays well formed), else as text. */
function rewriteBody(body: string, values: readonly string[], pseudonyms: readonly string[]): string {
  try {
    return JSON.stringify(pseudonymizeJson(JSON.parse(body), values, pseudonyms));
  } catch {
    return pseudonymizeText(body, values, pseudonyms);
  }
}

export type { ErasureRecord };
export type ErasureService = ReturnType<typeof createErasureService>;
