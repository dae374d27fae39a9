// SQL for the Device API: a device's valid tickets with their download stamp, and a lock's changes since a cursor.
import type { Queryable } from '../database.js';
import { keysetPage, type KeysetPosition } from '../keyset.js';
import { AUDIT_APPEND_CTES } from './audit.repo.js';
import { TICKET_COLUMNS, TICKET_KEYSET, toTicketRecord, type TicketRecord, type TicketRow } from './ticket.repo.js';

export interface CredentialedTicket extends TicketRecord {
  credential: string | null;
}

const toCredentialed = (row: TicketRow & { credential: string | null }): CredentialedTicket => ({
  ...toTicketRecord(row),
  credential: row.credential,
});

/** A device's VALID tickets (not revoked, not expired) in creation order, with any cached credential. */
export async function listValidTicketsOfDevice(
  db: Queryable,
  tenantId: string,
  mobileDeviceId: string,
  now: number,
  after: KeysetPosition | null,
  limit: number,
): Promise<CredentialedTicket[]> {
  const params: unknown[] = [tenantId, mobileDeviceId, now];
  const page = keysetPage(params, TICKET_KEYSET, after, limit);
  const { rows } = await db.query<TicketRow & { credential: string | null }>(
    `SELECT ${TICKET_COLUMNS}, credential FROM tickets
      WHERE tenant_id = $1 AND mobile_device_id = $2 AND revoked_at IS NULL AND end_date > $3 AND ${page.condition}
      ${page.orderAndLimit}`,
    params,
  );
  return rows.map(toCredentialed);
}

/**
 * Stores the credentials signed now (a concurrent download's stored one wins) and sets `downloadDate` on first
 * download, appending one `ticket.downloaded` audit event per ticket downloaded for the first time. The rows are
 * locked first, so of two concurrent downloads exactly one stamps each ticket. Returns the stored state.
 */
export async function recordDownload(
  db: Queryable,
  tenantId: string,
  ticketIds: string[],
  credentials: (string | null)[],
  now: number,
  audit: { actor: string; requestId: string | null },
): Promise<Map<string, { credential: string; downloadedAt: number }>> {
  if (ticketIds.length === 0) return new Map();
  const { rows } = await db.query<{ id: string; credential: string; downloaded_at: number }>(
    `WITH before AS (
       SELECT id, downloaded_at FROM tickets WHERE tenant_id = $1 AND id = ANY ($2::uuid[]) FOR UPDATE
     ), updated AS (
       UPDATE tickets t SET credential = coalesce(t.credential, v.credential), downloaded_at = coalesce(t.downloaded_at, $4)
         FROM unnest($2::uuid[], $3::text[]) AS v (id, credential), before b
        WHERE t.tenant_id = $1 AND t.id = v.id AND b.id = v.id
        RETURNING t.id, t.credential, t.downloaded_at
     ), ${AUDIT_APPEND_CTES(
       '$1',
       `SELECT $4::bigint, $5::text, 'ticket.downloaded', 'ticket:' || b.id, $6::text FROM before b
         WHERE b.downloaded_at IS NULL ORDER BY b.id`,
     )}
     SELECT id, credential, downloaded_at FROM updated`,
    [tenantId, ticketIds, credentials, now, audit.actor, audit.requestId],
  );
  return new Map(rows.map((row) => [row.id, { credential: row.credential, downloadedAt: row.downloaded_at }]));
}

export interface SyncPosition {
  seq: number;
  id: string;
}

/**
 * A lock's tickets changed after `position` (created or revoked), skipping those already expired: the lock no
 * longer needs them. Null when the lock does not exist. One round trip: the lock row and an index range scan on
 * (tenant, lock, change_seq, id), so nothing new costs next to nothing.
 */
export async function listLockChanges(
  db: Queryable,
  tenantId: string,
  securedObjectId: string,
  position: SyncPosition,
  now: number,
  limit: number,
): Promise<(TicketRecord & { changeSeq: number })[] | null> {
  const { rows } = await db.query<TicketRow & { change_seq: number; lock_id: string }>(
    `SELECT so.id AS lock_id, t.* FROM secured_objects so
       LEFT JOIN LATERAL (
         SELECT ${TICKET_COLUMNS}, change_seq FROM tickets
          WHERE tenant_id = so.tenant_id AND secured_object_id = so.id
            AND (change_seq, id) > ($3::bigint, $4::uuid) AND end_date > $5
          ORDER BY change_seq, id LIMIT $6
       ) t ON true
      WHERE so.tenant_id = $1 AND so.id = $2`,
    [tenantId, securedObjectId, position.seq, position.id, now, limit],
  );
  if (rows.length === 0) return null;
  return rows.filter((row) => row.id !== null).map((row) => ({ ...toTicketRecord(row), changeSeq: row.change_seq }));
}

/** The VALID tickets of every device of a resident (for its token card), at most `limit`. */
export async function listValidTicketsOfResident(
  db: Queryable,
  tenantId: string,
  residentId: string,
  now: number,
  limit: number,
): Promise<CredentialedTicket[]> {
  const { rows } = await db.query<TicketRow & { credential: string | null }>(
    `SELECT ${TICKET_COLUMNS.split(', ').map((column) => `t.${column}`).join(', ')}, t.credential
       FROM resident_devices rd
       JOIN tickets t ON t.tenant_id = rd.tenant_id AND t.mobile_device_id = rd.mobile_device_id
      WHERE rd.tenant_id = $1 AND rd.resident_id = $2 AND t.revoked_at IS NULL AND t.end_date > $3
      ORDER BY t.created_at, t.id LIMIT $4`,
    [tenantId, residentId, now, limit],
  );
  return rows.map(toCredentialed);
}
