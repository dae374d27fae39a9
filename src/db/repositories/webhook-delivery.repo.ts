// SQL for webhook delivery (docs/api-reference.md 10): fresh events sent from each subscription's cursor (migration 018), the
// deliveries of retries and replays claimed and settled (migrations 013, 015), and the attempt log.
//
// One repository for the worker, the attempt recorder and the operator's endpoints alike: a claim and the recording
// of its outcome fence each other (`sending_claim`, `claims`, which a replay moves too), one statement writes the
// cursor, the retry rows and the log at once (recordFreshBatches), and every recorder takes a subscription before its
// delivery rows, in one order (LOCKED_WEBHOOKS).
//
// Every statement that locks or writes names one tenant (docs/house-style.md convention 6: on a cluster sharded by
// tenant it runs on the one node holding that tenant's rows). Work that spans tenants is a plain read that locks
// nothing (which subscriptions, which deliveries are due), then one statement per tenant, tenants in ascending order:
// the (tenant, id) lock order of a whole batch is kept, statement after statement.
import type { Queryable } from '../database.js';
import { WIRE_EVENT_COLUMNS, toWireEvent, type WireEvent, type WireEventRow } from './audit.repo.js';

/** A subscription a worker holds (migration 018): the batch of its fresh events it sends, where, signed with which secrets. */
export interface FreshBatch {
  tenantId: string;
  webhookId: string;
  /** The lease: the batch is recorded only while the subscription's `sending_claim` still equals it. */
  claim: number;
  /** Where the cursor moves once the batch is recorded: every event of the subscription's types up to it is in `events`. */
  bound: number;
  /** Whether the tenant has events past the bound (the batch was full, or its range was cut short). */
  more: boolean;
  url: string;
  secretSealed: Buffer;
  previousSecretSealed: Buffer | null;
  previousSecretUntil: number | null;
  /** In sequence order; empty when no event of the range is of the subscription's types. */
  events: WireEvent[];
}

interface FreshRow extends Partial<WireEventRow> {
  tenant_id: string;
  webhook_id: string;
  sending_claim: number | string;
  to_seq: number | string;
  last_seq: number | string;
  url: string;
  secret_sealed: Buffer;
  previous_secret_sealed: Buffer | null;
  previous_secret_until: number | string | null;
}

/**
 * No fresh lease is longer (the service's: FRESH_SUBSCRIPTIONS timeouts of at most 60 s each, plus a margin): a
 * `sending_until` further ahead of a claimer's clock than this is not a lease (claimFreshBatches).
 */
export const LONGEST_FRESH_LEASE_MS = 300_000;

/** Items of several tenants as one list per tenant, in ascending tenant order (the lock order of a batch). */
function byTenant<T extends { tenantId: string }>(items: readonly T[]): [tenantId: string, items: T[]][] {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    let group = groups.get(item.tenantId);
    if (!group) groups.set(item.tenantId, (group = []));
    group.push(item);
  }
  return [...groups.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/** Candidates of several tenants as one list per tenant, each tenant where its first candidate came. */
function inFirstOrder<T extends { tenantId: string }>(items: readonly T[]): [tenantId: string, items: T[]][] {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    let group = groups.get(item.tenantId);
    if (!group) groups.set(item.tenantId, (group = []));
    group.push(item);
  }
  return [...groups.entries()];
}

/**
 * How many candidates a claim reads per place it fills: instances claiming at once read the same candidates, and the
 * ones another took (locked, or leased by then) are skipped, so each reads a few more than it can take.
 */
const CANDIDATES_PER_CLAIM = 2;

/**
 * The subscriptions whose lease is free (or not one, see claimFreshBatches) and whose tenant has committed events past
 * their cursor, longest unserved first: a read of every tenant's that locks nothing.
 */
