// Concurrent ticket creates of one tenant share one statement and one commit (src/services/batching.ts): each
// request still gets exactly its own answer (201 with its ticket, or 422 with its own reasons), its own audit event
// with its own request id, and every ticket a change number of the tenant's log.
import { describe, expect, it, afterAll, beforeAll, vi } from 'vitest';
import { nextChangeSeq } from '../../src/db/repositories/change-log.repo.js';
import { createKeyedBatcher } from '../../src/services/batching.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { clientToken, createClient, createTenant, type TenantFixture } from '../helpers/oauth.js';
import { auditEvents, device, issueTicket, lock, problemFields, ticketBody } from '../helpers/operator.js';
import { postgresTestUrl } from '../helpers/postgres-url.js';
import { PATIENCE_MS } from '../helpers/process.js';

const usePostgres = postgresTestUrl() !== undefined;

describe('the keyed batcher', () => {
  /** A writer that records its batches and answers each item doubled; `gate` holds a batch until released. */
  function recordingWriter() {
    const batches: { key: string; items: number[] }[] = [];
    let release: () => void = () => undefined;
    let gate: Promise<void> | null = null;
    return {
      batches,
      hold() {
        gate = new Promise<void>((resolve) => (release = resolve));
      },
      release: () => release(),
      async write(key: string, items: number[]): Promise<number[]> {
        batches.push({ key, items: [...items] });
        if (gate) {
          const held = gate;
          gate = null;
          await held;
        }
        if (items.includes(-1)) throw new Error('batch refused');
        return items.map((item) => item * 2);
      },
    };
  }

  it('starts an item on an idle key at once, and groups what arrives meanwhile into the next batch, in order', async () => {
    const writer = recordingWriter();
    const batcher = createKeyedBatcher(writer.write, 100);
    writer.hold();
    const first = batcher.submit('acme', 1);
    const waiting = [2, 3, 4].map((item) => batcher.submit('acme', item));
    expect(writer.batches).toEqual([{ key: 'acme', items: [1] }]);
    writer.release();
    expect(await first).toBe(2);
    expect(await Promise.all(waiting)).toEqual([4, 6, 8]);
    expect(writer.batches).toEqual([
      { key: 'acme', items: [1] },
      { key: 'acme', items: [2, 3, 4] },
    ]);
  });

  it('keeps keys apart: another tenant does not wait for a batch in flight', async () => {
    const writer = recordingWriter();
    const batcher = createKeyedBatcher(writer.write, 100);
    writer.hold();
    const held = batcher.submit('acme', 1);
    expect(await batcher.submit('globex', 5)).toBe(10);
    writer.release();
    expect(await held).toBe(2);
  });

  it('bounds a batch by maxBatch', async () => {
    const writer = recordingWriter();
    const batcher = createKeyedBatcher(writer.write, 2);
    writer.hold();
    const all = [1, 2, 3, 4, 5].map((item) => batcher.submit('acme', item));
    writer.release();
    expect(await Promise.all(all)).toEqual([2, 4, 6, 8, 10]);
    expect(writer.batches.map((batch) => batch.items)).toEqual([[1], [2, 3], [4, 5]]);
  });

  it('rejects every item of a failed batch with its error, and goes on with the next batch', async () => {
    const writer = recordingWriter();
    const batcher = createKeyedBatcher(writer.write, 100);
    writer.hold();
    const first = batcher.submit('acme', 1);
    const failing = [batcher.submit('acme', 2), batcher.submit('acme', -1)];
    writer.release();
    expect(await first).toBe(2);
    for (const outcome of await Promise.allSettled(failing)) {
      expect(outcome).toMatchObject({ status: 'rejected', reason: new Error('batch refused') });
    }
    expect(await batcher.submit('acme', 7)).toBe(14);
  });

  // With or without retryAloneOn: an error the batcher sheds by is never retried, item by item or otherwise.
  it.each([
    ['on an error it sheds by, rejects the items queued behind the failed batch at once, unwritten, then starts afresh', false],
    ['does not retry alone on an error it sheds by: the batch and the queue fail at once, nothing is written again', true],
  ])('%s', async (_, retryAlone) => {
    const writer = recordingWriter();
    const unanswered = Object.assign(new Error('Connection terminated'), { code: '57P01' });
    let fail = true;
    const batcher = createKeyedBatcher(
      async (key: string, items: number[]) => {
        const results = await writer.write(key, items);
        if (fail) throw unanswered;
        return results;
      },
      100,
      {
        shedQueuedOn: (error) => error === unanswered,
        ...(retryAlone ? { retryAloneOn: (error: unknown) => error !== unanswered } : {}),
      },
    );
    writer.hold();
    const first = batcher.submit('acme', 1);
    const queued = [batcher.submit('acme', 2), batcher.submit('acme', 3)];
    writer.release();
    for (const outcome of await Promise.allSettled([first, ...queued])) {
      expect(outcome).toEqual({ status: 'rejected', reason: unanswered });
    }
    // The queued items never reached the writer: one batch was attempted, not two, and nothing alone.
    expect(writer.batches).toEqual([{ key: 'acme', items: [1] }]);
    fail = false;
    expect(await batcher.submit('acme', 4)).toBe(8);
  });

  it('does not shed on other errors: the queued items are written in the next batch', async () => {
    const writer = recordingWriter();
    const batcher = createKeyedBatcher(writer.write, 100, { shedQueuedOn: () => false });
    writer.hold();
    const failing = batcher.submit('acme', -1);
    const queued = batcher.submit('acme', 5);
    writer.release();
    await expect(failing).rejects.toThrow('batch refused');
    expect(await queued).toBe(10);
    expect(writer.batches.map((batch) => batch.items)).toEqual([[-1], [5]]);
  });

  /**
   * A writer over a pretend table: a batch is one transaction, so it commits all its items or, when it holds a
   * refused item, none. `committed` counts how often each item was written.
   */
  function transactionalWriter(refused: number) {
    const writer = recordingWriter();
    const committed = new Map<number, number>();
    return {
      ...writer,
      committed,
      async write(key: string, items: number[]): Promise<number[]> {
        const results = await writer.write(key, items);
        if (items.includes(refused)) throw Object.assign(new Error(`item ${refused} refused`), { code: '23514' });
        for (const item of items) committed.set(item, (committed.get(item) ?? 0) + 1);
        return results;
      },
    };
  }

  it('with retryAloneOn, writes the items of a failed batch one by one: only the refused item fails, the others are written once', async () => {
    const writer = transactionalWriter(3);
    const batcher = createKeyedBatcher(writer.write, 100, { shedQueuedOn: () => false, retryAloneOn: () => true });
    writer.hold();
    const first = batcher.submit('acme', 1);
    const batch = [2, 3, 4, 5].map((item) => batcher.submit('acme', item));
    writer.release();
    expect(await first).toBe(2);
    const outcomes = await Promise.allSettled(batch);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    expect(outcomes.map((outcome) => (outcome.status === 'fulfilled' ? outcome.value : (outcome.reason as Error).message))).toEqual([
      4,
      'item 3 refused',
      8,
      10,
    ]);
    // The failed batch wrote nothing; each item was then tried alone, in order.
    expect(writer.batches.map((written) => written.items)).toEqual([[1], [2, 3, 4, 5], [2], [3], [4], [5]]);
    expect([...writer.committed.entries()].sort()).toEqual([
      [1, 1],
      [2, 1],
      [4, 1],
      [5, 1],
    ]);
    expect(await batcher.submit('acme', 6)).toBe(12);
  });

  it('does not retry alone when retryAloneOn says no: every item of the batch fails with its error, as without the option', async () => {
    const writer = transactionalWriter(3);
    const batcher = createKeyedBatcher(writer.write, 100, { retryAloneOn: () => false });
    writer.hold();
    const first = batcher.submit('acme', 1);
    const batch = [2, 3].map((item) => batcher.submit('acme', item));
    writer.release();
    expect(await first).toBe(2);
    for (const outcome of await Promise.allSettled(batch)) expect(outcome).toMatchObject({ status: 'rejected', reason: { message: 'item 3 refused' } });
    expect(writer.batches.map((written) => written.items)).toEqual([[1], [2, 3]]);
    expect(writer.committed.get(2)).toBeUndefined();
  });

  it('while retrying alone, an error it sheds by fails the rest of the batch and the queue at once, unwritten', async () => {
    const unanswered = Object.assign(new Error('Connection terminated'), { code: '57P01' });
    const writer = transactionalWriter(3);
    const batcher = createKeyedBatcher(
      async (key: string, items: number[]) => {
        // The database goes away just as 3 is retried alone.
        if (items.length === 1 && items[0] === 3) {
          writer.batches.push({ key, items: [3] });
          throw unanswered;
        }
        return writer.write(key, items);
      },
      4,
      { shedQueuedOn: (error) => error === unanswered, retryAloneOn: (error) => error !== unanswered },
    );
    writer.hold();
    const first = batcher.submit('acme', 1);
    const batch = [2, 3, 4, 5].map((item) => batcher.submit('acme', item));
    const queued = batcher.submit('acme', 6);
    writer.release();
    expect(await first).toBe(2);
    const outcomes = await Promise.allSettled([...batch, queued]);
    expect(outcomes[0]).toEqual({ status: 'fulfilled', value: 4 });
    for (const outcome of outcomes.slice(1)) expect(outcome).toEqual({ status: 'rejected', reason: unanswered });
    // 4, 5 and the queued 6 were never tried again.
    expect(writer.batches.map((written) => written.items)).toEqual([[1], [2, 3, 4, 5], [2], [3]]);
    expect([...writer.committed.keys()].sort()).toEqual([1, 2]);
  });

  it('refuses a writer that answers the wrong number of results', async () => {
    const batcher = createKeyedBatcher(async () => [1, 2], 100);
    await expect(batcher.submit('acme', 1)).rejects.toThrow('A batch of 1 answered 2 results');
  });
});

