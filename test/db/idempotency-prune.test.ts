// The idempotency keys' sweep: a tenant at a time in bounded batches, each statement naming its tenant
// (docs/house-style.md convention 6); only expired keys go, every tenant's.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/database.js';
import { deleteExpiredIdempotencyKeys } from '../../src/db/repositories/idempotency.repo.js';
import { pruneEachTenant, pruneInBatches } from '../../src/services/retention.js';
import { createTestDatabase } from '../helpers/database.js';

describe('idempotency key sweep', () => {
  let db: Database;
  const tenants = ['1d3c5b7a-0000-4000-8000-000000000001', '1d3c5b7a-0000-4000-8000-000000000002'];

  beforeAll(async () => {
    db = (await createTestDatabase()).db;
    for (const [index, tenantId] of tenants.entries()) {
      await db.query('INSERT INTO tenants (id, name, created_at) VALUES ($1, $2, 0)', [tenantId, `sweep-${index}`]);
      for (const [key, expiresAt] of [
        ['old-1', 100],
        ['old-2', 200],
        ['old-3', 300],
        ['live', 5000],
      ] as const) {
        await db.query(
          `INSERT INTO idempotency_keys (tenant_id, client_id, key, request_hash, created_at, expires_at) VALUES ($1, 'c', $2, '\\x00', 0, $3)`,
          [tenantId, key, expiresAt],
        );
      }
    }
  });

  afterAll(async () => {
    await db?.close();
  });

  const keysOf = async (tenantId: string) =>
    (await db.query<{ key: string }>('SELECT key FROM idempotency_keys WHERE tenant_id = $1 ORDER BY key', [tenantId])).rows.map((row) => row.key);

  it('deletes at most the batch of one tenant per statement, and only its expired keys', async () => {
    expect(await deleteExpiredIdempotencyKeys(db, tenants[0]!, 1000, 2)).toBe(2);
    expect(await keysOf(tenants[0]!)).toHaveLength(2);
    expect(await keysOf(tenants[1]!)).toEqual(['live', 'old-1', 'old-2', 'old-3']);
    expect(await pruneInBatches((limit) => deleteExpiredIdempotencyKeys(db, tenants[0]!, 1000, Math.min(limit, 1)))).toBe(1);
    expect(await keysOf(tenants[0]!)).toEqual(['live']);
  });

  it('sweeps every tenant, leaving the keys that have not expired', async () => {
    expect(await pruneEachTenant(db, (tenantId, limit) => deleteExpiredIdempotencyKeys(db, tenantId, 1000, limit))).toBe(3);
    expect(await keysOf(tenants[0]!)).toEqual(['live']);
    expect(await keysOf(tenants[1]!)).toEqual(['live']);
  });
});
