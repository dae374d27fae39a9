// Concurrent ticket creates of one tenant share one statement and one commit (src/services/batching.ts): each
// request still gets exactly its own answer (201 with its ticket, or 422 with its own reasons), its own audit event
// with its own request id, and every ticket a change number of the tenant's log.
import { describe, expect, it, afterAll, beforeAll } from 'vitest';
import { createKeyedBatcher } from '../../src/services/batching.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { clientToken, createClient, createTenant, type TenantFixture } from '../helpers/oauth.js';
import { auditEvents, device, issueTicket, lock, problemFields, ticketBody } from '../helpers/operator.js';
import { postgresTestUrl } from '../helpers/postgres-url.js';

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

  it('on an error it sheds by, rejects the items queued behind the failed batch at once, unwritten, then starts afresh', async () => {
    const writer = recordingWriter();
    const unanswered = new Error('Query read timeout');
    let fail = true;
    const batcher = createKeyedBatcher(
      async (key: string, items: number[]) => {
        const results = await writer.write(key, items);
        if (fail) throw unanswered;
        return results;
      },
      100,
      { shedQueuedOn: (error) => error === unanswered },
    );
    writer.hold();
    const first = batcher.submit('acme', 1);
    const queued = [batcher.submit('acme', 2), batcher.submit('acme', 3)];
    writer.release();
    for (const outcome of await Promise.allSettled([first, ...queued])) {
      expect(outcome).toEqual({ status: 'rejected', reason: unanswered });
    }
    // The queued items never reached the writer: one batch was attempted, not two.
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

  it('a channel the lock lacks is refused for that request only', async () => {
    const [good, bad] = await Promise.all([
      issueTicket(t, token, ticketBody(t, 'door', 'phone')),
      issueTicket(t, token, ticketBody(t, 'door', 'phone', { channels: ['btlespp', 'nfccard'] })),
    ]);
    expect(good.statusCode, good.body).toBe(201);
    expect(problemFields(bad, 422)).toEqual(['channels[1]']);
  });
});
