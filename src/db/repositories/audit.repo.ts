// SQL for the tenant's event log, which the audit view projects (docs/api-reference.md 10, 7.5): append in the caller's
// transaction, numbered per tenant without gaps; keyset pages; the feed; retention.
import type { Queryable } from '../database.js';

export interface AuditEventInput {
  tenantId: string;
  time: number;
  actor: string;
  action: string;
  target: string;
  requestId: string | null;
  /** What an integrator reacts to: the ids the change touched (docs/api-reference.md 10); small, documented per type. */
  data?: Record<string, unknown>;
}

/** At most this many ticket ids in one event of a fan-out change (docs/api-reference.md 10); migrations 036 and 037 write it out too. */
export const EVENT_CHUNK_SIZE = 1000;

export async function appendAuditEvent(db: Queryable, event: AuditEventInput): Promise<void> {
  await appendAuditEvents(db, [event]);
}

/**
 * Several events of one change, in one call of append_audit_events (migration 036) per tenant (in practice one): the
 * counter, then the events, each a statement of its own, which a cluster sharded by tenant runs on the tenant's node
 * (docs/scaling.md). LOCK ORDER: the counter row is locked until commit, so take it LAST in every transaction: after
 * the tenant's change counter (change-log.repo.ts) and after every row lock.
 */
export async function appendAuditEvents(db: Queryable, events: AuditEventInput[]): Promise<void> {
  // Tenants in a fixed order, so two multi-tenant appends never lock their counters in opposite orders.
  const tenants = [...new Set(events.map((event) => event.tenantId))].sort();
  for (const tenantId of tenants) {
    const mine = events.filter((event) => event.tenantId === tenantId);
    await db.query('SELECT append_audit_events($1::uuid, $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::jsonb[])', [
      tenantId,
      mine.map((e) => e.time),
      mine.map((e) => e.actor),
      mine.map((e) => e.action),
      mine.map((e) => e.target),
      mine.map((e) => e.requestId),
      mine.map((e) => JSON.stringify(e.data ?? {})),
    ]);
  }
}

export interface AuditEvent {
  /** The tenant's own sequence number, as a string. */
  id: string;
  time: number;
  actor: string;
  action: string;
  target: string;
  requestId?: string;
}

/**
 * What a read may still show (docs/api-reference.md 16.1): rows younger than the tenant's period, its own choice
 * (`column` of `tenants`, migration 029) or else `defaultDays`, counted back from `now`. The event feed and the audit
 * trail are one table kept for the longer of their two periods, so each read applies its own.
 */
export interface RetentionWindow {
  now: number;
  defaultDays: number;
}

/** The condition of a RetentionWindow on `time`, the tenant being $1. */
function withinRetention(column: 'event_retention_days' | 'audit_retention_days', now: string, defaultDays: string): string {
  return `time >= ${now}::bigint - 86400000::bigint * coalesce((SELECT t.${column} FROM tenants t WHERE t.id = $1), ${defaultDays}::integer)`;
}

export interface AuditFilter {
  target?: string | undefined;
  action?: string | undefined;
  from?: number | undefined;
  to?: number | undefined;
}

/**
 * Keyset page in append order (the tenant's sequence): stable while events are appended, since a tenant's events
 * commit in sequence order (migration 008), so no later page can gain an event with a smaller number.
 */
export async function listAuditEvents(
  db: Queryable,
  tenantId: string,
  filter: AuditFilter,
  afterSeq: number | null,
  limit: number,
  window: RetentionWindow,
): Promise<AuditEvent[]> {
  const params: unknown[] = [tenantId, limit, window.now, window.defaultDays];
  const conditions = ['tenant_id = $1', withinRetention('audit_retention_days', '$3', '$4')];
  const add = (sql: (placeholder: string) => string, value: unknown) => {
    params.push(value);
    conditions.push(sql(`$${params.length}`));
  };
  if (filter.target !== undefined) {
    // A ticket's history includes the chunked events of the fan-out changes that created or revoked it (migration 014).
    if (filter.target.startsWith('ticket:')) {
      add((p) => `(target = ${p} OR (data -> 'ticketIds') @> jsonb_build_array(substr(${p}, 8)))`, filter.target);
    } else {
      add((p) => `target = ${p}`, filter.target);
    }
  }
  if (filter.action !== undefined) add((p) => `action = ${p}`, filter.action);
  if (filter.from !== undefined) add((p) => `time >= ${p}::bigint`, filter.from);
  if (filter.to !== undefined) add((p) => `time < ${p}::bigint`, filter.to);
  if (afterSeq !== null) add((p) => `seq > ${p}::bigint`, afterSeq);
  const { rows } = await db.query<{ seq: number; time: number; actor: string; action: string; target: string; request_id: string | null }>(
    `SELECT seq, time, actor, action, target, request_id FROM audit_events
      WHERE ${conditions.join(' AND ')} ORDER BY seq LIMIT $2`,
    params,
  );
  return rows.map((row) => ({
    id: String(row.seq),
    time: row.time,
    actor: row.actor,
    action: row.action,
    target: row.target,
    ...(row.request_id !== null ? { requestId: row.request_id } : {}),
  }));
}

