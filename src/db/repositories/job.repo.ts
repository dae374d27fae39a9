// SQL for bulk jobs (docs/api-reference.md 14, migration 026): the job, its items and their outcomes, and the lease
// an instance runs it under.
import type { Queryable } from '../database.js';
import { keysetPage, type KeysetColumns, type KeysetPosition } from '../../shared/keyset.js';
import type { ItemOutcome, JobKind, JobState } from '../../shared/bulk-jobs.js';

export interface JobRecord {
  tenantId: string;
  id: string;
  type: JobKind;
  state: JobState;
  total: number;
  processed: number;
  succeeded: number;
  failed: number;
  actor: string;
  requestId: string | null;
  createdAt: number;
  startedAt: number | null;
  finishedAt: number | null;
  claim: number;
}

interface JobRow {
  tenant_id: string;
  id: string;
  type: JobKind;
  state: JobState;
  total: number;
  processed: number;
  succeeded: number;
  failed: number;
  actor: string;
  request_id: string | null;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
  claim: number;
}

const COLUMNS = 'tenant_id, id, type, state, total, processed, succeeded, failed, actor, request_id, created_at, started_at, finished_at, claim';
const KEYSET: KeysetColumns = { createdAt: 'created_at', id: 'id', idType: 'uuid' };

const toRecord = (row: JobRow): JobRecord => ({
  tenantId: row.tenant_id,
  id: row.id,
  type: row.type,
  state: row.state,
  total: row.total,
  processed: row.processed,
  succeeded: row.succeeded,
  failed: row.failed,
  actor: row.actor,
  requestId: row.request_id,
  createdAt: Number(row.created_at),
  startedAt: row.started_at === null ? null : Number(row.started_at),
  finishedAt: row.finished_at === null ? null : Number(row.finished_at),
  claim: row.claim,
});

/** An item as stored: what was sent and, once it ran (or failed validation when it was sent), its outcome. */
export interface JobItemRecord {
  index: number;
  key: string;
  item: Record<string, unknown>;
  outcome: ItemOutcome | null;
  resourceId: string | null;
  problem: Record<string, unknown> | null;
}

interface JobItemRow {
  item_index: number;
  key: string;
  item: Record<string, unknown>;
  outcome: ItemOutcome | null;
  resource_id: string | null;
  problem: Record<string, unknown> | null;
}

const toItem = (row: JobItemRow): JobItemRecord => ({
  index: row.item_index,
  key: row.key,
  item: row.item,
  outcome: row.outcome,
  resourceId: row.resource_id,
  problem: row.problem,
});

