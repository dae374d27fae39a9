// SQL for tickets: create (with its audit events, one call of migration 034's issue_tickets), read, page with filters, revoke.
import type { Schedule } from '../../shared/schedule/types.js';
import type { Queryable } from '../database.js';
import { announceChange } from './change-log.repo.js';
import { keysetPage, type KeysetColumns, type KeysetPosition } from '../../shared/keyset.js';

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
  /** When its lock applied its revocation (docs/api-reference.md 8.4); null while not revoked or not applied yet. */
  revocationAppliedAt: number | null;
  /** Its weekly schedule in the lock's local time (docs/api-reference.md 9); null: open all through its validity. */
  schedule: Schedule | null;
  /** docs/api-reference.md 15: opens during a lockdown; its credentials carry `ovr`. Absent or false: an ordinary ticket. */
  override?: boolean;
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
  revocation_applied_at: number | null;
  schedule: Schedule | null;
  override: boolean;
}

export const TICKET_COLUMNS =
  'id, tenant_id, secured_object_id, mobile_device_id, begin_date, end_date, created_at, commands, channels, revoked_at, downloaded_at, access_permission_id, revocation_applied_at, schedule, override';

/** Tickets page in creation order; their ids are server-made UUIDs. */
export const TICKET_KEYSET: KeysetColumns = { createdAt: 'created_at', id: 'id', idType: 'uuid' };

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
    revocationAppliedAt: row.revocation_applied_at,
    schedule: row.schedule,
    override: row.override,
  };
}

/** A ticket as it is written: not yet revoked or downloaded, and made outside any access permission. */
export type NewTicket = Omit<TicketRecord, 'revokedAt' | 'downloadedAt' | 'accessPermissionId' | 'revocationAppliedAt'>;

export interface AuditStamp {
  actor: string;
  requestId: string | null;
}

/** One ticket of a tenant's batch (`createTickets`), with the audit stamp of the request that asked for it. */
export type TicketInBatch = Omit<NewTicket, 'tenantId'> & { audit: AuditStamp };

export type CreateTicketOutcome =
  | { created: TicketRecord }
  | { created: null; lockChannels: string[] | null; deviceExists: boolean };

/**
 * Issues several tickets of one tenant in one statement, so one round trip and, outside a transaction, one commit: the
 * function `issue_tickets` (migration 034, written again by 035 so that on Citus each of its statements runs on the
 * tenant's node alone) runs the steps of every writer of a tenant's tickets in their LOCK ORDER
 * (services/removal.ts): the tenant's change number first, so a removal of a named lock or device has committed
 * before, or waits until this commits; then the named locks and the named devices, each set in id order and FOR
 * SHARE, so a concurrent change of a lock's channels waits. A row lock takes the row's latest committed version (READ
 * COMMITTED): a lock or device deleted by a removal that went first is not locked, and the statement that picks the
 * tickets to insert, one of its own that reads what committed before it started, does not find it. The audit counter
 * last (audit.repo.ts). Each ticket whose lock and device exist and whose lock supports every channel is inserted,
 * with one `ticket.created` audit event per ticket (docs/api-reference.md 7.5). Answers in input order (the function's
 * rows carry their ordinal); where nothing was inserted, the outcome says why. Outside a transaction (the batcher's
 * call) the statement commits on its own (docs/scaling.md); in one (a bulk job's item) it is part of it.
 */
export async function createTickets(db: Queryable, tenantId: string, tickets: TicketInBatch[]): Promise<CreateTicketOutcome[]> {
  const input = tickets.map((ticket, ordinal) => ({
    ordinal,
    id: ticket.id,
    secured_object_id: ticket.securedObjectId,
    mobile_device_id: ticket.mobileDeviceId,
    begin_date: ticket.beginDate,
    end_date: ticket.endDate,
    created_at: ticket.createdAt,
    commands: ticket.commands,
    channels: ticket.channels,
    schedule: ticket.schedule,
    override: ticket.override === true,
    actor: ticket.audit.actor,
    request_id: ticket.audit.requestId,
  }));
  const { rows } = await db.query<
    TicketRow & { batch_change_seq: number; ordinal: number; lock_channels: string[] | null; device_exists: boolean; created: boolean }
  >(ISSUE_TICKETS_SQL, [tenantId, JSON.stringify(input)]);
  if (rows.length !== tickets.length) throw new Error(`issue_tickets answered ${rows.length} rows for ${tickets.length} tickets`);
  announceChange(db, tenantId, Number(rows[0]!.batch_change_seq));
  const outcomes: CreateTicketOutcome[] = [];
  for (const row of rows) {
    outcomes[row.ordinal] = row.created
      ? { created: toTicketRecord(row) }
      : { created: null, lockChannels: row.lock_channels, deviceExists: row.device_exists };
  }
  return outcomes;
}

/** Cast, so that the call names one function whatever overloads a later migration adds. */
const ISSUE_TICKETS_SQL = 'SELECT * FROM issue_tickets($1::uuid, $2::jsonb)';