/**
 * An event as the feed answers it and a webhook delivers it (docs/api-reference.md 10): the same row the audit view shows
 * (`type` is its `action`), under the id it is delivered with.
 */
export interface WireEvent {
  id: string;
  type: string;
  sequence: number;
  time: number;
  data: Record<string, unknown>;
  requestId?: string;
}

export const WIRE_EVENT_COLUMNS = 'event_id, action, seq, time, data, request_id';

export interface WireEventRow {
  event_id: string;
  action: string;
  seq: number | string;
  time: number | string;
  data: Record<string, unknown>;
  request_id: string | null;
}

export function toWireEvent(row: WireEventRow): WireEvent {
  return {
    id: row.event_id,
    type: row.action,
    sequence: Number(row.seq),
    time: Number(row.time),
    data: row.data,
    ...(row.request_id !== null ? { requestId: row.request_id } : {}),
  };
}

/**
 * The feed (docs/api-reference.md 10): the tenant's events after `afterSeq` in sequence order, of `types` when given,
 * within its `eventDays` (RetentionWindow). Pages are stable while events are appended: a tenant's events commit in sequence order (migration 008).
 */
export async function listWireEvents(
  db: Queryable,
  tenantId: string,
  afterSeq: number,
  types: readonly string[] | null,
  limit: number,
  window: RetentionWindow,
): Promise<WireEvent[]> {
  const { rows } = await db.query<WireEventRow>(
    `SELECT ${WIRE_EVENT_COLUMNS} FROM audit_events
      WHERE tenant_id = $1 AND seq > $2::bigint AND ($3::text[] IS NULL OR action = ANY ($3::text[]))
        AND ${withinRetention('event_retention_days', '$5', '$6')}
      ORDER BY seq LIMIT $4`,
    [tenantId, afterSeq, types, limit, window.now, window.defaultDays],
  );
  return rows.map(toWireEvent);
}

/**
 * Retention (docs/api-reference.md 16.1): deletes up to `limit` of the tenant's events older than `before` (past both
 * its `eventDays` and its `auditDays`), oldest first, and answers how many. An event a webhook delivery still waits to
 * send is kept (its `pending` delivery references it, and the foreign key's cascade would drop the delivery with it),
 * and so is one not yet sent to a subscription of its type (past its cursor `dispatched_through`, migration 018: a
 * paused one, or a worker behind), since a subscription resumes where it stopped and receives every event committed
 * after it (docs/api-reference.md 10). One tenant per statement (docs/house-style.md convention 6); SKIP LOCKED: two
 * instances pruning at once share the work.
 */
export async function pruneEvents(db: Queryable, tenantId: string, before: number, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM audit_events WHERE tenant_id = $1 AND seq IN (
       SELECT e.seq FROM audit_events e
        WHERE e.tenant_id = $1 AND e.time < $2::bigint
          AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d
                           WHERE d.tenant_id = $1 AND d.event_seq = e.seq AND d.state = 'pending')
          AND NOT EXISTS (SELECT 1 FROM webhooks w
                           WHERE w.tenant_id = $1 AND w.dispatched_through < e.seq AND e.action = ANY (w.event_types))
        ORDER BY e.time LIMIT $3 FOR UPDATE SKIP LOCKED)`,
    [tenantId, before, limit],
  );
  return rowCount ?? 0;
}

/** How many events every tenant's log has been written so far: the sequences are gapless, so their sum (pruning aside). */
export async function countEventsWritten(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ total: string | number }>('SELECT coalesce(sum(last_seq), 0) AS total FROM tenant_audit_counters');
  return Number(rows[0]!.total);
}