export async function insertJob(db: Queryable, job: JobRecord): Promise<void> {
  await db.query(
    `INSERT INTO jobs (tenant_id, id, type, state, total, processed, succeeded, failed, actor, request_id, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
    [job.tenantId, job.id, job.type, job.state, job.total, job.processed, job.succeeded, job.failed, job.actor, job.requestId, job.createdAt],
  );
}

/** Items in one statement per call: the caller passes chunks, so no statement carries more than a few MB. */
export async function insertJobItems(db: Queryable, tenantId: string, jobId: string, items: readonly JobItemRecord[]): Promise<void> {
  const rows = items.map((item) => ({ i: item.index, k: item.key, item: item.item, o: item.outcome, p: item.problem }));
  await db.query(
    `INSERT INTO job_items (tenant_id, job_id, item_index, key, item, outcome, problem)
     SELECT $1, $2, x.i, x.k, x.item, x.o, x.p FROM jsonb_to_recordset($3::jsonb) AS x(i integer, k text, item jsonb, o text, p jsonb)`,
    [tenantId, jobId, JSON.stringify(rows)],
  );
}

/** The tenant's jobs still to finish (queued or running): what JOB_MAX_ACTIVE_PER_TENANT bounds. */
export async function countActiveJobs(db: Queryable, tenantId: string): Promise<number> {
  const { rows } = await db.query<{ count: number }>(
    `SELECT count(*)::integer AS count FROM jobs WHERE tenant_id = $1 AND state IN ('queued', 'running')`,
    [tenantId],
  );
  return rows[0]?.count ?? 0;
}

export async function findJob(db: Queryable, tenantId: string, id: string): Promise<JobRecord | null> {
  const { rows } = await db.query<JobRow>(`SELECT ${COLUMNS} FROM jobs WHERE tenant_id = $1 AND id = $2`, [tenantId, id]);
  return rows[0] ? toRecord(rows[0]) : null;
}

export async function listJobs(db: Queryable, tenantId: string, after: KeysetPosition | null, limit: number): Promise<JobRecord[]> {
  const params: unknown[] = [tenantId];
  const page = keysetPage(params, KEYSET, after, limit);
  const { rows } = await db.query<JobRow>(`SELECT ${COLUMNS} FROM jobs WHERE tenant_id = $1 AND ${page.condition} ${page.orderAndLimit}`, params);
  return rows.map(toRecord);
}

/** A page of the items that ran (or failed when sent), in item order, after `afterIndex`; `outcome` filters. */
export async function listJobResults(
  db: Queryable,
  tenantId: string,
  jobId: string,
  outcome: ItemOutcome | null,
  afterIndex: number,
  limit: number,
): Promise<JobItemRecord[]> {
  const { rows } = await db.query<JobItemRow>(
    `SELECT item_index, key, item, outcome, resource_id, problem FROM job_items
      WHERE tenant_id = $1 AND job_id = $2 AND item_index > $3 AND outcome IS NOT NULL AND ($4::text IS NULL OR outcome = $4::text)
      ORDER BY item_index LIMIT $5`,
    [tenantId, jobId, afterIndex, outcome, limit],
  );
  return rows.map(toItem);
}

/**
 * Cancels a job that has not finished: the items not yet run never will. The item being applied when this runs
 * commits first (its transaction holds the job's row) or, if it comes after, sees the job cancelled and rolls back.
 */
export async function cancelJob(db: Queryable, tenantId: string, id: string, now: number): Promise<JobRecord | null> {
  const { rows } = await db.query<JobRow>(
    `UPDATE jobs SET state = 'cancelled', finished_at = $3, lease_until = NULL
      WHERE tenant_id = $1 AND id = $2 AND state IN ('queued', 'running') AND type <> 'erasure'
     RETURNING ${COLUMNS}`,
    [tenantId, id, now],
  );
  return rows[0] ? toRecord(rows[0]) : null;
}

/**
 * The oldest job to run (lease free or run out) of each tenant but those in `exceptTenants`, oldest first: the worker
 * takes on one job per tenant (services/job-worker.ts, fairness). A plain read across tenants, locking nothing: each is
 * then claimed by a statement that names its tenant (claimJob), which only one instance wins.
 */
export async function findRunnableJobs(
  db: Queryable,
  now: number,
  exceptTenants: readonly string[],
  limit: number,
): Promise<{ tenantId: string; id: string }[]> {
  const { rows } = await db.query<{ tenant_id: string; id: string }>(
    `SELECT tenant_id, id FROM (
       SELECT DISTINCT ON (tenant_id) tenant_id, id, created_at FROM jobs
        WHERE state IN ('queued', 'running') AND (lease_until IS NULL OR lease_until <= $1) AND type <> 'erasure'
          AND tenant_id <> ALL ($2::uuid[])
        ORDER BY tenant_id, created_at, id) AS oldest
      ORDER BY created_at, id LIMIT $3`,
    [now, exceptTenants, limit],
  );
  return rows.map((row) => ({ tenantId: row.tenant_id, id: row.id }));
}

/**
 * Takes the job's lease until `leaseUntil` if it is still free (or run out): compare and set on the job's row, so of
 * two instances claiming at once one wins. The new `claim` fences the items recorded under the lease (advanceJob).
 */
export async function claimJob(db: Queryable, tenantId: string, id: string, now: number, leaseUntil: number): Promise<JobRecord | null> {
  const { rows } = await db.query<JobRow>(
    `UPDATE jobs SET state = 'running', started_at = COALESCE(started_at, $3), lease_until = $4, claim = claim + 1
      WHERE tenant_id = $1 AND id = $2 AND state IN ('queued', 'running') AND (lease_until IS NULL OR lease_until <= $3)
        AND type <> 'erasure'
     RETURNING ${COLUMNS}`,
    [tenantId, id, now, leaseUntil],
  );
  return rows[0] ? toRecord(rows[0]) : null;
}

/** The next items still to run, in order. */
export async function nextJobItems(db: Queryable, tenantId: string, jobId: string, limit: number): Promise<JobItemRecord[]> {
  const { rows } = await db.query<JobItemRow>(
    `SELECT item_index, key, item, outcome, resource_id, problem FROM job_items
      WHERE tenant_id = $1 AND job_id = $2 AND outcome IS NULL
      ORDER BY item_index LIMIT $3`,
    [tenantId, jobId, limit],
  );
  return rows.map(toItem);
}

export interface ItemResult {
  index: number;
  outcome: ItemOutcome;
  resourceId: string | null;
  problem: Record<string, unknown> | null;
}

/**
 * Records item outcomes, only of items not recorded yet; answers how many it recorded. A caller that records fewer
 * than it applied is racing another worker and must roll its transaction back.
 */
export async function recordItemResults(db: Queryable, tenantId: string, jobId: string, results: readonly ItemResult[]): Promise<number> {
  const rows = results.map((result) => ({ i: result.index, o: result.outcome, r: result.resourceId, p: result.problem }));
  const { rowCount } = await db.query(
    `UPDATE job_items j SET outcome = x.o, resource_id = x.r, problem = x.p
       FROM jsonb_to_recordset($3::jsonb) AS x(i integer, o text, r text, p jsonb)
      WHERE j.tenant_id = $1 AND j.job_id = $2 AND j.item_index = x.i AND j.outcome IS NULL`,
    [tenantId, jobId, JSON.stringify(rows)],
  );
  return rowCount;
}

/**
 * Counts recorded items into the job's progress and renews its lease, only while `claim` is still the job's and it
 * is running (not cancelled, not claimed by another instance after this one's lease ran out). False: roll back.
 */
export async function advanceJob(
  db: Queryable,
  tenantId: string,
  id: string,
  claim: number,
  counts: { succeeded: number; failed: number },
  leaseUntil: number,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE jobs SET processed = processed + $4 + $5, succeeded = succeeded + $4, failed = failed + $5, lease_until = $6
      WHERE tenant_id = $1 AND id = $2 AND claim = $3 AND state = 'running'`,
    [tenantId, id, claim, counts.succeeded, counts.failed, leaseUntil],
  );
  return rowCount > 0;
}