/** The time zone a lock's schedules are read in (docs/api-reference.md 9), or null when the tenant has no such lock. */
export async function findLockTimeZone(db: Queryable, tenantId: string, securedObjectId: string): Promise<string | null> {
  const { rows } = await db.query<{ time_zone: string }>('SELECT time_zone FROM secured_objects WHERE tenant_id = $1 AND id = $2', [
    tenantId,
    securedObjectId,
  ]);
  return rows[0]?.time_zone ?? null;
}

/**
 * Built once: a ticket read runs on every GET of a ticket, and a text built per call would be hashed again by the
 * adapter's statement-name look-up (db/postgres.ts) and compared in full by pg against the prepared one.
 */
const FIND_TICKET_SQL = `SELECT ${TICKET_COLUMNS} FROM tickets WHERE tenant_id = $1 AND id = $2`;

export async function findTicket(db: Queryable, tenantId: string, id: string): Promise<TicketRecord | null> {
  const { rows } = await db.query<TicketRow>(FIND_TICKET_SQL, [tenantId, id]);
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
  const params: unknown[] = [tenantId];
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
  const page = keysetPage(params, TICKET_KEYSET, after, limit);
  conditions.push(page.condition);
  const { rows } = await db.query<TicketRow>(
    `SELECT ${TICKET_COLUMNS} FROM tickets WHERE ${conditions.join(' AND ')} ${page.orderAndLimit}`,
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
 * Revokes every unrevoked ticket of a lock or device (its removal) in one `UPDATE`; returns their ids, for the change's
 * `ticket.revoked` events, which the caller appends last with the removal's own (the event counter is taken last,
 * audit.repo.ts). A statement of one tenant's rows, which a cluster sharded by tenant runs on the tenant's node
 * (docs/scaling.md, *Running on Citus*), as a member leaving revokes its tickets.
 */
export async function revokeTicketsOf(
  db: Queryable,
  tenantId: string,
  column: 'secured_object_id' | 'mobile_device_id',
  id: string,
  now: number,
  seq: number,
): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `UPDATE tickets SET revoked_at = $3, change_seq = $4
      WHERE tenant_id = $1 AND ${column} = $2 AND revoked_at IS NULL RETURNING id`,
    [tenantId, id, now, seq],
  );
  return rows.map((row) => row.id);
}

/**
 * A ticket made directly (not by an access permission), not revoked, equal to `wanted` (same lock, device, dates,
 * commands and channels as sets, schedule): the natural key a bulk job finds a ticket again by (docs/api-reference.md 14).
 */
export async function findEquivalentTicket(
  db: Queryable,
  tenantId: string,
  wanted: {
    securedObjectId: string;
    mobileDeviceId: string;
    beginDate: number;
    endDate: number;
    commands: string[];
    channels: string[];
    schedule?: unknown;
  },
): Promise<string | null> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT id FROM tickets
      WHERE tenant_id = $1 AND mobile_device_id = $2 AND secured_object_id = $3 AND begin_date = $4 AND end_date = $5
        AND access_permission_id IS NULL AND revoked_at IS NULL
        AND ARRAY(SELECT DISTINCT c FROM unnest(commands) AS c ORDER BY c) = $6::text[]
        AND ARRAY(SELECT DISTINCT c FROM unnest(channels) AS c ORDER BY c) = $7::text[]
        AND schedule IS NOT DISTINCT FROM $8::jsonb
      ORDER BY created_at, id LIMIT 1`,
    [
      tenantId,
      wanted.mobileDeviceId,
      wanted.securedObjectId,
      wanted.beginDate,
      wanted.endDate,
      [...new Set(wanted.commands)].sort(),
      [...new Set(wanted.channels)].sort(),
      wanted.schedule === undefined || wanted.schedule === null ? null : JSON.stringify(wanted.schedule),
    ],
  );
  return rows[0]?.id ?? null;
}

/**
 * docs/api-reference.md 13: revokes every unrevoked ticket of every mobile device of the resident, direct and granted,
 * in one statement; answers their ids in creation order. Null when the tenant has no such resident.
 */
export async function revokeResidentTickets(
  db: Queryable,
  tenantId: string,
  residentId: string,
  now: number,
  seq: number,
): Promise<string[] | null> {
  const { rows: residents } = await db.query('SELECT 1 FROM residents WHERE tenant_id = $1 AND id = $2', [tenantId, residentId]);
  if (residents.length === 0) return null;
  const { rows } = await db.query<{ id: string; created_at: number }>(
    `UPDATE tickets SET revoked_at = $3, change_seq = $4
      WHERE tenant_id = $1 AND revoked_at IS NULL
        AND mobile_device_id IN (SELECT rd.mobile_device_id FROM resident_devices rd WHERE rd.tenant_id = $1 AND rd.resident_id = $2)
      RETURNING id, created_at`,
    [tenantId, residentId, now, seq],
  );
  return rows.sort((a, b) => a.created_at - b.created_at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).map((row) => row.id);
}
