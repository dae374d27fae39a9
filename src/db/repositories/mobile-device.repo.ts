// SQL for mobile devices.
import type { Queryable } from '../database.js';
import { keysetPage, type KeysetColumns, type KeysetPosition } from '../../shared/keyset.js';

export interface MobileDeviceRecord {
  tenantId: string;
  id: string;
  name: string | null;
  createdAt: number;
  /** docs/api-reference.md 11.1: its registered key's thumbprint and when it was registered; null while none. */
  keyThumbprint: string | null;
  keyRegisteredAt: number | null;
}

interface MobileDeviceRow {
  tenant_id: string;
  id: string;
  name: string | null;
  created_at: number;
  key_thumbprint: string | null;
  key_registered_at: number | null;
}

const COLUMNS = 'tenant_id, id, name, created_at, key_thumbprint, key_registered_at';

/** Ids are the operator's own strings (docs/api-reference.md 4), ordered as text. */
const KEYSET: KeysetColumns = { createdAt: 'created_at', id: 'id', idType: 'text' };

const toRecord = (row: MobileDeviceRow): MobileDeviceRecord => ({
  tenantId: row.tenant_id,
  id: row.id,
  name: row.name,
  createdAt: row.created_at,
  keyThumbprint: row.key_thumbprint,
  keyRegisteredAt: row.key_registered_at === null ? null : Number(row.key_registered_at),
});

/** Null when the id is taken in the tenant. */
export async function insertMobileDevice(db: Queryable, device: MobileDeviceRecord): Promise<MobileDeviceRecord | null> {
  const { rows } = await db.query<MobileDeviceRow>(
    `INSERT INTO mobile_devices (tenant_id, id, name, created_at) VALUES ($1, $2, $3, $4)
     ON CONFLICT (tenant_id, id) DO NOTHING RETURNING ${COLUMNS}`,
    [device.tenantId, device.id, device.name, device.createdAt],
  );
  return rows[0] ? toRecord(rows[0]) : null;
}

export async function findMobileDevice(db: Queryable, tenantId: string, id: string): Promise<MobileDeviceRecord | null> {
  const { rows } = await db.query<MobileDeviceRow>(`SELECT ${COLUMNS} FROM mobile_devices WHERE tenant_id = $1 AND id = $2`, [
    tenantId,
    id,
  ]);
  return rows[0] ? toRecord(rows[0]) : null;
}

export async function listMobileDevices(
  db: Queryable,
  tenantId: string,
  after: KeysetPosition | null,
  limit: number,
): Promise<MobileDeviceRecord[]> {
  const params: unknown[] = [tenantId];
  const page = keysetPage(params, KEYSET, after, limit);
  const { rows } = await db.query<MobileDeviceRow>(
    `SELECT ${COLUMNS} FROM mobile_devices WHERE tenant_id = $1 AND ${page.condition} ${page.orderAndLimit}`,
    params,
  );
  return rows.map(toRecord);
}

export async function deleteMobileDevice(db: Queryable, tenantId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM mobile_devices WHERE tenant_id = $1 AND id = $2', [tenantId, id]);
  return rowCount > 0;
}

/**
 * Whether the tenant has the mobile device, holding it until commit so it cannot be deleted meanwhile: a client bound to
 * it in the same transaction is then seen by the deletion, which waits (docs/api-reference.md 4.2). FOR KEY SHARE blocks
 * a DELETE, not other readers or updates.
 */
export async function holdMobileDeviceForBinding(db: Queryable, tenantId: string, id: string): Promise<boolean> {
  const { rows } = await db.query('SELECT 1 FROM mobile_devices WHERE tenant_id = $1 AND id = $2 FOR KEY SHARE', [tenantId, id]);
  return rows.length > 0;
}

/** The tenant's devices among `ids` (a bulk job's batch, docs/api-reference.md 14), in one statement. */
export async function findMobileDevices(db: Queryable, tenantId: string, ids: readonly string[]): Promise<MobileDeviceRecord[]> {
  if (ids.length === 0) return [];
  const { rows } = await db.query<MobileDeviceRow>(`SELECT ${COLUMNS} FROM mobile_devices WHERE tenant_id = $1 AND id = ANY ($2::text[])`, [
    tenantId,
    ids,
  ]);
  return rows.map(toRecord);
}

/** Inserts devices in one statement; answers the ids inserted (an id taken meanwhile is left out). */
export async function insertMobileDevices(db: Queryable, tenantId: string, devices: readonly { id: string; name: string | null }[], createdAt: number): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO mobile_devices (tenant_id, id, name, created_at)
     SELECT $1, x.id, x.name, $3 FROM jsonb_to_recordset($2::jsonb) AS x(id text, name text)
     ON CONFLICT (tenant_id, id) DO NOTHING RETURNING id`,
    [tenantId, JSON.stringify(devices), createdAt],
  );
  return rows.map((row) => row.id);
}