describe('concurrent ticket creates of one tenant', () => {
  let t: TestApp;
  let acme: TenantFixture;
  let token: string;
  let otherClientToken: string;

  beforeAll(async () => {
    // nfccard revived: the one way to ask for a channel a lock (btlespp only) lacks.
    t = await buildTestApp({ BCRYPT_COST: '4', DEPRECATED_INTERFACES_ENABLED: 'nfccard-channel' });
    acme = await createTenant(t.app, 'acme');
    token = await clientToken(t.app, acme);
    otherClientToken = await clientToken(t.app, await createClient(t.app, acme, ['tokens:create']));
    await lock(t, token, 'door');
    await device(t, token, 'phone');
  });
  afterAll(async () => {
    await t.close();
  });

  it('answers each request with its own outcome and writes one audit event per ticket, with its request id', async () => {
    const requests = Array.from({ length: 30 }, (_, i) => {
      // Every fifth names an unknown lock, every seventh an unknown device; the rest are issued. Two clients.
      const lockId = i % 5 === 4 ? `no-lock-${i}` : 'door';
      const deviceId = i % 7 === 6 ? `no-phone-${i}` : 'phone';
      return { i, lockId, deviceId, auth: i % 2 === 0 ? token : otherClientToken };
    });
    const responses = await Promise.all(
      requests.map((request) =>
        issueTicket(t, request.auth, ticketBody(t, request.lockId, request.deviceId, { commands: ['open', 'tokn'].slice(0, 1 + (request.i % 2)) }), {
          'x-request-id': `batch-${request.i}`,
        }),
      ),
    );

    const issued: string[] = [];
    for (const [index, response] of responses.entries()) {
      const request = requests[index]!;
      const lockKnown = request.lockId === 'door';
      const deviceKnown = request.deviceId === 'phone';
      if (lockKnown && deviceKnown) {
        expect(response.statusCode, response.body).toBe(201);
        const body = response.json<{ id: string; securedObjectId: string; mobileDeviceId: string; commands: string[] }>();
        expect(body).toMatchObject({ securedObjectId: 'door', mobileDeviceId: 'phone', commands: ['open', 'tokn'].slice(0, 1 + (request.i % 2)) });
        issued.push(body.id);
        const audit = await auditEvents(t, { target: `ticket:${body.id}` });
        expect(audit.map((event) => [event.action, event.request_id])).toEqual([['ticket.created', String(response.headers['x-request-id'])]]);
      } else {
        const expected = [...(lockKnown ? [] : ['securedObjectId']), ...(deviceKnown ? [] : ['mobileDeviceId'])];
        expect(problemFields(response, 422)).toEqual(expected.sort());
        expect(await auditEvents(t, { requestId: String(response.headers['x-request-id']) })).toEqual([]);
      }
    }

    const { rows } = await t.database.db.query<{ id: string; change_seq: number }>(
      'SELECT id, change_seq FROM tickets WHERE tenant_id = $1 ORDER BY change_seq',
      [acme.tenantId],
    );
    expect(rows.map((row) => row.id).sort()).toEqual([...issued].sort());
    const changes = new Set(rows.map((row) => row.change_seq));
    expect([...changes].every((seq) => Number.isInteger(seq) && seq > 0)).toBe(true);
    // On PostgreSQL the writes overlap, so they went in fewer transactions than requests (that is the point). PGlite
    // runs each statement to its end before the next request reaches the service: nothing overlaps to be grouped.
    if (usePostgres) expect(changes.size).toBeLessThan(issued.length);
  });

  /**
   * Holds the tenant's change counter (migration 005) in a transaction of its own until the answered function is
   * called: every ticket write of the tenant waits behind it, so concurrent creates queue up and form one batch. On
   * PGlite, one connection, the open transaction holds every other statement instead, to the same effect.
   */
  async function holdChangeCounter(tenantId: string): Promise<() => Promise<void>> {
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    let taken: () => void = () => undefined;
    const isTaken = new Promise<void>((resolve) => (taken = resolve));
    const holding = t.database.db.transaction(async (tx) => {
      await nextChangeSeq(tx, tenantId);
      taken();
      await released;
    });
    await isTaken;
    return async () => {
      release();
      await holding;
    };
  }

  it('G47: a create the database would refuse fails only itself; the other creates of its batch are written, once', async () => {
    const tenant = await createTenant(t.app, 'g47');
    const tenantToken = await clientToken(t.app, tenant);
    await lock(t, tenantToken, 'door');
    await device(t, tenantToken, 'phone');
    const sabotage = 5;

    for (let round = 0; round < 3; round++) {
      const creates = vi.spyOn(t.app.services.tickets, 'create');
      const release = await holdChangeCounter(tenant.tenantId);
      const pending = Array.from({ length: 12 }, (_, i) =>
        issueTicket(t, tenantToken, ticketBody(t, i === sabotage ? 'door\u0000' : 'door', 'phone')),
      );
      // Every request has reached the service (and so the batcher) before the first batch can be written.
      await vi.waitFor(() => expect(creates).toHaveBeenCalledTimes(12), { timeout: PATIENCE_MS });
      creates.mockRestore();
      await release();
      const responses = await Promise.all(pending);

      const refused = responses[sabotage]!;
      // The request ids are the server's own (one per request), so they tell this round's audit events apart.
      const requestIds = responses.map((response) => String(response.headers['x-request-id']));
      expect(refused.statusCode, refused.body).toBe(400);
      expect(refused.headers['content-type']).toContain('application/problem+json');
      expect(refused.json()).toMatchObject({
        status: 400,
        title: 'Bad Request',
        detail: 'The request holds a character the service cannot store (such as U+0000).',
        requestId: requestIds[sabotage],
      });
      const issued = responses.filter((_, i) => i !== sabotage);
      for (const response of issued) expect(response.statusCode, response.body).toBe(201);
      const ids = issued.map((response) => response.json<{ id: string }>().id);
      expect(new Set(ids).size).toBe(11);

      // The database holds exactly those eleven tickets of this round, each once, each with its own audit event.
      const { rows } = await t.database.db.query<{ id: string; secured_object_id: string; change_seq: number }>(
        'SELECT id, secured_object_id, change_seq FROM tickets WHERE tenant_id = $1',
        [tenant.tenantId],
      );
      const thisRound = rows.filter((row) => ids.includes(row.id));
      expect(rows).toHaveLength(11 * (round + 1));
      expect(thisRound.map((row) => row.id).sort()).toEqual([...ids].sort());
      expect(thisRound.every((row) => row.secured_object_id === 'door')).toBe(true);
      const audited = await auditEvents(t, { tenantId: tenant.tenantId });
      const roundEvents = audited.filter((event) => event.request_id !== null && requestIds.includes(event.request_id));
      expect(roundEvents.map((event) => event.target).sort()).toEqual(ids.map((id) => `ticket:${id}`).sort());
      expect(roundEvents.some((event) => event.request_id === requestIds[sabotage])).toBe(false);
      // A batch of more than one formed: tickets written together share their change number.
      expect(new Set(thisRound.map((row) => row.change_seq)).size).toBeLessThan(11);
    }
  });

  it('a create the database refuses for a reason no check saw fails only itself: the others of its batch are written alone, once', async () => {
    const tenant = await createTenant(t.app, 'refusing');
    const tenantToken = await clientToken(t.app, tenant);
    await lock(t, tenantToken, 'door');
    await device(t, tenantToken, 'phone');
    await device(t, tenantToken, 'refused-phone');
    const refusedAt = 3;
    // A constraint the service knows nothing of stands for any refusal the checks before batching cannot foresee.
    await t.database.db.query(`ALTER TABLE tickets ADD CONSTRAINT refuses_one_device CHECK (mobile_device_id <> 'refused-phone')`);
    try {
      const creates = vi.spyOn(t.app.services.tickets, 'create');
      const release = await holdChangeCounter(tenant.tenantId);
      const pending = Array.from({ length: 8 }, (_, i) =>
        issueTicket(t, tenantToken, ticketBody(t, 'door', i === refusedAt ? 'refused-phone' : 'phone')),
      );
      await vi.waitFor(() => expect(creates).toHaveBeenCalledTimes(8), { timeout: PATIENCE_MS });
      creates.mockRestore();
      await release();
      const responses = await Promise.all(pending);

      expect(responses[refusedAt]!.statusCode).toBe(500);
      const refusedRequestId = String(responses[refusedAt]!.headers['x-request-id']);
      expect(responses[refusedAt]!.json()).toMatchObject({ status: 500, requestId: refusedRequestId });
      const issued = responses.filter((_, i) => i !== refusedAt);
      for (const response of issued) expect(response.statusCode, response.body).toBe(201);
      const ids = issued.map((response) => response.json<{ id: string }>().id);
      const { rows } = await t.database.db.query<{ id: string; mobile_device_id: string }>(
        'SELECT id, mobile_device_id FROM tickets WHERE tenant_id = $1',
        [tenant.tenantId],
      );
      expect(rows.map((row) => row.id).sort()).toEqual([...ids].sort());
      const audited = (await auditEvents(t, { tenantId: tenant.tenantId })).filter((event) => event.action === 'ticket.created');
      expect(audited.map((event) => event.target).sort()).toEqual(ids.map((id) => `ticket:${id}`).sort());
      expect(audited.some((event) => event.request_id === refusedRequestId)).toBe(false);
    } finally {
      await t.database.db.query('ALTER TABLE tickets DROP CONSTRAINT refuses_one_device');
    }
  });

  it('a channel the lock lacks is refused for that request only', async () => {
    const [good, bad] = await Promise.all([
      issueTicket(t, token, ticketBody(t, 'door', 'phone')),
      issueTicket(t, token, ticketBody(t, 'door', 'phone', { channels: ['btlespp', 'nfccard'] })),
    ]);
    expect(good.statusCode, good.body).toBe(201);
    expect(problemFields(bad, 422)).toEqual(['channels[1]']);
  });
});
