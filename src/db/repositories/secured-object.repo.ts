// SQL for secured objects (locks).
import type { Queryable } from '../database.js';
import { keysetPage, type KeysetColumns, type KeysetPosition } from '../../shared/keyset.js';
import type { HolderBinding } from '../../shared/holder-binding.js';
import { LOCK_PROPAGATION_COLUMNS, toLockPropagation, type LockPropagation, type LockPropagationRow } from './lock-telemetry.repo.js';

export interface SecuredObjectRecord {
  tenantId: string;
  id: string;
  channels: string[];
  localName: string;
  uuid: string;
  createdAt: number;
  /** The IANA time zone its schedules are read in (docs/api-reference.md 9), in canonical spelling. */
  timeZone: string;
  /** docs/api-reference.md 11.1: its own registered key's thumbprint; null while none. */
  keyThumbprint: string | null;
  /** docs/api-reference.md 11.2: its own policy; null: the tenant's applies. */
  holderBinding: HolderBinding | null;
}

interface SecuredObjectRow {
  tenant_id: string;
  id: string;
  channels: string[];
  local_name: string;
  uuid: string;
  created_at: number;
  time_zone: string;
  key_thumbprint: string | null;
  holder_binding: HolderBinding | null;
}

const COLUMNS = 'tenant_id, id, channels, local_name, uuid, created_at, time_zone, key_thumbprint, holder_binding';

/**
 * One column of one lock, read by its key in a subquery of its own: NULL when the lock is gone. A statement over many
 * locks of a lock group or a lockdown reads each this way, so PostgreSQL looks each up by the primary key whatever
 * its statistics say. As a join, locks written since the statistics were taken (a new building, a bulk import) were
 * one row to the planner, which could then scan the tenant's locks once per lock (docs/scaling.md, *Plans that hold
 * without fresh statistics*).
 */
export const LOCK_COLUMN = (tenant: string, securedObjectId: string, column: 'id' | 'time_zone' | 'channels') =>
  `(SELECT so.${column} FROM secured_objects so WHERE so.tenant_id = ${tenant} AND so.id = ${securedObjectId})`;

/** Ids are the operator's own strings (docs/api-reference.md 4), ordered as text. */
const KEYSET: KeysetColumns = { createdAt: 'created_at', id: 'id', idType: 'text' };

const toRecord = (row: SecuredObjectRow): SecuredObjectRecord => ({
  tenantId: row.tenant_id,
  id: row.id,
  channels: row.channels,
  localName: row.local_name,
  uuid: row.uuid,
  createdAt: row.created_at,
  timeZone: row.time_zone,
  keyThumbprint: row.key_thumbprint,
  holderBinding: row.holder_binding,
});

/** Null when the id is taken in the tenant. */
export async function insertSecuredObject(db: Queryable, object: SecuredObjectRecord): Promise<SecuredObjectRecord | null> {
  const { rows } = await db.query<SecuredObjectRow>(
    `INSERT INTO secured_objects (tenant_id, id, channels, local_name, uuid, created_at, time_zone) VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (tenant_id, id) DO NOTHING RETURNING ${COLUMNS}`,
    [object.tenantId, object.id, object.channels, object.localName, object.uuid, object.createdAt, object.timeZone],
  );
  return rows[0] ? toRecord(rows[0]) : null;
}

export async function findSecuredObject(db: Queryable, tenantId: string, id: string): Promise<SecuredObjectRecord | null> {
  const { rows } = await db.query<SecuredObjectRow>(`SELECT ${COLUMNS} FROM secured_objects WHERE tenant_id = $1 AND id = $2`, [
    tenantId,
    id,
  ]);
  return rows[0] ? toRecord(rows[0]) : null;
}

/**
 * The lock with its telemetry and the revocations still on their way to it (LOCK_PROPAGATION_COLUMNS) in one statement,
 * at `now`, the margin bounded by `maxClockMarginMs`; null when the tenant has no lock of that id.
 */
