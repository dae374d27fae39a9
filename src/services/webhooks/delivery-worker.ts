// Webhook delivery (docs/api-reference.md 10): a worker in every instance sends each subscription the committed events after its cursor, and retries what failed.
//
// Fresh events go straight from the event log (migration 018): the worker leases a subscription, sends the batch of
// its events after `dispatched_through`, then records it in one transaction that moves the cursor past the batch and
// makes a delivery row, in retry state, of each event that failed. Retries and replays are those delivery rows,
// claimed and settled one by one (migrations 013 and 015).
//
// At least once, across crashes: the cursor moves, and a delivery row is settled, only in the transaction that
// records the attempt, and both claims are leases, so a worker that dies mid-attempt leaves events that become due
// again, sent under the same webhook-id (the event id). Two workers never hold one attempt: claims take rows FOR
// UPDATE SKIP LOCKED and push them past the lease, and an outcome is recorded only while the claim is still the latest
// (a subscription's `sending_claim`, a delivery's `claims`).
import { randomUUID } from 'node:crypto';
import type { SecretsKey } from '../../shared/crypto.js';
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { Webhook } from 'standardwebhooks';
import type { Database, TransactionScope } from '../../db/database.js';
import {
  claimDueDeliveries,
  claimFreshBatches,
  clearFailing,
  deliveryKey,
  disableWebhooks,
  findWebhookTarget,
  insertAttempts,
  listAttempts,
  LONGEST_FRESH_LEASE_MS,
  markFailing,
  oldestPendingAgeMs,
  pruneAttempts,
  recordFreshBatches,
  recordOutcomes,
  replayDeliveries,
  unreplayableEvents,
  type Attempt,
  type AttemptInput,
  type ClaimedDelivery,
  type FreshBatch,
  type FreshOutcome,
  type Settlement,
  type WebhookKey,
} from '../../db/repositories/webhook-delivery.repo.js';
import { NotFoundError, UnprocessableError, BadRequestError } from '../../errors.js';
import { auditEvent, recordChanges } from '../audit.service.js';
import type { Clock } from '../context.js';
import { deliveryPauseMs, type RequestLoad } from './pacing.js';
import { cutPage, numberCursor, type Page } from '../../shared/pagination.js';
import { pruneInBatches, sweepPeriodically } from '../retention.js';
import { unsealWebhookSecret } from './signing-secrets.js';
import type { WebhookUrlGuard } from './url-guard.js';

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

/** docs/api-reference.md 10: jitter only lengthens a delay (by up to a quarter), so the retries span at least the schedule. */
const JITTER = 0.25;
/** A receiver's answer body is read up to this much and discarded (it is never stored or logged). */
const MAX_RESPONSE_BYTES = 64 * 1024;
/**
 * Fresh events (migration 018): subscriptions leased per claim, each sent a batch of up to `concurrency` events, read
 * among at most FRESH_SCAN sequence numbers after its cursor. The batches of one claim are sent `concurrency` at a
 * time, so they take at most FRESH_SUBSCRIPTIONS timeouts: the lease covers that.
 */
