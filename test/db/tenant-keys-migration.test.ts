// Migration 016 on a database with data: every row kept under its new tenant key, client ids found through client_tenants.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, readMigrations } from '../../src/db/migrate.js';
import { pruneEvents, listAuditEvents } from '../../src/db/repositories/audit.repo.js';
import { deleteClient, findClient, insertClient } from '../../src/db/repositories/client.repo.js';
import { consumeRefreshToken, findRefreshToken } from '../../src/db/repositories/refresh-token.repo.js';
import { findTicket } from '../../src/db/repositories/ticket.repo.js';
import { findUserByLogin } from '../../src/db/repositories/user.repo.js';
import { createEmptyTestDatabase, type TestDatabase } from '../helpers/database.js';

const PERMISSION = '6f1c1a52-0000-4000-8000-000000000001';
/** Before 016 the pair index was global: the two tenants' tickets could not both name PERMISSION. */
const PERMISSION_SOUTH = '6f1c1a52-0000-4000-8000-000000000002';
const hash = (byte: number) => Buffer.alloc(32, byte);

describe('migration 016: tenant_id in every key', () => {
  let t: TestDatabase;
  const tenants: Record<'north' | 'south', string> = { north: '', south: '' };
  const users: Record<'north' | 'south', string> = { north: '', south: '' };
  const tickets: Record<string, string> = {};

  beforeAll(async () => {
    t = await createEmptyTestDatabase();
    const all = readMigrations();
    await migrate(t.db, all.filter((migration) => migration.version < 16));
    const db = t.db;
    for (const name of ['north', 'south'] as const) {
      const { rows } = await db.query<{ id: string }>('INSERT INTO tenants (name, created_at) VALUES ($1, 0) RETURNING id', [name]);
      const tenantId = rows[0]!.id;
      tenants[name] = tenantId;
      await db.query(
        `INSERT INTO oauth_clients (client_id, tenant_id, name, secret_hash, scopes, created_at)
         VALUES ($1, $2, $1, $3, '{offline}', 0)`,
        [`client-${name}`, tenantId, hash(1)],
      );
      const user = await db.query<{ id: string }>(
        "INSERT INTO users (tenant_id, username, password_hash, created_at) VALUES ($1, 'ann', 'x', 0) RETURNING id",
        [tenantId],
      );
      users[name] = user.rows[0]!.id;
      await db.query(
        `INSERT INTO refresh_tokens (token_hash, family_id, tenant_id, client_id, user_id, scopes, created_at, expires_at)
         VALUES ($1, gen_random_uuid(), $2, $3, $4, '{offline}', 0, 9999999999999)`,
        [hash(name === 'north' ? 10 : 20), tenantId, `client-${name}`, users[name]],
      );
      const ticket = await db.query<{ id: string }>(
        `INSERT INTO tickets (id, tenant_id, secured_object_id, mobile_device_id, begin_date, end_date, created_at, commands,
                              channels, change_seq, access_permission_id)
         VALUES (gen_random_uuid(), $1, 'door', 'phone', 0, 1000, 0, '{open}', '{BLE}', 1, $2) RETURNING id`,
        [tenantId, name === 'north' ? PERMISSION : PERMISSION_SOUTH],
      );
      tickets[name] = ticket.rows[0]!.id;
      for (const seq of [1, 2]) {
        await db.query(
          "INSERT INTO audit_events (tenant_id, seq, time, actor, action, target) VALUES ($1, $2, $2, 'cli', 'ticket.created', 'x')",
          [tenantId, seq],
        );
      }
      await db.query("INSERT INTO tenant_audit_counters (tenant_id, last_seq) VALUES ($1, 2)", [tenantId]);
    }
    // A webhook delivery waits on north's first event: its foreign key points at the key that becomes the primary key.
    await db.query(
      `INSERT INTO webhooks (tenant_id, id, url, event_types, secret_sealed, dispatched_through, created_at, updated_at)
       VALUES ($1, gen_random_uuid(), 'https://example.test/in', '{ticket.created}', '\\x00', 2, 0, 0)`,
      [tenants.north],
    );
    await db.query(
      `INSERT INTO webhook_deliveries (tenant_id, webhook_id, event_seq, state, next_attempt_at, created_at)
       SELECT tenant_id, id, 1, 'pending', 0, 0 FROM webhooks`,
    );
    await migrate(t.db, all);
  });
  afterAll(async () => {
    await t.db.close();
  });

  it('enters every existing client in client_tenants, so the token endpoint still finds each with its tenant', async () => {
    // Migration 028 enters each tenant's console client too (test/db/console-clients-migration.test.ts).
    const { rows } = await t.db.query<{ client_id: string; tenant_id: string }>(
      "SELECT client_id, tenant_id FROM client_tenants WHERE client_id NOT LIKE 'console-%' ORDER BY client_id",
    );
    expect(rows).toEqual([
      { client_id: 'client-north', tenant_id: tenants.north },
      { client_id: 'client-south', tenant_id: tenants.south },
    ]);
    expect((await findClient(t.db, 'client-south'))?.tenantId).toBe(tenants.south);
    expect(await findClient(t.db, 'client-nobody')).toBeNull();
  });

  it('keeps refresh tokens, found only within their own tenant', async () => {
    expect(await findRefreshToken(t.db, tenants.south, hash(10))).toBeNull();
    expect((await findRefreshToken(t.db, tenants.north, hash(10)))?.userId).toBe(users.north);
    expect(await consumeRefreshToken(t.db, tenants.south, hash(10), 'client-north', 1)).toBeNull();
    expect((await consumeRefreshToken(t.db, tenants.north, hash(10), 'client-north', 1))?.clientId).toBe('client-north');
    expect((await findUserByLogin(t.db, 'south', 'ann'))?.id).toBe(users.south);
    expect(await findUserByLogin(t.db, 'east', 'ann')).toBeNull();
  });

  it('keeps tickets under (tenant, id), and one live ticket per permission pair within a tenant', async () => {
    expect((await findTicket(t.db, tenants.north, tickets.north!))?.accessPermissionId).toBe(PERMISSION);
    expect(await findTicket(t.db, tenants.south, tickets.north!)).toBeNull();
    const second = (tenantId: string) =>
      t.db.query(
        `INSERT INTO tickets (id, tenant_id, secured_object_id, mobile_device_id, begin_date, end_date, created_at, commands,
                              channels, change_seq, access_permission_id)
         VALUES (gen_random_uuid(), $1, 'door', 'phone', 0, 1000, 0, '{open}', '{BLE}', 2, $2)`,
        [tenantId, PERMISSION],
      );
    await expect(second(tenants.north)).rejects.toThrow(/tickets_permission_pair_idx/);
    // The rule is the tenant's: another tenant's pair with the same permission id is another pair.
    await second(tenants.south);
    const { rows } = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM tickets WHERE access_permission_id = $1', [PERMISSION]);
    expect(rows[0]!.n).toBe(2);
  });

  it('keys events by (tenant, seq), with the pending delivery still holding its event against retention', async () => {
    expect((await listAuditEvents(t.db, tenants.north, {}, null, 10, { now: 1_000, defaultDays: 3650 })).map((event) => event.id)).toEqual(['1', '2']);
    expect((await pruneEvents(t.db, tenants.north, 100, 100)) + (await pruneEvents(t.db, tenants.south, 100, 100))).toBe(3);
    const { rows } = await t.db.query<{ tenant_id: string; seq: number }>('SELECT tenant_id, seq::int FROM audit_events');
    expect(rows).toEqual([{ tenant_id: tenants.north, seq: 1 }]);
  });

  it('deletes a client with its directory entry and, by the new foreign key, its refresh tokens', async () => {
    await t.db.transaction((tx) => deleteClient(tx, tenants.south, 'client-south'));
    const { rows } = await t.db.query<{ entries: number; tokens: number }>(
      `SELECT (SELECT count(*)::int FROM client_tenants WHERE client_id = 'client-south') AS entries,
              (SELECT count(*)::int FROM refresh_tokens WHERE tenant_id = $1) AS tokens`,
      [tenants.south],
    );
    expect(rows).toEqual([{ entries: 0, tokens: 0 }]);
    expect(await findClient(t.db, 'client-south')).toBeNull();
  });

  it('keeps client ids unique across tenants, and refuses a client without its directory entry', async () => {
    const client = { name: 'x', secretHash: hash(2), scopes: [], mobileDeviceId: null, securedObjectId: null, createdAt: 0, redirectUri: null };
    await expect(
      t.db.transaction((tx) => insertClient(tx, { ...client, clientId: 'client-north', tenantId: tenants.south })),
    ).rejects.toThrow(/client_tenants_pkey/);
    await expect(
      t.db.query(
        "INSERT INTO oauth_clients (client_id, tenant_id, name, secret_hash, scopes, created_at) VALUES ('stray', $1, 'x', '\\x00', '{}', 0)",
        [tenants.north],
      ),
    ).rejects.toThrow(/oauth_clients_client_tenants_fkey/);
    await t.db.transaction((tx) => insertClient(tx, { ...client, clientId: 'client-new', tenantId: tenants.south }));
    expect((await findClient(t.db, 'client-new'))?.tenantId).toBe(tenants.south);
  });
});
