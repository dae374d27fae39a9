// Webhook delivery (docs/api-reference.md 10): Standard Webhooks signatures checked by a real receiver with the
// standardwebhooks package, retries, 410, disabling, replay, rotation, DNS rebinding, two workers, the attempt log.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  claimDueDeliveries,
  claimFreshBatches,
  insertAttempts,
  markFailing,
  recordFreshBatches,
  recordOutcomes,
  replayDeliveries,
} from '../../src/db/repositories/webhook-delivery.repo.js';
import { createLogger } from '../../src/logger.js';
import { createWebhookDeliveryService, type WebhookDeliveryOptions, type WebhookDeliveryService } from '../../src/services/webhooks/delivery.service.js';
import { createWebhookUrlGuard, type Resolver, type WebhookUrlGuard } from '../../src/services/webhooks/url-guard.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { LOCK_WAITS_SQL } from '../helpers/lock-waits.js';
import { clientToken, createClient, type TenantFixture } from '../helpers/oauth.js';
import { call, device, expectAuthChecks, expectProblem, lock, nextLink, walk } from '../helpers/operator.js';
import { postgresTestUrl } from '../helpers/postgres-url.js';
import { twoTenants } from '../helpers/tenants.js';
import {
  insertWebhook,
  rotateWebhookSecret,
  setWebhookEnabled,
  startReceiver,
  verify,
  type Receiver,
  type ReceivedRequest,
} from '../helpers/webhooks.js';
import { PATIENCE_MS } from '../helpers/process.js';

interface Attempt {
  eventId: string;
  time: number;
  statusCode?: number;
  error?: string;
  durationMs: number;
  nextAttemptTime?: number;
}

const DAY = 86_400_000;

