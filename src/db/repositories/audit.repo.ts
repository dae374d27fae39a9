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
