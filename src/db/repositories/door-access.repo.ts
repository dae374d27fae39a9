// SQL for "who can open this door" (docs/api-reference.md 13): a lock's live tickets at an instant, with their device,
// resident and key, in one statement that names its tenant everywhere.
import type { Queryable } from '../database.js';
import type { KeysetPosition } from '../../shared/keyset.js';
import type { Schedule } from '../../shared/schedule/types.js';

export interface DoorAccessRow {
  ticketId: string;
  mobileDeviceId: string;
  accessPermissionId: string | null;
  beginDate: number;
  endDate: number;
  createdAt: number;
  schedule: Schedule | null;
  keyBound: boolean;
  /** Created with `override: true`: it opens during a lockdown too (docs/api-reference.md 15). */
  override: boolean;
  residentId: string | null;
  residentName: string | null;
}

interface Row {
  id: string;
  mobile_device_id: string;
  access_permission_id: string | null;
  begin_date: number;
  end_date: number;
  created_at: number;
  schedule: Schedule | null;
  key_bound: boolean;
  override: boolean;
  resident_id: string | null;
  resident_name: string | null;
}

/**
 * The lock's tickets that are valid at `at` (not revoked, `beginDate <= at < endDate`) and grant `open`, in creation
 * order after `after`, at most `limit`: the schedule is judged by the caller, in the lock's time zone. The resident is
 * the permission's for a granted ticket, else the first resident (by id) holding the device. Pages on the lock's
 * ticket index (tenant, lock, created_at, id).
 */
export async function listDoorAccess(
  db: Queryable,
  tenantId: string,
  securedObjectId: string,
  at: number,
  after: KeysetPosition | null,
  limit: number,
): Promise<DoorAccessRow[]> {
  const params: unknown[] = [tenantId, securedObjectId, at, limit];
  let keyset = '';
  if (after) {
    params.push(after.createdAt, after.id);
    keyset = 'AND (t.created_at, t.id) > ($5::bigint, $6::uuid)';
  }
  const { rows } = await db.query<Row>(
    `SELECT t.id, t.mobile_device_id, t.access_permission_id, t.begin_date, t.end_date, t.created_at, t.schedule, t.override,
            (d.key_thumbprint IS NOT NULL) AS key_bound,
            COALESCE(p.resident_id, m.resident_id) AS resident_id,
            r.name AS resident_name
       FROM tickets t
       LEFT JOIN mobile_devices d ON d.tenant_id = $1 AND d.id = t.mobile_device_id
       LEFT JOIN access_permissions p ON p.tenant_id = $1 AND p.id = t.access_permission_id
       LEFT JOIN LATERAL (
         SELECT rd.resident_id FROM resident_devices rd
          WHERE rd.tenant_id = $1 AND rd.mobile_device_id = t.mobile_device_id
          ORDER BY rd.resident_id LIMIT 1
       ) m ON t.access_permission_id IS NULL
       LEFT JOIN residents r ON r.tenant_id = $1 AND r.id = COALESCE(p.resident_id, m.resident_id)
      WHERE t.tenant_id = $1 AND t.secured_object_id = $2 AND t.revoked_at IS NULL
        AND t.begin_date <= $3::bigint AND t.end_date > $3::bigint AND 'open' = ANY (t.commands)
        ${keyset}
      ORDER BY t.created_at, t.id
      LIMIT $4`,
    params,
  );
  return rows.map((row) => ({
    ticketId: row.id,
    mobileDeviceId: row.mobile_device_id,
    accessPermissionId: row.access_permission_id,
    beginDate: Number(row.begin_date),
    endDate: Number(row.end_date),
    createdAt: Number(row.created_at),
    schedule: row.schedule,
    keyBound: row.key_bound,
    override: row.override,
    residentId: row.resident_id,
    residentName: row.resident_name,
  }));
}
