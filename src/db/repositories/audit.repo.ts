// SQL for the audit trail (contract 7.5): append in the caller's transaction.
import type { Queryable } from '../database.js';

export interface AuditEventInput {
  tenantId: string;
  time: number;
  actor: string;
  action: string;
  target: string;
  requestId: string | null;
}

export async function appendAuditEvent(db: Queryable, event: AuditEventInput): Promise<void> {
  await db.query(
    'INSERT INTO audit_events (tenant_id, time, actor, action, target, request_id) VALUES ($1, $2, $3, $4, $5, $6)',
    [event.tenantId, event.time, event.actor, event.action, event.target, event.requestId],
  );
}

export interface AuditEvent {
  id: string;
  time: number;
  actor: string;
  action: string;
  target: string;
  requestId?: string;
}

export interface AuditFilter {
  target?: string | undefined;
  action?: string | undefined;
  from?: number | undefined;
  to?: number | undefined;
}

/** Keyset page in append order (by id): stable while events are appended. */
export async function listAuditEvents(
  db: Queryable,
  tenantId: string,
  filter: AuditFilter,
  afterId: number | null,
  limit: number,
): Promise<AuditEvent[]> {
  const params: unknown[] = [tenantId, limit];
  const conditions = ['tenant_id = $1'];
  const add = (sql: (placeholder: string) => string, value: unknown) => {
    params.push(value);
    conditions.push(sql(`$${params.length}`));
  };
  if (filter.target !== undefined) add((p) => `target = ${p}`, filter.target);
  if (filter.action !== undefined) add((p) => `action = ${p}`, filter.action);
  if (filter.from !== undefined) add((p) => `time >= ${p}::bigint`, filter.from);
  if (filter.to !== undefined) add((p) => `time < ${p}::bigint`, filter.to);
  if (afterId !== null) add((p) => `id > ${p}::bigint`, afterId);
  const { rows } = await db.query<{ id: number; time: number; actor: string; action: string; target: string; request_id: string | null }>(
    `SELECT id, time, actor, action, target, request_id FROM audit_events
      WHERE ${conditions.join(' AND ')} ORDER BY id LIMIT $2`,
    params,
  );
  return rows.map((row) => ({
    id: String(row.id),
    time: row.time,
    actor: row.actor,
    action: row.action,
    target: row.target,
    ...(row.request_id !== null ? { requestId: row.request_id } : {}),
  }));
}

/** Several events of one change, in one statement. */
export async function appendAuditEvents(db: Queryable, events: AuditEventInput[]): Promise<void> {
  if (events.length === 0) return;
  await db.query(
    `INSERT INTO audit_events (tenant_id, time, actor, action, target, request_id)
     SELECT * FROM unnest($1::uuid[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[])`,
    [
      events.map((e) => e.tenantId),
      events.map((e) => e.time),
      events.map((e) => e.actor),
      events.map((e) => e.action),
      events.map((e) => e.target),
      events.map((e) => e.requestId),
    ],
  );
}
