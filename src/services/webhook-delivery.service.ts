// Webhook delivery (docs/contract.md 10): dispatches committed events to deliveries, and a worker in every instance sends them.
//
// At least once, across crashes: a delivery row exists from the transaction that moves the subscription's
// `dispatched_through`, and a claim is a lease (migration 013), so a worker that dies mid-attempt leaves a delivery that
// becomes due again, with the same webhook-id. Two workers never hold one attempt: claims take rows FOR UPDATE SKIP
// LOCKED and push them past the lease, and an outcome is recorded only while the claim is still the latest.
import { randomUUID } from 'node:crypto';
import type { SecretsKey } from './crypto.js';
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { Webhook } from 'standardwebhooks';
import type { Database } from '../db/database.js';
import {
  claimDueDeliveries,
  clearFailing,
  deliveryKey,
  disableWebhooks,
  dispatchDeliveries,
  findWebhookTarget,
  insertAttempts,
  listAttempts,
  markFailing,
  oldestPendingAgeMs,
  pruneAttempts,
  recordOutcomes,
  replayDeliveries,
  unreplayableEvents,
  type Attempt,
  type ClaimedDelivery,
  type Settlement,
  type WebhookKey,
} from '../db/repositories/webhook-delivery.repo.js';
import { NotFoundError, UnprocessableError, BadRequestError } from '../errors.js';
import { auditEvent, recordChanges } from './audit.service.js';
import type { Clock } from './context.js';
import { deliveryPauseMs, type RequestLoad } from './delivery-pacing.js';
import { cutPage, numberCursor, type Page } from './pagination.js';
import { pruneInBatches, sweepPeriodically } from './retention.js';
import { unsealWebhookSecret } from './webhook-secrets.js';
import type { WebhookUrlGuard } from './webhook-url-guard.js';

/** What became of one attempt, as the metrics count it. */
export type DeliveryOutcome = 'delivered' | 'retrying' | 'failed' | 'gone';

export interface WebhookDeliveryOptions {
  db: Database;
  clock: Clock;
  log: Logger;
  secretsKey: SecretsKey;
  guard: WebhookUrlGuard;
  /** WEBHOOK_RETRY_SCHEDULE: the delays between attempts, seconds. */
  retryScheduleSeconds: readonly number[];
  /** WEBHOOK_TIMEOUT_MS. */
  timeoutMs: number;
  /** WEBHOOK_DISABLE_AFTER_SECONDS. */
  disableAfterSeconds: number;
  /** WEBHOOK_WORKER_INTERVAL_MS. */
  intervalMs: number;
  /** EVENT_RETENTION_DAYS in ms: how long the attempt log is kept. */
  retentionMs: number;
  /** How many attempts one instance has under way at once. */
  concurrency?: number;
  /**
   * WEBHOOK_DELIVERY_BUSY_PERCENT and WEBHOOK_DELIVERY_MIN_PER_SECOND, and the instance's request count they apply
   * to (delivery-pacing.ts). Without it the worker never pauses.
   */
  pacing?: { load: Pick<RequestLoad, 'requests'>; busyPercent: number; minPerSecond: number };
  /** Jitter source in [0, 1); tests pin it. */
  random?: () => number;
}

/** WEBHOOK_RETRY_SCHEDULE as numbers. */
export function parseRetrySchedule(text: string): number[] {
  return text.split(',').map(Number);
}

/** docs/contract.md 10: jitter only lengthens a delay (by up to a quarter), so the retries span at least the schedule. */
const JITTER = 0.25;
/** A receiver's answer body is read up to this much and discarded (it is never stored or logged). */
const MAX_RESPONSE_BYTES = 64 * 1024;
/** Per tick: subscriptions per dispatch statement, and sequence numbers per subscription per statement. */
const DISPATCH_SUBSCRIPTIONS = 100;
const DISPATCH_EVENTS = 1000;
/** Dispatch statements one tick runs at most, so one tick never runs unbounded. */
const DISPATCH_ROUNDS = 20;
/** A receiver origin's keep-alive agent not used for this long (beyond the request timeout) is dropped with its idle sockets. */
const AGENT_IDLE_MS = 60_000;
/** The lease a claim holds beyond the request timeout: recording an outcome takes a few statements. */
const LEASE_MARGIN_MS = 30_000;
/** The actor of the events the worker writes (`webhook.disabled`). */
const WORKER_ACTOR = 'system:webhook-delivery';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** What one HTTP attempt came to. `error` is a short reason of ours, never the receiver's body. */
export interface SendResult {
  statusCode?: number;
  error?: string;
  durationMs: number;
}

