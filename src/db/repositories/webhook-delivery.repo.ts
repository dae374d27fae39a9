// SQL for webhook deliveries (docs/contract.md 10, migration 013): dispatch events to deliveries, claim due ones, record attempts.
import type { Queryable } from '../database.js';
import { WIRE_EVENT_COLUMNS, toWireEvent, type WireEvent, type WireEventRow } from './audit.repo.js';

/**
 * Creates the pending deliveries of up to `maxSubscriptions` enabled subscriptions whose tenant has events past their
 * `dispatched_through`, for at most `maxEvents` sequence numbers each, and moves `dispatched_through` to the bound
 * read, all in one statement (so in one transaction: a committed event is never skipped, migration 013).
 *
 * The tenant's `last_seq` is read, not locked: a tenant's events commit in sequence order (migration 008), so every
 * event up to the committed `last_seq` is visible to the same snapshot. Subscriptions are claimed with
 * FOR UPDATE SKIP LOCKED, so instances dispatching at once take different ones and never wait for each other.
 * Returns how many deliveries were created and how many subscriptions moved.
 */
export async function dispatchDeliveries(
  db: Queryable,
  now: number,
  maxSubscriptions: number,
  maxEvents: number,
): Promise<{ deliveries: number; subscriptions: number }> {
  const { rows } = await db.query<{ deliveries: string; subscriptions: string }>(
    `WITH claimed AS (
       SELECT w.tenant_id, w.id, w.event_types, w.dispatched_through AS from_seq,
              least(w.dispatched_through + $3::bigint, c.last_seq) AS to_seq
         FROM webhooks w
         JOIN tenant_audit_counters c ON c.tenant_id = w.tenant_id
        WHERE w.enabled AND c.last_seq > w.dispatched_through
        LIMIT $2
          FOR UPDATE OF w SKIP LOCKED
     ), created AS (
       INSERT INTO webhook_deliveries (tenant_id, webhook_id, event_seq, state, attempts, next_attempt_at, created_at)
       SELECT s.tenant_id, s.id, e.seq, 'pending', 0, $1::bigint, $1::bigint
         FROM claimed s
         JOIN audit_events e ON e.tenant_id = s.tenant_id AND e.seq > s.from_seq AND e.seq <= s.to_seq
        WHERE e.action = ANY (s.event_types)
       ON CONFLICT (tenant_id, webhook_id, event_seq) DO NOTHING
       RETURNING 1
     ), moved AS (
       UPDATE webhooks w SET dispatched_through = s.to_seq
         FROM claimed s
        WHERE w.tenant_id = s.tenant_id AND w.id = s.id
       RETURNING 1
     )
     SELECT (SELECT count(*) FROM created) AS deliveries, (SELECT count(*) FROM moved) AS subscriptions`,
    [now, maxSubscriptions, maxEvents],
  );
  return { deliveries: Number(rows[0]?.deliveries ?? 0), subscriptions: Number(rows[0]?.subscriptions ?? 0) };
}

/** A delivery a worker holds: what it sends, where, signed with which secrets. */
export interface ClaimedDelivery {
  tenantId: string;
  webhookId: string;
  eventSeq: number;
  /** The attempt this claim makes (1-based): its place in the retry schedule. */
  attempts: number;
  /** The claim: the outcome is recorded only while the delivery's `claims` still equals it (migration 015). */
  claim: number;
  url: string;
  secretSealed: Buffer;
  previousSecretSealed: Buffer | null;
  previousSecretUntil: number | null;
  event: WireEvent;
}

interface ClaimRow extends WireEventRow {
  tenant_id: string;
  webhook_id: string;
  event_seq: number | string;
  attempts: number;
  claims: number | string;
  url: string;
  secret_sealed: Buffer;
  previous_secret_sealed: Buffer | null;
  previous_secret_until: number | string | null;
}

function toClaimedDelivery(row: ClaimRow): ClaimedDelivery {
  return {
    tenantId: row.tenant_id,
    webhookId: row.webhook_id,
    eventSeq: Number(row.event_seq),
    attempts: row.attempts,
    claim: Number(row.claims),
    url: row.url,
    secretSealed: row.secret_sealed,
    previousSecretSealed: row.previous_secret_sealed,
    previousSecretUntil: row.previous_secret_until === null ? null : Number(row.previous_secret_until),
    event: toWireEvent(row),
  };
}

/**
 * Claims up to `limit` due deliveries of enabled subscriptions (FOR UPDATE SKIP LOCKED): each claim counts one more
 * attempt and pushes `next_attempt_at` to `leaseUntil`, so no other worker takes it while this one sends, and it
 * becomes due again if this worker dies (migration 013). One statement, committed on its own.
 */
