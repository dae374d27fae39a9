// The per-tenant change log behind lock sync (docs/api-reference.md 6.2, migration 005): one change number per ticket-writing
// transaction, shared by its tickets, per tenant; and a lock syncing during concurrent writes misses nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { accessToken, changeCounter, deviceTicketRows, download, downloadRequest, lockToken, phoneToken, sync, syncAll, syncRequest, type SyncBody } from '../helpers/device.js';
import { bearer, clientToken, createTenant, type TenantFixture } from '../helpers/oauth.js';
import { call, device, lock, nextLink, ticket } from '../helpers/operator.js';
import { postgresTestUrl } from '../helpers/postgres-url.js';
import { PATIENCE_MS } from '../helpers/process.js';
import { LOCK_WAITS_SQL } from '../helpers/lock-waits.js';

const usePostgres = postgresTestUrl() !== undefined;

describe('the tenant change log', () => {
  let t: TestApp;
  let acme: TenantFixture;
  let operator: string;
  let manager: string;

  async function revoke(token: string, id: string): Promise<void> {
    const response = await call(t, token, { method: 'DELETE', url: `/operatorapi/tickets/${id}` });
    expect(response.statusCode, response.body).toBe(200);
  }

  async function v1(token: string, method: 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) {
    const response = await t.app.inject({ method, url, headers: bearer(token), ...(payload ? { payload } : {}) });
    expect(response.statusCode, `${method} ${url}: ${response.body}`).toBeLessThan(300);
    return response.statusCode === 204 ? null : response.json();
  }

  beforeAll(async () => {
    // The lock below syncs as densely as it can, far above a real lock's pace; the per-client budget is not under test.
    t = await buildTestApp({ BCRYPT_COST: '4', API_RATE_LIMIT_PER_MINUTE: '60000' });
    acme = await createTenant(t.app, 'acme');
    operator = await clientToken(t.app, acme);
    manager = await accessToken(t, acme, ['device-groups:write', 'access-permissions:write']);
    for (const id of ['door', 'gate']) await lock(t, operator, id);
    for (const id of ['p1', 'p2', 'p-gone']) await device(t, operator, id);
  });
  afterAll(async () => {
    await t.close();
  });

  it('rises by one with each ticket-writing transaction, whose tickets all carry its number', async () => {
    const start = await changeCounter(t, acme.tenantId);

    const made = await ticket(t, operator, 'door', 'p1');
    expect(await changeCounter(t, acme.tenantId)).toBe(start + 1);
    expect((await deviceTicketRows(t, acme.tenantId, [made.id]))[0]!.change_seq).toBe(start + 1);

    await revoke(operator, made.id);
    expect(await changeCounter(t, acme.tenantId)).toBe(start + 2);
    // A revocation is the ticket's latest change: the lock must hear of it after everything before.
    expect((await deviceTicketRows(t, acme.tenantId, [made.id]))[0]!.change_seq).toBe(start + 2);

    const resident = await v1(manager, 'POST', '/v1/residents', { name: 'Both', mobileDeviceIds: ['p1', 'p2'] });
    const group = await v1(manager, 'POST', '/v1/lock-groups', { name: 'Both', securedObjectIds: ['door', 'gate'] });
    const now = t.app.services.clock();
    const permission = await v1(manager, 'POST', '/v1/access-permissions', {
      residentId: resident.id,
      lockGroupId: group.id,
      beginDate: now,
      endDate: now + 3_600_000,
      commands: ['open'],
      channels: ['btlespp'],
    });
    expect(permission.tokenCount).toBe(4);
    expect(await changeCounter(t, acme.tenantId)).toBe(start + 3);
    const { rows } = await t.database.db.query<{ change_seq: number }>('SELECT change_seq FROM tickets WHERE access_permission_id = $1', [permission.id]);
    expect(rows.map((row) => Number(row.change_seq))).toEqual([start + 3, start + 3, start + 3, start + 3]);

    const gone = [await ticket(t, operator, 'door', 'p-gone'), await ticket(t, operator, 'gate', 'p-gone')];
    expect(await changeCounter(t, acme.tenantId)).toBe(start + 5);
    expect((await call(t, operator, { method: 'DELETE', url: '/operatorapi/mobiledevices/p-gone' })).statusCode).toBe(204);
    expect(await changeCounter(t, acme.tenantId)).toBe(start + 6);
    const removed = await deviceTicketRows(t, acme.tenantId, gone.map((item) => item.id));
    expect(removed.map((row) => [row.revoked_at !== null, row.change_seq])).toEqual([
      [true, start + 6],
      [true, start + 6],
    ]);

    // The tenant's first ticket key changes its key set, which takes a number (docs/api-reference.md 8.1): the first full
    // sync makes it (no download has yet).
    const doorToken = await lockToken(t, acme, 'door');
    expect((await syncRequest(t, doorToken, 'door')).statusCode).toBe(200);
    expect(await changeCounter(t, acme.tenantId)).toBe(start + 7);
    const { rows: keySet } = await t.database.db.query<{ change_seq: number }>('SELECT change_seq FROM ticket_key_set_changes WHERE tenant_id = $1', [acme.tenantId]);
    expect(keySet.map((row) => Number(row.change_seq))).toEqual([start + 7]);

    // Reads and changes that write neither a ticket nor a key take no number.
    await call(t, operator, { method: 'GET', url: '/operatorapi/tickets' });
    await syncRequest(t, doorToken, 'door');
    await v1(manager, 'PATCH', `/v1/residents/${resident.id}`, { name: 'Renamed' });
    expect(await changeCounter(t, acme.tenantId)).toBe(start + 7);
  });

  it('leaves no ticket without a change number, and none beyond the tenant\'s counter', async () => {
    await ticket(t, operator, 'gate', 'p2');
    const { rows } = await t.database.db.query<{ unstamped: number; beyond: number; total: number }>(
      `SELECT count(*) FILTER (WHERE t.change_seq IS NULL OR t.change_seq <= 0)::int AS unstamped,
              count(*) FILTER (WHERE t.change_seq > c.last_seq)::int AS beyond,
              count(*)::int AS total
         FROM tickets t LEFT JOIN tenant_change_counters c ON c.tenant_id = t.tenant_id`,
    );
    expect(rows[0]!.total).toBeGreaterThan(0);
    expect(rows[0]).toMatchObject({ unstamped: 0, beyond: 0 });
  });

  it('counts per tenant: another tenant starts at 1 and neither moves the other', async () => {
    const acmeBefore = await changeCounter(t, acme.tenantId);
    expect(acmeBefore).toBeGreaterThan(1);
    const fresh = await createTenant(t.app, 'fresh');
    const freshOperator = await clientToken(t.app, fresh);
    await lock(t, freshOperator, 'door');
    await device(t, freshOperator, 'p1');
    expect(await changeCounter(t, fresh.tenantId)).toBe(0);

    const first = await ticket(t, freshOperator, 'door', 'p1');
    const second = await ticket(t, freshOperator, 'door', 'p1');
    const stamped = Object.fromEntries((await deviceTicketRows(t, fresh.tenantId)).map((row) => [row.id, row.change_seq]));
    expect(stamped).toEqual({ [first.id]: 1, [second.id]: 2 });
    expect(await changeCounter(t, fresh.tenantId)).toBe(2);
    expect(await changeCounter(t, acme.tenantId)).toBe(acmeBefore);

    await ticket(t, operator, 'door', 'p1');
    expect(await changeCounter(t, acme.tenantId)).toBe(acmeBefore + 1);
    expect(await changeCounter(t, fresh.tenantId)).toBe(2);
  });

  it('brings a lock syncing during concurrent issues, revocations and grants to exactly the server\'s truth', async () => {
    const busy = await createTenant(t.app, 'busy');
    const busyOperator = await clientToken(t.app, busy);
    const busyManager = await accessToken(t, busy, ['device-groups:write', 'access-permissions:write']);
    const phones = Array.from({ length: 7 }, (_, i) => `d${i}`);
    for (const id of ['hub', 'hub-2']) await lock(t, busyOperator, id);
    for (const id of [...phones, 'd-gone']) await device(t, busyOperator, id);
    // Removed while the others write: its tickets' revocations must reach the lock too. Its phone downloaded them, so
    // a credential of each exists and the lock needs each revocation (docs/api-reference.md 8.2).
    for (let i = 0; i < 3; i++) await ticket(t, busyOperator, 'hub', 'd-gone');
    expect(await download(t, await phoneToken(t, busy, 'd-gone'), 'd-gone')).toHaveLength(3);
    const phoneTokens = new Map<string, string>();
    for (const id of phones) phoneTokens.set(id, await phoneToken(t, busy, id));
    const resident = await v1(busyManager, 'POST', '/v1/residents', { name: 'Busy', mobileDeviceIds: phones.slice(0, 4) });
    const group = await v1(busyManager, 'POST', '/v1/lock-groups', { name: 'Busy', securedObjectIds: ['hub'] });
    const hubToken = await lockToken(t, busy, 'hub');
    // Another tenant writes at the same time: its changes must neither show up nor disturb busy's order.
    const noisy = await createTenant(t.app, 'noisy');
    const noisyOperator = await clientToken(t.app, noisy);
    await lock(t, noisyOperator, 'hub');
    await device(t, noisyOperator, 'd0');

    // The lock: what it has learnt, as the simulator keeps it.
    const seenTokens = new Set<string>();
    const seenRevoked = new Set<string>();
    let cursor: string | undefined;
    const apply = (body: SyncBody) => {
      for (const item of body.tokens) seenTokens.add(item.id);
      for (const item of body.revocations) seenRevoked.add(item.tokenId);
      cursor = body.cursor;
    };

    /**
     * A phone's download, asked again after a 503 with Retry-After as a phone does: a transaction the database rolls
     * back for a concurrent one (a deadlock it broke) is answered so, and nothing of it was written. Never a 500.
     */
    const downloadAsAPhone = async (phone: string) => {
      for (let attempt = 0; ; attempt++) {
        const response = await downloadRequest(t, phoneTokens.get(phone)!, phone);
        if (response.statusCode === 503 && response.headers['retry-after'] && attempt < 5) continue;
        expect(response.statusCode, response.body).toBe(200);
        return;
      }
    };
    let writing = true;
    let syncs = 0;
    const reader = (async () => {
      while (writing) {
        const response = await syncRequest(t, hubToken, 'hub', cursor, 7);
        // With 60 writes queued for the pool, a sync may be refused as a storm would be (docs/lock-sync.md): 503 with
        // Retry-After, nothing changed. A lock asks again; this one after 5 ms, to keep the interleaving dense.
        if (response.statusCode === 503 && response.headers['retry-after']) {
          await new Promise((resolve) => setTimeout(resolve, 5));
          continue;
        }
        expect(response.statusCode, response.body).toBe(200);
        apply(response.json());
        syncs += 1;
        if (!nextLink(response)) await new Promise((resolve) => setTimeout(resolve, 2));
      }
    })();

    const now = t.app.services.clock();
    const writes: Promise<unknown>[] = [];
    for (let i = 0; i < 60; i++) {
      const lockId = i % 4 === 3 ? 'hub-2' : 'hub';
      const phone = phones[i % phones.length]!;
      writes.push(
        ticket(t, busyOperator, lockId, phone).then(async (made) => {
          if (i % 3 === 0) {
            // The phone downloads it before it is revoked: the lock needs the revocation (docs/api-reference.md 8.2).
            await downloadAsAPhone(phone);
            await revoke(busyOperator, made.id);
          }
        }),
      );
      if (i % 10 === 0) {
        writes.push(
          v1(busyManager, 'POST', '/v1/access-permissions', {
            residentId: resident.id,
            lockGroupId: group.id,
            beginDate: now,
            endDate: now + 3_600_000,
            commands: ['open'],
            channels: ['btlespp'],
          }),
        );
        writes.push(ticket(t, noisyOperator, 'hub', 'd0').then((made) => revoke(noisyOperator, made.id)));
      }
      if (i === 30) writes.push(call(t, busyOperator, { method: 'DELETE', url: '/operatorapi/mobiledevices/d-gone' }));
    }
    try {
      await Promise.all(writes);
    } finally {
      writing = false;
      await reader;
    }
    const finalWalk = await syncAll(t, hubToken, 'hub', cursor);
    for (const page of finalWalk.pages) apply(page);

    const rows = (await deviceTicketRows(t, busy.tenantId)).filter((row) => row.secured_object_id === 'hub');
    const valid = rows.filter((row) => row.revoked_at === null).map((row) => row.id).sort();
    const revoked = rows.filter((row) => row.revoked_at !== null).map((row) => row.id).sort();
    expect(valid.length).toBeGreaterThan(20);
    expect(revoked.length).toBeGreaterThan(10);
    // Each revoked ticket had been downloaded, so the server's truth for the lock holds every revocation.
    expect(rows.filter((row) => row.revoked_at !== null && row.credential_expires_at === null)).toEqual([]);
    // At least one sync ran while the writes were under way (how many depends on the machine and the database).
    expect(syncs).toBeGreaterThanOrEqual(1);

    const lockValid = [...seenTokens].filter((id) => !seenRevoked.has(id)).sort();
    expect(lockValid).toEqual(valid);
    expect([...seenRevoked].sort()).toEqual(revoked);
    // noisy's 6 revocations took a change each; its 6 creates at least one, fewer when they overlapped and were
    // written together (one statement, one change number: src/services/batching.ts).
    const noisyChanges = await changeCounter(t, noisy.tenantId);
    expect(noisyChanges).toBeGreaterThanOrEqual(7);
    expect(noisyChanges).toBeLessThanOrEqual(12);
  });

  // PostgreSQL only: PGlite has one connection, so a transaction held open by the test would block the app.
  it.runIf(usePostgres)('skips neither change when a lock syncs while an earlier change is uncommitted and a later one arrives', async () => {
    const slow = await createTenant(t.app, 'slow');
    const slowOperator = await clientToken(t.app, slow);
    await lock(t, slowOperator, 'hub');
    await device(t, slowOperator, 'phone');
    const held = await ticket(t, slowOperator, 'hub', 'phone');
    // Downloaded, so the lock needs its revocation (docs/api-reference.md 8.2).
    expect(await download(t, await phoneToken(t, slow, 'phone'), 'phone')).toHaveLength(1);
    const hubToken = await lockToken(t, slow, 'hub');
    const start = (await syncAll(t, hubToken, 'hub')).cursor;

    const waiting = async () => {
      const { rows } = await t.database.db.query<{ n: number }>(LOCK_WAITS_SQL);
      return rows[0]!.n;
    };
    /** Polls until `condition` holds; a generous deadline, and a failure that says so rather than carrying on. */
    const until = async (condition: () => Promise<boolean>) => {
      for (const deadline = Date.now() + PATIENCE_MS; !(await condition()); ) {
        if (Date.now() > deadline) throw new Error(`still waiting after ${PATIENCE_MS} ms for ${condition.toString()}`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    };

    // Hold the ticket's row: its revocation takes the next change number, then waits here before committing.
    let release!: () => void;
    let locked!: () => void;
    const rowLocked = new Promise<void>((resolve) => (locked = resolve));
    const blocker = t.database.db.transaction(async (tx) => {
      await tx.query('SELECT id FROM tickets WHERE tenant_id = $1 AND id = $2 FOR UPDATE', [slow.tenantId, held.id]);
      locked();
      await new Promise<void>((resolve) => (release = resolve));
    });
    await rowLocked;
    const revocation = call(t, slowOperator, { method: 'DELETE', url: `/operatorapi/tickets/${held.id}` });
    await until(async () => (await waiting()) >= 1);

    // A later ticket, then a sync while the revocation is still uncommitted. Had the later change become visible
    // with a higher number first, this sync would move the lock's cursor past the revocation for good (a mutant
    // that numbers changes from a plain sequence fails here).
    let issuedLater = false;
    const later = ticket(t, slowOperator, 'hub', 'phone').then((made) => {
      issuedLater = true;
      return made;
    });
    await until(async () => issuedLater || (await waiting()) >= 2);
    const between = await sync(t, hubToken, 'hub', start);
    release();
    await blocker;
    expect((await revocation).statusCode).toBe(200);
    const made = await later;

    const after = await syncAll(t, hubToken, 'hub', between.cursor);
    const learnt = [...between.tokens.map((item) => item.id), ...after.tokenIds];
    const revoked = [...between.revocations.map((item) => item.tokenId), ...after.revokedIds];
    expect(revoked).toEqual([held.id]);
    expect(learnt).toEqual([made.id]);
  });
});
