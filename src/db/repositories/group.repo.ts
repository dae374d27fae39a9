// SQL for the Access API's two kinds of group: residents (of mobile devices) and lock groups (of secured objects).
// They share one shape, so one set of statements serves both, parameterised by the table names below.
import type { Queryable } from '../database.js';
import { keysetPage, PAGE_INDEX_CONDITION, type KeysetColumns, type KeysetPosition } from '../../shared/keyset.js';

export interface GroupKind {
  /** The group table: `residents` or `lock_groups`. */
  table: 'residents' | 'lock_groups';
  /** The membership table and its columns. */
  members: 'resident_devices' | 'lock_group_objects';
  groupColumn: 'resident_id' | 'lock_group_id';
  memberColumn: 'mobile_device_id' | 'secured_object_id';
  /** The table the members live in (for existence checks). */
  memberTable: 'mobile_devices' | 'secured_objects';
}

export const RESIDENTS: GroupKind = {
  table: 'residents',
  members: 'resident_devices',
  groupColumn: 'resident_id',
  memberColumn: 'mobile_device_id',
  memberTable: 'mobile_devices',
};

export const LOCK_GROUPS: GroupKind = {
  table: 'lock_groups',
  members: 'lock_group_objects',
  groupColumn: 'lock_group_id',
  memberColumn: 'secured_object_id',
  memberTable: 'secured_objects',
};

export interface GroupRecord {
  id: string;
  name: string;
  createdAt: number;
  memberIds: string[];
}

interface GroupRow {
  id: string;
  name: string;
  created_at: number;
  member_ids: string[] | null;
}

const KEYSET: KeysetColumns = { createdAt: 'g.created_at', id: 'g.id', idType: 'uuid' };

const toRecord = (row: GroupRow): GroupRecord => ({
  id: row.id,
  name: row.name,
  createdAt: row.created_at,
  memberIds: row.member_ids ?? [],
});

/** The groups with their members; `where` names the tenant as `$1`, which the members' subquery names too. */
function selectGroups(kind: GroupKind, where: string): string {
  return `SELECT g.id, g.name, g.created_at,
            ARRAY(SELECT m.${kind.memberColumn} FROM ${kind.members} m
                   WHERE m.tenant_id = $1 AND m.${kind.groupColumn} = g.id
                   ORDER BY m.${kind.memberColumn}) AS member_ids
       FROM ${kind.table} g WHERE ${where}`;
}

export async function insertGroup(
  db: Queryable,
  kind: GroupKind,
  group: { tenantId: string; id: string; name: string; createdAt: number },
): Promise<void> {
  await db.query(`INSERT INTO ${kind.table} (tenant_id, id, name, created_at) VALUES ($1, $2, $3, $4)`, [
    group.tenantId,
    group.id,
    group.name,
    group.createdAt,
  ]);
}

export async function findGroup(db: Queryable, kind: GroupKind, tenantId: string, id: string): Promise<GroupRecord | null> {
  const { rows } = await db.query<GroupRow>(selectGroups(kind, 'g.tenant_id = $1 AND g.id = $2'), [tenantId, id]);
  return rows[0] ? toRecord(rows[0]) : null;
}

/**
 * Locks the group row for the rest of the transaction. Membership changes take it FOR UPDATE, permission creation
 * FOR SHARE: the two serialise per group, so a device joining while a permission is created gets its tickets
 * from whichever commits second.
 */
export async function lockGroup(
  db: Queryable,
  kind: GroupKind,
  tenantId: string,
  id: string,
  mode: 'UPDATE' | 'SHARE',
): Promise<boolean> {
  const { rows } = await db.query(`SELECT 1 FROM ${kind.table} WHERE tenant_id = $1 AND id = $2 FOR ${mode}`, [tenantId, id]);
  return rows.length > 0;
}

/**
 * lockGroup for several groups at once, in id order (so two such locks never wait for each other in opposite orders);
 * answers which of `ids` exist. Every id must be a UUID.
 */
export async function lockGroups(
  db: Queryable,
  kind: GroupKind,
  tenantId: string,
  ids: readonly string[],
  mode: 'UPDATE' | 'SHARE',
): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const { rows } = await db.query<{ id: string }>(
    `SELECT id FROM ${kind.table} WHERE tenant_id = $1 AND id = ANY ($2::uuid[]) ORDER BY id FOR ${mode}`,
    [tenantId, [...new Set(ids)]],
  );
  return new Set(rows.map((row) => row.id));
}

export async function listGroups(
  db: Queryable,
  kind: GroupKind,
  tenantId: string,
  after: KeysetPosition | null,
  limit: number,
): Promise<GroupRecord[]> {
  const params: unknown[] = [tenantId];
  const page = keysetPage(params, KEYSET, after, limit);
  const { rows } = await db.query<GroupRow>(
    `${selectGroups(kind, `g.tenant_id = $1 AND ${page.condition}`)} ${page.orderAndLimit}`,
    params,
  );
  return rows.map(toRecord);
}

