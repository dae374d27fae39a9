// SQL for access permissions and the tickets they expand into: every fan-out is one set-based statement.
import type { Schedule } from '../../shared/schedule/types.js';
import type { Queryable } from '../database.js';
import { keysetPage, type KeysetColumns, type KeysetPosition } from '../../shared/keyset.js';
import { TICKET_COLUMNS, TICKET_KEYSET, toTicketRecord, type TicketRecord, type TicketRow } from './ticket.repo.js';
import type { GroupKind } from './group.repo.js';
import { LOCK_COLUMN } from './secured-object.repo.js';

export interface AccessPermissionRecord {
  tenantId: string;
  id: string;
  residentId: string;
  lockGroupId: string;
  beginDate: number;
  endDate: number;
  commands: string[];
  channels: string[];
  createdAt: number;
  /** docs/api-reference.md 9: copied to every ticket it expands into; null: none. */
  schedule: Schedule | null;
}

interface AccessPermissionRow {
  tenant_id: string;
  id: string;
  resident_id: string;
  lock_group_id: string;
  begin_date: number;
  end_date: number;
  commands: string[];
  channels: string[];
  created_at: number;
  schedule: Schedule | null;
  token_count: number;
}

const COLUMNS = 'tenant_id, id, resident_id, lock_group_id, begin_date, end_date, commands, channels, created_at, schedule';

/**
 * The live tickets a permission holds now (the partial unique index answers it without the table). The tenant is the
 * statement's `$1`, not the outer row's column: a cluster sharded by tenant then plans it on one node.
 */
const TOKEN_COUNT = `(SELECT count(*)::int FROM tickets t
   WHERE t.tenant_id = $1 AND t.access_permission_id = p.id AND t.revoked_at IS NULL) AS token_count`;

const KEYSET: KeysetColumns = { createdAt: 'p.created_at', id: 'p.id', idType: 'uuid' };

const toRecord = (row: AccessPermissionRow): AccessPermissionRecord & { tokenCount: number } => ({
  tenantId: row.tenant_id,
  id: row.id,
  residentId: row.resident_id,
  lockGroupId: row.lock_group_id,
  beginDate: row.begin_date,
  endDate: row.end_date,
  commands: row.commands,
  channels: row.channels,
  createdAt: row.created_at,
  schedule: row.schedule,
  tokenCount: row.token_count,
});

/** Permissions in one statement, one or a bulk job's batch (docs/api-reference.md 14). */
export async function insertAccessPermissions(db: Queryable, tenantId: string, permissions: readonly AccessPermissionRecord[]): Promise<void> {
  if (permissions.length === 0) return;
  const rows = permissions.map((permission) => ({
    id: permission.id,
    resident_id: permission.residentId,
    lock_group_id: permission.lockGroupId,
    begin_date: permission.beginDate,
    end_date: permission.endDate,
    commands: permission.commands,
    channels: permission.channels,
    created_at: permission.createdAt,
    schedule: permission.schedule,
  }));
  await db.query(
    `INSERT INTO access_permissions (${COLUMNS})
     SELECT $1, x.id, x.resident_id, x.lock_group_id, x.begin_date, x.end_date, x.commands, x.channels, x.created_at, x.schedule
       FROM jsonb_to_recordset($2::jsonb)
         AS x(id uuid, resident_id uuid, lock_group_id uuid, begin_date bigint, end_date bigint, commands text[], channels text[],
              created_at bigint, schedule jsonb)`,
    [tenantId, JSON.stringify(rows)],
  );
}

/**
 * The distinct time zones of each lock group's locks (docs/api-reference.md 9), for checking a schedule against each: a
 * group without locks maps to none.
 */
