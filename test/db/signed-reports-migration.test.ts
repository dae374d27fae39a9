// Migration 021 on a database with access logs (docs/api-reference.md 8.5): entries phones relayed move to each phone's
// own numbering as unsigned reports, the lock's own stay its word, and the high mark counts the lock's numbering only.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, readMigrations } from '../../src/db/migrate.js';
import { createEmptyTestDatabase, type TestDatabase } from '../helpers/database.js';

describe('migration 021: signed reports', () => {
  let t: TestDatabase;
  let tenantId = '';

  beforeAll(async () => {
    t = await createEmptyTestDatabase();
    const all = readMigrations();
    await migrate(t.db, all.filter((migration) => migration.version < 21));
    const db = t.db;
    tenantId = (await db.query<{ id: string }>("INSERT INTO tenants (name, created_at) VALUES ('acme', 0) RETURNING id")).rows[0]!.id;
    await db.query(
      `INSERT INTO secured_objects (tenant_id, id, channels, local_name, uuid, created_at) VALUES ($1, 'door', '{btlespp}', 'Door', gen_random_uuid(), 100)`,
      [tenantId],
    );
    // The lock uploaded 1..3; a phone relayed 2 and, ahead of the lock, 2^53-1, which raised the high mark before 021.
    for (const [entryNo, via] of [
      [1, 'lock'],
      [2, 'lock'],
      [3, 'lock'],
      [7, 'phone-1'],
      [Number.MAX_SAFE_INTEGER, 'phone-1'],
    ] as const) {
      await db.query(
        `INSERT INTO access_log_entries (tenant_id, secured_object_id, lock_registered_at, entry_no, lock_time, command, channel, result, received_at, via)
         VALUES ($1, 'door', 100, $2, 0, 'open', 'btlespp', 'granted', 0, $3)`,
        [tenantId, entryNo, via],
      );
    }
    await db.query(
      `INSERT INTO lock_telemetry (tenant_id, secured_object_id, last_seen_at, log_high) VALUES ($1, 'door', 0, $2)`,
      [tenantId, Number.MAX_SAFE_INTEGER],
    );
    await migrate(t.db, all);
  });
  afterAll(async () => {
    await t.db.close();
  });

  it('moves relayed entries to the phone\'s numbering, unsigned, and keeps the lock\'s own as its word', async () => {
    const { rows } = await t.db.query<{ entry_no: string; via: string; numbering: string; signed: boolean }>(
      "SELECT entry_no, via, numbering, signed FROM access_log_entries WHERE tenant_id = $1 AND secured_object_id = 'door' ORDER BY numbering, entry_no",
      [tenantId],
    );
    expect(rows.map((row) => [Number(row.entry_no), row.via, row.numbering, row.signed])).toEqual([
      [1, 'lock', 'lock', true],
      [2, 'lock', 'lock', true],
      [3, 'lock', 'lock', true],
      [7, 'phone-1', 'phone:phone-1', false],
      [Number.MAX_SAFE_INTEGER, 'phone-1', 'phone:phone-1', false],
    ]);
  });

  it('recomputes the high mark from the lock\'s own numbering', async () => {
    const { rows } = await t.db.query<{ log_high: string }>("SELECT log_high FROM lock_telemetry WHERE tenant_id = $1 AND secured_object_id = 'door'", [tenantId]);
    expect(Number(rows[0]!.log_high)).toBe(3);
  });

  it('takes the lock\'s entry 7 beside the phone\'s, and refuses a row that says it is signed outside the lock\'s numbering', async () => {
    await t.db.query(
      `INSERT INTO access_log_entries (tenant_id, secured_object_id, lock_registered_at, entry_no, lock_time, command, channel, result, received_at, via, numbering, signed)
       VALUES ($1, 'door', 100, 7, 0, 'open', 'btlespp', 'granted', 0, 'lock', 'lock', true)`,
      [tenantId],
    );
    await expect(
      t.db.query(
        `INSERT INTO access_log_entries (tenant_id, secured_object_id, lock_registered_at, entry_no, lock_time, command, channel, result, received_at, via, numbering, signed)
         VALUES ($1, 'door', 100, 8, 0, 'open', 'btlespp', 'granted', 0, 'phone-1', 'phone:phone-1', true)`,
        [tenantId],
      ),
    ).rejects.toThrow(/access_log_entries_signed_check/);
    // Neither column has a default: a writer that names neither is refused rather than trusted.
    await expect(
      t.db.query(
        `INSERT INTO access_log_entries (tenant_id, secured_object_id, lock_registered_at, entry_no, lock_time, command, channel, result, received_at, via)
         VALUES ($1, 'door', 100, 9, 0, 'open', 'btlespp', 'granted', 0, 'lock')`,
        [tenantId],
      ),
    ).rejects.toThrow(/null value/);
  });
});
