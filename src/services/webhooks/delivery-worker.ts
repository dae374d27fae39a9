// Webhook delivery (docs/api-reference.md 10): a worker in every instance sends each subscription the committed events after its cursor, and retries what failed.
//
// Fresh events go straight from the event log (migration 018): the worker leases a subscription, sends the batch of
// its events after `dispatched_through`, then records it in one transaction that moves the cursor past the batch and
// makes a delivery row, in retry state, of each event that failed. Retries and replays are those delivery rows,
// claimed and settled one by one (migrations 013 and 015). One attempt is the sender's (sender.ts); recording what
// came of it is the attempt recorder's (attempt-recorder.ts).
//
// At least once, across crashes: the cursor moves, and a delivery row is settled, only in the transaction that
// records the attempt, and both claims are leases, so a worker that dies mid-attempt leaves events that become due
// again, sent under the same webhook-id (the event id). Two workers never hold one attempt: claims take rows FOR
// UPDATE SKIP LOCKED, one tenant per statement (webhook-delivery.repo.ts), and push them past the lease, and an outcome
// is recorded only while the claim is still the latest (a subscription's `sending_claim`, a delivery's `claims`).
import { setTimeout as sleep } from 'node:timers/promises';
import type { Webhook } from 'standardwebhooks';
import { claimDueDeliveries, claimFreshBatches, LONGEST_FRESH_LEASE_MS } from '../../db/repositories/webhook-delivery.repo.js';
import { sweepPeriodically } from '../retention.js';
import type { AttemptRecorder } from './attempt-recorder.js';
import type { DeliveryContext } from './delivery-context.js';
import { deliveryPauseMs, type RequestLoad } from './pacing.js';
import { AbandonedError, type SendResult, type WebhookSender } from './sender.js';

/**
 * Fresh events (migration 018): subscriptions leased per claim, each sent a batch of up to `concurrency` events, read
 * among at most FRESH_SCAN sequence numbers after its cursor. The batches of one claim are sent `concurrency` at a
 * time, so they take at most FRESH_SUBSCRIPTIONS timeouts: the lease covers that.
 */
const FRESH_SUBSCRIPTIONS = 4;
const FRESH_SCAN = 1000;
/** The lease a claim holds beyond the request timeout: recording an outcome takes a few statements. */
const LEASE_MARGIN_MS = 30_000;

/**
 * WEBHOOK_DELIVERY_BUSY_PERCENT and WEBHOOK_DELIVERY_MIN_PER_SECOND, and the instance's request count they apply to
 * (services/webhooks/pacing.ts).
 */
export interface DeliveryPacing {
  load: Pick<RequestLoad, 'requests'>;
  busyPercent: number;
  minPerSecond: number;
}

/**
 * Runs `run` over `items`, at most `lanes` at once, in order; each item's settled result at its index.
 */
