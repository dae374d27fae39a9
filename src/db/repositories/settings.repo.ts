// SQL for a tenant's settings (docs/api-reference.md 11.2, 16.1): its holder-binding policy and its retention periods.
import type { Queryable } from '../database.js';
import type { HolderBinding } from '../../shared/holder-binding.js';
import type { RetentionChoices } from '../../shared/retention-periods.js';

export interface TenantSettingsRecord {
  holderBinding: HolderBinding;
  retention: RetentionChoices;
}

interface SettingsRow {
  holder_binding: HolderBinding;
  access_log_retention_days: number | null;
  event_retention_days: number | null;
  audit_retention_days: number | null;
}

const COLUMNS = 'holder_binding, access_log_retention_days, event_retention_days, audit_retention_days';

function toRetentionChoices(row: Omit<SettingsRow, 'holder_binding'>): RetentionChoices {
  return { accessLogDays: row.access_log_retention_days, eventDays: row.event_retention_days, auditDays: row.audit_retention_days };
}

function toSettings(row: SettingsRow): TenantSettingsRecord {
  return { holderBinding: row.holder_binding, retention: toRetentionChoices(row) };
}

export async function findTenantSettings(db: Queryable, tenantId: string): Promise<TenantSettingsRecord | null> {
  const { rows } = await db.query<SettingsRow>(`SELECT ${COLUMNS} FROM tenants WHERE id = $1`, [tenantId]);
  return rows[0] ? toSettings(rows[0]) : null;
}

/**
 * Sets the tenant's policy with the change number `seq` (migration 023), so that sync cursors and revocation-list
 * serials of every lock move past the change.
 */
export async function updateTenantHolderBinding(db: Queryable, tenantId: string, holderBinding: HolderBinding, seq: number): Promise<boolean> {
  const { rowCount } = await db.query('UPDATE tenants SET holder_binding = $2, holder_binding_seq = $3 WHERE id = $1', [tenantId, holderBinding, seq]);
  return rowCount === 1;
}

/** Sets the periods named in `changes` (`null`: back to the instance's default); leaves the others as they are. */
export async function updateTenantRetention(db: Queryable, tenantId: string, changes: Partial<RetentionChoices>): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE tenants
        SET access_log_retention_days = CASE WHEN $2 THEN $3::integer ELSE access_log_retention_days END,
            event_retention_days = CASE WHEN $4 THEN $5::integer ELSE event_retention_days END,
            audit_retention_days = CASE WHEN $6 THEN $7::integer ELSE audit_retention_days END
      WHERE id = $1`,
    [
      tenantId,
      changes.accessLogDays !== undefined,
      changes.accessLogDays ?? null,
      changes.eventDays !== undefined,
      changes.eventDays ?? null,
      changes.auditDays !== undefined,
      changes.auditDays ?? null,
    ],
  );
  return rowCount === 1;
}

/** Every tenant's retention choices, for the prunes that walk the tenants one by one (services/retention.ts). */
export async function listTenantRetentionChoices(db: Queryable): Promise<Array<{ tenantId: string; retention: RetentionChoices }>> {
  const { rows } = await db.query<Omit<SettingsRow, 'holder_binding'> & { id: string }>(
    'SELECT id, access_log_retention_days, event_retention_days, audit_retention_days FROM tenants ORDER BY id',
  );
  return rows.map((row) => ({ tenantId: row.id, retention: toRetentionChoices(row) }));
}
