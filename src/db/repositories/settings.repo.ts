// SQL for a tenant's settings (docs/api-reference.md 11.2): its holder-binding policy.
import type { Queryable } from '../database.js';
import type { HolderBinding } from '../../shared/holder-binding.js';

export interface TenantSettings {
  holderBinding: HolderBinding;
}

export async function findTenantSettings(db: Queryable, tenantId: string): Promise<TenantSettings | null> {
  const { rows } = await db.query<{ holder_binding: HolderBinding }>('SELECT holder_binding FROM tenants WHERE id = $1', [tenantId]);
  return rows[0] ? { holderBinding: rows[0].holder_binding } : null;
}

/**
 * Sets the tenant's policy with the change number `seq` (migration 023), so that sync cursors and revocation-list
 * serials of every lock move past the change.
 */
export async function updateTenantHolderBinding(db: Queryable, tenantId: string, holderBinding: HolderBinding, seq: number): Promise<TenantSettings | null> {
  const { rows } = await db.query<{ holder_binding: HolderBinding }>(
    'UPDATE tenants SET holder_binding = $2, holder_binding_seq = $3 WHERE id = $1 RETURNING holder_binding',
    [tenantId, holderBinding, seq],
  );
  return rows[0] ? { holderBinding: rows[0].holder_binding } : null;
}