export async function lockGroupTimeZones(db: Queryable, tenantId: string, lockGroupIds: readonly string[]): Promise<Map<string, string[]>> {
  if (lockGroupIds.length === 0) return new Map();
  const { rows } = await db.query<{ id: string; zones: string[] }>(
    `SELECT g.id, ARRAY(SELECT DISTINCT ${LOCK_COLUMN('$1', 'lgo.secured_object_id', 'time_zone')} AS zone
                          FROM lock_group_objects lgo WHERE lgo.tenant_id = $1 AND lgo.lock_group_id = g.id
                         ORDER BY zone) AS zones
       FROM unnest($2::uuid[]) AS g (id)`,
    [tenantId, lockGroupIds],
  );
  return new Map(rows.map((row) => [row.id, row.zones]));
}

/**
 * For each wanted (lock group, channels), at most 20 of the group's locks that do not support every one of the
 * channels, in id order; answers in the order asked.
 */
export async function locksLackingChannels(
  db: Queryable,
  tenantId: string,
  wanted: readonly { lockGroupId: string; channels: string[] }[],
): Promise<string[][]> {
  if (wanted.length === 0) return [];
  const { rows } = await db.query<{ i: number; lacking: string[] }>(
    `SELECT w.i, ARRAY(SELECT lgo.secured_object_id FROM lock_group_objects lgo
                       WHERE lgo.tenant_id = $1 AND lgo.lock_group_id = w.lock_group_id
                         AND NOT ${LOCK_COLUMN('$1', 'lgo.secured_object_id', 'channels')} @> w.channels
                       ORDER BY lgo.secured_object_id LIMIT 20) AS lacking
       FROM jsonb_to_recordset($2::jsonb) AS w(i integer, lock_group_id uuid, channels text[])`,
    [tenantId, JSON.stringify(wanted.map((entry, i) => ({ i, lock_group_id: entry.lockGroupId, channels: entry.channels })))],
  );
  const lacking: string[][] = wanted.map(() => []);
  for (const row of rows) lacking[row.i] = row.lacking;
  return lacking;
}

/** Permissions reaching the lock group whose channels the given locks do not all support. */
export async function permissionsUnsupportedBy(
  db: Queryable,
  tenantId: string,
  lockGroupId: string,
  securedObjectIds: string[],
): Promise<{ permissionId: string; securedObjectId: string }[]> {
  const { rows } = await db.query<{ permission_id: string; secured_object_id: string }>(
    `SELECT p.id AS permission_id, so.id AS secured_object_id
       FROM access_permissions p
       JOIN secured_objects so ON so.tenant_id = $1 AND so.id = ANY ($3::text[])
      WHERE p.tenant_id = $1 AND p.lock_group_id = $2 AND NOT so.channels @> p.channels
      ORDER BY so.id, p.id LIMIT 20`,
    [tenantId, lockGroupId, securedObjectIds],
  );
  return rows.map((row) => ({ permissionId: row.permission_id, securedObjectId: row.secured_object_id }));
}

/** Who made a change, as its events record it (docs/api-reference.md 10, 7.5). */
export interface EventStamp {
  actor: string;
  requestId: string | null;
}

/**
 * docs/service-overview.md section 1: for each of the permissions `permissionIds` (one, or a bulk job's batch,
 * docs/api-reference.md 14), one ticket per (device in its resident) × (lock in its lock group), in one call of
 * expand_access_permissions (migration 036): the pairs never travel through Node. Each ticket gets its permission's
 * dates, commands, channels and schedule as stored (docs/api-reference.md 9): its windows are computed when a
 * credential is signed, so granting costs no per-ticket work. The same call appends their `ticket.created` events, per
 * permission (in the order of `permissionIds`) one per 1,000 tickets (docs/api-reference.md 10), and so takes the
 * event counter: call it last in the transaction but for further events (audit.repo.ts). Returns how many tickets each
 * permission got (absent: none).
 */
export async function expandAccessPermissions(
  db: Queryable,
  tenantId: string,
  permissionIds: readonly string[],
  now: number,
  seq: number,
  stamp: EventStamp,
): Promise<Map<string, number>> {
  if (permissionIds.length === 0) return new Map();
  const { rows } = await db.query<{ access_permission_id: string; issued: number }>(
    'SELECT access_permission_id, issued FROM expand_access_permissions($1::uuid, $2::uuid[], $3::bigint, $4::bigint, $5::text, $6::text)',
    [tenantId, permissionIds, now, seq, stamp.actor, stamp.requestId],
  );
  return new Map(rows.map((row) => [row.access_permission_id, row.issued]));
}

