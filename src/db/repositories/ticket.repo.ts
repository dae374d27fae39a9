// SQL for tickets: create (one statement with its audit event), read, page with filters, revoke.
import type { Queryable } from '../database.js';
import { NEXT_CHANGE_SEQ_CTE } from './change-log.repo.js';
import type { KeysetPosition } from '../../services/pagination.js';

export interface TicketRecord {
  id: string;
  tenantId: string;
  securedObjectId: string;
  mobileDeviceId: string;
  beginDate: number;
  endDate: number;
  createdAt: number;
  commands: string[];
  channels: string[];
  revokedAt: number | null;
  downloadedAt: number | null;
  /** The Access API permission that made it; null for tickets made through the Operator API. */
  accessPermissionId: string | null;
}

export interface TicketRow {
  id: string;
  tenant_id: string;
  secured_object_id: string;
  mobile_device_id: string;
  begin_date: number;
  end_date: number;
  created_at: number;
  commands: string[];
  channels: string[];
  revoked_at: number | null;
  downloaded_at: number | null;
  access_permission_id: string | null;
}

export const TICKET_COLUMNS =
  'id, tenant_id, secured_object_id, mobile_device_id, begin_date, end_date, created_at, commands, channels, revoked_at, downloaded_at, access_permission_id';

export function toTicketRecord(row: TicketRow): TicketRecord {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    securedObjectId: row.secured_object_id,
    mobileDeviceId: row.mobile_device_id,
    beginDate: row.begin_date,
    endDate: row.end_date,
    createdAt: row.created_at,
    commands: row.commands,
    channels: row.channels,
    revokedAt: row.revoked_at,
    downloadedAt: row.downloaded_at,
    accessPermissionId: row.access_permission_id,
  };
}

export interface NewTicket {
  id: string;
  tenantId: string;
  securedObjectId: string;
  mobileDeviceId: string;
  beginDate: number;
  endDate: number;
  createdAt: number;
  commands: string[];
  channels: string[];
}

export interface AuditStamp {
  actor: string;
  requestId: string | null;
}

export type CreateTicketOutcome =
  | { created: TicketRecord }
  | { created: null; lockChannels: string[] | null; deviceExists: boolean };

/**
 * One statement, so one round trip and atomic on its own. It takes the tenant's next change number first (the
 * change log's lock order, see change-log.repo.ts), then locks the lock and device rows (FOR SHARE, so a
 * concurrent removal waits or wins cleanly), inserts the ticket only when both exist and the lock supports every
 * channel, and appends the `ticket.created` audit event (contract 7.5). When nothing was inserted it says why.
 */
export async function createTicket(db: Queryable, ticket: NewTicket, audit: AuditStamp): Promise<CreateTicketOutcome> {
  const { rows } = await db.query<TicketRow & { lock_channels: string[] | null; device_exists: boolean }>(
    `WITH seq AS (${NEXT_CHANGE_SEQ_CTE('$2')}
     ), lock AS (
       -- Reading seq orders the counter's lock before the row locks below.
       SELECT so.channels FROM secured_objects so, seq WHERE so.tenant_id = $2 AND so.id = $3 FOR SHARE OF so
     ), device AS (
       SELECT 1 FROM mobile_devices md, seq WHERE md.tenant_id = $2 AND md.id = $4 FOR SHARE OF md
     ), inserted AS (
       INSERT INTO tickets (id, tenant_id, secured_object_id, mobile_device_id, begin_date, end_date, created_at, commands,
                            channels, change_seq)
       SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, seq.last_seq FROM lock, device, seq WHERE lock.channels @> $9::text[]
       RETURNING ${TICKET_COLUMNS}
     ), audited AS (
       INSERT INTO audit_events (tenant_id, time, actor, action, target, request_id)
       SELECT tenant_id, created_at, $10, 'ticket.created', 'ticket:' || id, $11 FROM inserted
     )
     SELECT inserted.*, (SELECT channels FROM lock) AS lock_channels, EXISTS (SELECT 1 FROM device) AS device_exists
       FROM (SELECT 1) AS one LEFT JOIN inserted ON true`,
    [
      ticket.id,
      ticket.tenantId,
      ticket.securedObjectId,
      ticket.mobileDeviceId,
      ticket.beginDate,
      ticket.endDate,
      ticket.createdAt,
      ticket.commands,
      ticket.channels,
      audit.actor,
      audit.requestId,
    ],
  );
  const row = rows[0]!;
  if (row.id) return { created: toTicketRecord(row) };
  return { created: null, lockChannels: row.lock_channels, deviceExists: row.device_exists };
}

