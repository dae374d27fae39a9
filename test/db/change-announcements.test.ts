// docs/lock-sync.md: a tenant's new change number is announced by the service after its transaction commits (no
// trigger, migration 032): to this process at once, to every instance by a NOTIFY sent after the commit, and never
// for a change that rolled back, a savepoint's included.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Database } from '../../src/db/database.js';
import { withinTransaction } from '../../src/db/nested-transaction.js';
import { createPostgresDatabase } from '../../src/db/postgres.js';
import { nextChangeSeq, TENANT_CHANGES_CHANNEL } from '../../src/db/repositories/change-log.repo.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { createLogger } from '../../src/logger.js';
import { postgresTestUrl } from '../helpers/postgres-url.js';
import { PATIENCE_MS } from '../helpers/process.js';

const onPostgres = postgresTestUrl() !== undefined;

describe('change announcements', () => {
  let database: TestDatabase;
  let db: Database;
  const tenantId = '0b7e1c3a-5d4f-4e2a-9c1b-2f3e4d5c6b7a';
  const heard: string[] = [];
  let unlisten: () => Promise<void>;

  beforeAll(async () => {
    database = await createTestDatabase();
    db = database.db;
    await db.query("INSERT INTO tenants (id, name, created_at) VALUES ($1, 'announcements', 0)", [tenantId]);
    unlisten = await db.listen(TENANT_CHANGES_CHANNEL, (payload) => {
      if (payload !== null) heard.push(payload);
    });
  });

  afterAll(async () => {
    await unlisten?.();
    await db?.close();
  });

  it('has no trigger left on the change counters', async () => {
    const { rows } = await db.query<{ tgname: string }>(
      "SELECT tgname FROM pg_trigger WHERE tgrelid = 'tenant_change_counters'::regclass AND NOT tgisinternal",
    );
    expect(rows).toEqual([]);
  });

  it('tells this process of a committed change at once, and of a rolled-back one, or a rolled-back savepoint, never', async () => {
    heard.length = 0;
    await expect(
      db.transaction(async (tx) => {
        // Two numbers: the second is one no committed change takes next.
        await nextChangeSeq(tx, tenantId);
        await nextChangeSeq(tx, tenantId);
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    const seq = await db.transaction(async (tx) => {
      const nested = withinTransaction(db, tx);
      await expect(
        nested.transaction(async (savepoint) => {
          await nextChangeSeq(savepoint, tenantId);
          await nextChangeSeq(savepoint, tenantId);
          throw new Error('savepoint rolled back');
        }),
      ).rejects.toThrow('savepoint rolled back');
      // A bulk job's item services write through the nested Database, not the savepoint's scope: what they announce
      // inside a savepoint belongs to it all the same, in a savepoint inside it too.
      await expect(
        nested.transaction(async () => {
          await nextChangeSeq(nested, tenantId);
          await nested.transaction(() => nextChangeSeq(nested, tenantId));
          throw new Error('item rolled back');
        }),
      ).rejects.toThrow('item rolled back');
      return nested.transaction((savepoint) => nextChangeSeq(savepoint, tenantId));
    });
    expect(heard[0]).toBe(`${seq}:${tenantId}`);
    const { rows } = await db.query<{ last_seq: number }>('SELECT last_seq FROM tenant_change_counters WHERE tenant_id = $1', [tenantId]);
    expect(rows[0]!.last_seq).toBe(seq);
    // Every payload heard (this process's own, and on PostgreSQL its NOTIFY too) is the committed number.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(new Set(heard)).toEqual(new Set([`${seq}:${tenantId}`]));
  });

  // Another connection stands for another instance: it hears only what a NOTIFY carries (PGlite is one process's).
  async function listeningElsewhere(): Promise<{ other: pg.Client; notified: string[] }> {
    const other = new pg.Client({ connectionString: database.url });
    const notified: string[] = [];
    other.on('notification', (message) => notified.push(message.payload ?? ''));
    await other.connect();
    await other.query(`LISTEN ${TENANT_CHANGES_CHANNEL}`).catch(async (error: unknown) => {
      await other.end();
      throw error;
    });
    return { other, notified };
  }

  it.skipIf(!onPostgres)(
    'tells every other instance by a NOTIFY after the commit, and nothing of a change that rolled back',
    async () => {
      const { other, notified } = await listeningElsewhere();
      try {
        await expect(
          db.transaction(async (tx) => {
            await nextChangeSeq(tx, tenantId);
            await nextChangeSeq(tx, tenantId);
            throw new Error('rolled back');
          }),
        ).rejects.toThrow('rolled back');
        const seq = await db.transaction((tx) => nextChangeSeq(tx, tenantId));
        await vi.waitFor(() => expect(notified).toContain(`${seq}:${tenantId}`), { timeout: PATIENCE_MS, interval: 10 });
        expect(notified).toEqual([`${seq}:${tenantId}`]);
      } finally {
        await other.end();
      }
    },
  );
  // The transaction answers at its COMMIT and its NOTIFY follows on the same connection, which goes back to the pool
  // only once it is sent (src/db/postgres.ts): with one connection in the pool, each transaction after the first
  // waits for the previous one's NOTIFY, and nothing is left checked out or handed back twice.
  it.skipIf(!onPostgres)(
    'hands the connection back after the NOTIFY that follows a commit, and every number reaches the other instances',
    async () => {
      const url = database.url;
      if (url === undefined) throw new Error('a PostgreSQL test database has a URL');
      const single = createPostgresDatabase({
        connectionString: url,
        poolMax: 1,
        connectTimeoutMs: 2000,
        statementTimeoutMs: 30_000,
        log: createLogger('silent'),
      });
      const { other, notified } = await listeningElsewhere();
      try {
        const numbers: number[] = [];
        for (let round = 0; round < 20; round += 1) numbers.push(await single.transaction((tx) => nextChangeSeq(tx, tenantId)));
        // Concurrent ones queue for the one connection, each behind the NOTIFY of the one before.
        numbers.push(...(await Promise.all(Array.from({ length: 10 }, () => single.transaction((tx) => nextChangeSeq(tx, tenantId))))));
        const { rows } = await single.query<{ last_seq: number }>('SELECT last_seq FROM tenant_change_counters WHERE tenant_id = $1', [
          tenantId,
        ]);
        expect(rows[0]!.last_seq).toBe(Math.max(...numbers));
        const expected = numbers.map((seq) => `${seq}:${tenantId}`);
        await vi.waitFor(() => expect(new Set(notified)).toEqual(new Set(expected)), { timeout: PATIENCE_MS, interval: 10 });
        expect(notified).toHaveLength(expected.length);
      } finally {
        await other.end();
        // Closing waits for every connection to be handed back: one never handed back would hold it without end.
        await Promise.race([
          single.close(),
          new Promise((_, reject) => setTimeout(() => reject(new Error('a connection was never handed back to the pool')), 10_000)),
        ]);
      }
    },
    // Without it, a transaction waiting for a connection never handed back would wait out the suite's whole timeout.
    60_000,
  );
});
