// SQL for tenants.
import type { Queryable } from '../database.js';

export interface Tenant {
  id: string;
  name: string;
  createdAt: number;
}

interface TenantRow {
  id: string;
  name: string;
  created_at: number;
}

const toTenant = (row: TenantRow): Tenant => ({ id: row.id, name: row.name, createdAt: row.created_at });

/** Null when the name is taken. */
export async function insertTenant(db: Queryable, name: string, createdAt: number): Promise<Tenant | null> {
  const { rows } = await db.query<TenantRow>(
    'INSERT INTO tenants (name, created_at) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING RETURNING id, name, created_at',
    [name, createdAt],
  );
  return rows[0] ? toTenant(rows[0]) : null;
}

export async function findTenantByName(db: Queryable, name: string): Promise<Tenant | null> {
  const { rows } = await db.query<TenantRow>('SELECT id, name, created_at FROM tenants WHERE name = $1', [name]);
  return rows[0] ? toTenant(rows[0]) : null;
}

export async function findTenantById(db: Queryable, id: string): Promise<Tenant | null> {
  const { rows } = await db.query<TenantRow>('SELECT id, name, created_at FROM tenants WHERE id = $1', [id]);
  return rows[0] ? toTenant(rows[0]) : null;
}

/** Every tenant's id: what a per-tenant sweep walks (each of its statements then names one tenant). */
export async function listTenantIds(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>('SELECT id FROM tenants ORDER BY id');
  return rows.map((row) => row.id);
}
