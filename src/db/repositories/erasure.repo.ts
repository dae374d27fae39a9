// SQL for erasures (docs/api-reference.md 16.2, migration 030): the request's record, the person's values where they are
// kept first-hand, and the bounded passes over the records that repeat them (events, cached answers, delivery errors).
import type { Queryable } from '../database.js';

export type ErasureSubjectKind = 'resident' | 'mobile-device' | 'user';

export interface ErasureRecord {
  tenantId: string;
  id: string;
  subjectKind: ErasureSubjectKind;
  subjectId: string;
  accessLogsOnly: boolean;
  requestedBy: string;
  requestId: string | null;
  requestedAt: number;
  state: 'running' | 'succeeded';
  eventCursor: number;
  rowsChanged: Record<string, number>;
  finishedAt: number | null;
}

interface ErasureRow {
  tenant_id: string;
  id: string;
  subject_kind: ErasureSubjectKind;
  subject_id: string;
  access_logs_only: boolean;
  requested_by: string;
  request_id: string | null;
  requested_at: number | string;
  state: 'running' | 'succeeded';
  event_cursor: number | string;
  rows_changed: Record<string, number>;
  finished_at: number | string | null;
}

const COLUMNS =
  'tenant_id, id, subject_kind, subject_id, access_logs_only, requested_by, request_id, requested_at, state, event_cursor, rows_changed, finished_at';

function toErasure(row: ErasureRow): ErasureRecord {
  return {
    tenantId: row.tenant_id,
    id: row.id,
    subjectKind: row.subject_kind,
    subjectId: row.subject_id,
    accessLogsOnly: row.access_logs_only,
    requestedBy: row.requested_by,
    requestId: row.request_id,
    requestedAt: Number(row.requested_at),
    state: row.state,
    eventCursor: Number(row.event_cursor),
    rowsChanged: row.rows_changed,
    finishedAt: row.finished_at === null ? null : Number(row.finished_at),
  };
}

export async function insertErasure(
  db: Queryable,
  erasure: Pick<ErasureRecord, 'tenantId' | 'id' | 'subjectKind' | 'subjectId' | 'accessLogsOnly' | 'requestedBy' | 'requestId' | 'requestedAt'>,
  leaseUntil: number,
): Promise<ErasureRecord> {
  const { rows } = await db.query<ErasureRow>(
    `INSERT INTO erasures (tenant_id, id, subject_kind, subject_id, access_logs_only, requested_by, request_id, requested_at, state, lease_until)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'running', $9) RETURNING ${COLUMNS}`,
    [
      erasure.tenantId,
      erasure.id,
      erasure.subjectKind,
      erasure.subjectId,
      erasure.accessLogsOnly,
      erasure.requestedBy,
      erasure.requestId,
      erasure.requestedAt,
      leaseUntil,
    ],
  );
  return toErasure(rows[0]!);
}

export async function findErasure(db: Queryable, tenantId: string, id: string): Promise<ErasureRecord | null> {
  const { rows } = await db.query<ErasureRow>(`SELECT ${COLUMNS} FROM erasures WHERE tenant_id = $1 AND id = $2`, [tenantId, id]);
  return rows[0] ? toErasure(rows[0]) : null;
}

/** A page of the tenant's erasures, newest first, after the one requested at `after` (time, id). */
export async function listErasures(db: Queryable, tenantId: string, after: { requestedAt: number; id: string } | null, limit: number): Promise<ErasureRecord[]> {
  const { rows } = await db.query<ErasureRow>(
    `SELECT ${COLUMNS} FROM erasures
      WHERE tenant_id = $1 AND ($2::bigint IS NULL OR (requested_at, id) < ($2::bigint, $3::uuid))
      ORDER BY requested_at DESC, id DESC LIMIT $4`,
    [tenantId, after?.requestedAt ?? null, after?.id ?? null, limit],
  );
  return rows.map(toErasure);
}

/**
 * The unfinished erasures no instance holds (lease over), every tenant's: a read that locks nothing, after which each
 * is taken with claimErasure in its own tenant's statement.
 */