export async function findTicket(db: Queryable, tenantId: string, id: string): Promise<TicketRecord | null> {
  const { rows } = await db.query<TicketRow>(`SELECT ${TICKET_COLUMNS} FROM tickets WHERE tenant_id = $1 AND id = $2`, [
    tenantId,
    id,
  ]);
  return rows[0] ? toTicketRecord(rows[0]) : null;
}

export type TicketStatus = 'VALID' | 'REVOKED' | 'EXPIRED';

export interface TicketFilter {
  mobileDeviceId?: string | undefined;
  securedObjectId?: string | undefined;
  status?: TicketStatus | undefined;
}

/**
 * Status as a predicate on stored columns, given the placeholder of "now": the derived status is never stored, so
 * never stale. "now" is bound only when a predicate uses it: PostgreSQL refuses a parameter no clause mentions
 * ("could not determine data type of parameter").
 */
const STATUS_PREDICATES: Record<TicketStatus, (now: () => string) => string> = {
  VALID: (now) => `revoked_at IS NULL AND end_date > ${now()}`,
  REVOKED: () => 'revoked_at IS NOT NULL',
  EXPIRED: (now) => `revoked_at IS NULL AND end_date <= ${now()}`,
};

export async function listTickets(
  db: Queryable,
  tenantId: string,
  filter: TicketFilter,
  now: number,
  after: KeysetPosition | null,
  limit: number,
): Promise<TicketRecord[]> {
  const params: unknown[] = [tenantId, limit];
  const conditions = ['tenant_id = $1'];
  if (filter.mobileDeviceId !== undefined) {
    params.push(filter.mobileDeviceId);
    conditions.push(`mobile_device_id = $${params.length}`);
  }
  if (filter.securedObjectId !== undefined) {
    params.push(filter.securedObjectId);
    conditions.push(`secured_object_id = $${params.length}`);
  }
  if (filter.status) {
    conditions.push(
      STATUS_PREDICATES[filter.status](() => {
        params.push(now);
        return `$${params.length}::bigint`;
      }),
    );
  }
  if (after) {
    params.push(after.createdAt, after.id);
    conditions.push(`(created_at, id) > ($${params.length - 1}::bigint, $${params.length}::uuid)`);
  }
  const { rows } = await db.query<TicketRow>(
    `SELECT ${TICKET_COLUMNS} FROM tickets WHERE ${conditions.join(' AND ')} ORDER BY created_at, id LIMIT $2`,
    params,
  );
  return rows.map(toTicketRecord);
}

/** Sets revocationDate once, stamped with change `seq`; returns the ticket and whether this call revoked it. */
export async function revokeTicket(
  db: Queryable,
  tenantId: string,
  id: string,
  now: number,
  seq: number,
): Promise<{ ticket: TicketRecord; revokedNow: boolean } | null> {
  const { rows } = await db.query<TicketRow>(
    `UPDATE tickets SET revoked_at = $3, change_seq = $4
      WHERE tenant_id = $1 AND id = $2 AND revoked_at IS NULL RETURNING ${TICKET_COLUMNS}`,
    [tenantId, id, now, seq],
  );
  if (rows[0]) return { ticket: toTicketRecord(rows[0]), revokedNow: true };
  const existing = await findTicket(db, tenantId, id);
  return existing ? { ticket: existing, revokedNow: false } : null;
}

/**
 * Revokes every unrevoked ticket of a lock or device (its removal) and appends one `ticket.revoked` audit event per
 * ticket, set-based in one statement. Returns how many were revoked.
 */
export async function revokeTicketsOf(
  db: Queryable,
  tenantId: string,
  column: 'secured_object_id' | 'mobile_device_id',
  id: string,
  now: number,
  seq: number,
  audit: AuditStamp,
): Promise<number> {
  const { rows } = await db.query<{ revoked: number }>(
    `WITH revoked AS (
       UPDATE tickets SET revoked_at = $3, change_seq = $6
        WHERE tenant_id = $1 AND ${column} = $2 AND revoked_at IS NULL RETURNING id
     ), audited AS (
       INSERT INTO audit_events (tenant_id, time, actor, action, target, request_id)
       SELECT $1, $3, $4, 'ticket.revoked', 'ticket:' || id, $5 FROM revoked
     )
     SELECT count(*)::int AS revoked FROM revoked`,
    [tenantId, id, now, audit.actor, audit.requestId, seq],
  );
  return rows[0]?.revoked ?? 0;
}