const FRESH_CANDIDATES = `SELECT w.tenant_id, w.id FROM webhooks w
    JOIN tenant_audit_counters c ON c.tenant_id = w.tenant_id
   WHERE w.enabled AND c.last_seq > w.dispatched_through
     AND (w.sending_until IS NULL OR w.sending_until <= $1::bigint OR w.sending_until > $2::bigint)
   ORDER BY CASE WHEN w.sending_until <= $2::bigint THEN w.sending_until END NULLS FIRST
   LIMIT $3`;

/** claimFreshBatches' claim of one tenant's candidates (`$7` the tenant, `$8` the candidates' ids). */
const CLAIM_FRESH = `WITH due AS (
       SELECT w.id, least(w.dispatched_through + $5::bigint, c.last_seq) AS to_seq, c.last_seq
         FROM webhooks w
         JOIN tenant_audit_counters c ON c.tenant_id = $7
        WHERE w.tenant_id = $7 AND w.id = ANY ($8::uuid[]) AND w.enabled AND c.last_seq > w.dispatched_through
          AND (w.sending_until IS NULL OR w.sending_until <= $1::bigint OR w.sending_until > $6::bigint)
        ORDER BY CASE WHEN w.sending_until <= $6::bigint THEN w.sending_until END NULLS FIRST
        LIMIT $3
          FOR NO KEY UPDATE OF w SKIP LOCKED
     ), claimed AS (
       UPDATE webhooks w SET sending_until = $2::bigint, sending_claim = w.sending_claim + 1
         FROM due
        WHERE w.tenant_id = $7 AND w.id = due.id
       RETURNING w.id, w.event_types, w.dispatched_through, w.sending_claim, due.to_seq, due.last_seq, w.url, w.secret_sealed,
                 w.previous_secret_sealed, w.previous_secret_until
     )
     SELECT $7::uuid AS tenant_id, s.id AS webhook_id, s.sending_claim, s.to_seq, s.last_seq, s.url, s.secret_sealed, s.previous_secret_sealed,
            s.previous_secret_until, ${WIRE_EVENT_COLUMNS.split(', ').map((column) => `e.${column}`).join(', ')}
       FROM claimed s
       LEFT JOIN LATERAL (
         SELECT ${WIRE_EVENT_COLUMNS} FROM audit_events e
          WHERE e.tenant_id = $7 AND e.seq > s.dispatched_through AND e.seq <= s.to_seq AND e.action = ANY (s.event_types)
          ORDER BY e.seq
          LIMIT $4
       ) e ON true
      ORDER BY s.id, e.seq`;

/**
 * Leases up to `maxSubscriptions` enabled subscriptions whose tenant has committed events past their cursor
 * (`dispatched_through`) and whose lease is free or has run out, and reads each one's batch: its events after the
 * cursor, of its types, at most `maxEvents` of them, among the next `maxScan` sequence numbers at most (so a
 * subscription whose types match few events still moves on, in bounded steps). Bounded work: one read of the
 * candidates (FRESH_CANDIDATES, at most CANDIDATES_PER_CLAIM × `maxSubscriptions`, locking nothing), then one claiming
 * statement per tenant among them, each committed on its own, until `maxSubscriptions` are leased.
 *
 * The lease (migration 018): FOR NO KEY UPDATE SKIP LOCKED, so instances claiming at once take different subscriptions
 * and never wait; a candidate another instance leased meanwhile no longer qualifies when its tenant's statement reads
 * it again. `sending_until` keeps others away while the batch is sent (and brings it back if this worker dies),
 * and the bumped `sending_claim` fences the recording. Recording sets `sending_until` to the time it released the
 * lease, so the subscriptions served longest ago (or never) are taken first, whichever their tenant: one busy
 * subscription (or tenant) never keeps the others waiting beyond a round of claims. A `sending_until` later than any
 * lease this clock could give (LONGEST_FRESH_LEASE_MS) was written under a clock ahead of this one (another
 * instance's, or this one's before it was set back): it is neither a lease nor an order this clock can honour, so the
 * subscription is free and counts as never served; else an instance whose clock ran an hour ahead would hold every
 * subscription it served for that hour. The batch's bound is its last event when it is full, else the
 * end of the range read. The tenant's `last_seq` is read, not locked: a tenant's events commit in sequence order
 * (migration 008), so every event up to the committed `last_seq` is visible to the same snapshot, and none is skipped.
 */