export async function listAbandonedErasures(db: Queryable, now: number, limit: number): Promise<Array<{ tenantId: string; id: string }>> {
  const { rows } = await db.query<{ tenant_id: string; id: string }>(
    `SELECT tenant_id, id FROM erasures WHERE state = 'running' AND lease_until < $1::bigint ORDER BY requested_at LIMIT $2`,
    [now, limit],
  );
  return rows.map((row) => ({ tenantId: row.tenant_id, id: row.id }));
}

/** Takes the lease of a running erasure whose holder's lease is over; false when it is finished or still held. */
export async function claimErasure(db: Queryable, tenantId: string, id: string, now: number, leaseUntil: number): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE erasures SET lease_until = $4 WHERE tenant_id = $1 AND id = $2 AND state = 'running' AND lease_until < $3::bigint`,
    [tenantId, id, now, leaseUntil],
  );
  return rowCount === 1;
}

/**
 * Renews the lease this instance holds (compare and set on the lease it took, `heldUntil`): false when another instance
 * has taken the erasure over since, or it is finished. Run first in each batch's transaction, so only the holder's
 * batches commit.
 */
export async function renewErasureLease(db: Queryable, tenantId: string, id: string, heldUntil: number, leaseUntil: number): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE erasures SET lease_until = $4 WHERE tenant_id = $1 AND id = $2 AND state = 'running' AND lease_until = $3::bigint`,
    [tenantId, id, heldUntil, leaseUntil],
  );
  return rowCount === 1;
}

/** Adds `counts` to the record's rows per table and moves its event cursor, in the transaction of the batch counted. */
export async function recordErasureProgress(db: Queryable, tenantId: string, id: string, eventCursor: number, counts: Record<string, number>): Promise<void> {
  await db.query(
    `UPDATE erasures
        SET event_cursor = greatest(event_cursor, $3::bigint),
            rows_changed = (SELECT coalesce(jsonb_object_agg(key, total), '{}'::jsonb) FROM (
                              SELECT key, sum(value::bigint) AS total
                                FROM (SELECT key, value FROM jsonb_each_text(rows_changed)
                                      UNION ALL SELECT key, value FROM jsonb_each_text($4::jsonb)) added
                               GROUP BY key) summed)
      WHERE tenant_id = $1 AND id = $2`,
    [tenantId, id, eventCursor, JSON.stringify(counts)],
  );
}

export async function finishErasure(db: Queryable, tenantId: string, id: string, now: number): Promise<ErasureRecord | null> {
  const { rows } = await db.query<ErasureRow>(
    `UPDATE erasures SET state = 'succeeded', finished_at = $3, lease_until = 0
      WHERE tenant_id = $1 AND id = $2 AND state = 'running' RETURNING ${COLUMNS}`,
    [tenantId, id, now],
  );
  return rows[0] ? toErasure(rows[0]) : null;
}

/** The person as the tenant holds them first-hand: the values to erase, and the devices whose access logs are theirs. */
export interface ErasureSubject {
  /** Names, device names, client names, usernames: every personal value, longest first. */
  values: string[];
  mobileDeviceIds: string[];
  userId: string | null;
}

/**
 * A resident: their name, the notes of their claim links, and for each of their devices its name, the names of the
 * clients bound to it and the notes of its own claim links.
 */
export async function findResidentSubject(db: Queryable, tenantId: string, residentId: string): Promise<ErasureSubject | null> {
  const { rows } = await db.query<{ name: string; device_ids: string[]; values: string[] }>(
    `SELECT r.name,
            coalesce(array_agg(DISTINCT d.id) FILTER (WHERE d.id IS NOT NULL), '{}') AS device_ids,
            coalesce(array_agg(DISTINCT v.value) FILTER (WHERE v.value IS NOT NULL), '{}') AS values
       FROM residents r
       LEFT JOIN resident_devices rd ON rd.tenant_id = $1 AND rd.resident_id = r.id
       LEFT JOIN mobile_devices d ON d.tenant_id = $1 AND d.id = rd.mobile_device_id
       LEFT JOIN LATERAL (
         SELECT d.name AS value
         UNION ALL
         SELECT c.name FROM oauth_clients c WHERE c.tenant_id = $1 AND c.mobile_device_id = d.id
         UNION ALL
         SELECT k.note FROM claims k WHERE k.tenant_id = $1 AND k.mobile_device_id = d.id
       ) v ON true
      WHERE r.tenant_id = $1 AND r.id = $2
      GROUP BY r.name`,
    [tenantId, residentId],
  );
  const row = rows[0];
  if (!row) return null;
  // The notes of the resident's claim links (docs/api-reference.md 12.1): an operator's words about the person.
  const { rows: notes } = await db.query<{ note: string }>('SELECT note FROM claims WHERE tenant_id = $1 AND resident_id = $2 AND note IS NOT NULL', [
    tenantId,
    residentId,
  ]);
  return { values: personalValues([row.name, ...row.values, ...notes.map((note) => note.note)]), mobileDeviceIds: row.device_ids, userId: null };
}

