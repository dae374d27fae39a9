// Migration 028 on a database with tenants: each gets the console's public client (docs/api-reference.md 3.8), found
// by its id like any client, and existing clients and users are kept as they were, users without a role.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, readMigrations } from '../../src/db/migrate.js';
import { findClient } from '../../src/db/repositories/client.repo.js';
import { findUserByLogin } from '../../src/db/repositories/user.repo.js';
import { ROLE_SCOPES } from '../../src/shared/scopes.js';
import { createEmptyTestDatabase, type TestDatabase } from '../helpers/database.js';

describe('migration 028: the console client of every existing tenant', () => {
  let t: TestDatabase;
  const tenants: Record<'north' | 'south', string> = { north: '', south: '' };

  beforeAll(async () => {
    t = await createEmptyTestDatabase();
    const all = readMigrations();
    await migrate(t.db, all.filter((migration) => migration.version < 28));
    for (const name of ['north', 'south'] as const) {
      const { rows } = await t.db.query<{ id: string }>('INSERT INTO tenants (name, created_at) VALUES ($1, 0) RETURNING id', [name]);
      tenants[name] = rows[0]!.id;
      await t.db.query('INSERT INTO client_tenants (client_id, tenant_id) VALUES ($1, $2)', [`client-${name}`, tenants[name]]);
      await t.db.query(
        `INSERT INTO oauth_clients (client_id, tenant_id, name, secret_hash, scopes, created_at) VALUES ($1, $2, $1, $3, '{tokens:read}', 0)`,
        [`client-${name}`, tenants[name], Buffer.alloc(32, 1)],
      );
      await t.db.query("INSERT INTO users (tenant_id, username, password_hash, created_at) VALUES ($1, 'ann', 'x', 0)", [tenants[name]]);
    }
    await migrate(t.db, all);
  });
  afterAll(async () => {
    await t.db.close();
  });

  it('makes one public client per tenant: no secret, the console redirect path, the admin scopes', async () => {
    const { rows } = await t.db.query<{ client_id: string; tenant_id: string; secret_hash: Buffer | null; redirect_uri: string; scopes: string[] }>(
      "SELECT client_id, tenant_id, secret_hash, redirect_uri, scopes FROM oauth_clients WHERE redirect_uri IS NOT NULL ORDER BY tenant_id",
    );
    expect(rows.map((row) => row.tenant_id).sort()).toEqual([tenants.north, tenants.south].sort());
    for (const row of rows) {
      expect(row.client_id).toMatch(/^console-[0-9a-f]{32}$/);
      expect(row.secret_hash).toBeNull();
      expect(row.redirect_uri).toBe('/console/callback');
      expect([...row.scopes].sort()).toEqual([...ROLE_SCOPES.admin].sort());
      // Found through the client directory like every client.
      expect((await findClient(t.db, row.client_id))?.tenantId).toBe(row.tenant_id);
    }
  });

  it('keeps the existing clients with their secret, and the users without a role', async () => {
    const client = await findClient(t.db, 'client-north');
    expect(client?.secretHash).toEqual(Buffer.alloc(32, 1));
    expect(client?.redirectUri).toBeNull();
    expect((await findUserByLogin(t.db, 'south', 'ann'))?.role).toBeNull();
  });
});