export async function claimDueDeliveries(db: Queryable, now: number, leaseUntil: number, limit: number): Promise<ClaimedDelivery[]> {
  const { rows } = await db.query<ClaimRow>(
    `WITH due AS (
       SELECT d.tenant_id, d.webhook_id, d.event_seq
         FROM webhook_deliveries d
         JOIN webhooks w ON w.tenant_id = d.tenant_id AND w.id = d.webhook_id
        WHERE d.state = 'pending' AND d.next_attempt_at <= $1::bigint AND w.enabled
        ORDER BY d.next_attempt_at
        LIMIT $3
          FOR UPDATE OF d SKIP LOCKED
     )
     UPDATE webhook_deliveries d SET attempts = d.attempts + 1, claims = d.claims + 1, next_attempt_at = $2::bigint
       FROM due, webhooks w, audit_events e
      WHERE d.tenant_id = due.tenant_id AND d.webhook_id = due.webhook_id AND d.event_seq = due.event_seq
        AND w.tenant_id = d.tenant_id AND w.id = d.webhook_id
        AND e.tenant_id = d.tenant_id AND e.seq = d.event_seq
     RETURNING d.tenant_id, d.webhook_id, d.event_seq, d.attempts, d.claims, w.url, w.secret_sealed, w.previous_secret_sealed,
               w.previous_secret_until, ${WIRE_EVENT_COLUMNS.split(', ').map((column) => `e.${column}`).join(', ')}`,
    [now, leaseUntil, limit],
  );
  return rows.map(toClaimedDelivery);
}

/** What a subscription needs to be sent a test ping: its address and secrets. */
export interface WebhookTarget {
  url: string;
  dispatchedThrough: number;
  eventTypes: string[];
  secretSealed: Buffer;
  previousSecretSealed: Buffer | null;
  previousSecretUntil: number | null;
}

export async function findWebhookTarget(db: Queryable, tenantId: string, webhookId: string): Promise<WebhookTarget | null> {
  const { rows } = await db.query<{
    url: string;
    dispatched_through: number | string;
    event_types: string[];
    secret_sealed: Buffer;
    previous_secret_sealed: Buffer | null;
    previous_secret_until: number | string | null;
  }>(
    `SELECT url, dispatched_through, event_types, secret_sealed, previous_secret_sealed, previous_secret_until
       FROM webhooks WHERE tenant_id = $1 AND id = $2`,
    [tenantId, webhookId],
  );
  const row = rows[0];
  if (!row) return null;
  return {
    url: row.url,
    dispatchedThrough: Number(row.dispatched_through),
    eventTypes: row.event_types,
    secretSealed: row.secret_sealed,
    previousSecretSealed: row.previous_secret_sealed,
    previousSecretUntil: row.previous_secret_until === null ? null : Number(row.previous_secret_until),
  };
}

/** One attempt as the log keeps it (docs/contract.md 10). */
export interface AttemptInput {
  tenantId: string;
  webhookId: string;
  eventId: string;
  time: number;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  nextAttemptAt: number | null;
}

/**
 * Appends attempts to the log, in one statement. The attempts of a subscription deleted while they were in flight are
 * dropped with it (its log went with it): the others of the batch are still recorded. FOR KEY SHARE holds each
 * subscription until commit, and skips one a concurrent DELETE removed, so the foreign key never fails.
 */
export async function insertAttempts(db: Queryable, attempts: readonly AttemptInput[]): Promise<void> {
  if (attempts.length === 0) return;
  await db.query(
    `INSERT INTO webhook_attempts (tenant_id, webhook_id, event_id, time, status_code, error, duration_ms, next_attempt_at)
     SELECT a.* FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::bigint[], $5::int[], $6::text[], $7::int[], $8::bigint[])
                     AS a (tenant_id, webhook_id, event_id, time, status_code, error, duration_ms, next_attempt_at)
       JOIN webhooks w ON w.tenant_id = a.tenant_id AND w.id = a.webhook_id
        FOR KEY SHARE OF w`,
    [
      attempts.map((a) => a.tenantId),
      attempts.map((a) => a.webhookId),
      attempts.map((a) => a.eventId),
      attempts.map((a) => a.time),
      attempts.map((a) => a.statusCode),
      attempts.map((a) => a.error),
      attempts.map((a) => a.durationMs),
      attempts.map((a) => a.nextAttemptAt),
    ],
  );
}