/** A mobile device: its name, the names of the clients bound to it and the notes of its claim links. */
export async function findMobileDeviceSubject(db: Queryable, tenantId: string, mobileDeviceId: string): Promise<ErasureSubject | null> {
  const { rows } = await db.query<{ name: string | null; client_names: string[] }>(
    `SELECT d.name,
            coalesce((SELECT array_agg(c.name) FROM oauth_clients c WHERE c.tenant_id = $1 AND c.mobile_device_id = d.id), '{}')
              || coalesce((SELECT array_agg(k.note) FROM claims k WHERE k.tenant_id = $1 AND k.mobile_device_id = d.id AND k.note IS NOT NULL), '{}')
              AS client_names
       FROM mobile_devices d WHERE d.tenant_id = $1 AND d.id = $2`,
    [tenantId, mobileDeviceId],
  );
  const row = rows[0];
  if (!row) return null;
  return { values: personalValues([row.name, ...row.client_names]), mobileDeviceIds: [mobileDeviceId], userId: null };
}

/** A user, by username (a request) or by id (an erasure resumed after the username was already replaced). */
export async function findUserSubject(db: Queryable, tenantId: string, by: { username: string } | { userId: string }): Promise<ErasureSubject | null> {
  const { rows } = await db.query<{ id: string; username: string }>(
    'username' in by
      ? 'SELECT id, username FROM users WHERE tenant_id = $1 AND username = $2'
      : 'SELECT id, username FROM users WHERE tenant_id = $1 AND id = $2::uuid',
    [tenantId, 'username' in by ? by.username : by.userId],
  );
  const row = rows[0];
  if (!row) return null;
  return { values: personalValues([row.username]), mobileDeviceIds: [], userId: row.id };
}

/** The distinct non-empty values, longest first, so that a value inside a longer one is never replaced before it. */
function personalValues(values: Array<string | null>): string[] {
  return [...new Set(values.filter((value): value is string => typeof value === 'string' && value.length > 0))].sort(
    (a, b) => b.length - a.length || (a < b ? -1 : a > b ? 1 : 0),
  );
}

/** The last sequence number of the tenant's next `limit` events after `afterSeq`, or null when there are none. */
export async function eventBatchEnd(db: Queryable, tenantId: string, afterSeq: number, limit: number | null): Promise<number | null> {
  const { rows } = await db.query<{ last: number | string | null }>(
    `SELECT max(seq) AS last FROM (SELECT seq FROM audit_events WHERE tenant_id = $1 AND seq > $2::bigint ORDER BY seq LIMIT $3) batch`,
    [tenantId, afterSeq, limit],
  );
  const last = rows[0]?.last;
  return last === null || last === undefined ? null : Number(last);
}

/**
 * The events in (afterSeq, throughSeq] whose data may hold one of `needles` (each value as JSON writes it, without its
 * quotes), locked for the rewrite: a superset the caller narrows by parsing.
 */
export async function eventsMentioning(
  db: Queryable,
  tenantId: string,
  afterSeq: number,
  throughSeq: number,
  needles: readonly string[],
): Promise<Array<{ seq: number; data: unknown }>> {
  const { rows } = await db.query<{ seq: number | string; data: unknown }>(
    `SELECT seq, data FROM audit_events
      WHERE tenant_id = $1 AND seq > $2::bigint AND seq <= $3::bigint
        AND EXISTS (SELECT 1 FROM unnest($4::text[]) needle WHERE strpos(data::text, needle) > 0)
      ORDER BY seq FOR UPDATE`,
    [tenantId, afterSeq, throughSeq, needles],
  );
  return rows.map((row) => ({ seq: Number(row.seq), data: row.data }));
}