export async function claimFreshBatches(
  db: Queryable,
  now: number,
  leaseUntil: number,
  maxSubscriptions: number,
  maxEvents: number,
  maxScan: number,
): Promise<FreshBatch[]> {
  const horizon = Math.max(leaseUntil, now + LONGEST_FRESH_LEASE_MS);
  const { rows: candidates } = await db.query<{ tenant_id: string; id: string }>(FRESH_CANDIDATES, [
    now,
    horizon,
    maxSubscriptions * CANDIDATES_PER_CLAIM,
  ]);
  const batches = new Map<string, FreshBatch>();
  for (const [tenantId, ofTenant] of inFirstOrder(candidates.map((row) => ({ tenantId: row.tenant_id, id: row.id })))) {
    const room = maxSubscriptions - batches.size;
    if (room <= 0) break;
    const { rows } = await db.query<FreshRow>(CLAIM_FRESH, [
      now,
      leaseUntil,
      room,
      maxEvents,
      maxScan,
      horizon,
      tenantId,
      ofTenant.map((candidate) => candidate.id),
    ]);
    for (const row of rows) {
      const key = `${row.tenant_id}/${row.webhook_id}`;
      let batch = batches.get(key);
      if (!batch) {
        batch = {
          tenantId: row.tenant_id,
          webhookId: row.webhook_id,
          claim: Number(row.sending_claim),
          bound: Number(row.to_seq),
          more: Number(row.to_seq) < Number(row.last_seq),
          url: row.url,
          secretSealed: row.secret_sealed,
          previousSecretSealed: row.previous_secret_sealed,
          previousSecretUntil: row.previous_secret_until === null ? null : Number(row.previous_secret_until),
          events: [],
        };
        batches.set(key, batch);
      }
      if (row.event_id !== undefined && row.event_id !== null) batch.events.push(toWireEvent(row as WireEventRow));
    }
  }
  // A full batch may have more events after it: it ends at its last event, and the rest is the next batch's.
  for (const batch of batches.values()) {
    if (batch.events.length >= maxEvents) {
      batch.bound = batch.events[batch.events.length - 1]!.sequence;
      batch.more = true;
    }
  }
  return [...batches.values()];
}

/** One fresh event's attempt, as the batch's recording takes it. */
export interface FreshAttempt {
  eventSeq: number;
  /** The attempt log's entry (the event's id is the webhook-id sent). */
  attempt: Omit<AttemptInput, 'tenantId' | 'webhookId' | 'nextAttemptAt'>;
  /** null when it succeeded; else what its delivery row becomes: retried at `nextAttemptAt`, or `failed` (schedule exhausted). */
  retry: { state: 'pending' | 'failed'; nextAttemptAt: number | null } | null;
}

/** A sent batch to record: the claim it was sent under, where its cursor moves, and its attempts. */
export interface FreshOutcome {
  tenantId: string;
  webhookId: string;
  claim: number;
  bound: number;
  attempts: readonly FreshAttempt[];
}

/**
 * Records sent batches (migration 018), in the caller's transaction, tenant after tenant in plain statements that each
 * name the tenant (the subscriptions locked, their cursors, the retry rows, the log), each only while its claim is still the subscription's
 * (`sending_claim` unchanged: no other worker took the range after this one's lease ran out) and the subscription is
 * still enabled: its cursor moves to the batch's bound and its lease is released (`sending_until` becomes `now`, the
 * order in which claims take subscriptions next), and each event that failed becomes a
 * delivery row in retry state, its first attempt counted (a delivery a replay made meanwhile is left as it is). A
 * claim still current on a subscription disabled meanwhile only releases its lease: its events are sent again when it
 * is enabled. Every attempt is logged, with its next attempt time only when its batch was recorded; the attempts of a
 * subscription deleted meanwhile are dropped with it, and the others are still recorded.
 *
 * The subscriptions are locked first, in (tenant, id) order, as LOCKED_WEBHOOKS below does: recorders sharing
 * subscriptions never deadlock. The events cannot go meanwhile: retention keeps every event past a cursor of a
 * subscription of its type (audit.repo.ts pruneEvents). Answers the subscriptions (`tenant/webhook`) recorded.
 */