/**
 * Membership stays true (docs/api-reference.md 5): new members of a group get the tickets of every permission reaching it —
 * new devices of a resident for every lock of its permissions' lock groups, new locks of a lock group for every
 * device of its permissions' residents. One call of issue_member_tickets (migration 036), which appends their
 * `ticket.created` events in chunks of 1,000 under `target` (the membership) and so takes the event counter (call it
 * last, audit.repo.ts); returns how many tickets were issued.
 */
export async function issueForNewMembers(
  db: Queryable,
  kind: GroupKind,
  tenantId: string,
  groupId: string,
  memberIds: string[],
  now: number,
  seq: number,
  stamp: EventStamp & { target: string; data: Record<string, unknown> },
): Promise<number> {
  if (memberIds.length === 0) return 0;
  const { rows } = await db.query<{ issued: number }>(
    `SELECT issue_member_tickets($1::uuid, $2::boolean, $3::uuid, $4::text[], $5::bigint, $6::bigint, $7::text, $8::text,
                                 $9::text, $10::jsonb) AS issued`,
    [tenantId, kind.table === 'residents', groupId, memberIds, now, seq, stamp.actor, stamp.requestId, stamp.target, JSON.stringify(stamp.data)],
  );
  return rows[0]!.issued;
}

/**
 * A member leaving a group loses the tickets of the permissions reaching that group (and only those); returns their
 * ids, for the change's events (ticket.revoked in chunks of 1,000 under the membership, audit.service.ts), which the
 * caller appends after it. One UPDATE, which a cluster sharded by tenant runs on the tenant's node (docs/scaling.md).
 */
export async function revokeForLeavingMember(
  db: Queryable,
  kind: GroupKind,
  tenantId: string,
  groupId: string,
  memberId: string,
  now: number,
  seq: number,
): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `UPDATE tickets SET revoked_at = $4, change_seq = $5
      WHERE tenant_id = $1 AND ${kind.memberColumn} = $3 AND revoked_at IS NULL
        AND access_permission_id IN (SELECT id FROM access_permissions WHERE tenant_id = $1 AND ${kind.groupColumn} = $2)
      RETURNING id`,
    [tenantId, groupId, memberId, now, seq],
  );
  return rows.map((row) => row.id);
}

/**
 * Revokes every live ticket of the permissions selected by `column = id` (one permission, or a group's); returns their
 * ids, for the change's events, which come after the rows it deletes next (the event counter is taken last).
 */
export async function revokePermissionTickets(
  db: Queryable,
  tenantId: string,
  column: 'id' | 'resident_id' | 'lock_group_id',
  id: string,
  now: number,
  seq: number,
): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `UPDATE tickets SET revoked_at = $3, change_seq = $4
      WHERE tenant_id = $1 AND revoked_at IS NULL
        AND access_permission_id IN (SELECT p.id FROM access_permissions p WHERE p.tenant_id = $1 AND p.${column} = $2)
      RETURNING id`,
    [tenantId, id, now, seq],
  );
  return rows.map((row) => row.id);
}

/** Deletes the permissions selected by `column = id`; returns their ids. */
export async function deletePermissions(
  db: Queryable,
  tenantId: string,
  column: 'id' | 'resident_id' | 'lock_group_id',
  id: string,
): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `DELETE FROM access_permissions WHERE tenant_id = $1 AND ${column} = $2 RETURNING id`,
    [tenantId, id],
  );
  return rows.map((row) => row.id);
}

export async function findAccessPermission(
  db: Queryable,
  tenantId: string,
  id: string,
): Promise<(AccessPermissionRecord & { tokenCount: number }) | null> {
  const { rows } = await db.query<AccessPermissionRow>(
    `SELECT ${COLUMNS.split(', ').map((c) => `p.${c}`).join(', ')}, ${TOKEN_COUNT}
       FROM access_permissions p WHERE p.tenant_id = $1 AND p.id = $2`,
    [tenantId, id],
  );
  return rows[0] ? toRecord(rows[0]) : null;
}