export async function rewriteEventData(db: Queryable, tenantId: string, changes: Array<{ seq: number; data: unknown }>): Promise<void> {
  if (changes.length === 0) return;
  await db.query(
    `UPDATE audit_events e SET data = c.data
       FROM (SELECT unnest($2::bigint[]) AS seq, unnest($3::jsonb[]) AS data) c
      WHERE e.tenant_id = $1 AND e.seq = c.seq`,
    [tenantId, changes.map((change) => change.seq), changes.map((change) => JSON.stringify(change.data))],
  );
}

/** The tenant's cached idempotent answers that may hold one of `needles`, locked for the rewrite. */
export async function idempotentAnswersMentioning(db: Queryable, tenantId: string, needles: readonly string[]): Promise<Array<{ key: string; body: string }>> {
  const { rows } = await db.query<{ key: string; response_body: string }>(
    `SELECT key, response_body FROM idempotency_keys
      WHERE tenant_id = $1 AND response_body IS NOT NULL
        AND EXISTS (SELECT 1 FROM unnest($2::text[]) needle WHERE strpos(response_body, needle) > 0)
      FOR UPDATE`,
    [tenantId, needles],
  );
  return rows.map((row) => ({ key: row.key, body: row.response_body }));
}

export async function rewriteIdempotentAnswers(db: Queryable, tenantId: string, changes: Array<{ key: string; body: string }>): Promise<void> {
  if (changes.length === 0) return;
  await db.query(
    `UPDATE idempotency_keys k SET response_body = c.body
       FROM (SELECT unnest($2::text[]) AS key, unnest($3::text[]) AS body) c
      WHERE k.tenant_id = $1 AND k.key = c.key`,
    [tenantId, changes.map((change) => change.key), changes.map((change) => change.body)],
  );
}

/** A bulk job's item as stored (docs/api-reference.md 14): its natural key, the item sent and the problem it met. */
export interface StoredJobItem {
  jobId: string;
  index: number;
  key: string;
  item: unknown;
  problem: unknown;
}

/** The tenant's bulk-job items that may hold one of `needles` (JSON's escaping, without quotes), locked for the rewrite. */
export async function jobItemsMentioning(db: Queryable, tenantId: string, needles: readonly string[]): Promise<StoredJobItem[]> {
  const { rows } = await db.query<{ job_id: string; item_index: number; key: string; item: unknown; problem: unknown }>(
    `SELECT job_id, item_index, key, item, problem FROM job_items
      WHERE tenant_id = $1
        AND EXISTS (SELECT 1 FROM unnest($2::text[]) needle
                     WHERE strpos(key, needle) > 0 OR strpos(item::text, needle) > 0 OR strpos(coalesce(problem::text, ''), needle) > 0)
      FOR UPDATE`,
    [tenantId, needles],
  );
  return rows.map((row) => ({ jobId: row.job_id, index: row.item_index, key: row.key, item: row.item, problem: row.problem }));
}

export async function rewriteJobItems(db: Queryable, tenantId: string, items: readonly StoredJobItem[]): Promise<void> {
  if (items.length === 0) return;
  await db.query(
    `UPDATE job_items i SET key = c.key, item = c.item, problem = c.problem
       FROM (SELECT unnest($2::uuid[]) AS job_id, unnest($3::integer[]) AS item_index, unnest($4::text[]) AS key,
                    unnest($5::jsonb[]) AS item, unnest($6::jsonb[]) AS problem) c
      WHERE i.tenant_id = $1 AND i.job_id = c.job_id AND i.item_index = c.item_index`,
    [
      tenantId,
      items.map((item) => item.jobId),
      items.map((item) => item.index),
      items.map((item) => item.key),
      items.map((item) => JSON.stringify(item.item)),
      items.map((item) => (item.problem === null ? null : JSON.stringify(item.problem))),
    ],
  );
}