/** What a claim came to: `delivered`, `pending` again at `nextAttemptAt`, or `failed` (schedule exhausted). */
export interface Settlement {
  tenantId: string;
  webhookId: string;
  eventSeq: number;
  /** The claim it settles (ClaimedDelivery.claim). */
  claim: number;
  state: 'delivered' | 'pending' | 'failed';
  nextAttemptAt: number | null;
}

const deliveryKey = (tenantId: string, webhookId: string, eventSeq: number) => `${tenantId}/${webhookId}/${eventSeq}`;

/** One claim's outcome and the attempt that came to it, as a batch records them. */
export interface Outcome {
  settlement: Settlement;
  attempt: Omit<AttemptInput, 'tenantId' | 'webhookId' | 'nextAttemptAt'>;
}

/**
 * Records a batch of attempts in one statement: each claim's outcome, only while nobody claimed or replayed its
 * delivery since (`claims` still equals the claim, migrations 013 and 015: not `attempts`, which a replay resets), and
 * every attempt in the log, with its next attempt time only when its outcome was recorded (a stale claim schedules
 * nothing). The log takes FOR KEY SHARE of each subscription, as insertAttempts does, so an attempt of a subscription
 * deleted meanwhile is dropped with it and the others are still recorded. Answers the keys (`tenant/webhook/seq`)
 * whose outcome was recorded.
 */
export async function recordOutcomes(db: Queryable, outcomes: readonly Outcome[]): Promise<Set<string>> {
  if (outcomes.length === 0) return new Set();
  const { rows } = await db.query<{ tenant_id: string; webhook_id: string; event_seq: number | string }>(
    `WITH o AS (
       SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::bigint[], $4::bigint[], $5::text[], $6::bigint[],
                            $7::uuid[], $8::bigint[], $9::int[], $10::text[], $11::int[])
                AS o (tenant_id, webhook_id, event_seq, claim, state, next_attempt_at, event_id, time, status_code, error, duration_ms)
     ), settled AS (
       UPDATE webhook_deliveries d SET state = o.state, next_attempt_at = o.next_attempt_at
         FROM o
        WHERE d.tenant_id = o.tenant_id AND d.webhook_id = o.webhook_id AND d.event_seq = o.event_seq
          AND d.claims = o.claim AND d.state = 'pending'
       RETURNING d.tenant_id, d.webhook_id, d.event_seq
     ), logged AS (
       INSERT INTO webhook_attempts (tenant_id, webhook_id, event_id, time, status_code, error, duration_ms, next_attempt_at)
       SELECT o.tenant_id, o.webhook_id, o.event_id, o.time, o.status_code, o.error, o.duration_ms,
              CASE WHEN s.event_seq IS NOT NULL THEN o.next_attempt_at END
         FROM o
         JOIN webhooks w ON w.tenant_id = o.tenant_id AND w.id = o.webhook_id
         LEFT JOIN settled s ON s.tenant_id = o.tenant_id AND s.webhook_id = o.webhook_id AND s.event_seq = o.event_seq
          FOR KEY SHARE OF w
     )
     SELECT tenant_id, webhook_id, event_seq FROM settled`,
    [
      outcomes.map((o) => o.settlement.tenantId),
      outcomes.map((o) => o.settlement.webhookId),
      outcomes.map((o) => o.settlement.eventSeq),
      outcomes.map((o) => o.settlement.claim),
      outcomes.map((o) => o.settlement.state),
      outcomes.map((o) => (o.settlement.state === 'pending' ? o.settlement.nextAttemptAt : null)),
      outcomes.map((o) => o.attempt.eventId),
      outcomes.map((o) => o.attempt.time),
      outcomes.map((o) => o.attempt.statusCode),
      outcomes.map((o) => o.attempt.error),
      outcomes.map((o) => o.attempt.durationMs),
    ],
  );
  return new Set(rows.map((row) => deliveryKey(row.tenant_id, row.webhook_id, Number(row.event_seq))));
}

export { deliveryKey };

export interface WebhookKey {
  tenantId: string;
  webhookId: string;
}

/**
 * The CTE that locks the named subscriptions in (tenant, id) order: workers recording batches that share
 * subscriptions take their row locks in one order, so they never deadlock. NO KEY UPDATE (the updates below change no
 * key), so the FOR KEY SHARE each worker holds from logging its attempts (insertAttempts, or a foreign key check)
 * never blocks it: FOR UPDATE did, and two workers failing on one subscription deadlocked. `$1`, `$2`: tenant ids,
 * webhook ids.
 */