export async function findSecuredObjectWithPropagation(
  db: Queryable,
  tenantId: string,
  id: string,
  now: number,
  maxClockMarginMs: number,
): Promise<{ record: SecuredObjectRecord; propagation: LockPropagation } | null> {
  const { rows } = await db.query<SecuredObjectRow & LockPropagationRow>(
    `SELECT ${COLUMNS.split(', ').map((column) => `so.${column}`).join(', ')}, ${LOCK_PROPAGATION_COLUMNS}
       FROM secured_objects so
       LEFT JOIN lock_telemetry lt ON lt.tenant_id = $1 AND lt.secured_object_id = $2
      WHERE so.tenant_id = $1 AND so.id = $2`,
    [tenantId, id, now, maxClockMarginMs],
  );
  return rows[0] ? { record: toRecord(rows[0]), propagation: toLockPropagation(rows[0]) } : null;
}

/**
 * A page of the tenant's locks in creation order; with `search`, only those whose id or local name contains it,
 * ignoring case (strpos: the text is literal, no LIKE wildcards). The search filters the walk of the page index,
 * which stays bounded by the tenant's locks.
 */
export async function listSecuredObjects(
  db: Queryable,
  tenantId: string,
  after: KeysetPosition | null,
  limit: number,
  search?: string,
): Promise<SecuredObjectRecord[]> {
  const params: unknown[] = [tenantId];
  let matches = '';
  if (search !== undefined) {
    params.push(search);
    const text = `lower($${params.length}::text)`;
    matches = `AND (strpos(lower(id), ${text}) > 0 OR strpos(lower(local_name), ${text}) > 0) `;
  }
  const page = keysetPage(params, KEYSET, after, limit);
  const { rows } = await db.query<SecuredObjectRow>(
    `SELECT ${COLUMNS} FROM secured_objects WHERE tenant_id = $1 ${matches}AND ${page.condition} ${page.orderAndLimit}`,
    params,
  );
  return rows.map(toRecord);
}

/** The fields PATCH /operatorapi/securedobjects/{id} changes (docs/api-reference.md 9); an absent one stays as it is. */
export interface SecuredObjectChanges {
  timeZone?: string | undefined;
  /** docs/api-reference.md 11.2: null removes the lock's own policy, so the tenant's applies. */
  holderBinding?: HolderBinding | null | undefined;
}

/**
 * Applies the changes in one statement; null when the tenant has no such lock. A policy change is stamped with the
 * change number `holderBindingSeq` (migration 023), taken by the caller when `holderBinding` is among the changes.
 */
export async function updateSecuredObject(
  db: Queryable,
  tenantId: string,
  id: string,
  changes: SecuredObjectChanges,
  holderBindingSeq: number | null = null,
): Promise<SecuredObjectRecord | null> {
  const { rows } = await db.query<SecuredObjectRow>(
    `UPDATE secured_objects SET time_zone = COALESCE($3, time_zone),
            holder_binding = CASE WHEN $4::boolean THEN $5::text ELSE holder_binding END,
            holder_binding_seq = CASE WHEN $4::boolean THEN $6::bigint ELSE holder_binding_seq END
      WHERE tenant_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
    [tenantId, id, changes.timeZone ?? null, changes.holderBinding !== undefined, changes.holderBinding ?? null, holderBindingSeq ?? 0],
  );
  return rows[0] ? toRecord(rows[0]) : null;
}

export async function deleteSecuredObject(db: Queryable, tenantId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM secured_objects WHERE tenant_id = $1 AND id = $2', [tenantId, id]);
  return rowCount > 0;
}

/**
 * Whether the tenant has the secured object, holding it until commit so it cannot be deleted meanwhile: a client bound to
 * it in the same transaction is then seen by the deletion, which waits (docs/api-reference.md 4.1). FOR KEY SHARE blocks
 * a DELETE, not other readers or updates.
 */
export async function holdSecuredObjectForBinding(db: Queryable, tenantId: string, id: string): Promise<boolean> {
  const { rows } = await db.query('SELECT 1 FROM secured_objects WHERE tenant_id = $1 AND id = $2 FOR KEY SHARE', [tenantId, id]);
  return rows.length > 0;
}