export async function listAccessPermissions(
  db: Queryable,
  tenantId: string,
  filter: { residentId?: string | undefined; lockGroupId?: string | undefined },
  after: KeysetPosition | null,
  limit: number,
): Promise<(AccessPermissionRecord & { tokenCount: number })[]> {
  const params: unknown[] = [tenantId, filter.residentId ?? null, filter.lockGroupId ?? null];
  const page = keysetPage(params, KEYSET, after, limit);
  const { rows } = await db.query<AccessPermissionRow>(
    `SELECT ${COLUMNS.split(', ').map((c) => `p.${c}`).join(', ')}, ${TOKEN_COUNT}
       FROM access_permissions p
      WHERE p.tenant_id = $1
        AND ($2::uuid IS NULL OR p.resident_id = $2::uuid)
        AND ($3::uuid IS NULL OR p.lock_group_id = $3::uuid)
        AND ${page.condition}
      ${page.orderAndLimit}`,
    params,
  );
  return rows.map(toRecord);
}

/** The tickets a permission made, in creation order (keyset). */
export async function listPermissionTickets(
  db: Queryable,
  tenantId: string,
  permissionId: string,
  after: KeysetPosition | null,
  limit: number,
): Promise<TicketRecord[]> {
  const params: unknown[] = [tenantId, permissionId];
  const page = keysetPage(params, TICKET_KEYSET, after, limit);
  const { rows } = await db.query<TicketRow>(
    `SELECT ${TICKET_COLUMNS} FROM tickets
      WHERE tenant_id = $1 AND access_permission_id = $2 AND ${page.condition}
      ${page.orderAndLimit}`,
    params,
  );
  return rows.map(toTicketRecord);
}

/** What a permission is found again by (findEquivalentPermissions). */
export type PermissionKey = Pick<AccessPermissionRecord, 'residentId' | 'lockGroupId' | 'beginDate' | 'endDate' | 'commands' | 'channels' | 'schedule'>;

/**
 * For each of `wanted`, the oldest access permission equal to it (same resident, lock group, dates, commands, channels
 * and schedule; commands and channels as sets), or null: the natural key a bulk job finds a permission again by
 * (docs/api-reference.md 14). One statement for a batch; answers in the order asked.
 */
export async function findEquivalentPermissions(db: Queryable, tenantId: string, wanted: readonly PermissionKey[]): Promise<(string | null)[]> {
  if (wanted.length === 0) return [];
  const { rows } = await db.query<{ i: number; id: string | null }>(
    `SELECT w.i, (SELECT p.id FROM access_permissions p
                   WHERE p.tenant_id = $1 AND p.resident_id = w.resident_id AND p.lock_group_id = w.lock_group_id
                     AND p.begin_date = w.begin_date AND p.end_date = w.end_date
                     AND ARRAY(SELECT DISTINCT c FROM unnest(p.commands) AS c ORDER BY c) = w.commands
                     AND ARRAY(SELECT DISTINCT c FROM unnest(p.channels) AS c ORDER BY c) = w.channels
                     AND p.schedule IS NOT DISTINCT FROM w.schedule
                   ORDER BY p.created_at, p.id LIMIT 1) AS id
       FROM jsonb_to_recordset($2::jsonb)
         AS w(i integer, resident_id uuid, lock_group_id uuid, begin_date bigint, end_date bigint, commands text[], channels text[], schedule jsonb)`,
    [
      tenantId,
      JSON.stringify(
        wanted.map((key, i) => ({
          i,
          resident_id: key.residentId,
          lock_group_id: key.lockGroupId,
          begin_date: key.beginDate,
          end_date: key.endDate,
          commands: [...new Set(key.commands)].sort(),
          channels: [...new Set(key.channels)].sort(),
          schedule: key.schedule,
        })),
      ),
    ],
  );
  const found: (string | null)[] = wanted.map(() => null);
  for (const row of rows) found[row.i] = row.id;
  return found;
}