const FRESH_SUBSCRIPTIONS = 4;
const FRESH_SCAN = 1000;
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
  // WEBHOOK_TIMEOUT_MS is at most 60 s, so this stays within LONGEST_FRESH_LEASE_MS (a longer one would not be honoured).
  const freshLeaseMs = Math.min(FRESH_SUBSCRIPTIONS * timeoutMs + LEASE_MARGIN_MS, LONGEST_FRESH_LEASE_MS);
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
   * One POST (docs/api-reference.md 10): the guard is asked first and again at connect time (its `lookup`), redirects are
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

  /**
   * Sends `body` under `id`; null when the instance stopped meanwhile (the attempt is abandoned: nothing of it is
   * recorded, and its lease brings it back).
   */
  async function attempt(url: string, id: string, body: string, signers: readonly Webhook[], refusal: Promise<string | null>): Promise<SendResult | null> {
    if (stopping) return null;
    try {
      return await send(url, id, body, signers, refusal);
    } catch (error) {
      if (error instanceof AbandonedError) return null;
      throw error;
    }
  }

  /**
   * The guard's answer per receiver URL for one batch, asked once per URL, not once per event: a busy subscription's
   * batch is all one URL. Each connection is still checked when it is made (the guard's `lookup`).
   */
  function refusalsOfBatch(): (url: string) => Promise<string | null> {
    const refusals = new Map<string, Promise<string | null>>();
    return (url) => {
      let refusal = refusals.get(url);
      if (!refusal) {
        refusal = guard.refusal(url);
        // Awaited by each attempt; this keeps an early rejection from counting as unhandled meanwhile.
        refusal.catch(() => undefined);
        refusals.set(url, refusal);
      }
      return refusal;
    };
  }

  /** What one attempt came to: delivered, or failed and retried at `nextAttemptAt` (null: the schedule is exhausted). */
  function judge(result: SendResult, attempts: number, now: number) {
    const ok = result.statusCode !== undefined && result.statusCode >= 200 && result.statusCode < 300;
    const gone = result.statusCode === 410;
    const delay = ok ? null : retryDelay(attempts);
    const nextAttemptAt = delay === null ? null : now + delay;
    const outcome: DeliveryOutcome = ok ? 'delivered' : gone ? 'gone' : nextAttemptAt === null ? 'failed' : 'retrying';
    return { ok, gone, nextAttemptAt, outcome };
  }

  /**
   * After the outcomes of a batch are recorded, in its transaction: the failure streaks of the subscriptions whose
   * attempts were recorded, and the subscriptions to disable with their `webhook.disabled` events. The transaction
   * already holds them all, taken in order (recordFreshBatches, recordOutcomes): changing several of them statement
   * after statement takes no lock out of order.
   */
  async function settleSubscriptions(
    tx: TransactionScope,
    settled: readonly (WebhookKey & { ok: boolean; gone: boolean })[],
    now: number,
  ): Promise<void> {
    const uniqueWebhooks = (list: typeof settled): WebhookKey[] => [
      ...new Map(list.map(({ tenantId, webhookId }) => [`${tenantId}/${webhookId}`, { tenantId, webhookId }])).values(),
    ];
    await clearFailing(tx, uniqueWebhooks(settled.filter((o) => o.ok)));
    // docs/api-reference.md 10: a 410 disables at once; failing for WEBHOOK_DISABLE_AFTER_SECONDS disables too.
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
  }

  /**
   * Records a batch of claimed deliveries (retries, replays) in one transaction, set-based: each claim's outcome (only
   * while it is the latest claim), the attempt log, failing_since, and the subscriptions to disable.
   */
  async function recordDeliveries(sent: { delivery: ClaimedDelivery; result: SendResult }[]): Promise<void> {
    if (sent.length === 0) return;
    const now = clock();
    const outcomes = sent.map(({ delivery, result }) => {
      const judged = judge(result, delivery.attempts, now);
      const settlement: Settlement = {
        tenantId: delivery.tenantId,
        webhookId: delivery.webhookId,
        eventSeq: delivery.eventSeq,
        claim: delivery.claim,
        state: judged.ok ? 'delivered' : judged.nextAttemptAt === null ? 'failed' : 'pending',
        nextAttemptAt: judged.nextAttemptAt,
      };
      return { delivery, result, settlement, ...judged };
    });
    await db.transaction(async (tx) => {
      // The subscriptions locked first, then one statement for the batch's outcomes and its attempt log (a stale
      // claim's attempt schedules nothing).
      const current = await recordOutcomes(
        tx,
        outcomes.map((o) => ({
          settlement: o.settlement,
          attempt: { eventId: o.delivery.event.id, time: now, statusCode: o.result.statusCode ?? null, error: o.result.error ?? null, durationMs: o.result.durationMs },
        })),
      );
      // A stale claim (another worker took the delivery after this one's lease ran out) changes nothing more.
      const settled = outcomes.filter((o) => current.has(deliveryKey(o.delivery.tenantId, o.delivery.webhookId, o.delivery.eventSeq)));
      await settleSubscriptions(
        tx,
        settled.map((o) => ({ tenantId: o.delivery.tenantId, webhookId: o.delivery.webhookId, ok: o.ok, gone: o.gone })),
        now,
      );
    });
    for (const { outcome } of outcomes) for (const listener of outcomeListeners) listener(outcome);
  }

  /**
   * Records sent fresh batches in one transaction (migration 018): each batch whose every attempt finished moves its
   * subscription's cursor and makes retry rows of its failures, only while its claim is current (recordFreshBatches);
   * a batch cut short by the instance stopping only logs the attempts it made and releases its lease, so it is sent
   * again whole by the next claim.
   */
  async function recordFresh(sent: { batch: FreshBatch; results: (SendResult | null)[] }[]): Promise<void> {
    if (sent.length === 0) return;
    const now = clock();
    const complete: FreshOutcome[] = [];
    const judged: { key: WebhookKey; ok: boolean; gone: boolean; outcome: DeliveryOutcome }[] = [];
    const cutShort: AttemptInput[] = [];
    for (const { batch, results } of sent) {
      const key = { tenantId: batch.tenantId, webhookId: batch.webhookId };
      const attemptOf = (index: number, result: SendResult) => ({
        eventId: batch.events[index]!.id,
        time: now,
        statusCode: result.statusCode ?? null,
        error: result.error ?? null,
        durationMs: result.durationMs,
      });
      if (results.some((result) => result === null)) {
        results.forEach((result, index) => result && cutShort.push({ ...key, ...attemptOf(index, result), nextAttemptAt: null }));
        // The lease is released, the cursor stays (no bound past it): the whole batch is sent again by the next claim,
        // in this instance or another, at once rather than when the lease runs out (a restart delays nothing).
        complete.push({ ...key, claim: batch.claim, bound: 0, attempts: [] });
        continue;
      }
      complete.push({
        ...key,
        claim: batch.claim,
        bound: batch.bound,
        attempts: (results as SendResult[]).map((result, index) => {
          const verdict = judge(result, 1, now);
          judged.push({ key, ...verdict });
          return {
            eventSeq: batch.events[index]!.sequence,
            attempt: attemptOf(index, result),
            retry: verdict.ok ? null : { state: verdict.nextAttemptAt === null ? ('failed' as const) : ('pending' as const), nextAttemptAt: verdict.nextAttemptAt },
          };
        }),
      });
    }
    await db.transaction(async (tx) => {
      const recorded = await recordFreshBatches(tx, complete, now);
      await insertAttempts(tx, cutShort);
      // A stale claim, or a subscription disabled or deleted meanwhile, changes nothing more.
      await settleSubscriptions(
        tx,
        judged.filter(({ key }) => recorded.has(`${key.tenantId}/${key.webhookId}`)).map(({ key, ok, gone }) => ({ ...key, ok, gone })),
        now,
      );
    });
    for (const { outcome } of judged) for (const listener of outcomeListeners) listener(outcome);
  }

  /**
   * One round of fresh events: leases subscriptions with events past their cursor, sends their batches `concurrency`
   * at a time, and records them. `more`: some subscription has events left after its batch, or more may be due.
   */
  async function sendFresh(): Promise<{ sent: number; more: boolean }> {
    const now = clock();
    const claimed = await claimFreshBatches(db, now, now + freshLeaseMs, FRESH_SUBSCRIPTIONS, concurrency, FRESH_SCAN);
    if (claimed.length === 0) return { sent: 0, more: false };
    // A subscription whose secret cannot be opened (sealed under another key) is left to its lease, as after a crash,
    // and is claimed again once it runs out: it holds up neither the other batches of the claim nor the retries.
    const batches = claimed.flatMap((batch) => {
      try {
        return [{ ...batch, signers: secretsOf(batch, now) }];
      } catch (error) {
        log.warn({ err: error, tenantId: batch.tenantId, webhookId: batch.webhookId }, 'a webhook secret cannot be opened; its events wait for it');
        return [];
      }
    });
    const refusalOf = refusalsOfBatch();
    const jobs = batches.flatMap((batch, index) => batch.events.map((event, position) => ({ index, position, url: batch.url, event, signers: batch.signers })));
    const results = batches.map((batch) => new Array<SendResult | null>(batch.events.length).fill(null));
    const settled = await inLanes(jobs, concurrency, ({ url, event, signers }) => attempt(url, event.id, JSON.stringify(event), signers, refusalOf(url)));
    settled.forEach((result, job) => {
      const { index, position } = jobs[job]!;
      if (result.status === 'rejected') log.warn({ err: result.reason }, 'a webhook attempt failed unexpectedly; its batch is sent again by the next claim');
      else results[index]![position] = result.value;
    });
    await recordFresh(batches.map((batch, index) => ({ batch, results: results[index]! }))).catch((error: unknown) => {
      log.warn({ err: error }, 'recording webhook attempts failed; they are retried after their lease');
    });
    return {
      sent: settled.filter((result) => result.status === 'fulfilled' && result.value !== null).length,
      more: claimed.length >= FRESH_SUBSCRIPTIONS || batches.some((batch) => batch.more),
    };
  }

  /** One round of retries and replays: claims up to `concurrency` due deliveries, sends and records them. */
  async function sendDue(): Promise<{ sent: number; more: boolean }> {
    const now = clock();
    const claimed = await claimDueDeliveries(db, now, now + leaseMs, concurrency);
    if (claimed.length === 0) return { sent: 0, more: false };
    const refusalOf = refusalsOfBatch();
    const results = await Promise.allSettled(
      claimed.map(async (delivery) => {
        const result = await attempt(delivery.url, delivery.event.id, JSON.stringify(delivery.event), secretsOf(delivery, clock()), refusalOf(delivery.url));
        return result && { delivery, result };
      }),
    );
    const done = results.flatMap((result) => (result.status === 'fulfilled' && result.value ? [result.value] : []));
    for (const result of results) {
      if (result.status === 'rejected') log.warn({ err: result.reason }, 'a webhook attempt failed unexpectedly; it is retried after its lease');
    }
    await recordDeliveries(done).catch((error: unknown) => {
      log.warn({ err: error }, 'recording webhook attempts failed; they are retried after their lease');
    });
    return { sent: done.length, more: claimed.length >= concurrency };
  }

  /**
   * Sends fresh events and due deliveries, round after round, until none is left, the instance stops, or `deadline`
   * (performance.now()) passes; `more` says whether it stopped with some still due. A round that is not full ends the
   * work: what comes meanwhile waits for the next tick, and goes in larger batches. `paced`: each full round is
   * followed by the pause delivery-pacing.ts decides from the requests served meanwhile.
   */
  async function work(paced = false, deadline = Number.POSITIVE_INFINITY): Promise<{ sent: number; more: boolean }> {
    let sent = 0;
    while (!stopping) {
      if (performance.now() >= deadline) return { sent, more: true };
      const requestsBefore = options.pacing?.load.requests() ?? 0;
      const started = performance.now();
      const fresh = await sendFresh();
      const due = stopping ? { sent: 0, more: false } : await sendDue();
      sent += fresh.sent + due.sent;
      if (!fresh.more && !due.more) break;
      if (paced && options.pacing) {
        const pause = deliveryPauseMs({
          busyMs: performance.now() - started,
          delivered: fresh.sent + due.sent,
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
   * One round of the loop: send what is due, paced, for at most an interval, so that the oldest-undelivered gauge and
   * the other instances keep up while a backlog drains. Answers whether events are still due. Never two at once in one
   * instance.
   */
  function tick(): Promise<boolean> {
    if (ticking) return ticking;
    ticking = work(true, performance.now() + options.intervalMs)
      .then(({ more }) => more)
      .finally(() => {
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

    /** Sends everything due now, awaited (tests, and the CLI if it ever drives delivery); answers how many attempts were made. */
    async runOnce(): Promise<{ sent: number }> {
      await ticking?.catch(() => undefined);
      const { sent } = await work();
      return { sent };
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

/**
 * Runs `run` over `items`, at most `lanes` at once, in order; each item's settled result at its index.
 */
async function inLanes<T, R>(items: readonly T[], lanes: number, run: (item: T) => Promise<R>): Promise<PromiseSettledResult<R>[]> {
  const results = new Array<PromiseSettledResult<R>>(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const index = next++;
      try {
        results[index] = { status: 'fulfilled', value: await run(items[index]!) };
      } catch (reason) {
        results[index] = { status: 'rejected', reason };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(lanes, items.length) }, lane));
  return results;
}

/** An attempt cut short because the instance is stopping: nothing is recorded, the claim's lease brings it back. */
class AbandonedError extends Error {}

export type WebhookDeliveryService = ReturnType<typeof createWebhookDeliveryService>;