export async function recordFreshBatches(db: Queryable, batches: readonly FreshOutcome[], now: number): Promise<Set<string>> {
  const recorded = new Set<string>();
  for (const [tenantId, ofTenant] of byTenant(batches)) {
    const locked = await lockWebhooks(db, ofTenant);
    if (locked.size === 0) continue;
    const { rows } = await db.query<{ id: string; enabled: boolean }>(
      `UPDATE webhooks w
          SET dispatched_through = CASE WHEN w.enabled THEN greatest(w.dispatched_through, b.bound) ELSE w.dispatched_through END,
              sending_until = $5::bigint
         FROM unnest($2::uuid[], $3::bigint[], $4::bigint[]) AS b (id, claim, bound)
        WHERE w.tenant_id = $1 AND w.id = b.id AND w.sending_claim = b.claim
       RETURNING w.id, w.enabled`,
      [tenantId, ofTenant.map((b) => b.webhookId), ofTenant.map((b) => b.claim), ofTenant.map((b) => b.bound), now],
    );
    const enabled = new Set(rows.filter((row) => row.enabled).map((row) => row.id));
    const attempts = ofTenant
      .filter((batch) => locked.has(`${tenantId}/${batch.webhookId}`))
      .flatMap((batch) => batch.attempts.map((a) => ({ webhookId: batch.webhookId, recorded: enabled.has(batch.webhookId), ...a })));
    const retried = attempts.filter((a) => a.recorded && a.retry !== null);
    if (retried.length > 0) {
      await db.query(
        `INSERT INTO webhook_deliveries (tenant_id, webhook_id, event_seq, state, attempts, next_attempt_at, created_at)
         SELECT $1, o.webhook_id, o.event_seq, o.retry_state, 1, o.next_attempt_at, e.time
           FROM unnest($2::uuid[], $3::bigint[], $4::text[], $5::bigint[]) AS o (webhook_id, event_seq, retry_state, next_attempt_at)
           JOIN audit_events e ON e.tenant_id = $1 AND e.seq = o.event_seq
         ON CONFLICT (tenant_id, webhook_id, event_seq) DO NOTHING`,
        [
          tenantId,
          retried.map((a) => a.webhookId),
          retried.map((a) => a.eventSeq),
          retried.map((a) => a.retry!.state),
          retried.map((a) => a.retry!.nextAttemptAt),
        ],
      );
    }
    await appendAttempts(
      db,
      tenantId,
      attempts.map((a) => ({ webhookId: a.webhookId, ...a.attempt, nextAttemptAt: a.recorded ? (a.retry?.nextAttemptAt ?? null) : null })),
    );
    for (const id of enabled) recorded.add(`${tenantId}/${id}`);
  }
  return recorded;
}

/**
 * Appends one tenant's attempts to the log, of subscriptions the caller's transaction holds (lockWebhooks): a plain
 * insert, no row lock in it (a cluster does not run one inside an INSERT … SELECT).
 */