const LOCKED_WEBHOOKS = (condition: string) => `
  locked AS (
    SELECT w.tenant_id, w.id FROM webhooks w
      JOIN unnest($1::uuid[], $2::uuid[]) AS k (tenant_id, id) ON w.tenant_id = k.tenant_id AND w.id = k.id
     WHERE ${condition}
     ORDER BY w.tenant_id, w.id
       FOR NO KEY UPDATE OF w
  )`;

/** Successes: these subscriptions are no longer failing. Touches (and locks) only the ones that were. */
export async function clearFailing(db: Queryable, webhooks: readonly WebhookKey[]): Promise<void> {
  if (webhooks.length === 0) return;
  await db.query(
    `WITH ${LOCKED_WEBHOOKS('w.failing_since IS NOT NULL')}
     UPDATE webhooks w SET failing_since = NULL FROM locked l WHERE w.tenant_id = l.tenant_id AND w.id = l.id`,
    [webhooks.map((w) => w.tenantId), webhooks.map((w) => w.webhookId)],
  );
}

/**
 * Failures: each enabled subscription is failing since now unless it already was. Answers when each started failing
 * (`tenant/webhook` → time); a subscription no longer enabled is absent.
 */
export async function markFailing(db: Queryable, webhooks: readonly WebhookKey[], now: number): Promise<Map<string, number>> {
  if (webhooks.length === 0) return new Map();
  const { rows } = await db.query<{ tenant_id: string; id: string; failing_since: number | string }>(
    `WITH ${LOCKED_WEBHOOKS('w.enabled')}
     UPDATE webhooks w SET failing_since = coalesce(w.failing_since, $3::bigint)
       FROM locked l WHERE w.tenant_id = l.tenant_id AND w.id = l.id
     RETURNING w.tenant_id, w.id, w.failing_since`,
    [webhooks.map((w) => w.tenantId), webhooks.map((w) => w.webhookId), now],
  );
  return new Map(rows.map((row) => [`${row.tenant_id}/${row.id}`, Number(row.failing_since)]));
}

/** Disables enabled subscriptions, each for its reason; answers those this call disabled (so one event each is written). */
export async function disableWebhooks(
  db: Queryable,
  webhooks: readonly (WebhookKey & { reason: 'gone' | 'failing' })[],
  now: number,
): Promise<(WebhookKey & { reason: 'gone' | 'failing' })[]> {
  if (webhooks.length === 0) return [];
  const { rows } = await db.query<{ tenant_id: string; id: string; disabled_reason: 'gone' | 'failing' }>(
    `WITH ${LOCKED_WEBHOOKS('w.enabled')}
     UPDATE webhooks w SET enabled = false, disabled_reason = r.reason, disabled_at = $4::bigint, updated_at = $4::bigint
       FROM locked l, unnest($1::uuid[], $2::uuid[], $3::text[]) AS r (tenant_id, id, reason)
      WHERE w.tenant_id = l.tenant_id AND w.id = l.id AND r.tenant_id = l.tenant_id AND r.id = l.id
     RETURNING w.tenant_id, w.id, w.disabled_reason`,
    [webhooks.map((w) => w.tenantId), webhooks.map((w) => w.webhookId), webhooks.map((w) => w.reason), now],
  );
  return rows.map((row) => ({ tenantId: row.tenant_id, webhookId: row.id, reason: row.disabled_reason }));
}

/** An attempt as `GET /operatorapi/webhooks/{id}/deliveries` answers it. */
export interface Attempt {
  /** The log's own number, the page cursor's position. */
  position: number;
  eventId: string;
  time: number;
  statusCode?: number;
  error?: string;
  durationMs: number;
  nextAttemptTime?: number;
}

/** A keyset page of the subscription's attempts, newest first (`beforeId`: the last one of the previous page). */
export async function listAttempts(
  db: Queryable,
  tenantId: string,
  webhookId: string,
  eventId: string | undefined,
  beforeId: number | null,
  limit: number,
): Promise<Attempt[]> {
  const { rows } = await db.query<{
    id: number | string;
    event_id: string;
    time: number | string;
    status_code: number | null;
    error: string | null;
    duration_ms: number;
    next_attempt_at: number | string | null;
  }>(
    `SELECT id, event_id, time, status_code, error, duration_ms, next_attempt_at
       FROM webhook_attempts
      WHERE tenant_id = $1 AND webhook_id = $2
        AND ($3::uuid IS NULL OR event_id = $3::uuid)
        AND ($4::bigint IS NULL OR id < $4::bigint)
      ORDER BY id DESC
      LIMIT $5`,
    [tenantId, webhookId, eventId ?? null, beforeId, limit],
  );
  return rows.map((row) => ({
    position: Number(row.id),
    eventId: row.event_id,
    time: Number(row.time),
    ...(row.status_code !== null ? { statusCode: row.status_code } : {}),
    ...(row.error !== null ? { error: row.error } : {}),
    durationMs: row.duration_ms,
    ...(row.next_attempt_at !== null ? { nextAttemptTime: Number(row.next_attempt_at) } : {}),
  }));
}