export async function renameGroup(db: Queryable, kind: GroupKind, tenantId: string, id: string, name: string): Promise<boolean> {
  const { rowCount } = await db.query(`UPDATE ${kind.table} SET name = $3 WHERE tenant_id = $1 AND id = $2`, [tenantId, id, name]);
  return rowCount > 0;
}

export async function deleteGroup(db: Queryable, kind: GroupKind, tenantId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query(`DELETE FROM ${kind.table} WHERE tenant_id = $1 AND id = $2`, [tenantId, id]);
  return rowCount > 0;
}

/** The ids among `memberIds` that do not exist in the tenant (devices or locks). */
export async function missingMembers(db: Queryable, kind: GroupKind, tenantId: string, memberIds: string[]): Promise<string[]> {
  if (memberIds.length === 0) return [];
  const { rows } = await db.query<{ id: string }>(
    `SELECT wanted.id FROM unnest($2::text[]) AS wanted (id)
      WHERE NOT EXISTS (SELECT 1 FROM ${kind.memberTable} x WHERE x.tenant_id = $1 AND x.id = wanted.id)`,
    [tenantId, memberIds],
  );
  return rows.map((row) => row.id);
}

/**
 * Adds members (set-based) to a group the caller has locked (lockGroup); returns the ids that were not members before.
 * The rows take their tenant and group from the group's row: Citus runs such an INSERT … SELECT on the shard that
 * holds the group, where with the tenant as a constant it would pull the rows through the coordinator and copy them to
 * the shard, and a copy commits in two phases (docs/scaling.md, *Running on Citus*).
 */
export async function addMembers(
  db: Queryable,
  kind: GroupKind,
  tenantId: string,
  groupId: string,
  memberIds: string[],
): Promise<string[]> {
  if (memberIds.length === 0) return [];
  const { rows } = await db.query<{ member_id: string }>(
    `INSERT INTO ${kind.members} (tenant_id, ${kind.groupColumn}, ${kind.memberColumn})
     SELECT g.tenant_id, g.id, added.member_id
       FROM ${kind.table} g CROSS JOIN unnest($3::text[]) AS added (member_id)
      WHERE g.tenant_id = $1 AND g.id = $2
     ON CONFLICT DO NOTHING
     RETURNING ${kind.memberColumn} AS member_id`,
    [tenantId, groupId, memberIds],
  );
  return rows.map((row) => row.member_id);
}

export async function removeMember(
  db: Queryable,
  kind: GroupKind,
  tenantId: string,
  groupId: string,
  memberId: string,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `DELETE FROM ${kind.members} WHERE tenant_id = $1 AND ${kind.groupColumn} = $2 AND ${kind.memberColumn} = $3`,
    [tenantId, groupId, memberId],
  );
  return rowCount > 0;
}

/**
 * The groups of the kind named `name`, at most `limit`: a bulk job finds a group again by its name, its natural key
 * (docs/api-reference.md 14). Names are not unique; the caller refuses an ambiguous one.
 */
export async function findGroupsNamed(db: Queryable, kind: GroupKind, tenantId: string, name: string, limit: number): Promise<GroupRecord[]> {
  const where = `g.tenant_id = $1 AND g.name = $2 AND ${PAGE_INDEX_CONDITION('g.created_at')}`;
  const { rows } = await db.query<GroupRow>(`${selectGroups(kind, where)} ORDER BY g.created_at, g.id LIMIT $3`, [
    tenantId,
    name,
    limit,
  ]);
  return rows.map(toRecord);
}

/** Which of `names` name a group of the kind already (a bulk job's batch, docs/api-reference.md 14). */
export async function groupNamesTaken(db: Queryable, kind: GroupKind, tenantId: string, names: readonly string[]): Promise<Set<string>> {
  if (names.length === 0) return new Set();
  const { rows } = await db.query<{ name: string }>(`SELECT DISTINCT name FROM ${kind.table} WHERE tenant_id = $1 AND name = ANY ($2::text[])`, [
    tenantId,
    names,
  ]);
  return new Set(rows.map((row) => row.name));
}

/** New groups with their members, in two statements (a bulk job's batch of creates, docs/api-reference.md 14). */
export async function insertGroupsWithMembers(
  db: Queryable,
  kind: GroupKind,
  tenantId: string,
  groups: readonly { id: string; name: string; memberIds: string[] }[],
  createdAt: number,
): Promise<void> {
  if (groups.length === 0) return;
  await db.query(
    `INSERT INTO ${kind.table} (tenant_id, id, name, created_at)
     SELECT $1, x.id, x.name, $3 FROM jsonb_to_recordset($2::jsonb) AS x(id uuid, name text)`,
    [tenantId, JSON.stringify(groups.map(({ id, name }) => ({ id, name }))), createdAt],
  );
  const members = groups.flatMap((group) => group.memberIds.map((member) => ({ g: group.id, m: member })));
  if (members.length === 0) return;
  await db.query(
    `INSERT INTO ${kind.members} (tenant_id, ${kind.groupColumn}, ${kind.memberColumn})
     SELECT $1, x.g, x.m FROM jsonb_to_recordset($2::jsonb) AS x(g uuid, m text)`,
    [tenantId, JSON.stringify(members)],
  );
}