/** The Standard Webhooks signature header: one `v1,<base64>` per secret (its signer), space-separated. */
export function signatures(signers: readonly Webhook[], id: string, time: Date, body: string): string {
  return signers.map((signer) => signer.sign(id, time, body)).join(' ');
}

/** The attempt log's cursor: the log's own number of the last attempt shown (pages run newest first). */
const attemptCursor = numberCursor('w1:');

const TIMED_OUT = Symbol('timed out');

/** `promise`'s value, or TIMED_OUT when it has not settled within `ms`. */
async function settledWithin<T>(promise: Promise<T>, ms: number): Promise<T | typeof TIMED_OUT> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<typeof TIMED_OUT>((resolve) => {
    timer = setTimeout(() => resolve(TIMED_OUT), ms);
  });
  try {
    return await Promise.race([promise, expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** A short, secret-free reason for a failed request. */
function reasonOf(error: unknown, timeoutMs: number): string {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  if (message === 'timeout') return `no answer within ${timeoutMs} ms`;
  if (code === 'EACCES' && message.startsWith('webhook address refused')) return message.slice(0, 300);
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'ECONNRESET') return 'connection reset';
  if (code === 'ENOTFOUND') return message.slice(0, 300);
  if (code?.startsWith('ERR_TLS') || code?.includes('CERT')) return `TLS error (${code})`;
  return code ? `request failed (${code})` : 'request failed';
}

export function createWebhookDeliveryService(options: WebhookDeliveryOptions) {
  const { db, clock, log, secretsKey, guard, timeoutMs } = options;
  const schedule = options.retryScheduleSeconds.map((seconds) => seconds * 1000);
  const concurrency = options.concurrency ?? 32;
  const random = options.random ?? Math.random;
  const leaseMs = timeoutMs + LEASE_MARGIN_MS;
  /**
   * One keep-alive agent per receiver origin: a busy subscription's events reuse its connections (each made through
   * the guard's `lookup`, so a connection only ever goes to an address checked when it was made), and one origin's
   * slow receiver queues on its own sockets. An origin not used for a while is dropped with its idle sockets.
   */
  const agents = new Map<string, { agent: http.Agent; usedAt: number }>();
  const agentFor = (target: URL): http.Agent => {
    const origin = target.origin;
    const now = performance.now();
    let entry = agents.get(origin);
    if (!entry) {
      for (const [key, idle] of agents) {
        if (now - idle.usedAt > AGENT_IDLE_MS + timeoutMs) {
          idle.agent.destroy();
          agents.delete(key);
        }
      }
      const agentOptions = { keepAlive: true, maxSockets: concurrency, timeout: Math.max(timeoutMs, AGENT_IDLE_MS) };
      entry = { agent: target.protocol === 'https:' ? new https.Agent(agentOptions) : new http.Agent(agentOptions), usedAt: now };
      agents.set(origin, entry);
    }
    entry.usedAt = now;
    return entry.agent;
  };
  const outcomeListeners: ((outcome: DeliveryOutcome) => void)[] = [];
  /** Attempts under way: aborted when the instance stops (their claims simply become due again). */
  const inFlight = new Set<AbortController>();
  let timer: NodeJS.Timeout | null = null;
  let stopSweeping: (() => void) | null = null;
  let stopping = false;
  let ticking: Promise<boolean> | null = null;
  /** Cuts a pacing pause short when the instance stops. */
  let stopped = new AbortController();

  /**
   * Signers (the unsealed secret, decoded once) by their sealed bytes: a busy subscription is sent many events in a
   * row, each signed with the same secret. Keyed by the sealed value itself, so a rotation (a new sealed value) is never
   * served an old secret.
   */
  const unsealed = new Map<string, Webhook>();
  const UNSEALED_CACHE_SIZE = 1_000;
  const unseal = (tenantId: string, webhookId: string, sealed: Buffer): Webhook => {
    const key = `${tenantId}/${webhookId}/${sealed.toString('base64')}`;
    let signer = unsealed.get(key);
    if (signer === undefined) {
      signer = new Webhook(unsealWebhookSecret(secretsKey, tenantId, webhookId, sealed));
      if (unsealed.size >= UNSEALED_CACHE_SIZE) unsealed.delete(unsealed.keys().next().value!);
      unsealed.set(key, signer);
    }
    return signer;
  };

  const secretsOf = (target: {
    tenantId: string;
    webhookId: string;
    secretSealed: Buffer;
    previousSecretSealed: Buffer | null;
    previousSecretUntil: number | null;
  }, now: number): Webhook[] => {
    const secrets = [unseal(target.tenantId, target.webhookId, target.secretSealed)];
    if (target.previousSecretSealed && target.previousSecretUntil !== null && target.previousSecretUntil > now) {
      secrets.push(unseal(target.tenantId, target.webhookId, target.previousSecretSealed));
    }
    return secrets;
  };

  /**
   * One POST (docs/contract.md 10): the guard is asked first and again at connect time (its `lookup`), redirects are
   * not followed, the answer body is read up to a cap and dropped, and the whole exchange, the first name lookup
   * included, has `timeoutMs`. `refusal`: the guard's answer for `url`, when a batch already asked it (once per URL).
   */
  async function send(
    url: string,
    id: string,
    body: string,
    signers: readonly Webhook[],
    refusal: Promise<string | null> = guard.refusal(url),
  ): Promise<SendResult> {
    const started = performance.now();
    const duration = () => Math.round(performance.now() - started);
    // The name is resolved by the receiver's own name server: its answer counts against the timeout too.
    const refused = await settledWithin(refusal, timeoutMs);
    if (refused === TIMED_OUT) return { error: reasonOf(new Error('timeout'), timeoutMs), durationMs: duration() };
    if (refused) return { error: `address refused: ${refused}`.slice(0, 300), durationMs: duration() };
    const now = new Date(clock());
    const controller = new AbortController();
    inFlight.add(controller);
    try {
      const statusCode = await new Promise<number>((resolve, reject) => {
        const target = new URL(url);
        const request = (target.protocol === 'https:' ? https : http).request(
          target,
          {
            method: 'POST',
            agent: agentFor(target),
            lookup: guard.lookup,
            signal: controller.signal,
            headers: {
              'content-type': 'application/json',
              'content-length': Buffer.byteLength(body),
              'user-agent': 'access-credential-service-webhooks',
              'webhook-id': id,
              'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
              'webhook-signature': signatures(signers, id, now, body),
            },
          },
          (response: IncomingMessage) => {
            let received = 0;
            response.on('data', (chunk: Buffer) => {
              received += chunk.length;
              // Enough: the status is what counts, and the rest is not read.
              if (received > MAX_RESPONSE_BYTES) {
                resolve(response.statusCode ?? 0);
                response.destroy();
              }
            });
            response.on('end', () => resolve(response.statusCode ?? 0));
            response.on('error', reject);
            response.on('close', () => resolve(response.statusCode ?? 0));
          },
        );
        const deadline = setTimeout(() => request.destroy(new Error('timeout')), Math.max(0, timeoutMs - duration()));
        request.on('close', () => clearTimeout(deadline));
        request.on('error', (error) => {
          clearTimeout(deadline);
          reject(error);
        });
        request.end(body);
      });
      if (statusCode >= 300 && statusCode < 400) return { statusCode, error: 'redirects are not followed', durationMs: duration() };
      return { statusCode, durationMs: duration() };
    } catch (error) {
      if (controller.signal.aborted) throw new AbandonedError();
      return { error: reasonOf(error, timeoutMs), durationMs: duration() };
    } finally {
      inFlight.delete(controller);
    }
  }

  /** The delay before the attempt after attempt `attempts` (1-based), with jitter; null when the schedule is exhausted. */
  function retryDelay(attempts: number): number | null {
    const base = schedule[attempts - 1];
    return base === undefined ? null : Math.round(base * (1 + random() * JITTER));
  }

  /** Sends one claimed delivery; null when the instance stopped meanwhile (the claim is abandoned). */
  async function attempt(delivery: ClaimedDelivery, refusal: Promise<string | null>): Promise<{ delivery: ClaimedDelivery; result: SendResult } | null> {
    try {
      return { delivery, result: await send(delivery.url, delivery.event.id, JSON.stringify(delivery.event), secretsOf(delivery, clock()), refusal) };
    } catch (error) {
      if (error instanceof AbandonedError) return null;
      throw error;
    }
  }

  /**
   * Records a batch of attempts in one transaction, set-based: each claim's outcome (only while it is the latest
   * claim), the attempt log, failing_since, and the subscriptions to disable with their `webhook.disabled` events.
   */
  async function record(sent: { delivery: ClaimedDelivery; result: SendResult }[]): Promise<void> {
    if (sent.length === 0) return;
    const now = clock();
    const outcomes = sent.map(({ delivery, result }) => {
      const ok = result.statusCode !== undefined && result.statusCode >= 200 && result.statusCode < 300;
      const gone = result.statusCode === 410;
      const delay = ok ? null : retryDelay(delivery.attempts);
      const nextAttemptAt = delay === null ? null : now + delay;
      const outcome: DeliveryOutcome = ok ? 'delivered' : gone ? 'gone' : nextAttemptAt === null ? 'failed' : 'retrying';
      const settlement: Settlement = {
        tenantId: delivery.tenantId,
        webhookId: delivery.webhookId,
        eventSeq: delivery.eventSeq,
        claim: delivery.claim,
        state: ok ? 'delivered' : nextAttemptAt === null ? 'failed' : 'pending',
        nextAttemptAt,
      };
      return { delivery, result, ok, gone, nextAttemptAt, outcome, settlement };
    });
    const uniqueWebhooks = (list: typeof outcomes): WebhookKey[] => [
      ...new Map(list.map(({ delivery }) => [`${delivery.tenantId}/${delivery.webhookId}`, { tenantId: delivery.tenantId, webhookId: delivery.webhookId }])).values(),
    ];
    await db.transaction(async (tx) => {
      // One statement for the batch's outcomes and its attempt log (a stale claim's attempt schedules nothing).
      const current = await recordOutcomes(
        tx,
        outcomes.map((o) => ({
          settlement: o.settlement,
          attempt: { eventId: o.delivery.event.id, time: now, statusCode: o.result.statusCode ?? null, error: o.result.error ?? null, durationMs: o.result.durationMs },
        })),
      );
      const isCurrent = (o: (typeof outcomes)[number]) => current.has(deliveryKey(o.delivery.tenantId, o.delivery.webhookId, o.delivery.eventSeq));
      // A stale claim (another worker took the delivery after this one's lease ran out) changes nothing more.
      const settled = outcomes.filter(isCurrent);
      await clearFailing(tx, uniqueWebhooks(settled.filter((o) => o.ok)));
      // docs/contract.md 10: a 410 disables at once; failing for WEBHOOK_DISABLE_AFTER_SECONDS disables too.
      const toDisable = new Map<string, WebhookKey & { reason: 'gone' | 'failing' }>();
      for (const key of uniqueWebhooks(settled.filter((o) => o.gone))) toDisable.set(`${key.tenantId}/${key.webhookId}`, { ...key, reason: 'gone' });
      const failingSince = await markFailing(tx, uniqueWebhooks(settled.filter((o) => !o.ok && !o.gone)), now);
      for (const [key, since] of failingSince) {
        if (now - since < options.disableAfterSeconds * 1000 || toDisable.has(key)) continue;
        const [tenantId, webhookId] = key.split('/') as [string, string];
        toDisable.set(key, { tenantId, webhookId, reason: 'failing' });
      }
      const disabled = await disableWebhooks(tx, [...toDisable.values()], now);
      // Last in the transaction: it locks the tenants' event counters until commit (audit.service.ts).
      await recordChanges(
        tx,
        disabled.map(({ tenantId, webhookId }) =>
          auditEvent({ tenantId, actor: WORKER_ACTOR, requestId: null }, now, 'webhook.disabled', `webhook:${webhookId}`, {
            webhookId,
            reason: toDisable.get(`${tenantId}/${webhookId}`)?.reason ?? 'failing',
          }),
        ),
      );
    });
    for (const { outcome } of outcomes) for (const listener of outcomeListeners) listener(outcome);
  }

  /** Creates deliveries for every committed event not yet dispatched (bounded per tick). */
  async function dispatch(): Promise<number> {
    let created = 0;
    for (let round = 0; round < DISPATCH_ROUNDS && !stopping; round++) {
      const result = await dispatchDeliveries(db, clock(), DISPATCH_SUBSCRIPTIONS, DISPATCH_EVENTS);
      created += result.deliveries;
      if (result.subscriptions === 0) break;
    }
    return created;
  }

  /**
   * Claims and sends due deliveries, `concurrency` at a time, until none is due, the instance stops, or `deadline`
   * (performance.now()) passes; `more` says whether it stopped with deliveries still due. `paced`: each full batch is
   * followed by the pause delivery-pacing.ts decides from the requests served meanwhile.
   */
  async function work(paced = false, deadline = Number.POSITIVE_INFINITY): Promise<{ sent: number; more: boolean }> {
    let sent = 0;
    while (!stopping) {
      if (performance.now() >= deadline) return { sent, more: true };
      const requestsBefore = options.pacing?.load.requests() ?? 0;
      const started = performance.now();
      const now = clock();
      const claimed = await claimDueDeliveries(db, now, now + leaseMs, concurrency);
      if (claimed.length === 0) break;
      // The guard is asked once per receiver URL of the batch, not once per delivery: a busy subscription's batch is
      // all one URL. Each connection is still checked when it is made (the guard's `lookup`).
      const refusals = new Map<string, Promise<string | null>>();
      const refusalOf = (url: string) => {
        let refusal = refusals.get(url);
        if (!refusal) {
          refusal = guard.refusal(url);
          // Awaited by each attempt; this keeps an early rejection from counting as unhandled meanwhile.
          refusal.catch(() => undefined);
          refusals.set(url, refusal);
        }
        return refusal;
      };
      const results = await Promise.allSettled(claimed.map((delivery) => attempt(delivery, refusalOf(delivery.url))));
      const done = results.flatMap((result) => (result.status === 'fulfilled' && result.value ? [result.value] : []));
      for (const result of results) {
        if (result.status === 'rejected') log.warn({ err: result.reason }, 'a webhook attempt failed unexpectedly; it is retried after its lease');
      }
      await record(done).catch((error: unknown) => {
        log.warn({ err: error }, 'recording webhook attempts failed; they are retried after their lease');
      });
      sent += done.length;
      if (claimed.length < concurrency) break;
      if (paced && options.pacing) {
        const pause = deliveryPauseMs({
          busyMs: performance.now() - started,
          delivered: claimed.length,
          requestsMeanwhile: options.pacing.load.requests() - requestsBefore,
          busyPercent: options.pacing.busyPercent,
          minPerSecond: options.pacing.minPerSecond,
        });
        if (pause > 0) await sleep(pause, undefined, { signal: stopped.signal }).catch(() => undefined);
      }
    }
    return { sent, more: false };
  }

  /**
   * One round of the loop: dispatch, then send what is due, paced, for at most an interval, so that new events are
   * dispatched (and counted by the oldest-undelivered gauge) while a backlog drains. Answers whether deliveries are
   * still due. Never two at once in one instance.
   */
  function tick(): Promise<boolean> {
    if (ticking) return ticking;
    ticking = (async () => {
      await dispatch();
      return (await work(true, performance.now() + options.intervalMs)).more;
    })().finally(() => {
      ticking = null;
    });
    return ticking;
  }

  /** The next round after the interval, or at once when the last one left deliveries due. */
  function scheduleTick(delayMs = options.intervalMs): void {
    if (stopping) return;
    timer = setTimeout(() => {
      tick()
        .catch((error: unknown) => {
          log.warn({ err: error }, 'webhook delivery tick failed');
          return false;
        })
        .then((more) => scheduleTick(more ? 0 : options.intervalMs));
    }, delayMs);
    timer.unref();
  }

  async function requireWebhook(tenantId: string, webhookId: string) {
    const target = UUID.test(webhookId) ? await findWebhookTarget(db, tenantId, webhookId) : null;
    if (!target) throw new NotFoundError('No such webhook subscription.');
    return target;
  }

  /** Deletes the attempts logged before the retention, in bounded batches; answers how many went. */
  async function prune(): Promise<number> {
    const before = clock() - options.retentionMs;
    return pruneInBatches((limit) => pruneAttempts(db, before, limit));
  }

  return {
    start(): void {
      stopping = false;
      stopped = new AbortController();
      scheduleTick();
      stopSweeping = sweepPeriodically(prune, log, 'webhook attempt');
    },

    prune,

    /** Stops the loop; attempts under way are abandoned (their claims become due again after the lease). */
    async stop(): Promise<void> {
      stopping = true;
      if (timer) clearTimeout(timer);
      timer = null;
      stopSweeping?.();
      stopSweeping = null;
      stopped.abort();
      for (const controller of inFlight) controller.abort();
      await ticking?.catch(() => undefined);
      for (const { agent } of agents.values()) agent.destroy();
      agents.clear();
    },

    /** One dispatch and send round now, awaited (tests, and the CLI if it ever drives delivery). */
    async runOnce(): Promise<{ dispatched: number; sent: number }> {
      await ticking?.catch(() => undefined);
      const dispatched = await dispatch();
      const { sent } = await work();
      return { dispatched, sent };
    },

    onOutcome(listener: (outcome: DeliveryOutcome) => void): void {
      outcomeListeners.push(listener);
    },

    oldestPendingAgeMs: () => oldestPendingAgeMs(db, clock()),

    /** `GET /operatorapi/webhooks/{id}/deliveries`: the subscription's attempts, newest first. */
    async listAttempts(tenantId: string, webhookId: string, filter: { eventId?: string | undefined }, limit: number, cursor?: string): Promise<Page<Omit<Attempt, 'position'>>> {
      await requireWebhook(tenantId, webhookId);
      const before = attemptCursor.decode(cursor);
      if (filter.eventId !== undefined && !UUID.test(filter.eventId)) return { items: [], nextCursor: null };
      const rows = await listAttempts(db, tenantId, webhookId, filter.eventId, before, limit + 1);
      const page = cutPage(rows, limit);
      return {
        items: page.rows.map(({ position: _position, ...item }) => item),
        nextCursor: page.more && page.last ? attemptCursor.encode(page.last.position) : null,
      };
    },

    /**
     * `POST /operatorapi/webhooks/{id}/replay`: the named events (all of them the tenant's, of a type the subscription
     * receives, else 422 naming the others and nothing replayed), or every event of its types since a time, are sent
     * again under their own webhook-id. Answers how many deliveries were made due.
     */
    async replay(tenantId: string, webhookId: string, selection: { eventIds?: string[] | undefined; since?: number | undefined }): Promise<number> {
      await requireWebhook(tenantId, webhookId);
      const now = clock();
      if ((selection.eventIds === undefined) === (selection.since === undefined)) {
        throw new BadRequestError('Give exactly one of eventIds and since.', [{ field: 'eventIds', message: 'exactly one of eventIds and since' }]);
      }
      if (selection.eventIds !== undefined) {
        const ids = [...new Set(selection.eventIds.map((id) => id.toLowerCase()))];
        const wellFormed = ids.filter((id) => UUID.test(id));
        const refused = [
          ...(wellFormed.length > 0 ? await unreplayableEvents(db, tenantId, webhookId, wellFormed) : []),
          ...ids.filter((id) => !UUID.test(id)).map((eventId) => ({ eventId, reason: 'unknown' as const })),
        ];
        if (refused.length > 0) {
          throw new UnprocessableError(
            `Nothing was replayed: ${refused.length} of the events cannot be sent to this subscription.`,
            refused.slice(0, 100).map(({ eventId, reason }) => ({
              field: 'eventIds',
              message: reason === 'unknown' ? `${eventId} is not an event of this tenant (or is no longer kept)` : `${eventId} is of a type this subscription does not receive`,
            })),
          );
        }
        return replayDeliveries(db, tenantId, webhookId, { eventIds: ids }, now);
      }
      return replayDeliveries(db, tenantId, webhookId, { since: selection.since! }, now);
    },

    /** `POST /operatorapi/webhooks/{id}/test`: a `webhook.test` ping sent now, recorded as an attempt. */
    async test(tenantId: string, webhookId: string): Promise<SendResult & { eventId: string }> {
      const target = await requireWebhook(tenantId, webhookId);
      const now = clock();
      const ping = { id: randomUUID(), type: 'webhook.test', time: now, data: { webhookId } };
      const result: SendResult = await send(target.url, ping.id, JSON.stringify(ping), secretsOf({ tenantId, webhookId, ...target }, now)).catch((error: unknown) => {
        if (error instanceof AbandonedError) return { error: 'the server is shutting down', durationMs: 0 } satisfies SendResult;
        throw error;
      });
      await insertAttempts(db, [
        {
          tenantId,
          webhookId,
          eventId: ping.id,
          time: clock(),
          statusCode: result.statusCode ?? null,
          error: result.error ?? null,
          durationMs: result.durationMs,
          nextAttemptAt: null,
        },
      ]);
      return { eventId: ping.id, ...result };
    },
  };
}

/** An attempt cut short because the instance is stopping: nothing is recorded, the claim's lease brings it back. */
class AbandonedError extends Error {}

export type WebhookDeliveryService = ReturnType<typeof createWebhookDeliveryService>;