/** Replaces each value by its pseudonym in the error texts of the tenant's webhook delivery attempts; answers the rows changed. */
export async function pseudonymizeAttemptErrors(db: Queryable, tenantId: string, values: readonly string[], pseudonyms: readonly string[]): Promise<number> {
  let changed = 0;
  for (const [index, value] of values.entries()) {
    const result = await db.query(
      `UPDATE webhook_attempts SET error = replace(error, $2, $3) WHERE tenant_id = $1 AND error IS NOT NULL AND strpos(error, $2) > 0`,
      [tenantId, value, pseudonyms[index]],
    );
    changed += result.rowCount ?? 0;
  }
  return changed;
}

/** Deletes up to `limit` access-log entries of the devices; answers how many went. */
export async function deleteAccessLogsOfDevices(db: Queryable, tenantId: string, mobileDeviceIds: readonly string[], limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM access_log_entries WHERE tenant_id = $1 AND (secured_object_id, lock_registered_at, numbering, entry_no) IN (
       SELECT secured_object_id, lock_registered_at, numbering, entry_no FROM access_log_entries
        WHERE tenant_id = $1 AND mobile_device_id = ANY ($2::text[]) LIMIT $3)`,
    [tenantId, mobileDeviceIds, limit],
  );
  return rowCount ?? 0;
}

/** Replaces the first-hand values: the resident's name, the devices' names, their clients' names, claim notes, the user's name. */
export async function pseudonymizeFirstHand(
  db: Queryable,
  tenantId: string,
  subject: { kind: ErasureSubjectKind; id: string; mobileDeviceIds: readonly string[]; userId: string | null },
  pseudonymOf: (value: string) => string,
  values: readonly string[],
): Promise<Record<string, number>> {
  const pairs = { values: [...values], pseudonyms: values.map(pseudonymOf) };
  const replaceIn = (column: string) =>
    `coalesce((SELECT p.pseudonym FROM unnest($2::text[], $3::text[]) AS p(value, pseudonym) WHERE p.value = ${column}), ${column})`;
  const counts: Record<string, number> = {};
  if (subject.kind === 'resident') {
    const result = await db.query(`UPDATE residents SET name = ${replaceIn('name')} WHERE tenant_id = $1 AND id = $4::uuid AND name = ANY ($2::text[])`, [
      tenantId,
      pairs.values,
      pairs.pseudonyms,
      subject.id,
    ]);
    counts.residents = result.rowCount ?? 0;
  }
  const claims = await db.query(
    `UPDATE claims SET note = ${replaceIn('note')}
      WHERE tenant_id = $1 AND note = ANY ($2::text[]) AND (resident_id = $4::uuid OR mobile_device_id = ANY ($5::text[]))`,
    [tenantId, pairs.values, pairs.pseudonyms, subject.kind === 'resident' ? subject.id : null, subject.mobileDeviceIds],
  );
  counts.claims = claims.rowCount ?? 0;
  if (subject.mobileDeviceIds.length > 0) {
    const devices = await db.query(
      `UPDATE mobile_devices SET name = ${replaceIn('name')} WHERE tenant_id = $1 AND id = ANY ($4::text[]) AND name = ANY ($2::text[])`,
      [tenantId, pairs.values, pairs.pseudonyms, subject.mobileDeviceIds],
    );
    counts.mobile_devices = devices.rowCount ?? 0;
    const clients = await db.query(
      `UPDATE oauth_clients SET name = ${replaceIn('name')} WHERE tenant_id = $1 AND mobile_device_id = ANY ($4::text[]) AND name = ANY ($2::text[])`,
      [tenantId, pairs.values, pairs.pseudonyms, subject.mobileDeviceIds],
    );
    counts.oauth_clients = clients.rowCount ?? 0;
  }
  if (subject.userId !== null) {
    const failures = await db.query(`DELETE FROM login_failures WHERE tenant_id = $1 AND username = ANY ($2::text[])`, [tenantId, pairs.values]);
    counts.login_failures = failures.rowCount ?? 0;
    const users = await db.query(`UPDATE users SET username = ${replaceIn('username')} WHERE tenant_id = $1 AND id = $4::uuid AND username = ANY ($2::text[])`, [
      tenantId,
      pairs.values,
      pairs.pseudonyms,
      subject.userId,
    ]);
    counts.users = users.rowCount ?? 0;
  }
  return counts;
}
