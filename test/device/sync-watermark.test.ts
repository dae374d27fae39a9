// docs/lock-sync.md: an online lock's "nothing new" sync is answered from the tenant's change watermark (NOTIFY) without
// the database, and only while that can be trusted; whatever the interleaving, a revocation reaches the lock by the
// sync after the one it raced with, also when the notification was lost while the listening connection was down.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { App } from '../../src/app.js';
import { anotherInstance, buildTestApp, type TestApp } from '../helpers/app.js';
import { changeCounter, download, lockToken, phoneToken, sync, type SyncBody } from '../helpers/device.js';
import { bearer, clientToken, createTenant, type TenantFixture } from '../helpers/oauth.js';
import { call, device, lock, ticket } from '../helpers/operator.js';
import { postgresTestUrl } from '../helpers/postgres-url.js';
import { PATIENCE_MS } from '../helpers/process.js';

const onPostgres = postgresTestUrl() !== undefined;

describe('lock sync answered from the change watermark', () => {
  let t: TestApp;
  let acme: TenantFixture;
  let operator: string;
  let phone: string;
  let instance: App | undefined;
  let lockCount = 0;

  /** A lock with its own bound client, a phone, and a downloaded ticket: its revocation must reach the lock. */
  async function lockWithTicket(): Promise<{ lockId: string; token: string; ticketId: string; cursor: string }> {
    lockCount += 1;
    const lockId = `wm-lock-${lockCount}`;
    await lock(t, operator, lockId);
    const token = await lockToken(t, acme, lockId);
    const made = await ticket(t, operator, lockId, 'wm-phone');
    expect((await download(t, phone, 'wm-phone')).map((item) => item.id)).toContain(made.id);
    const full = await sync(t, token, lockId);
    expect(full.tokens.map((item) => item.id)).toContain(made.id);
    return { lockId, token, ticketId: made.id, cursor: full.cursor };
  }

  /** How many statements the app sent that name the lock (a sync's read, its telemetry write) while `work` ran. */
  async function lockStatements<T>(lockId: string, work: () => Promise<T>): Promise<{ value: T; statements: number }> {
    const db = t.database.db;
    const query = vi.spyOn(db, 'query');
    const transaction = vi.spyOn(db, 'transaction');
    try {
      const value = await work();
      const statements = query.mock.calls.filter(([, params]) => (params ?? []).includes(lockId)).length + transaction.mock.calls.length;
      return { value, statements };
    } finally {
      query.mockRestore();
      transaction.mockRestore();
    }
  }

  const watermarks = () => t.app.services.changeWatermarks;

  async function revoke(app: App, ticketId: string): Promise<void> {
    const response = await app.inject({ method: 'DELETE', url: `/operatorapi/tickets/${ticketId}`, headers: bearer(operator) });
    expect(response.statusCode, response.body).toBe(200);
  }

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4' });
    acme = await createTenant(t.app, 'acme');
    operator = await clientToken(t.app, acme);
    await device(t, operator, 'wm-phone');
    phone = await phoneToken(t, acme, 'wm-phone');
    // Trusted once LISTEN holds and the numbers committed before it were read (a moment after start).
    await vi.waitFor(() => expect(watermarks().phase).toBe('trusted'), { timeout: PATIENCE_MS });
  });
  afterAll(async () => {
    await instance?.close();
    await t.close();
  });

  it('answers a repeated nothing-new sync without a database statement: empty arrays, the same cursor and serial, no keys', async () => {
    const { lockId, token, cursor } = await lockWithTicket();
    // The first sync with the cursor acknowledges it (docs/api-reference.md 8.4): one telemetry write.
    const first = await sync(t, token, lockId, cursor);
    expect(first).toEqual({ tokens: [], revocations: [], cursor, serial: first.serial, holderBinding: 'optional', revokedKeys: [] });
    expect(watermarks().current(acme.tenantId)).toBe(await changeCounter(t, acme.tenantId));
    const again = await lockStatements(lockId, () => sync(t, token, lockId, cursor));
    expect(again.statements).toBe(0);
    expect(again.value).toEqual(first);
    // Acknowledged through the database path before: the operator sees the lock where it is (docs/api-reference.md 8.4).
    const view = await call(t, operator, { method: 'GET', url: `/operatorapi/securedobjects/${lockId}` });
    expect(view.json()).toMatchObject({ appliedThrough: first.serial });
  });

  it('asks the database again as soon as the tenant changed, even for a change of another lock', async () => {
    const mine = await lockWithTicket();
    const other = await lockWithTicket();
    await sync(t, mine.token, mine.lockId, mine.cursor);
    expect((await lockStatements(mine.lockId, () => sync(t, mine.token, mine.lockId, mine.cursor))).statements).toBe(0);
    await revoke(t.app, other.ticketId);
    const after = await lockStatements(mine.lockId, () => sync(t, mine.token, mine.lockId, mine.cursor));
    expect(after.statements).toBeGreaterThan(0);
    expect(after.value).toMatchObject({ tokens: [], revocations: [], cursor: mine.cursor });
  });

  it('never answers from memory for another client of the same lock, or for a cursor the database did not hand out last', async () => {
    const { lockId, token, cursor } = await lockWithTicket();
    await sync(t, token, lockId, cursor);
    const secondClient = await lockToken(t, acme, lockId);
    expect((await lockStatements(lockId, () => sync(t, secondClient, lockId, cursor))).statements).toBeGreaterThan(0);
    // An answer cut at `limit` leaves more of its change number to come: the same cursor is never "nothing new".
    await ticket(t, operator, lockId, 'wm-phone');
    await ticket(t, operator, lockId, 'wm-phone');
    const cut = await sync(t, token, lockId, cursor, 1);
    expect(cut.tokens).toHaveLength(1);
    const rest = await lockStatements(lockId, () => sync(t, token, lockId, cut.cursor, 1));
    expect(rest.statements).toBeGreaterThan(0);
    expect(rest.value.tokens).toHaveLength(1);
  });

  /**
   * Every way a sync and a revocation can interleave in one instance: the revocation before the sync starts, while its
   * request is on the way, while it waits for the database, after. The racing sync may or may not carry it; the next
   * one must. Each round begins with the memory answer primed, the state a polling lock is in.
   */
  it('reads the numbers again while trusted: a change whose notification was lost (the connection up) is seen, and the next sync asks the database', async () => {
    const { lockId, token, cursor } = await lockWithTicket();
    await sync(t, token, lockId, cursor);
    expect((await lockStatements(lockId, () => sync(t, token, lockId, cursor))).statements).toBe(0);
    const before = watermarks().current(acme.tenantId)!;
    // A change whose NOTIFY never comes, as on a half-open listening connection: the counter moves by a bare UPDATE,
    // which nothing announces (only the service's own writes do, after their commit).
    await t.database.db.transaction(async (tx) => {
      await tx.query('UPDATE tenant_change_counters SET last_seq = last_seq + 1 WHERE tenant_id = $1', [acme.tenantId]);
    });
    expect(watermarks().current(acme.tenantId)).toBe(before);
    await vi.waitFor(() => expect(watermarks().current(acme.tenantId)).toBe(before + 1), { timeout: PATIENCE_MS, interval: 100 });
    expect(watermarks().phase).toBe('trusted');
    expect((await lockStatements(lockId, () => sync(t, token, lockId, cursor))).statements).toBeGreaterThan(0);
  });

  it('in every interleaving, a lock learns a revocation by its next sync', async () => {
    const interleavings: ((revocation: () => Promise<void>, racing: () => Promise<SyncBody>) => Promise<SyncBody>)[] = [
      async (revocation, racing) => {
        await revocation();
        return racing();
      },
      async (revocation, racing) => (await Promise.all([racing(), revocation()]))[0],
      async (revocation, racing) => (await Promise.all([revocation(), racing()]))[1],
      async (revocation, racing) => {
        const answer = racing();
        await new Promise((resolve) => setImmediate(resolve));
        await revocation();
        return answer;
      },
      async (revocation, racing) => {
        const revoked = revocation();
        await new Promise((resolve) => setImmediate(resolve));
        const answer = await racing();
        await revoked;
        return answer;
      },
      async (revocation, racing) => {
        const answer = await racing();
        await revocation();
        return answer;
      },
    ];
    for (const [index, interleave] of interleavings.entries()) {
      const { lockId, token, ticketId, cursor } = await lockWithTicket();
      await sync(t, token, lockId, cursor);
      const racing = await interleave(
        () => revoke(t.app, ticketId),
        () => sync(t, token, lockId, cursor),
      );
      const next = await sync(t, token, lockId, racing.cursor);
      const learned = [...racing.revocations, ...next.revocations].map((revocation) => revocation.tokenId);
      expect(learned, `interleaving ${index}`).toContain(ticketId);
    }
  });

  // pg_terminate_backend and a second instance need a PostgreSQL server: PGlite is one in-process connection whose
  // LISTEN never drops and which no other process writes to.
  describe.skipIf(!onPostgres)('on PostgreSQL, when the listening connection drops', () => {
    /** Ends every LISTEN connection of this test's database (the app's and the second instance's). */
    async function killListeners(): Promise<number> {
      const { rows } = await t.database.db.query<{ ended: boolean }>(
        `SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity
          WHERE datname = current_database() AND pid <> pg_backend_pid() AND query ILIKE 'LISTEN %'`,
      );
      return rows.length;
    }

    /**
     * Runs `work` while the app is not listening: kills the listener, waits until the app knows, runs `work`. The app
     * reconnects a second later; a round in which it was listening again before `work` ended is tried again, so
     * `work` really ran while notifications were lost.
     */
    async function whileDown<T>(work: () => Promise<T>): Promise<T> {
      for (let attempt = 0; attempt < 10; attempt++) {
        expect(await killListeners()).toBeGreaterThan(0);
        await vi.waitFor(() => expect(watermarks().phase).toBe('down'), { timeout: PATIENCE_MS, interval: 5 });
        const value = await work();
        if (watermarks().phase === 'down') return value;
        await vi.waitFor(() => expect(watermarks().phase).toBe('trusted'), { timeout: PATIENCE_MS });
      }
      throw new Error('the listening connection came back too fast ten times');
    }

    beforeAll(async () => {
      instance = await anotherInstance(t);
      await instance.ready();
    });

    it('falls back to the database until reconnected and caught up, and learns a change whose NOTIFY was lost', async () => {
      const { lockId, token, ticketId, cursor } = await lockWithTicket();
      await sync(t, token, lockId, cursor);
      expect((await lockStatements(lockId, () => sync(t, token, lockId, cursor))).statements).toBe(0);
      const { down, revoked } = await whileDown(async () => {
        // Nothing new, but nothing is trusted: the database answers.
        const down = await lockStatements(lockId, () => sync(t, token, lockId, cursor));
        // Committed by another instance while this one does not listen: its NOTIFY never reaches this instance.
        await revoke(instance!, ticketId);
        const revoked = await lockStatements(lockId, () => sync(t, token, lockId, cursor));
        return { down, revoked };
      });
      expect(down.statements).toBeGreaterThan(0);
      expect(down.value).toMatchObject({ tokens: [], revocations: [], cursor });
      expect(revoked.statements).toBeGreaterThan(0);
      expect(revoked.value.revocations.map((revocation) => revocation.tokenId)).toEqual([ticketId]);
      // Listening again and caught up: the catch-up read holds the change that was never notified.
      await vi.waitFor(() => expect(watermarks().phase).toBe('trusted'), { timeout: PATIENCE_MS });
      expect(watermarks().current(acme.tenantId)).toBe(await changeCounter(t, acme.tenantId));
      await sync(t, token, lockId, revoked.value.cursor);
      const trusted = await lockStatements(lockId, () => sync(t, token, lockId, revoked.value.cursor));
      expect(trusted.statements).toBe(0);
      expect(trusted.value).toMatchObject({ tokens: [], revocations: [], cursor: revoked.value.cursor });
    });

    it('learns a revocation committed on another instance by the sync after its NOTIFY arrived', async () => {
      const { lockId, token, ticketId, cursor } = await lockWithTicket();
      await sync(t, token, lockId, cursor);
      await revoke(instance!, ticketId);
      const seq = await changeCounter(t, acme.tenantId);
      // NOTIFY is delivered after the commit, not with it: until it arrives this instance may still say "nothing new",
      // with the cursor where the database put it (docs/lock-sync.md), so nothing is skipped, only delayed.
      await vi.waitFor(() => expect(watermarks().current(acme.tenantId)).toBe(seq), { timeout: PATIENCE_MS, interval: 5 });
      const next = await sync(t, token, lockId, cursor);
      expect(next.revocations.map((revocation) => revocation.tokenId)).toEqual([ticketId]);
    });
  });
});
