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
  /** The claim: the outcome is recorded only while `attempts` still equals it. */
  attempts: number;
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
     UPDATE webhook_deliveries d SET attempts = d.attempts + 1, next_attempt_at = $2::bigint
       FROM due, webhooks w, audit_events e
      WHERE d.tenant_id = due.tenant_id AND d.webhook_id = due.webhook_id AND d.event_seq = due.event_seq
        AND w.tenant_id = d.tenant_id AND w.id = d.webhook_id
        AND e.tenant_id = d.tenant_id AND e.seq = d.event_seq
     RETURNING d.tenant_id, d.webhook_id, d.event_seq, d.attempts, w.url, w.secret_sealed, w.previous_secret_sealed,
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

export async function insertAttempt(db: Queryable, attempt: AttemptInput): Promise<void> {
  await db.query(
    `INSERT INTO webhook_attempts (tenant_id, webhook_id, event_id, time, status_code, error, duration_ms, next_attempt_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [
      attempt.tenantId,
      attempt.webhookId,
      attempt.eventId,
      attempt.time,
      attempt.statusCode,
      attempt.error,
      attempt.durationMs,
      attempt.nextAttemptAt,
    ],
  );
}

/**
 * Records a claim's outcome: `delivered`, or `pending` again at `nextAttemptAt`, or `failed` (schedule exhausted).
 * Only while nobody claimed the delivery after this worker (`attempts` still equals the claim); returns whether it did.
 */
export async function settleDelivery(
  db: Queryable,
  delivery: { tenantId: string; webhookId: string; eventSeq: number; attempts: number },
  state: 'delivered' | 'pending' | 'failed',
  nextAttemptAt: number | null,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE webhook_deliveries SET state = $5, next_attempt_at = $6
      WHERE tenant_id = $1 AND webhook_id = $2 AND event_seq = $3 AND attempts = $4 AND state = 'pending'`,
    [delivery.tenantId, delivery.webhookId, delivery.eventSeq, delivery.attempts, state, state === 'pending' ? nextAttemptAt : null],
  );
  return rowCount > 0;
}

/** A success: the subscription is no longer failing. */
export async function clearFailing(db: Queryable, tenantId: string, webhookId: string): Promise<void> {
  await db.query(`UPDATE webhooks SET failing_since = NULL WHERE tenant_id = $1 AND id = $2 AND failing_since IS NOT NULL`, [
    tenantId,
    webhookId,
  ]);
}

/**
 * A failure: the subscription is failing since now unless it already was; returns when it started failing, or null
 * when the subscription is gone or no longer enabled.
 */
export async function markFailing(db: Queryable, tenantId: string, webhookId: string, now: number): Promise<number | null> {
  const { rows } = await db.query<{ failing_since: number | string }>(
    `UPDATE webhooks SET failing_since = coalesce(failing_since, $3::bigint)
      WHERE tenant_id = $1 AND id = $2 AND enabled
     RETURNING failing_since`,
    [tenantId, webhookId, now],
  );
  return rows[0] ? Number(rows[0].failing_since) : null;
}

/** Disables an enabled subscription for `reason`; returns whether this call did (so one event is written). */
export async function disableWebhook(
  db: Queryable,
  tenantId: string,
  webhookId: string,
  reason: 'gone' | 'failing',
  now: number,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE webhooks SET enabled = false, disabled_reason = $3, disabled_at = $4, updated_at = $4
      WHERE tenant_id = $1 AND id = $2 AND enabled`,
    [tenantId, webhookId, reason, now],
  );
  return rowCount > 0;
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
     DO UPDATE SET state = 'pending', attempts = 0, next_attempt_at = EXCLUDED.next_attempt_at, created_at = EXCLUDED.created_at`,
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
