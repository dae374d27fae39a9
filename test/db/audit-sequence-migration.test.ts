// Migration 008 on a database with data: existing audit events numbered per tenant, counters set, old keys dropped.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, readMigrations } from '../../src/db/migrate.js';
import { appendAuditEvent, appendAuditEvents, listAuditEvents } from '../../src/db/repositories/audit.repo.js';
import { createEmptyTestDatabase, type TestDatabase } from '../helpers/database.js';

/** A retention window that shows every event these tests write (their times are small numbers). */
const EVERY_EVENT = { now: 1_000, defaultDays: 3650 };

describe('migration 008: per-tenant audit sequence, per-client idempotency keys', () => {
  let t: TestDatabase;
  const tenants: Record<'north' | 'south', string> = { north: '', south: '' };

  beforeAll(async () => {
    t = await createEmptyTestDatabase();
    const all = readMigrations();
    await migrate(t.db, all.filter((migration) => migration.version < 8));
    for (const name of ['north', 'south'] as const) {
      const { rows } = await t.db.query<{ id: string }>('INSERT INTO tenants (name, created_at) VALUES ($1, 0) RETURNING id', [name]);
      tenants[name] = rows[0]!.id;
    }
    // Interleaved under the one global sequence, as before 008.
    for (const [i, name] of (['north', 'south', 'south', 'north', 'south', 'north', 'north'] as const).entries()) {
      await t.db.query(
        "INSERT INTO audit_events (tenant_id, time, actor, action, target, request_id) VALUES ($1, $2, 'cli', 'x.created', $3, NULL)",
        [tenants[name], i, `x:${name}-${i}`],
      );
    }
    await t.db.query(
      "INSERT INTO idempotency_keys (tenant_id, key, request_hash, created_at, expires_at) VALUES ($1, 'old', '\\x00', 0, 9999999999999)",
      [tenants.north],
    );
    await migrate(t.db, all);
  });
  afterAll(async () => {
    await t.db.close();
  });

  it("numbers each tenant's existing events 1, 2, 3, ... in their old order and sets the counters to match", async () => {
    const north = await listAuditEvents(t.db, tenants.north, {}, null, 100, EVERY_EVENT);
    const south = await listAuditEvents(t.db, tenants.south, {}, null, 100, EVERY_EVENT);
    expect(north.map((event) => [event.id, event.target])).toEqual([
      ['1', 'x:north-0'],
      ['2', 'x:north-3'],
      ['3', 'x:north-5'],
      ['4', 'x:north-6'],
    ]);
    expect(south.map((event) => [event.id, event.target])).toEqual([
      ['1', 'x:south-1'],
      ['2', 'x:south-2'],
      ['3', 'x:south-4'],
    ]);
    const { rows } = await t.db.query<{ tenant_id: string; last_seq: number }>('SELECT tenant_id, last_seq FROM tenant_audit_counters');
    expect(Object.fromEntries(rows.map((row) => [row.tenant_id, Number(row.last_seq)]))).toEqual({ [tenants.north]: 4, [tenants.south]: 3 });
  });

  it('goes on from the counter: one event, then several in one statement, in the order given', async () => {
    const event = (target: string) => ({ tenantId: tenants.south, time: 100, actor: 'cli', action: 'x.more', target, requestId: null });
    await appendAuditEvent(t.db, event('x:a'));
    await t.db.transaction((tx) => appendAuditEvents(tx, [event('x:b'), event('x:c'), event('x:d')]));
    const south = await listAuditEvents(t.db, tenants.south, { action: 'x.more' }, null, 100, EVERY_EVENT);
    expect(south.map((item) => [item.id, item.target])).toEqual([
      ['4', 'x:a'],
      ['5', 'x:b'],
      ['6', 'x:c'],
      ['7', 'x:d'],
    ]);
    expect((await listAuditEvents(t.db, tenants.south, {}, 5, 100, EVERY_EVENT)).map((item) => item.id)).toEqual(['6', '7']);
  });

  it('refuses an event without a number, and a number twice', async () => {
    await expect(
      t.db.query("INSERT INTO audit_events (tenant_id, time, actor, action, target) VALUES ($1, 0, 'cli', 'x', 'x')", [tenants.north]),
    ).rejects.toThrow();
    await expect(
      t.db.query("INSERT INTO audit_events (tenant_id, seq, time, actor, action, target) VALUES ($1, 1, 0, 'cli', 'x', 'x')", [tenants.north]),
    ).rejects.toThrow();
  });

  it('drops the idempotency records made before keys were per client', async () => {
    const { rows } = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM idempotency_keys');
    expect(rows[0]!.n).toBe(0);
  });
});