/**
 * Ends a job whose every item ran: `succeeded` when none failed, else `failed` (docs/api-reference.md 14). Null when
 * the claim is no longer the job's, or items remain.
 */
export async function finishJob(db: Queryable, tenantId: string, id: string, claim: number, now: number): Promise<JobRecord | null> {
  const { rows } = await db.query<JobRow>(
    `UPDATE jobs SET state = CASE WHEN failed > 0 THEN 'failed' ELSE 'succeeded' END, finished_at = $4, lease_until = NULL
      WHERE tenant_id = $1 AND id = $2 AND claim = $3 AND state = 'running' AND processed = total
     RETURNING ${COLUMNS}`,
    [tenantId, id, claim, now],
  );
  return rows[0] ? toRecord(rows[0]) : null;
}

/** Gives the lease back (an instance stopping): another instance may take the job at once. */
export async function releaseJob(db: Queryable, tenantId: string, id: string, claim: number): Promise<void> {
  await db.query(`UPDATE jobs SET lease_until = NULL WHERE tenant_id = $1 AND id = $2 AND claim = $3 AND state = 'running'`, [tenantId, id, claim]);
}

/**
 * Holds the tenant's change counter (migration 017) to the end of the transaction without moving it: a worker's batch
 * of items takes it before any item's own locks, as every single write that takes it does first, so a batch and a
 * request never wait for each other in opposite orders (lock order in services/job-worker.ts).
 */
export async function holdChangeCounter(db: Queryable, tenantId: string): Promise<void> {
  await db.query('SELECT last_seq FROM tenant_change_counters WHERE tenant_id = $1 FOR UPDATE', [tenantId]);
}

/**
 * Deletes up to `limit` of the tenant's jobs that finished before `before` (retention, docs/api-reference.md 16.1), their
 * items with them (ON DELETE CASCADE); answers how many jobs went. A job still queued or running is never taken.
 */
export async function pruneFinishedJobs(db: Queryable, tenantId: string, before: number, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM jobs WHERE tenant_id = $1 AND id IN (
       SELECT id FROM jobs
        WHERE tenant_id = $1 AND state IN ('succeeded', 'failed', 'cancelled') AND finished_at < $2::bigint
        ORDER BY finished_at LIMIT $3)`,
    [tenantId, before, limit],
  );
  return rowCount ?? 0;
}

/**
 * Ends an erasure's job (docs/api-reference.md 16.2): its one item `updated` with the person's id, the job
 * `succeeded`. Null when it has ended already.
 */
export async function finishErasureJob(db: Queryable, tenantId: string, id: string, subjectId: string, now: number): Promise<JobRecord | null> {
  await db.query(
    `UPDATE job_items SET outcome = 'updated', resource_id = $3 WHERE tenant_id = $1 AND job_id = $2 AND item_index = 0 AND outcome IS NULL`,
    [tenantId, id, subjectId],
  );
  const { rows } = await db.query<JobRow>(
    `UPDATE jobs SET state = 'succeeded', processed = total, succeeded = total, finished_at = $3, lease_until = NULL
      WHERE tenant_id = $1 AND id = $2 AND type = 'erasure' AND state = 'running'
     RETURNING ${COLUMNS}`,
    [tenantId, id, now],
  );
  return rows[0] ? toRecord(rows[0]) : null;
}

/** Records that a job started at `now` (an erasure's, which starts as it is made). */
export async function markJobStarted(db: Queryable, tenantId: string, id: string, now: number): Promise<void> {
  await db.query('UPDATE jobs SET started_at = COALESCE(started_at, $3) WHERE tenant_id = $1 AND id = $2', [tenantId, id, now]);
}