async function appendAttempts(db: Queryable, tenantId: string, attempts: readonly Omit<AttemptInput, 'tenantId'>[]): Promise<void> {
  if (attempts.length === 0) return;
  await db.query(
    `INSERT INTO webhook_attempts (tenant_id, webhook_id, event_id, time, status_code, error, duration_ms, next_attempt_at)
     SELECT $1, a.* FROM unnest($2::uuid[], $3::uuid[], $4::bigint[], $5::int[], $6::text[], $7::int[], $8::bigint[])
                     AS a (webhook_id, event_id, time, status_code, error, duration_ms, next_attempt_at)`,
    [
      tenantId,
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

/** The pending deliveries of enabled subscriptions due now, oldest due first: a read of every tenant's that locks nothing. */
const DUE_CANDIDATES = `SELECT d.tenant_id, d.webhook_id, d.event_seq
    FROM webhook_deliveries d
    JOIN webhooks w ON w.tenant_id = d.tenant_id AND w.id = d.webhook_id
   WHERE d.state = 'pending' AND d.next_attempt_at <= $1::bigint AND w.enabled
   ORDER BY d.next_attempt_at
   LIMIT $2`;

/** claimDueDeliveries' claim of one tenant's candidates (`$4` the tenant, `$5`, `$6` the candidates' keys). */
const CLAIM_DUE = `WITH due AS (
       SELECT d.webhook_id, d.event_seq
         FROM webhook_deliveries d
         JOIN unnest($5::uuid[], $6::bigint[]) AS k (webhook_id, event_seq) ON d.webhook_id = k.webhook_id AND d.event_seq = k.event_seq
         JOIN webhooks w ON w.tenant_id = $4 AND w.id = d.webhook_id
        WHERE d.tenant_id = $4 AND d.state = 'pending' AND d.next_attempt_at <= $1::bigint AND w.enabled
        ORDER BY d.next_attempt_at
        LIMIT $3
          FOR UPDATE OF d SKIP LOCKED
     )
     UPDATE webhook_deliveries d SET attempts = d.attempts + 1, claims = d.claims + 1, next_attempt_at = $2::bigint
       FROM due, webhooks w, audit_events e
      WHERE d.tenant_id = $4 AND d.webhook_id = due.webhook_id AND d.event_seq = due.event_seq
        AND w.tenant_id = $4 AND w.id = d.webhook_id
        AND e.tenant_id = $4 AND e.seq = d.event_seq
     RETURNING d.tenant_id, d.webhook_id, d.event_seq, d.attempts, d.claims, w.url, w.secret_sealed, w.previous_secret_sealed,
               w.previous_secret_until, ${WIRE_EVENT_COLUMNS.split(', ').map((column) => `e.${column}`).join(', ')}`;

/**
 * Claims up to `limit` due deliveries (retries and replays; fresh events go by claimFreshBatches) of enabled
 * subscriptions, oldest due first whichever their tenant: one read of the candidates (DUE_CANDIDATES, at most
 * CANDIDATES_PER_CLAIM × `limit`, locking nothing), then one statement per tenant among them, each committed on its
 * own, that takes them FOR UPDATE SKIP LOCKED if they are still due (another instance may have claimed some
 * meanwhile): each claim counts one more attempt and pushes `next_attempt_at` to `leaseUntil`, so no other worker
 * takes it while this one sends, and it becomes due again if this worker dies (migration 013).
 */
export async function claimDueDeliveries(db: Queryable, now: number, leaseUntil: number, limit: number): Promise<ClaimedDelivery[]> {
  const { rows: candidates } = await db.query<{ tenant_id: string; webhook_id: string; event_seq: number | string }>(DUE_CANDIDATES, [
    now,
    limit * CANDIDATES_PER_CLAIM,
  ]);
  const claimed: ClaimedDelivery[] = [];
  const keyed = candidates.map((row) => ({ tenantId: row.tenant_id, webhookId: row.webhook_id, eventSeq: Number(row.event_seq) }));
  for (const [tenantId, ofTenant] of inFirstOrder(keyed)) {
    const room = limit - claimed.length;
    if (room <= 0) break;
    const { rows } = await db.query<ClaimRow>(CLAIM_DUE, [
      now,
      leaseUntil,
      room,
      tenantId,
      ofTenant.map((candidate) => candidate.webhookId),
      ofTenant.map((candidate) => candidate.eventSeq),
    ]);
    claimed.push(...rows.map(toClaimedDelivery));
  }
  return claimed;
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

/** One attempt as the log keeps it (docs/api-reference.md 10). */
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
 * Appends attempts to the log, in the caller's transaction, two statements per tenant. The attempts of a subscription
 * deleted while they were in flight are dropped with it (its log went with it): the others of the batch are still
 * recorded. FOR KEY SHARE holds each subscription until commit, and skips one a concurrent DELETE removed, so the
 * foreign key never fails.
 */
export async function insertAttempts(db: Queryable, attempts: readonly AttemptInput[]): Promise<void> {
  for (const [tenantId, ofTenant] of byTenant(attempts)) {
    const { rows } = await db.query<{ id: string }>(
      'SELECT id FROM webhooks WHERE tenant_id = $1 AND id = ANY ($2::uuid[]) ORDER BY id FOR KEY SHARE',
      [tenantId, [...new Set(ofTenant.map((a) => a.webhookId))]],
    );
    const present = new Set(rows.map((row) => row.id));
    await appendAttempts(
      db,
      tenantId,
      ofTenant.filter((a) => present.has(a.webhookId)),
    );
  }
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
 * Records a batch of attempts, tenant after tenant in plain statements that each name the tenant (after locking
 * their subscriptions): each claim's outcome, only while
 * nobody claimed or replayed its delivery since (`claims` still equals the claim, migrations 013 and 015: not
 * `attempts`, which a replay resets), and every attempt in the log, with its next attempt time only when its outcome was recorded (a stale claim schedules
 * nothing). The log takes FOR KEY SHARE of each subscription, as insertAttempts does, so an attempt of a subscription
 * deleted meanwhile is dropped with it and the others are still recorded. Answers the keys (`tenant/webhook/seq`)
 * whose outcome was recorded.
 *
 * In the caller's transaction, which it leaves holding the subscriptions (lockWebhooks), taken first, before any of
 * their delivery rows: recordFreshBatches (its retry rows) and a DELETE (its cascade) also take a subscription before
 * its delivery rows. Taken after them, a recorder holding a delivery row and waiting for its subscription deadlocked
 * with a fresh recording of the same event (replayed by id past the cursor), or a DELETE, holding the subscription
 * and waiting for the delivery row.
 */
export async function recordOutcomes(db: Queryable, outcomes: readonly Outcome[]): Promise<Set<string>> {
  const settled = new Set<string>();
  // Every subscription first, tenant after tenant in order, then their delivery rows (the order recordFreshBatches
  // and a DELETE take too).
  const present = await lockWebhooks(db, outcomes.map(({ settlement }) => settlement));
  for (const [tenantId, ofTenant] of byTenant(outcomes.map((outcome) => ({ tenantId: outcome.settlement.tenantId, outcome })))) {
    const mine = ofTenant.map(({ outcome }) => outcome);
    const { rows } = await db.query<{ webhook_id: string; event_seq: number | string }>(
      `UPDATE webhook_deliveries d SET state = o.state, next_attempt_at = o.next_attempt_at
         FROM unnest($2::uuid[], $3::bigint[], $4::bigint[], $5::text[], $6::bigint[]) AS o (webhook_id, event_seq, claim, state, next_attempt_at)
        WHERE d.tenant_id = $1 AND d.webhook_id = o.webhook_id AND d.event_seq = o.event_seq
          AND d.claims = o.claim AND d.state = 'pending'
       RETURNING d.webhook_id, d.event_seq`,
      [
        tenantId,
        mine.map((o) => o.settlement.webhookId),
        mine.map((o) => o.settlement.eventSeq),
        mine.map((o) => o.settlement.claim),
        mine.map((o) => o.settlement.state),
        mine.map((o) => (o.settlement.state === 'pending' ? o.settlement.nextAttemptAt : null)),
      ],
    );
    const settledNow = new Set(rows.map((row) => deliveryKey(tenantId, row.webhook_id, Number(row.event_seq))));
    for (const key of settledNow) settled.add(key);
    await appendAttempts(
      db,
      tenantId,
      mine
        .filter((o) => present.has(`${tenantId}/${o.settlement.webhookId}`))
        .map((o) => ({
          webhookId: o.settlement.webhookId,
          ...o.attempt,
          nextAttemptAt:
            settledNow.has(deliveryKey(tenantId, o.settlement.webhookId, o.settlement.eventSeq)) && o.settlement.state === 'pending'
              ? o.settlement.nextAttemptAt
              : null,
        })),
    );
  }
  return settled;
}

export { deliveryKey };

export interface WebhookKey {
  tenantId: string;
  webhookId: string;
}

/**
 * The CTE that locks the named subscriptions of one tenant in id order: workers recording batches that share
 * subscriptions take their row locks in one order (tenant after tenant, byTenant), so they never deadlock. NO KEY
 * UPDATE (the updates below change no key), so the FOR KEY SHARE each worker holds from logging its attempts
 * (insertAttempts, or a foreign key check) never blocks it: FOR UPDATE did, and two workers failing on one subscription
 * deadlocked. `$1`: the tenant, `$2`: webhook ids.
 */
const LOCKED_WEBHOOKS = (condition: string) => `
  locked AS (
    SELECT w.id FROM webhooks w
      JOIN unnest($2::uuid[]) AS k (id) ON w.id = k.id
     WHERE w.tenant_id = $1 AND ${condition}
     ORDER BY w.id
       FOR NO KEY UPDATE OF w
  )`;

/**
 * Locks the named subscriptions in (tenant, id) order, one statement per tenant, and answers those that exist
 * (`tenant/webhook`), for a transaction that goes on to
 * change their delivery rows (recordOutcomes) and several of them in separate statements (failing_since, disabling):
 * each of those locks its own subset in order, but one after the other they would not, and a recorder holding the
 * cursors of several subscriptions (recordFreshBatches) could then deadlock with it.
 */
export async function lockWebhooks(db: Queryable, webhooks: readonly WebhookKey[]): Promise<Set<string>> {
  const locked = new Set<string>();
  for (const [tenantId, ofTenant] of byTenant(webhooks)) {
    const { rows } = await db.query<{ id: string }>(
      'SELECT id FROM webhooks WHERE tenant_id = $1 AND id = ANY ($2::uuid[]) ORDER BY id FOR NO KEY UPDATE',
      [tenantId, [...new Set(ofTenant.map((w) => w.webhookId))]],
    );
    for (const row of rows) locked.add(`${tenantId}/${row.id}`);
  }
  return locked;
}

/** Successes: these subscriptions are no longer failing. Touches (and locks) only the ones that were. */
export async function clearFailing(db: Queryable, webhooks: readonly WebhookKey[]): Promise<void> {
  for (const [tenantId, ofTenant] of byTenant(webhooks)) {
    await db.query(
      `WITH ${LOCKED_WEBHOOKS('w.failing_since IS NOT NULL')}
       UPDATE webhooks w SET failing_since = NULL FROM locked l WHERE w.tenant_id = $1 AND w.id = l.id`,
      [tenantId, ofTenant.map((w) => w.webhookId)],
    );
  }
}

/**
 * Failures: each enabled subscription is failing since now unless it already was. Answers when each started failing
 * (`tenant/webhook` → time); a subscription no longer enabled is absent.
 */
export async function markFailing(db: Queryable, webhooks: readonly WebhookKey[], now: number): Promise<Map<string, number>> {
  const failing = new Map<string, number>();
  for (const [tenantId, ofTenant] of byTenant(webhooks)) {
    const { rows } = await db.query<{ id: string; failing_since: number | string }>(
      `WITH ${LOCKED_WEBHOOKS('w.enabled')}
       UPDATE webhooks w SET failing_since = coalesce(w.failing_since, $3::bigint)
         FROM locked l WHERE w.tenant_id = $1 AND w.id = l.id
       RETURNING w.id, w.failing_since`,
      [tenantId, ofTenant.map((w) => w.webhookId), now],
    );
    for (const row of rows) failing.set(`${tenantId}/${row.id}`, Number(row.failing_since));
  }
  return failing;
}

/** Disables enabled subscriptions, each for its reason; answers those this call disabled (so one event each is written). */
export async function disableWebhooks(
  db: Queryable,
  webhooks: readonly (WebhookKey & { reason: 'gone' | 'failing' })[],
  now: number,
): Promise<(WebhookKey & { reason: 'gone' | 'failing' })[]> {
  const disabled: (WebhookKey & { reason: 'gone' | 'failing' })[] = [];
  for (const [tenantId, ofTenant] of byTenant(webhooks)) {
    const { rows } = await db.query<{ id: string; disabled_reason: 'gone' | 'failing' }>(
      `WITH ${LOCKED_WEBHOOKS('w.enabled')}
       UPDATE webhooks w SET enabled = false, disabled_reason = r.reason, disabled_at = $4::bigint, updated_at = $4::bigint
         FROM locked l, unnest($2::uuid[], $3::text[]) AS r (id, reason)
        WHERE w.tenant_id = $1 AND w.id = l.id AND r.id = l.id
       RETURNING w.id, w.disabled_reason`,
      [tenantId, ofTenant.map((w) => w.webhookId), ofTenant.map((w) => w.reason), now],
    );
    disabled.push(...rows.map((row) => ({ tenantId, webhookId: row.id, reason: row.disabled_reason })));
  }
  return disabled;
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
 * Replays events to a subscription (docs/api-reference.md 10): the tenant's events named by id, or every event of the
 * subscription's types since a time, become pending deliveries due now, in one statement. A delivery that exists
 * (delivered, failed or pending) is reset: its attempts count again from the start of the schedule. Since a time, only
 * events up to the subscription's cursor: later ones reach it from the cursor anyway (migration 018).
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

/**
 * How old the oldest event still waiting for an enabled subscription is, in milliseconds (0 when none waits): a
 * pending delivery (a retry, or a replay since it was made), or a fresh event not yet sent, i.e. the first event of the
 * subscription's types after its cursor (migration 018; events are numbered in time order, so the first is the
 * oldest). Both set-based: the pending deliveries by their index, and one ordered look per subscription behind its
 * tenant's last event, on the event log's primary key (tenant, seq).
 */
export async function oldestPendingAgeMs(db: Queryable, now: number): Promise<number> {
  const { rows } = await db.query<{ oldest: number | string | null }>(
    `SELECT least(
       (SELECT min(d.created_at)
          FROM webhook_deliveries d
          JOIN webhooks w ON w.tenant_id = d.tenant_id AND w.id = d.webhook_id AND w.enabled
         WHERE d.state = 'pending'),
       (SELECT min(first.time)
          FROM webhooks w
          JOIN tenant_audit_counters c ON c.tenant_id = w.tenant_id AND c.last_seq > w.dispatched_through
          CROSS JOIN LATERAL (
            SELECT e.time FROM audit_events e
             WHERE e.tenant_id = w.tenant_id AND e.seq > w.dispatched_through AND e.seq <= c.last_seq AND e.action = ANY (w.event_types)
             ORDER BY e.seq
             LIMIT 1
          ) first
         WHERE w.enabled)
     ) AS oldest`,
  );
  const oldest = rows[0]?.oldest;
  return oldest === null || oldest === undefined ? 0 : Math.max(0, now - Number(oldest));
}

/**
 * Deletes up to `limit` of the tenant's delivery attempts logged before `before` (its `eventDays`: the attempt log is
 * kept as long as the events are); answers how many went. One tenant per statement (docs/house-style.md convention 6).
 */
export async function pruneAttempts(db: Queryable, tenantId: string, before: number, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM webhook_attempts WHERE tenant_id = $1 AND (webhook_id, id) IN (
       SELECT webhook_id, id FROM webhook_attempts WHERE tenant_id = $1 AND time < $2::bigint ORDER BY time LIMIT $3 FOR UPDATE SKIP LOCKED)`,
    [tenantId, before, limit],
  );
  return rowCount ?? 0;
}
