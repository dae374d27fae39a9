// A ticket's create holds its lock's and its device's rows (FOR SHARE, src/db/repositories/ticket.repo.ts) from before
// its insert until it commits: a transaction deleting either row waits for it, or it for that transaction, and a ticket
// is never written for a lock or device deleted meanwhile (docs/api-reference.md 4.1, 4.2). A tenant's first change
// makes its change counter, and waits for another transaction making it at once. PostgreSQL only: PGlite has one
// connection, so the transaction held open by the test would block the app.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { LOCK_WAITS_SQL } from '../helpers/lock-waits.js';
import { clientToken, createTenant, type TenantFixture } from '../helpers/oauth.js';
import { call, device, lock, ticketBody } from '../helpers/operator.js';
import { postgresTestUrl } from '../helpers/postgres-url.js';
import { PATIENCE_MS } from '../helpers/process.js';

const usePostgres = postgresTestUrl() !== undefined;

describe.runIf(usePostgres)('the row locks of a ticket create', () => {
  let t: TestApp;
  let acme: TenantFixture;
  let operator: string;

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4' });
    acme = await createTenant(t.app, 'acme');
    operator = await clientToken(t.app, acme);
  });
  afterAll(async () => {
    await t?.close();
  });

  async function lockWaits(): Promise<number> {
    const { rows } = await t.database.db.query<{ n: number }>(LOCK_WAITS_SQL);
    return rows[0]!.n;
  }

  const cases = [
    { row: 'secured object', table: 'secured_objects', field: 'securedObjectId', lockId: 'door-gone', deviceId: 'phone-kept' },
    { row: 'mobile device', table: 'mobile_devices', field: 'mobileDeviceId', lockId: 'door-kept', deviceId: 'phone-gone' },
  ] as const;

  /**
   * Sends a ticket create while another transaction, `hold`, holds a row the create needs: `hold` calls `held()` once
   * it holds the row and goes on once `released` resolves. Asserts that the create waits for it (a lock wait is seen
   * before it answers), then lets `hold` finish and answers the create's response.
   */
  async function createWhileHeld(
    lockId: string,
    deviceId: string,
    hold: (held: () => void, released: Promise<void>) => Promise<void>,
  ): Promise<Awaited<ReturnType<typeof call>>> {
    let held!: () => void;
    let release!: () => void;
    const isHeld = new Promise<void>((resolve) => (held = resolve));
    const released = new Promise<void>((resolve) => (release = resolve));
    const holder = hold(held, released);
    await Promise.race([isHeld, holder]);

    let answered = false;
    const create = call(t, operator, { method: 'POST', url: '/operatorapi/tickets', payload: ticketBody(t, lockId, deviceId) }).then(
      (response) => {
        answered = true;
        return response;
      },
    );
    try {
      // Without the lock it waits for, the create does not wait: it answers while the row is still held.
      for (const deadline = Date.now() + PATIENCE_MS; !answered && (await lockWaits()) < 1; ) {
        if (Date.now() > deadline) throw new Error(`the create neither answered nor waited within ${PATIENCE_MS} ms`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      expect(answered).toBe(false);
    } finally {
      // Also when the create did not wait: the held transaction would keep its connection from the app's close.
      release();
      await holder;
    }
    return create;
  }

  it.each(cases)('waits for a transaction deleting its $row, and then writes no ticket for it', async ({ table, field, lockId, deviceId }) => {
    await lock(t, operator, lockId);
    await device(t, operator, deviceId);
    const deletedId = table === 'secured_objects' ? lockId : deviceId;

    // Another transaction takes the row as a delete would, and deletes it only once the create is seen waiting.
    const response = await createWhileHeld(lockId, deviceId, (held, released) =>
      t.database.db.transaction(async (tx) => {
        await tx.query(`SELECT id FROM ${table} WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, [acme.tenantId, deletedId]);
        held();
        await released;
        await tx.query(`DELETE FROM ${table} WHERE tenant_id = $1 AND id = $2`, [acme.tenantId, deletedId]);
      }),
    );
    expect(response.statusCode, response.body).toBe(422);
    expect(response.json().errors).toEqual([expect.objectContaining({ field })]);
    const { rows } = await t.database.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM tickets WHERE tenant_id = $1 AND ${table === 'secured_objects' ? 'secured_object_id' : 'mobile_device_id'} = $2`,
      [acme.tenantId, deletedId],
    );
    expect(rows[0]!.n).toBe(0);
  });

  async function createdTicketSeq(lockId: string): Promise<number[]> {
    const { rows } = await t.database.db.query<{ change_seq: number }>(
      'SELECT change_seq FROM tickets WHERE tenant_id = $1 AND secured_object_id = $2',
      [acme.tenantId, lockId],
    );
    return rows.map((row) => Number(row.change_seq));
  }

  it.each([
    { outcome: 'commits', end: 'COMMIT', expectedSeq: 42 },
    { outcome: 'rolls back', end: 'ROLLBACK', expectedSeq: 1 },
  ])('a first change waits for a transaction making the tenant\'s counter, and takes its next number when it $outcome', async ({ end, expectedSeq }) => {
    const lockId = `first-door-${end}`;
    await lock(t, operator, lockId);
    await device(t, operator, `first-phone-${end}`);
    await t.database.db.query('DELETE FROM tenant_change_counters WHERE tenant_id = $1', [acme.tenantId]);

    // Another connection makes the counter (at 41) and holds it uncommitted until the create is seen waiting.
    const response = await createWhileHeld(lockId, `first-phone-${end}`, (held, released) =>
      t.database.db
        .transaction(async (tx) => {
          await tx.query('INSERT INTO tenant_change_counters (tenant_id, last_seq) VALUES ($1, 41)', [acme.tenantId]);
          held();
          await released;
          if (end === 'ROLLBACK') throw new Error('rolled back by the test');
        })
        .catch((error: unknown) => {
          if (!(error instanceof Error && error.message === 'rolled back by the test')) throw error;
        }),
    );
    expect(response.statusCode, response.body).toBe(201);
    expect(await createdTicketSeq(lockId)).toEqual([expectedSeq]);
  });
});