describe('webhook delivery', () => {
  let t: TestApp;
  let acme: TenantFixture;
  let other: TenantFixture;
  let offset = 0;
  const receivers: Receiver[] = [];
  const extraServices: WebhookDeliveryService[] = [];
  let locks = 0;

  beforeAll(async () => {
    // The app's own worker waits a minute between rounds: the tests drive rounds with runOnce().
    t = await buildTestApp(
      {
        BCRYPT_COST: '4',
        WEBHOOK_ALLOW_INSECURE: 'true',
        WEBHOOK_RETRY_SCHEDULE: '1,1,1',
        WEBHOOK_TIMEOUT_MS: '2000',
        WEBHOOK_WORKER_INTERVAL_MS: '60000',
      },
      { clock: () => Date.now() + offset },
    );
    ({ acme, other } = await twoTenants(t));
  });
  afterEach(async () => {
    offset = 0;
    // Each test's subscriptions stop receiving, so the next test sees only its own deliveries.
    await t.database.db.query(`UPDATE webhooks SET enabled = false, disabled_reason = 'operator', disabled_at = 0 WHERE enabled`);
    for (const service of extraServices.splice(0)) await service.stop();
    for (const receiver of receivers.splice(0)) await receiver.close();
  });
  afterAll(async () => {
    await t.close();
  });

  const receiver = async (status = 200, port = 0) => {
    const started = await startReceiver(status, port);
    receivers.push(started);
    return started;
  };
  /** Management tokens of both tenants, fetched again when the clock has moved (they live an hour). */
  let cached = { offset: Number.NaN, acme: '', other: '' };
  const fresh = async () => {
    if (!(offset >= cached.offset && offset - cached.offset < 30 * 60_000)) {
      cached = { offset, acme: await clientToken(t.app, acme), other: await clientToken(t.app, other) };
    }
    return cached;
  };
  const acmeToken = async () => (await fresh()).acme;
  const otherToken = async () => (await fresh()).other;
  const run = () => t.app.services.webhookDeliveries.runOnce();
  /** A change that writes a `secured_object.created` event. */
  const change = async (auth?: string) => (await lock(t, auth ?? (await acmeToken()), `door-${++locks}`)).id;
  const subscribe = (url: string, types = ['secured_object.created'], options: { enabled?: boolean } = {}) =>
    insertWebhook(t.database.db, t.secretsKey, acme.tenantId, url, types, { now: t.app.services.clock(), ...options });
  const attempts = async (webhookId: string, query = ''): Promise<Attempt[]> => {
    const response = await call(t, await acmeToken(), { method: 'GET', url: `/operatorapi/webhooks/${webhookId}/deliveries${query}` });
    expect(response.statusCode, response.body).toBe(200);
    return response.json();
  };
  const delivery = async (webhookId: string) => {
    const { rows } = await t.database.db.query<{ state: string; attempts: number; next_attempt_at: string | null }>(
      `SELECT state, attempts, next_attempt_at FROM webhook_deliveries WHERE tenant_id = $1 AND webhook_id = $2 ORDER BY event_seq`,
      [acme.tenantId, webhookId],
    );
    return rows;
  };
  /** The subscription's cursor (migration 018): the events up to it have been sent, or became retries. */
  const cursor = async (webhookId: string) => {
    const { rows } = await t.database.db.query<{ dispatched_through: string }>(
      `SELECT dispatched_through FROM webhooks WHERE tenant_id = $1 AND id = $2`,
      [acme.tenantId, webhookId],
    );
    return Number(rows[0]!.dispatched_through);
  };
  /** The tenant's last event number. */
  const lastSeq = async () => {
    const { rows } = await t.database.db.query<{ last_seq: string }>(`SELECT last_seq FROM tenant_audit_counters WHERE tenant_id = $1`, [acme.tenantId]);
    return Number(rows[0]!.last_seq);
  };
  const webhookRow = async (webhookId: string) => {
    const { rows } = await t.database.db.query<{ enabled: boolean; disabled_reason: string | null; failing_since: string | null }>(
      `SELECT enabled, disabled_reason, failing_since FROM webhooks WHERE tenant_id = $1 AND id = $2`,
      [acme.tenantId, webhookId],
    );
    return rows[0]!;
  };
  const eventOf = async (target: string) => {
    const { rows } = await t.database.db.query<{ event_id: string; seq: string; action: string; time: string; data: unknown; request_id: string | null }>(
      `SELECT event_id, seq, action, time, data, request_id FROM audit_events WHERE tenant_id = $1 AND target = $2 ORDER BY seq DESC LIMIT 1`,
      [acme.tenantId, target],
    );
    return rows[0]!;
  };
  /**
   * A second delivery worker on the test's database, as another instance would run it, with its own guard; stopped
   * after the test.
   */
  const extraWorker = (
    guard: WebhookUrlGuard,
    overrides: { timeoutMs?: number; concurrency?: number; intervalMs?: number; pacing?: WebhookDeliveryOptions['pacing'] } = {},
  ) => {
    const worker = createWebhookDeliveryService({
      db: t.database.db,
      clock: () => Date.now() + offset,
      log: createLogger('silent'),
      secretsKey: t.secretsKey,
      guard,
      retryScheduleSeconds: [1, 1, 1],
      timeoutMs: overrides.timeoutMs ?? 2000,
      disableAfterSeconds: 5 * 86400,
      intervalMs: overrides.intervalMs ?? 60_000,
      retentionDefaults: { accessLogDays: 365, eventDays: 30, auditDays: 730 },
      ...(overrides.concurrency !== undefined ? { concurrency: overrides.concurrency } : {}),
      ...(overrides.pacing !== undefined ? { pacing: overrides.pacing } : {}),
    });
    extraServices.push(worker);
    return worker;
  };
  /** Moves the clock past every retry delay of WEBHOOK_RETRY_SCHEDULE=1,1,1 (with jitter, at most 1.25 s). */
  const afterRetryDelay = () => {
    offset += 1500;
  };

  it('delivers a committed change\'s event, signed so the standardwebhooks package verifies it, with the event as the body', async () => {
    const hooks = await receiver();
    const webhook = await subscribe(hooks.url);
    const lockId = await change();
    expect(hooks.received).toHaveLength(0);
    await run();
    const [request] = await hooks.waitFor(1);
    expect(verify(webhook.secret, request!)).toEqual(request!.json);
    const event = await eventOf(`secured_object:${lockId}`);
    expect(request!.headers['webhook-id']).toBe(event.event_id);
    expect(request!.headers['content-type']).toBe('application/json');
    expect(request!.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/=]+$/);
    expect(Math.abs(Number(request!.headers['webhook-timestamp']) - (Date.now() + offset) / 1000)).toBeLessThan(5);
    expect(request!.json).toEqual({
      id: event.event_id,
      type: 'secured_object.created',
      sequence: Number(event.seq),
      time: Number(event.time),
      data: event.data,
      ...(event.request_id !== null ? { requestId: event.request_id } : {}),
    });
    // Delivered from the cursor at the first attempt: no delivery row, the cursor past the event (migration 018).
    expect(await delivery(webhook.id)).toEqual([]);
    expect(await cursor(webhook.id)).toBeGreaterThanOrEqual(Number(event.seq));
    const log = await attempts(webhook.id);
    expect(log).toEqual([{ eventId: event.event_id, time: expect.any(Number), statusCode: 200, durationMs: expect.any(Number) }]);
    // Nothing more is sent on later rounds.
    await run();
    expect(hooks.received).toHaveLength(1);
  });

  it('delivers only the subscribed types, and only the tenant\'s own events', async () => {
    const hooks = await receiver();
    await subscribe(hooks.url, ['mobile_device.created']);
    await change(); // secured_object.created: not subscribed
    await change(await otherToken()); // the other tenant's
    await device(t, await otherToken(), `other-phone-${locks}`);
    await device(t, await acmeToken(), `phone-${locks}`);
    await run();
    await hooks.waitFor(1);
    await run();
    expect(hooks.received.map((request) => request.json.type)).toEqual(['mobile_device.created']);
    expect(hooks.received[0]!.json.data).toBeDefined();
  });

  it('retries a receiver that is down and delivers once it is up, under the same webhook-id', async () => {
    const probe = await startReceiver();
    const port = probe.port;
    await probe.close();
    const webhook = await subscribe(probe.url);
    const lockId = await change();
    await run();
    const [failed] = await attempts(webhook.id);
    expect(failed).toMatchObject({ error: 'connection refused' });
    expect(failed!.statusCode).toBeUndefined();
    expect(failed!.nextAttemptTime! - failed!.time).toBeGreaterThanOrEqual(1000);
    expect(failed!.nextAttemptTime! - failed!.time).toBeLessThan(1250 + 50);
    expect((await webhookRow(webhook.id)).failing_since).not.toBeNull();

    const hooks = await receiver(200, port);
    await run(); // not due yet
    expect(hooks.received).toHaveLength(0);
    afterRetryDelay();
    await run();
    const [request] = await hooks.waitFor(1);
    expect(verify(webhook.secret, request!)).toEqual(request!.json);
    expect(request!.headers['webhook-id']).toBe((await eventOf(`secured_object:${lockId}`)).event_id);
    expect(await delivery(webhook.id)).toEqual([{ state: 'delivered', attempts: 2, next_attempt_at: null }]);
    expect((await webhookRow(webhook.id)).failing_since).toBeNull();
    expect((await attempts(webhook.id)).map((attempt) => attempt.statusCode ?? attempt.error)).toEqual([200, 'connection refused']);
  });

  it('marks a delivery failed when the schedule is exhausted: one attempt and one per delay', async () => {
    const hooks = await receiver(500);
    const webhook = await subscribe(hooks.url);
    await change();
    for (let round = 0; round < 6; round++) {
      await run();
      afterRetryDelay();
    }
    expect(hooks.received).toHaveLength(4);
    expect(new Set(hooks.received.map((request) => request.headers['webhook-id'])).size).toBe(1);
    expect(await delivery(webhook.id)).toEqual([{ state: 'failed', attempts: 4, next_attempt_at: null }]);
    const log = await attempts(webhook.id);
    expect(log.map((attempt) => attempt.statusCode)).toEqual([500, 500, 500, 500]);
    expect(log[0]!.nextAttemptTime).toBeUndefined();
    expect(log.slice(1).every((attempt) => attempt.nextAttemptTime !== undefined)).toBe(true);
    // The receiver's body is never stored.
    expect(JSON.stringify(log)).not.toContain('receiver says');
    expect((await webhookRow(webhook.id)).enabled).toBe(true);
  });

  it('treats a redirect as a failure and does not follow it', async () => {
    const target = await receiver();
    const hooks = await receiver(307);
    const webhook = await subscribe(hooks.url);
    await change();
    await run();
    expect(hooks.received).toHaveLength(1);
    expect(target.received).toHaveLength(0);
    expect((await attempts(webhook.id))[0]).toMatchObject({ statusCode: 307, error: 'redirects are not followed' });
    expect((await delivery(webhook.id))[0]!.state).toBe('pending');
  });

  /** The warnings about one subscription in the app's log (docs/operations.md, "Webhooks"). */
  const subscriptionWarnings = (webhookId: string) =>
    t.logLines
      .flatMap((line) => line.split('\n'))
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { level: number; msg: string; webhookId?: string; reason?: string; statusCode?: number; tenantId?: string })
      .filter((entry) => entry.webhookId === webhookId && entry.level === 40);

  it('warns once when a subscription starts failing and once when it is disabled, never with its URL', async () => {
    const hooks = await receiver(503);
    const webhook = await subscribe(`${hooks.url}?token=receiver-secret`);
    await change();
    await run();
    await change();
    afterRetryDelay();
    await run();
    afterRetryDelay();
    await run();
    expect(hooks.received.length).toBeGreaterThanOrEqual(3);
    const started = subscriptionWarnings(webhook.id);
    expect(started).toHaveLength(1);
    expect(started[0]).toMatchObject({ tenantId: acme.tenantId, statusCode: 503 });
    expect(started[0]!.msg).toMatch(/started failing/);

    offset += 6 * DAY;
    await change();
    await run();
    expect((await webhookRow(webhook.id)).enabled).toBe(false);
    const warnings = subscriptionWarnings(webhook.id);
    expect(warnings).toHaveLength(2);
    expect(warnings[1]).toMatchObject({ reason: 'failing' });
    expect(warnings[1]!.msg).toMatch(/disabled/);
    expect(t.logLines.join('')).not.toContain('receiver-secret');
  });

  it('warns that a subscription answered 410 and was disabled', async () => {
    const hooks = await receiver(410);
    const webhook = await subscribe(hooks.url);
    await change();
    await run();
    const warnings = subscriptionWarnings(webhook.id);
    expect(warnings.map((entry) => entry.reason)).toEqual(['gone']);
    expect(warnings[0]!.msg).toMatch(/410 Gone/);
  });

  it('disables the subscription at once on 410 and writes webhook.disabled', async () => {
    const hooks = await receiver(410);
    const webhook = await subscribe(hooks.url);
    await change();
    await run();
    expect(await webhookRow(webhook.id)).toMatchObject({ enabled: false, disabled_reason: 'gone' });
    await change();
    afterRetryDelay();
    await run();
    expect(hooks.received).toHaveLength(1);
    const event = await eventOf(`webhook:${webhook.id}`);
    expect(event.action).toBe('webhook.disabled');
    expect(event.data).toEqual({ webhookId: webhook.id, reason: 'gone' });
    const { rows } = await t.database.db.query<{ actor: string }>(`SELECT actor FROM audit_events WHERE tenant_id = $1 AND target = $2`, [
      acme.tenantId,
      `webhook:${webhook.id}`,
    ]);
    expect(rows).toHaveLength(1);
  });

  it('disables a subscription that has failed for WEBHOOK_DISABLE_AFTER_SECONDS (5 days) and writes webhook.disabled', async () => {
    const hooks = await receiver(503);
    const webhook = await subscribe(hooks.url);
    await change();
    await run();
    expect((await webhookRow(webhook.id)).enabled).toBe(true);
    // Four days on, still failing: still enabled.
    offset += 4 * DAY;
    await change();
    await run();
    expect((await webhookRow(webhook.id)).enabled).toBe(true);
    offset += DAY;
    await run();
    expect(await webhookRow(webhook.id)).toMatchObject({ enabled: false, disabled_reason: 'failing' });
    expect(await eventOf(`webhook:${webhook.id}`)).toMatchObject({ action: 'webhook.disabled', data: { webhookId: webhook.id, reason: 'failing' } });
    // Paused: nothing is sent while it is disabled, and its deliveries wait.
    const sent = hooks.received.length;
    afterRetryDelay();
    await run();
    expect(hooks.received).toHaveLength(sent);
    expect((await delivery(webhook.id)).every((row) => row.state === 'pending')).toBe(true);
  });

  it('sends a paused subscription what happened while it was paused once it is enabled', async () => {
    const hooks = await receiver();
    const webhook = await subscribe(hooks.url, ['secured_object.created'], { enabled: false });
    await change();
    await change();
    await run();
    expect(hooks.received).toHaveLength(0);
    await setWebhookEnabled(t.database.db, acme.tenantId, webhook.id, true);
    await run();
    await hooks.waitFor(2);
    expect(hooks.received.every((request) => verify(webhook.secret, request) !== undefined)).toBe(true);
  });

  it('replays events by id and since a time under the same webhook-id; unknown ids are 422 and replay nothing', async () => {
    const hooks = await receiver();
    const webhook = await subscribe(hooks.url);
    const first = await change();
    await change();
    await run();
    await hooks.waitFor(2);
    const event = await eventOf(`secured_object:${first}`);

    const replay = async (payload: object) => call(t, await acmeToken(), { method: 'POST', url: `/operatorapi/webhooks/${webhook.id}/replay`, payload });
    const byId = await replay({ eventIds: [event.event_id] });
    expect(byId.statusCode, byId.body).toBe(202);
    expect(byId.json()).toEqual({ replayed: 1 });
    await run();
    const [, , again] = await hooks.waitFor(3);
    expect(again!.headers['webhook-id']).toBe(event.event_id);
    expect(again!.body).toBe(hooks.received[0]!.body);
    expect(verify(webhook.secret, again!)).toEqual(again!.json);

    // Every event of its types since then that it was dispatched (earlier tests moved the clock: some are later).
    const { rows: expected } = await t.database.db.query<{ event_id: string }>(
      `SELECT e.event_id FROM audit_events e JOIN webhooks w ON w.tenant_id = e.tenant_id AND w.id = $2
        WHERE e.tenant_id = $1 AND e.action = 'secured_object.created' AND e.time >= $3 AND e.seq <= w.dispatched_through`,
      [acme.tenantId, webhook.id, event.time],
    );
    expect(expected.length).toBeGreaterThanOrEqual(2);
    const since = await replay({ since: Number(event.time) });
    expect(since.json()).toEqual({ replayed: expected.length });
    await run();
    await hooks.waitFor(3 + expected.length);
    expect(hooks.received.slice(3).map((request) => request.headers['webhook-id']).sort()).toEqual(expected.map((row) => row.event_id).sort());

    const unknown = '00000000-0000-4000-8000-000000000000';
    const otherEvent = (await t.database.db.query<{ event_id: string }>(`SELECT event_id FROM audit_events WHERE tenant_id <> $1 LIMIT 1`, [acme.tenantId])).rows[0]!;
    const unsubscribedEvent = (await t.database.db.query<{ event_id: string }>(
      `SELECT event_id FROM audit_events WHERE tenant_id = $1 AND action <> 'secured_object.created' LIMIT 1`,
      [acme.tenantId],
    )).rows[0]!;
    const refused = await replay({ eventIds: [event.event_id, unknown, otherEvent.event_id, unsubscribedEvent.event_id, 'not-an-id'] });
    const problem = expectProblem(refused, 422);
    expect(problem.errors!.map((error) => error.message)).toEqual([
      expect.stringContaining(unknown),
      expect.stringContaining(otherEvent.event_id),
      expect.stringMatching(new RegExp(`^${unsubscribedEvent.event_id} is of a type`)),
      expect.stringContaining('not-an-id'),
    ]);
    expect(problem.errors!.some((error) => error.message.includes(event.event_id))).toBe(false);
    expect((await delivery(webhook.id)).every((row) => row.state === 'delivered' && row.attempts === 1)).toBe(true);

    expectProblem(await replay({}), 400);
    expectProblem(await replay({ since: 0, eventIds: [event.event_id] }), 400);
    expectProblem(await replay({ eventIds: [] }), 400);
    expectProblem(await replay({ since: 0, extra: 1 }), 400);
  });

  it('signs with both secrets during a rotation, each verifying with its own; then with the new one only', async () => {
    const hooks = await receiver();
    const webhook = await subscribe(hooks.url);
    const now = t.app.services.clock();
    const newSecret = await rotateWebhookSecret(t.database.db, t.secretsKey, acme.tenantId, webhook.id, now + DAY);
    await change();
    await run();
    const [request] = await hooks.waitFor(1);
    const signatures = request!.headers['webhook-signature']!.split(' ');
    expect(signatures).toHaveLength(2);
    const only = (signature: string): ReceivedRequest => ({ ...request!, headers: { ...request!.headers, 'webhook-signature': signature } });
    expect(verify(newSecret, only(signatures[0]!))).toEqual(request!.json);
    expect(verify(webhook.secret, only(signatures[1]!))).toEqual(request!.json);
    expect(() => verify(webhook.secret, only(signatures[0]!))).toThrow();
    expect(() => verify(newSecret, only(signatures[1]!))).toThrow();

    // The overlap ends (as 24 h after the rotation would; the receiver checks timestamps against its own clock).
    await t.database.db.query(`UPDATE webhooks SET previous_secret_until = $3 WHERE tenant_id = $1 AND id = $2`, [
      acme.tenantId,
      webhook.id,
      t.app.services.clock() - 1,
    ]);
    await change();
    await run();
    const [, later] = await hooks.waitFor(2);
    expect(later!.headers['webhook-signature']!.split(' ')).toHaveLength(1);
    expect(verify(newSecret, later!)).toEqual(later!.json);
    expect(() => verify(webhook.secret, later!)).toThrow();
  });

  it('refuses at delivery a host that now resolves to a forbidden address (DNS rebinding): nothing is sent', async () => {
    const hooks = await receiver();
    let answer = '127.0.0.1';
    const resolve: Resolver = async () => [{ address: answer, family: 4 }];
    const worker = extraWorker(createWebhookUrlGuard({ allowInsecure: true, resolve }));
    const webhook = await subscribe(`http://hooks.rebinding.test:${hooks.port}/hook`);
    await change();
    await worker.runOnce();
    await hooks.waitFor(1);

    // The name now points at the cloud metadata address.
    answer = '169.254.169.254';
    await change();
    afterRetryDelay();
    await worker.runOnce();
    expect(hooks.received).toHaveLength(1);
    const [refused] = await attempts(webhook.id);
    expect(refused!.error).toMatch(/^address refused: resolves to 169\.254\.169\.254/);
    expect(refused!.statusCode).toBeUndefined();

    // Refused at connect time too: the check passes, then the name changes before the connection is made.
    let calls = 0;
    const flipping: Resolver = async () => [{ address: ++calls === 1 ? '127.0.0.1' : '169.254.169.254', family: 4 }];
    const guard = createWebhookUrlGuard({ allowInsecure: true, resolve: flipping });
    const rebinder = extraWorker(guard);
    afterRetryDelay();
    await rebinder.runOnce();
    expect(calls).toBe(2);
    expect(hooks.received).toHaveLength(1);
    expect((await attempts(webhook.id))[0]!.error).toMatch(/^webhook address refused: resolves to 169\.254\.169\.254/);
    await t.database.db.query(`DELETE FROM webhooks WHERE tenant_id = $1 AND id = $2`, [acme.tenantId, webhook.id]);
  });

  it('gives up on a host whose name never resolves within WEBHOOK_TIMEOUT_MS: a slow DNS answer holds no worker', async () => {
    const hooks = await receiver();
    // The receiver's own name server never answers (a malicious subscriber controls it).
    const resolve: Resolver = () => new Promise(() => undefined);
    const worker = extraWorker(createWebhookUrlGuard({ allowInsecure: true, resolve }), { timeoutMs: 300 });
    const webhook = await subscribe(`http://hooks.slow-dns.test:${hooks.port}/hook`);
    await change();
    // The name never resolves, so only the worker's own timeout can end the attempt (its error says which one did).
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      worker.runOnce(),
      new Promise((resolve) => (timer = setTimeout(() => resolve('still waiting'), PATIENCE_MS))),
    ]).finally(() => clearTimeout(timer));
    expect(outcome).toEqual({ sent: 1 });
    const [attempt] = await attempts(webhook.id);
    expect(attempt).toMatchObject({ error: 'no answer within 300 ms' });
    expect(attempt!.statusCode).toBeUndefined();
    expect(hooks.received).toHaveLength(0);
  });

  it('records the other outcomes of a batch when a subscription is deleted while its attempt is in flight', async () => {
    const hooks = await receiver();
    const kept = await subscribe(hooks.url);
    let deleted: Promise<unknown> | null = null;
    // A receiver whose request makes the operator delete its subscription before it answers.
    const deleting = http.createServer((request, response) => {
      request.resume();
      deleted = t.database.db.query('DELETE FROM webhooks WHERE tenant_id = $1 AND id = $2', [acme.tenantId, gone.id]);
      void deleted.then(() => response.end());
    });
    await new Promise<void>((resolve) => deleting.listen(0, '127.0.0.1', resolve));
    const gone = await subscribe(`http://127.0.0.1:${(deleting.address() as AddressInfo).port}/hook`);
    try {
      await change();
      await run();
      expect(deleted).not.toBeNull();
      await hooks.waitFor(1);
      expect(await delivery(kept.id)).toEqual([]);
      expect(await cursor(kept.id)).toBe(await lastSeq());
      expect((await attempts(kept.id)).map((attempt) => attempt.statusCode)).toEqual([200]);
      const { rows } = await t.database.db.query('SELECT 1 FROM webhook_attempts WHERE tenant_id = $1 AND webhook_id = $2', [acme.tenantId, gone.id]);
      expect(rows).toEqual([]);
    } finally {
      deleting.closeAllConnections();
      await new Promise<void>((resolve) => deleting.close(() => resolve()));
    }
  });

  it('records nothing for a subscription disabled while its batch is in flight, and sends the batch again once it is enabled', async () => {
    const hooks = await receiver();
    const kept = await subscribe(hooks.url);
    const received: string[] = [];
    let paused: Promise<unknown> | null = null;
    // A receiver whose first request makes the operator pause its subscription before it answers 200.
    const pausing = http.createServer((request, response) => {
      request.resume();
      received.push(String(request.headers['webhook-id']));
      paused ??= setWebhookEnabled(t.database.db, acme.tenantId, stopped.id, false);
      void paused.then(() => response.end());
    });
    await new Promise<void>((resolve) => pausing.listen(0, '127.0.0.1', resolve));
    const stopped = await subscribe(`http://127.0.0.1:${(pausing.address() as AddressInfo).port}/hook`);
    try {
      const before = await cursor(stopped.id);
      const eventId = (await eventOf(`secured_object:${await change()}`)).event_id;
      await run();
      await hooks.waitFor(1);
      expect(received).toEqual([eventId]);
      // The other subscription's batch is recorded; the paused one's is not (no cursor move, no row), its lease is free.
      expect(await cursor(kept.id)).toBe(await lastSeq());
      expect(await cursor(stopped.id)).toBe(before);
      expect(await delivery(stopped.id)).toEqual([]);
      const { rows } = await t.database.db.query<{ sending_until: string }>(`SELECT sending_until FROM webhooks WHERE tenant_id = $1 AND id = $2`, [acme.tenantId, stopped.id]);
      expect(Number(rows[0]!.sending_until)).toBeLessThanOrEqual(t.app.services.clock());
      await setWebhookEnabled(t.database.db, acme.tenantId, stopped.id, true);
      await run();
      expect(received).toEqual([eventId, eventId]);
      expect(await cursor(stopped.id)).toBe(await lastSeq());
      expect(hooks.received).toHaveLength(1);
    } finally {
      pausing.closeAllConnections();
      await new Promise<void>((resolve) => pausing.close(() => resolve()));
    }
  });

  // PostgreSQL only: PGlite has one connection, so two transactions cannot overlap.
  it.runIf(postgresTestUrl() !== undefined)('never deadlocks two workers recording failures of one subscription at once', async () => {
    const webhook = await subscribe('http://127.0.0.1:9/hook');
    const now = t.app.services.clock();
    const key = { tenantId: acme.tenantId, webhookId: webhook.id };
    let arrived = 0;
    let bothLogged!: () => void;
    const barrier = new Promise<void>((resolve) => (bothLogged = resolve));
    // What record() does for a failed attempt: log it, then mark the subscription failing, each worker in its transaction.
    const worker = () =>
      t.database.db.transaction(async (tx) => {
        await insertAttempts(tx, [{ ...key, eventId: randomUUID(), time: now, statusCode: 500, error: null, durationMs: 1, nextAttemptAt: now + 1000 }]);
        if (++arrived === 2) bothLogged();
        await barrier;
        return markFailing(tx, [key], now);
      });
    const [first, second] = await Promise.all([worker(), worker()]);
    expect([...first.values(), ...second.values()]).toEqual([now, now]);
    expect(await attempts(webhook.id)).toHaveLength(2);
  });

  it.runIf(postgresTestUrl() !== undefined)('never deadlocks a fresh recording with a retry recording of the same replayed event', async () => {
    const webhook = await subscribe('http://127.0.0.1:9/hook');
    const key = { tenantId: acme.tenantId, webhookId: webhook.id };
    const event = await eventOf(`secured_object:${await change()}`);
    const db = t.database.db;
    const now = t.app.services.clock();
    // The event is past the cursor (not sent yet) and replayed by id: a fresh batch and a delivery row both hold it.
    expect(await replayDeliveries(db, acme.tenantId, webhook.id, { eventIds: [event.event_id] }, now)).toBe(1);
    const [batch] = await claimFreshBatches(db, now, now + 60_000, 4, 100, 1000);
    const [claimed] = await claimDueDeliveries(db, now, now + 60_000, 10);
    expect(batch!.events.map((e) => e.id)).toEqual([event.event_id]);
    expect(claimed).toMatchObject({ webhookId: webhook.id, eventSeq: Number(event.seq) });
    const attempt = { eventId: event.event_id, time: now, statusCode: 500, error: null, durationMs: 1 };
    let retryRecorded!: () => void;
    const recordedOutcome = new Promise<void>((resolve) => (retryRecorded = resolve));
    let freshWaiting!: () => void;
    const waiting = new Promise<void>((resolve) => (freshWaiting = resolve));
    // Both failed. The retry worker records its outcome, then (as recordDeliveries does) marks the subscription failing;
    // the fresh worker records its batch in between.
    const retry = db.transaction(async (tx) => {
      await recordOutcomes(tx, [{ settlement: { ...key, eventSeq: claimed!.eventSeq, claim: claimed!.claim, state: 'pending', nextAttemptAt: now + 1000 }, attempt }]);
      retryRecorded();
      await waiting;
      return markFailing(tx, [key], now);
    });
    await recordedOutcome;
    const fresh = recordFreshBatches(
      db,
      [{ ...key, claim: batch!.claim, bound: batch!.bound, attempts: [{ eventSeq: Number(event.seq), attempt, retry: { state: 'pending', nextAttemptAt: now + 1000 } }] }],
      now,
    );
    // The fresh recording waits for the retry worker's transaction.
    await vi.waitFor(async () => {
      const { rows } = await db.query<{ n: string }>(LOCK_WAITS_SQL);
      expect(Number(rows[0]!.n)).toBeGreaterThan(0);
    }, { timeout: PATIENCE_MS, interval: 20 });
    freshWaiting();
    const [failing, recorded] = await Promise.all([retry, fresh]);
    expect([...failing.values()]).toEqual([now]);
    expect([...recorded]).toEqual([`${acme.tenantId}/${webhook.id}`]);
    expect(await cursor(webhook.id)).toBe(batch!.bound);
    expect((await delivery(webhook.id)).map(({ state }) => state)).toEqual(['pending']);
  });

  it('never sends one event twice with two workers on one database', async () => {
    const hooks = await receiver();
    await subscribe(hooks.url);
    const workers = [0, 1].map(() => extraWorker(createWebhookUrlGuard({ allowInsecure: true }), { concurrency: 4 }));
    for (let index = 0; index < 30; index++) await change();
    await Promise.all([workers[0]!.runOnce(), workers[1]!.runOnce(), run(), workers[0]!.runOnce(), workers[1]!.runOnce()]);
    await Promise.all(workers.map((worker) => worker.runOnce()));
    await hooks.waitFor(30);
    const ids = hooks.received.map((request) => request.headers['webhook-id']);
    expect(ids).toHaveLength(30);
    expect(new Set(ids).size).toBe(30);
  });

  it('sends fresh events from the cursor: a stale claim records nothing, and after a crash the same events go again under their ids', async () => {
    const hooks = await receiver();
    const webhook = await subscribe(hooks.url);
    const before = await cursor(webhook.id);
    const ids = [];
    for (let index = 0; index < 3; index++) ids.push((await eventOf(`secured_object:${await change()}`)).event_id);
    const db = t.database.db;
    const now = t.app.services.clock();
    // A worker leases the subscription and reads its batch, then dies before recording anything (kill -9).
    const [crashed] = await claimFreshBatches(db, now, now + 60_000, 4, 100, 1000);
    expect(crashed).toMatchObject({ webhookId: webhook.id, bound: await lastSeq() });
    expect(crashed!.events.map((event) => event.id)).toEqual(ids);
    // While the lease holds, no other worker takes it.
    expect(await claimFreshBatches(db, now + 1000, now + 61_000, 4, 100, 1000)).toEqual([]);
    await run();
    expect(hooks.received).toHaveLength(0);
    // After the lease, another worker sends the same events under the same webhook-ids and moves the cursor.
    offset += 61_000;
    await run();
    await hooks.waitFor(3);
    expect(hooks.received.map((request) => request.headers['webhook-id'])).toEqual(ids);
    expect(await cursor(webhook.id)).toBe(crashed!.bound);
    // The first worker's late recording (its claim is stale: another worker took the range) records no outcome: no
    // retry row, the cursor left where the other worker put it; its attempts are still logged, with no next attempt.
    const failed = crashed!.events.map((event) => ({
      eventSeq: event.sequence,
      attempt: { eventId: event.id, time: now, statusCode: 500, error: null, durationMs: 1 },
      retry: { state: 'pending' as const, nextAttemptAt: now + 1000 },
    }));
    const stale = await recordFreshBatches(db, [{ tenantId: acme.tenantId, webhookId: webhook.id, claim: crashed!.claim, bound: before, attempts: failed }], now);
    expect(stale.size).toBe(0);
    expect(await cursor(webhook.id)).toBe(crashed!.bound);
    expect(await delivery(webhook.id)).toEqual([]);
    const log = await attempts(webhook.id);
    expect(log.filter((attempt) => attempt.statusCode === 500)).toHaveLength(3);
    expect(log.every((attempt) => attempt.nextAttemptTime === undefined)).toBe(true);
    await run();
    expect(hooks.received).toHaveLength(3);
  });

  it('makes retries of the fresh events that failed, each delivered later exactly once', async () => {
    const hooks = await receiver(500);
    const webhook = await subscribe(hooks.url);
    const ids = [];
    for (let index = 0; index < 3; index++) ids.push((await eventOf(`secured_object:${await change()}`)).event_id);
    await run();
    await hooks.waitFor(3);
    // The cursor moved past them; each is a delivery row with its first attempt counted, retried after the first delay.
    expect(await cursor(webhook.id)).toBe(await lastSeq());
    const rows = await delivery(webhook.id);
    expect(rows.map(({ state, attempts }) => ({ state, attempts }))).toEqual(new Array(3).fill({ state: 'pending', attempts: 1 }));
    expect((await webhookRow(webhook.id)).failing_since).not.toBeNull();
    hooks.status = 200;
    await run(); // not due yet
    expect(hooks.received).toHaveLength(3);
    afterRetryDelay();
    await run();
    await hooks.waitFor(6);
    await run();
    afterRetryDelay();
    await run();
    expect(hooks.received.slice(3).map((request) => request.headers['webhook-id']).sort()).toEqual([...ids].sort());
    expect(hooks.received).toHaveLength(6);
    expect((await delivery(webhook.id)).map(({ state, attempts }) => ({ state, attempts }))).toEqual(new Array(3).fill({ state: 'delivered', attempts: 2 }));
    expect((await webhookRow(webhook.id)).failing_since).toBeNull();
  });

  it('counts fresh events not yet sent in the oldest-undelivered age, and nothing once they are sent', async () => {
    const hooks = await receiver();
    const webhook = await subscribe(hooks.url);
    const gauge = () => t.app.services.webhookDeliveries.oldestPendingAgeMs();
    expect(await gauge()).toBe(0);
    const first = await eventOf(`secured_object:${await change()}`);
    await change();
    offset += 60_000;
    const age = await gauge();
    expect(age).toBeGreaterThanOrEqual(60_000);
    expect(age).toBeLessThanOrEqual(t.app.services.clock() - Number(first.time));
    // An event of a type it does not receive is not waiting for it.
    await setWebhookEnabled(t.database.db, acme.tenantId, webhook.id, false);
    await subscribe(hooks.url, ['mobile_device.created']);
    expect(await gauge()).toBe(0);
    await setWebhookEnabled(t.database.db, acme.tenantId, webhook.id, true);
    await run();
    await hooks.waitFor(2);
    expect(await gauge()).toBe(0);
  });

  it('moves the cursor of a subscription whose types match few events, in bounded steps, and sends what matches', async () => {
    const hooks = await receiver();
    const webhook = await subscribe(hooks.url, ['mobile_device.created']);
    // 2,500 events of another type (more than one claim reads), then one of its type.
    await t.database.db.query(
      `WITH counter AS (
         UPDATE tenant_audit_counters SET last_seq = last_seq + 2500 WHERE tenant_id = $1 RETURNING last_seq
       )
       INSERT INTO audit_events (tenant_id, seq, time, actor, action, target, request_id)
       SELECT $1, counter.last_seq - 2500 + n, $2::bigint, 'test', 'secured_object.deleted', 'secured_object:bulk-' || n, NULL
         FROM counter, generate_series(1, 2500) AS n`,
      [acme.tenantId, t.app.services.clock()],
    );
    await device(t, await acmeToken(), `phone-after-bulk-${locks}`);
    await change(); // and one more of another type: the cursor moves past it too
    // One claim reads at most 1,000 sequence numbers: nothing of its type among them, and it moves past them.
    const from = await cursor(webhook.id);
    const now = t.app.services.clock();
    const [step] = await claimFreshBatches(t.database.db, now, now + 60_000, 4, 100, 1000);
    expect(step).toMatchObject({ webhookId: webhook.id, bound: from + 1000, more: true, events: [] });
    const recorded = await recordFreshBatches(t.database.db, [{ tenantId: acme.tenantId, webhookId: webhook.id, claim: step!.claim, bound: step!.bound, attempts: [] }], now);
    expect([...recorded]).toEqual([`${acme.tenantId}/${webhook.id}`]);
    expect(await cursor(webhook.id)).toBe(from + 1000);
    await run();
    const [request] = await hooks.waitFor(1);
    expect(request!.json.type).toBe('mobile_device.created');
    expect(await cursor(webhook.id)).toBe(await lastSeq());
    await run();
    expect(hooks.received).toHaveLength(1);
  });

  it('takes the subscriptions served longest ago first, so busy ones never keep another waiting', async () => {
    const hooks = await receiver();
    const subscriptions = [await subscribe(hooks.url), await subscribe(hooks.url), await subscribe(hooks.url)];
    const names = new Map(subscriptions.map((webhook, index) => [webhook.id, `s${index}`]));
    const db = t.database.db;
    const start = t.app.services.clock();
    // Served before, s0 most recently and s2 longest ago (written in that order, so the table's own order is the reverse
    // of the one wanted).
    for (const [index, webhook] of subscriptions.entries()) {
      await db.query('UPDATE webhooks SET sending_until = $3 WHERE tenant_id = $1 AND id = $2', [acme.tenantId, webhook.id, start - 1000 * (index + 1)]);
    }
    const served: string[] = [];
    // Every subscription always has a new event waiting; each claim takes one subscription and records its batch.
    for (let round = 0; round < 6; round++) {
      await change();
      const now = t.app.services.clock() + round;
      const [batch] = await claimFreshBatches(db, now, now + 60_000, 1, 100, 1000);
      served.push(names.get(batch!.webhookId)!);
      await recordFreshBatches(db, [{ tenantId: acme.tenantId, webhookId: batch!.webhookId, claim: batch!.claim, bound: batch!.bound, attempts: [] }], now);
    }
    // Longest ago first, then round robin: each of the three in every three claims, in the same order again.
    expect(served).toEqual(['s2', 's1', 's0', 's2', 's1', 's0']);
  });

  it('is not held back by a release recorded under a clock ahead of the claimer\'s (another instance, or a clock set back)', async () => {
    const hooks = await receiver();
    const webhook = await subscribe(hooks.url);
    // An instance whose clock is an hour ahead sends and records a batch: its release time is an hour in the future.
    offset = 3_600_000;
    await change();
    await run();
    await hooks.waitFor(1);
    // A claimer with the right clock (another instance, or this one once its clock is set right) sends the next event
    // now, not in an hour: a release is never a lease.
    offset = 0;
    const eventId = (await eventOf(`secured_object:${await change()}`)).event_id;
    await run();
    const received = await hooks.waitFor(2);
    expect(received[1]!.headers['webhook-id']).toBe(eventId);
    expect(await cursor(webhook.id)).toBe(await lastSeq());
  });

  it('takes a subscription released under a clock ahead of the claimer\'s in its turn, not after every other one', async () => {
    const hooks = await receiver();
    const subscriptions = [await subscribe(hooks.url), await subscribe(hooks.url), await subscribe(hooks.url)];
    const names = new Map(subscriptions.map((webhook, index) => [webhook.id, `s${index}`]));
    const db = t.database.db;
    const start = t.app.services.clock();
    // s0 was released by an instance an hour ahead; s1 and s2 by instances with the claimer's clock, s1 longer ago.
    const released = [start + 3_600_000, start - 1000, start - 500];
    for (const [index, webhook] of subscriptions.entries()) {
      await db.query('UPDATE webhooks SET sending_until = $3 WHERE tenant_id = $1 AND id = $2', [acme.tenantId, webhook.id, released[index]]);
    }
    const served: string[] = [];
    // Every subscription always has a new event waiting; each claim takes one subscription and records its batch.
    for (let round = 0; round < 6; round++) {
      await change();
      const now = t.app.services.clock() + round;
      const [batch] = await claimFreshBatches(db, now, now + 60_000, 1, 100, 1000);
      served.push(batch ? names.get(batch.webhookId)! : 'none');
      if (batch) await recordFreshBatches(db, [{ tenantId: acme.tenantId, webhookId: batch.webhookId, claim: batch.claim, bound: batch.bound, attempts: [] }], now);
    }
    // A release time beyond any lease this clock gives is not this clock's: it counts as never served, then round robin.
    expect(served).toEqual(['s0', 's1', 's2', 's0', 's1', 's2']);
  });

  it('sends the other subscriptions of a claim, and the retries, when one subscription\'s secret cannot be opened', async () => {
    const hooks = await receiver();
    const broken = await subscribe(hooks.url);
    const sound = await subscribe(hooks.url);
    // Sealed under another key (a restored row, a key replaced by mistake): it cannot be opened.
    await t.database.db.query(`UPDATE webhooks SET secret_sealed = $3 WHERE tenant_id = $1 AND id = $2`, [acme.tenantId, broken.id, Buffer.alloc(64, 7)]);
    const event = await eventOf(`secured_object:${await change()}`);
    await run();
    const [request] = await hooks.waitFor(1);
    expect(verify(sound.secret, request!)).toMatchObject({ id: event.event_id });
    expect(await cursor(sound.id)).toBe(await lastSeq());
    // The broken one keeps its event past its cursor (nothing skipped) until its secret can be opened.
    expect(await cursor(broken.id)).toBeLessThan(Number(event.seq));
    expect(hooks.received).toHaveLength(1);
  });

  it('releases the lease of a batch cut short by stopping: another instance sends it at once, under the same ids', async () => {
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const got: string[] = [];
    // A receiver that holds its first request until the first worker has stopped, then answers every request 200.
    const slow = http.createServer((request, response) => {
      request.resume();
      got.push(String(request.headers['webhook-id']));
      void held.then(() => response.end());
    });
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
    try {
      const webhook = await subscribe(`http://127.0.0.1:${(slow.address() as AddressInfo).port}/hook`);
      const before = await cursor(webhook.id);
      const eventId = (await eventOf(`secured_object:${await change()}`)).event_id;
      const stopping = extraWorker(createWebhookUrlGuard({ allowInsecure: true }));
      const sending = stopping.runOnce();
      await vi.waitFor(() => expect(got).toEqual([eventId]), { timeout: PATIENCE_MS, interval: 20 });
      await stopping.stop();
      await sending;
      release();
      // Nothing recorded, the lease free at once (no clock moved): the next claim sends the event again.
      expect(await cursor(webhook.id)).toBe(before);
      await run();
      expect(got).toEqual([eventId, eventId]);
      expect(await cursor(webhook.id)).toBe(await lastSeq());
    } finally {
      release();
      await new Promise((resolve) => slow.close(resolve));
    }
  });

  it('sends each event once when workers race over several subscriptions (SKIP LOCKED and leases)', async () => {
    const hooks = await Promise.all([0, 1, 2, 3, 4, 5].map(() => receiver()));
    await Promise.all(hooks.map((hook) => subscribe(hook.url)));
    const workers = [0, 1, 2].map(() => extraWorker(createWebhookUrlGuard({ allowInsecure: true }), { concurrency: 3 }));
    for (let index = 0; index < 10; index++) await change();
    await Promise.all([...workers.map((worker) => worker.runOnce()), run(), ...workers.map((worker) => worker.runOnce())]);
    await Promise.all([...workers.map((worker) => worker.runOnce()), run()]);
    for (const hook of hooks) {
      await hook.waitFor(10);
      const ids = hook.received.map((request) => request.headers['webhook-id']);
      expect(ids).toHaveLength(10);
      expect(new Set(ids).size).toBe(10);
    }
  });

  it('drains a backlog while its loop yields to requests (services/webhooks/pacing.ts): every event arrives, each once', async () => {
    const hooks = await receiver();
    const webhook = await subscribe(hooks.url);
    for (let index = 0; index < 20; index++) await change();
    // An instance always serving requests: each read of its count sees new ones, so after every full batch the worker
    // pauses, at the strictest share (1 %), for as long as the floor allows.
    let reads = 0;
    const load = { requests: () => ++reads };
    const worker = extraWorker(createWebhookUrlGuard({ allowInsecure: true }), {
      concurrency: 4,
      intervalMs: 20,
      pacing: { load, busyPercent: 1, minPerSecond: 40 },
    });
    worker.start();
    await hooks.waitFor(20);
    const ids = hooks.received.map((request) => request.headers['webhook-id']);
    expect(new Set(ids).size).toBe(20);
    // The last batch is recorded once its answers are read; stopping before that would abandon it (its lease brings
    // it back), so wait for every batch to be recorded first: the cursor past the last event, no retry.
    const last = await lastSeq();
    await vi.waitFor(async () => expect(await cursor(webhook.id)).toBe(last), { timeout: 30_000, interval: 50 });
    expect(await delivery(webhook.id)).toEqual([]);
    await worker.stop();
    // The loop consulted the load before and after each of its five full batches (stopping waits for the last one).
    expect(reads).toBeGreaterThanOrEqual(2 * 5);
    expect(hooks.received).toHaveLength(20);
  });

  it('records nothing from a claim a replay superseded: the replayed attempt decides, even when it is again the first', async () => {
    const hooks = await receiver();
    const webhook = await subscribe(hooks.url);
    const target = `secured_object:${await change()}`;
    const db = t.database.db;
    const now = t.app.services.clock();
    // A delivery row (a replay of the event; a retry is the same kind of row) ...
    await replayDeliveries(db, acme.tenantId, webhook.id, { eventIds: [(await eventOf(target)).event_id] }, now);
    // ... whose first attempt (attempts 1) a worker holds when the operator replays the event again: due now, counted
    // from the start.
    const [stale] = await claimDueDeliveries(db, now, now + 60_000, 10);
    expect(stale).toMatchObject({ webhookId: webhook.id, attempts: 1 });
    const replay = await call(t, await acmeToken(), {
      method: 'POST',
      url: `/operatorapi/webhooks/${webhook.id}/replay`,
      payload: { eventIds: [(await eventOf(target)).event_id] },
    });
    expect(replay.statusCode, replay.body).toBe(202);
    // Another worker takes the replayed delivery: its claim is again the first attempt.
    const later = t.app.services.clock();
    const [replayed] = await claimDueDeliveries(db, later, later + 60_000, 10);
    expect(replayed).toMatchObject({ webhookId: webhook.id, eventSeq: stale!.eventSeq, attempts: 1 });
    // The superseded claim's success is not recorded; the replayed attempt's failure is, and it is retried.
    const settle = (claim: typeof stale, state: 'delivered' | 'pending') =>
      recordOutcomes(db, [
        {
          settlement: { ...claim!, state, nextAttemptAt: state === 'pending' ? now + 1000 : null },
          attempt: { eventId: claim!.event.id, time: now, statusCode: state === 'delivered' ? 204 : 500, error: null, durationMs: 1 },
        },
      ]);
    expect((await settle(stale, 'delivered')).size).toBe(0);
    expect((await settle(replayed, 'pending')).size).toBe(1);
    const [row] = await delivery(webhook.id);
    expect({ ...row, next_attempt_at: Number(row!.next_attempt_at) }).toEqual({ state: 'pending', attempts: 1, next_attempt_at: now + 1000 });
    // Both attempts are logged; only the recorded one schedules a next attempt.
    expect(await attempts(webhook.id)).toEqual([
      { eventId: stale!.event.id, time: now, statusCode: 500, durationMs: 1, nextAttemptTime: now + 1000 },
      { eventId: stale!.event.id, time: now, statusCode: 204, durationMs: 1 },
    ]);
  });

  it('sends a test ping now and answers what came of it; the attempt is logged', async () => {
    const hooks = await receiver();
    const webhook = await subscribe(hooks.url);
    const response = await call(t, await acmeToken(), { method: 'POST', url: `/operatorapi/webhooks/${webhook.id}/test` });
    expect(response.statusCode, response.body).toBe(200);
    const body = response.json();
    expect(body).toEqual({ eventId: expect.any(String), statusCode: 200, durationMs: expect.any(Number) });
    expect(hooks.received).toHaveLength(1);
    const ping = hooks.received[0]!;
    expect(verify(webhook.secret, ping)).toEqual(ping.json);
    expect(ping.json).toEqual({ id: body.eventId, type: 'webhook.test', time: expect.any(Number), data: { webhookId: webhook.id } });
    expect(ping.headers['webhook-id']).toBe(body.eventId);
    expect(await attempts(webhook.id)).toEqual([{ eventId: body.eventId, time: expect.any(Number), statusCode: 200, durationMs: expect.any(Number) }]);

    hooks.status = 500;
    const failed = await call(t, await acmeToken(), { method: 'POST', url: `/operatorapi/webhooks/${webhook.id}/test` });
    expect(failed.json()).toMatchObject({ statusCode: 500 });
    // A ping does not count towards disabling.
    expect((await webhookRow(webhook.id)).failing_since).toBeNull();

    const closed = await startReceiver();
    await closed.close();
    const down = await subscribe(closed.url);
    const refused = await call(t, await acmeToken(), { method: 'POST', url: `/operatorapi/webhooks/${down.id}/test` });
    expect(refused.json()).toEqual({ eventId: expect.any(String), error: 'connection refused', durationMs: expect.any(Number) });
  });

  it('prunes attempts logged before EVENT_RETENTION_DAYS (30 days here), keeping the newer ones', async () => {
    const hooks = await receiver();
    const webhook = await subscribe(hooks.url);
    await call(t, await acmeToken(), { method: 'POST', url: `/operatorapi/webhooks/${webhook.id}/test` });
    offset += 31 * DAY;
    await call(t, await acmeToken(), { method: 'POST', url: `/operatorapi/webhooks/${webhook.id}/test` });
    expect(await attempts(webhook.id)).toHaveLength(2);
    expect(await t.app.services.webhookDeliveries.prune()).toBeGreaterThanOrEqual(1);
    const kept = await attempts(webhook.id);
    expect(kept).toHaveLength(1);
    expect(kept[0]!.time).toBeGreaterThanOrEqual(Date.now() + offset - DAY);
  });

  it('pages the attempt log newest first, filters by event, and follows Link: rel="next"', async () => {
    const hooks = await receiver(500);
    const webhook = await subscribe(hooks.url);
    await change();
    await change();
    await run();
    afterRetryDelay();
    await run();
    const all = await attempts(webhook.id);
    expect(all).toHaveLength(4);
    expect([...all].sort((a, b) => b.time - a.time)).toEqual(all);
    const first = await call(t, await acmeToken(), { method: 'GET', url: `/operatorapi/webhooks/${webhook.id}/deliveries?limit=3` });
    expect(first.json()).toHaveLength(3);
    expect(nextLink(first)).toBeDefined();
    const walked = await walk<Attempt>(t, await acmeToken(), `/operatorapi/webhooks/${webhook.id}/deliveries?limit=1`);
    expect(walked.items).toEqual(all);
    expect(walked.pages).toHaveLength(4);
    const one = all[0]!.eventId;
    expect((await attempts(webhook.id, `?eventId=${one}`)).map((attempt) => attempt.eventId)).toEqual([one, one]);
    expect(await attempts(webhook.id, '?eventId=not-a-uuid')).toEqual([]);
    expectProblem(await call(t, await acmeToken(), { method: 'GET', url: `/operatorapi/webhooks/${webhook.id}/deliveries?cursor=bogus` }), 400);
    expectProblem(await call(t, await acmeToken(), { method: 'GET', url: `/operatorapi/webhooks/${webhook.id}/deliveries?limit=0` }), 400);
  });

  it('answers 404 for another tenant\'s subscription and an unknown one, 401/403 without the scope, and changes nothing', async () => {
    const hooks = await receiver();
    const webhook = await subscribe(hooks.url);
    const before = await delivery(webhook.id);
    for (const id of [webhook.id, '00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
      const auth = id === webhook.id ? await otherToken() : await acmeToken();
      expectProblem(await call(t, auth, { method: 'GET', url: `/operatorapi/webhooks/${id}/deliveries` }), 404);
      expectProblem(await call(t, auth, { method: 'POST', url: `/operatorapi/webhooks/${id}/replay`, payload: { since: 0 } }), 404);
      expectProblem(await call(t, auth, { method: 'POST', url: `/operatorapi/webhooks/${id}/test` }), 404);
    }
    expect(hooks.received).toHaveLength(0);
    expect(await delivery(webhook.id)).toEqual(before);
    expect(await attempts(webhook.id)).toEqual([]);

    const reader = await clientToken(t.app, await createClient(t.app, acme, ['audit:read']));
    await expectAuthChecks(t, reader, [
      { method: 'GET', url: `/operatorapi/webhooks/${webhook.id}/deliveries`, scope: 'webhooks:manage' },
      { method: 'POST', url: `/operatorapi/webhooks/${webhook.id}/replay`, payload: { since: 0 }, scope: 'webhooks:manage' },
      { method: 'POST', url: `/operatorapi/webhooks/${webhook.id}/test`, scope: 'webhooks:manage' },
    ]);
    expect(hooks.received).toHaveLength(0);
  });

  it('counts deliveries by outcome and reports the oldest undelivered age in /metrics', async () => {
    const hooks = await receiver(500);
    await subscribe(hooks.url);
    await change();
    await run();
    offset += 60_000;
    const text = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    expect(Number(/^webhook_deliveries_total\{outcome="delivered"\} (\d+)/m.exec(text)?.[1])).toBeGreaterThan(0);
    expect(Number(/^webhook_deliveries_total\{outcome="retrying"\} (\d+)/m.exec(text)?.[1])).toBeGreaterThan(0);
    expect(Number(/^webhook_oldest_undelivered_age_seconds (\S+)/m.exec(text)?.[1])).toBeGreaterThanOrEqual(60);
  });
});