/** Why a named event cannot be replayed to a subscription: not an event of its tenant, or not of a type it receives. */
export interface UnreplayableEvent {
  eventId: string;
  reason: 'unknown' | 'unsubscribed';
}

/** The ids of `eventIds` that are not the tenant's events of a type the subscription receives, and why. */
export async function unreplayableEvents(db: Queryable, tenantId: string, webhookId: string, eventIds: readonly string[]): Promise<UnreplayableEvent[]> {
  const { rows } = await db.query<{ event_id: string; known: boolean }>(
    `SELECT wanted.event_id, e.event_id IS NOT NULL AS known
       FROM unnest($3::uuid[]) WITH ORDINALITY AS wanted (event_id, ordinal)
       JOIN webhooks w ON w.tenant_id = $1 AND w.id = $2
       LEFT JOIN audit_events e ON e.tenant_id = $1 AND e.event_id = wanted.event_id
      WHERE e.event_id IS NULL OR NOT (e.action = ANY (w.event_types))
      ORDER BY wanted.ordinal`,
    [tenantId, webhookId, eventIds],
  );
  return rows.map((row) => ({ eventId: row.event_id, reason: row.known ? 'unsubscribed' : 'unknown' }));
}

/**
 * Replays events to a subscription (docs/contract.md 10): the tenant's events named by id, or every event of the
 * subscription's types since a time, become pending deliveries due now, in one statement. A delivery that exists
 * (delivered, failed or pending) is reset: its attempts count again from the start of the schedule. Only events the
 * subscription has already been dispatched: later ones reach it through the dispatcher anyway.
 * A claim in flight is superseded (`claims` moves, migration 015): its outcome is not recorded, the replay's is.
 */
export async function replayDeliveries(
  db: Queryable,
  tenantId: string,
  webhookId: string,
  selection: { eventIds: readonly string[] } | { since: number },
  now: number,
): Promise<number> {
  const byIds = 'eventIds' in selection;
  const { rowCount } = await db.query(
    `INSERT INTO webhook_deliveries (tenant_id, webhook_id, event_seq, state, attempts, next_attempt_at, created_at)
     SELECT w.tenant_id, w.id, e.seq, 'pending', 0, $4::bigint, $4::bigint
       FROM webhooks w
       JOIN audit_events e ON e.tenant_id = w.tenant_id
      WHERE w.tenant_id = $1 AND w.id = $2
        AND ${byIds ? 'e.event_id = ANY ($3::uuid[])' : 'e.time >= $3::bigint AND e.seq <= w.dispatched_through AND e.action = ANY (w.event_types)'}
     ON CONFLICT (tenant_id, webhook_id, event_seq)
     DO UPDATE SET state = 'pending', attempts = 0, claims = webhook_deliveries.claims + 1,
                   next_attempt_at = EXCLUDED.next_attempt_at, created_at = EXCLUDED.created_at`,
    [tenantId, webhookId, byIds ? selection.eventIds : selection.since, now],
  );
  return rowCount;
}

/** How old the oldest delivery still waiting for an enabled subscription is, in milliseconds (0 when none waits). */
export async function oldestPendingAgeMs(db: Queryable, now: number): Promise<number> {
  const { rows } = await db.query<{ oldest: number | string | null }>(
    `SELECT min(d.created_at) AS oldest
       FROM webhook_deliveries d
       JOIN webhooks w ON w.tenant_id = d.tenant_id AND w.id = d.webhook_id AND w.enabled
      WHERE d.state = 'pending'`,
  );
  const oldest = rows[0]?.oldest;
  return oldest === null || oldest === undefined ? 0 : Math.max(0, now - Number(oldest));
}

/**
 * Deletes up to `limit` delivery attempts logged before `before` (EVENT_RETENTION_DAYS: the attempt log is kept as
 * long as the events are); answers how many went.
 */
export async function pruneAttempts(db: Queryable, before: number, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM webhook_attempts WHERE (tenant_id, webhook_id, id) IN (
       SELECT tenant_id, webhook_id, id FROM webhook_attempts WHERE time < $1::bigint ORDER BY time LIMIT $2 FOR UPDATE SKIP LOCKED)`,
    [before, limit],
  );
  return rowCount ?? 0;
}