export async function inLanes<T, R>(items: readonly T[], lanes: number, run: (item: T) => Promise<R>): Promise<PromiseSettledResult<R>[]> {
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

export function createDeliveryWorker(
  context: DeliveryContext,
  parts: {
    sender: WebhookSender;
    recorder: AttemptRecorder;
    /** WEBHOOK_WORKER_INTERVAL_MS. */
    intervalMs: number;
    /** Without it the worker never pauses. */
    pacing?: DeliveryPacing | undefined;
  },
) {
  const { db, clock, log, timeoutMs, concurrency } = context;
  const { sender, recorder, intervalMs, pacing } = parts;
  const leaseMs = timeoutMs + LEASE_MARGIN_MS;
  // WEBHOOK_TIMEOUT_MS is at most 60 s, so this stays within LONGEST_FRESH_LEASE_MS (a longer one would not be honoured).
  const freshLeaseMs = Math.min(FRESH_SUBSCRIPTIONS * timeoutMs + LEASE_MARGIN_MS, LONGEST_FRESH_LEASE_MS);
  let timer: NodeJS.Timeout | null = null;
  let stopSweeping: (() => void) | null = null;
  let stopping = false;
  let ticking: Promise<boolean> | null = null;
  /** Cuts a pacing pause short when the instance stops. */
  let stopped = new AbortController();

  /**
   * Sends `body` under `id`; null when the instance stopped meanwhile (the attempt is abandoned: nothing of it is
   * recorded, and its lease brings it back).
   */
  async function attempt(url: string, id: string, body: string, signers: readonly Webhook[], refusal: Promise<string | null>): Promise<SendResult | null> {
    if (stopping) return null;
    try {
      return await sender.send(url, id, body, signers, refusal);
    } catch (error) {
      if (error instanceof AbandonedError) return null;
      throw error;
    }
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
        return [{ ...batch, signers: sender.signersOf(batch, now) }];
      } catch (error) {
        log.warn({ err: error, tenantId: batch.tenantId, webhookId: batch.webhookId }, 'a webhook secret cannot be opened; its events wait for it');
        return [];
      }
    });
    const refusalOf = sender.refusalsOfBatch();
    const jobs = batches.flatMap((batch, index) => batch.events.map((event, position) => ({ index, position, url: batch.url, event, signers: batch.signers })));
    const results = batches.map((batch) => new Array<SendResult | null>(batch.events.length).fill(null));
    const settled = await inLanes(jobs, concurrency, ({ url, event, signers }) => attempt(url, event.id, JSON.stringify(event), signers, refusalOf(url)));
    settled.forEach((result, job) => {
      const { index, position } = jobs[job]!;
      if (result.status === 'rejected') log.warn({ err: result.reason }, 'a webhook attempt failed unexpectedly; its batch is sent again by the next claim');
      else results[index]![position] = result.value;
    });
    await recorder.recordFresh(batches.map((batch, index) => ({ batch, results: results[index]! }))).catch((error: unknown) => {
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
    const refusalOf = sender.refusalsOfBatch();
    const results = await Promise.allSettled(
      claimed.map(async (delivery) => {
        const result = await attempt(delivery.url, delivery.event.id, JSON.stringify(delivery.event), sender.signersOf(delivery, clock()), refusalOf(delivery.url));
        return result && { delivery, result };
      }),
    );
    const done = results.flatMap((result) => (result.status === 'fulfilled' && result.value ? [result.value] : []));
    for (const result of results) {
      if (result.status === 'rejected') log.warn({ err: result.reason }, 'a webhook attempt failed unexpectedly; it is retried after its lease');
    }
    await recorder.recordDeliveries(done).catch((error: unknown) => {
      log.warn({ err: error }, 'recording webhook attempts failed; they are retried after their lease');
    });
    return { sent: done.length, more: claimed.length >= concurrency };
  }

  /**
   * Sends fresh events and due deliveries, round after round, until none is left, the instance stops, or `deadline`
   * (performance.now()) passes; `more` says whether it stopped with some still due. A round that is not full ends the
   * work: what comes meanwhile waits for the next tick, and goes in larger batches. `paced`: each full round is
   * followed by the pause services/webhooks/pacing.ts decides from the requests served meanwhile.
   */
  async function work(paced = false, deadline = Number.POSITIVE_INFINITY): Promise<{ sent: number; more: boolean }> {
    let sent = 0;
    while (!stopping) {
      if (performance.now() >= deadline) return { sent, more: true };
      const requestsBefore = pacing?.load.requests() ?? 0;
      const started = performance.now();
      const fresh = await sendFresh();
      const due = stopping ? { sent: 0, more: false } : await sendDue();
      sent += fresh.sent + due.sent;
      if (!fresh.more && !due.more) break;
      if (paced && pacing) {
        const pause = deliveryPauseMs({
          busyMs: performance.now() - started,
          delivered: fresh.sent + due.sent,
          requestsMeanwhile: pacing.load.requests() - requestsBefore,
          busyPercent: pacing.busyPercent,
          minPerSecond: pacing.minPerSecond,
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
    ticking = work(true, performance.now() + intervalMs)
      .then(({ more }) => more)
      .finally(() => {
        ticking = null;
      });
    return ticking;
  }

  /** The next round after the interval, or at once when the last one left deliveries due. */
  function scheduleTick(delayMs = intervalMs): void {
    if (stopping) return;
    timer = setTimeout(() => {
      tick()
        .catch((error: unknown) => {
          log.warn({ err: error }, 'webhook delivery tick failed');
          return false;
        })
        .then((more) => scheduleTick(more ? 0 : intervalMs));
    }, delayMs);
    timer.unref();
  }

  return {
    /** Starts the loop, and the sweep of the attempt log past its retention. */
    start(): void {
      stopping = false;
      stopped = new AbortController();
      scheduleTick();
      stopSweeping = sweepPeriodically(recorder.prune, log, 'webhook attempt');
    },

    /** Stops the loop; attempts under way are abandoned (their claims become due again after the lease). */
    async stop(): Promise<void> {
      stopping = true;
      if (timer) clearTimeout(timer);
      timer = null;
      stopSweeping?.();
      stopSweeping = null;
      stopped.abort();
      sender.abandonAll();
      await ticking?.catch(() => undefined);
      sender.closeConnections();
    },

    /** Sends everything due now, awaited (tests, and the CLI if it ever drives delivery); answers how many attempts were made. */
    async runOnce(): Promise<{ sent: number }> {
      await ticking?.catch(() => undefined);
      const { sent } = await work();
      return { sent };
    },
  };
}

export type DeliveryWorker = ReturnType<typeof createDeliveryWorker>;
