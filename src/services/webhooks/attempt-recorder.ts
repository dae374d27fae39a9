// The outcomes of webhook attempts, recorded (docs/api-reference.md 10): the attempt log, retries on the schedule, failure streaks, and disabling a subscription that answers 410 or fails too long, with its webhook.disabled event.
import type { TransactionScope } from '../../db/database.js';
import {
  clearFailing,
  deliveryKey,
  disableWebhooks,
  insertAttempts,
  markFailing,
  pruneAttempts,
  recordFreshBatches,
  recordOutcomes,
  type AttemptInput,
  type ClaimedDelivery,
  type FreshBatch,
  type FreshOutcome,
  type Settlement,
  type WebhookKey,
} from '../../db/repositories/webhook-delivery.repo.js';
import { DAY_MS, type RetentionPeriods } from '../../shared/retention-periods.js';
import { auditEvent, recordChanges } from '../audit.service.js';
import { pruneEachTenantByPeriods } from '../retention.js';
import type { DeliveryContext, DeliveryOutcome } from './delivery-context.js';
import type { SendResult } from './sender.js';

/** docs/api-reference.md 10: jitter only lengthens a delay (by up to a quarter), so the retries span at least the schedule. */
const JITTER = 0.25;
/** The actor of the events the recorder writes (`webhook.disabled`). */
const WORKER_ACTOR = 'system:webhook-delivery';

/**
 * The delay before the attempt after attempt `attempts` (1-based) on `scheduleMs`, lengthened by the jitter `random()`
 * (in [0, 1)) draws; null when the schedule is exhausted.
 */
export function retryDelay(scheduleMs: readonly number[], attempts: number, random: () => number): number | null {
  const base = scheduleMs[attempts - 1];
  return base === undefined ? null : Math.round(base * (1 + random() * JITTER));
}

/**
 * What attempt `attempts` (1-based) came to: delivered (2xx), or failed and retried at `nextAttemptAt` (null: the
 * schedule is exhausted); `gone` when the receiver answered 410. `delayAfter` is asked only for a failure.
 */
export function judge(result: SendResult, attempts: number, now: number, delayAfter: (attempts: number) => number | null) {
  const ok = result.statusCode !== undefined && result.statusCode >= 200 && result.statusCode < 300;
  const gone = result.statusCode === 410;
  const delay = ok ? null : delayAfter(attempts);
  const nextAttemptAt = delay === null ? null : now + delay;
  const outcome: DeliveryOutcome = ok ? 'delivered' : gone ? 'gone' : nextAttemptAt === null ? 'failed' : 'retrying';
  return { ok, gone, nextAttemptAt, outcome };
}

/** What settling a batch changed about its subscriptions, for the log lines written after commit. */
interface SubscriptionChanges {
  startedFailing: (WebhookKey & { result: SendResult })[];
  disabled: (WebhookKey & { reason: 'gone' | 'failing' })[];
}

/** An attempt as the log keeps it (docs/api-reference.md 10): the event sent, when, and what the sender made of the answer. */
function logEntry(eventId: string, time: number, result: SendResult) {
  return { eventId, time, statusCode: result.statusCode ?? null, error: result.error ?? null, durationMs: result.durationMs };
}

export function createAttemptRecorder(
  context: DeliveryContext,
  options: {
    /** WEBHOOK_RETRY_SCHEDULE: the delays between attempts, seconds. */
    retryScheduleSeconds: readonly number[];
    /** WEBHOOK_DISABLE_AFTER_SECONDS. */
    disableAfterSeconds: number;
    /** The instance's retention periods; a tenant's own `eventDays` decides how long its attempt log is kept. */
    retentionDefaults: RetentionPeriods;
    /** Jitter source in [0, 1); tests pin it. */
    random: () => number;
  },
) {
  const { db, clock, log, outcomeListeners } = context;
  const schedule = options.retryScheduleSeconds.map((seconds) => seconds * 1000);
  const delayAfter = (attempts: number) => retryDelay(schedule, attempts, options.random);

  /**
   * After the outcomes of a batch are recorded, in its transaction: the failure streaks of the subscriptions whose
   * attempts were recorded, and the subscriptions to disable with their `webhook.disabled` events. The transaction
   * already holds them all, taken in order (recordFreshBatches, recordOutcomes): changing several of them statement
   * after statement takes no lock out of order.
   */
  async function settleSubscriptions(
    tx: TransactionScope,
    settled: readonly (WebhookKey & { ok: boolean; gone: boolean; result: SendResult })[],
    now: number,
  ): Promise<SubscriptionChanges> {
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
    // A subscription whose failure streak began with this batch: failing_since is the batch's own time.
    const startedFailing = settled.filter(
      (o, index) =>
        !o.ok &&
        failingSince.get(`${o.tenantId}/${o.webhookId}`) === now &&
        settled.findIndex((first) => first.tenantId === o.tenantId && first.webhookId === o.webhookId && !first.ok) === index,
    );
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
    return { startedFailing, disabled };
  }

  /**
   * One warning per subscription when its deliveries start failing and when it is disabled, after the transaction
   * committed (docs/operations.md, "Webhooks"): an operator sees a receiver in trouble from the logs alone, without a
   * line per attempt (a subscription retried for days would flood them). Never the URL: it may carry a token.
   */
  function logChanges({ startedFailing, disabled }: SubscriptionChanges): void {
    for (const { tenantId, webhookId, result } of startedFailing) {
      log.warn(
        { tenantId, webhookId, statusCode: result.statusCode, error: result.error },
        'webhook deliveries to a subscription started failing; they are retried on WEBHOOK_RETRY_SCHEDULE, and the subscription is disabled once it has failed for WEBHOOK_DISABLE_AFTER_SECONDS',
      );
    }
    for (const { tenantId, webhookId, reason } of disabled) {
      log.warn(
        { tenantId, webhookId, reason },
        reason === 'gone'
          ? 'webhook subscription disabled: its receiver answered 410 Gone; enable it again with PATCH /operatorapi/webhooks/{id} once the receiver is back'
          : 'webhook subscription disabled: its deliveries failed for WEBHOOK_DISABLE_AFTER_SECONDS; enable it again with PATCH /operatorapi/webhooks/{id} once the receiver is back',
      );
    }
  }

  return {
    /**
     * Records a batch of claimed deliveries (retries, replays) in one transaction, set-based: each claim's outcome
     * (only while it is the latest claim), the attempt log, failing_since, and the subscriptions to disable.
     */
    async recordDeliveries(sent: { delivery: ClaimedDelivery; result: SendResult }[]): Promise<void> {
      if (sent.length === 0) return;
      const now = clock();
      const outcomes = sent.map(({ delivery, result }) => {
        const judged = judge(result, delivery.attempts, now, delayAfter);
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
      const changes = await db.transaction(async (tx) => {
        // The subscriptions locked first, then one statement for the batch's outcomes and its attempt log (a stale
        // claim's attempt schedules nothing).
        const current = await recordOutcomes(
          tx,
          outcomes.map((o) => ({
            settlement: o.settlement,
            attempt: logEntry(o.delivery.event.id, now, o.result),
          })),
        );
        // A stale claim (another worker took the delivery after this one's lease ran out) changes nothing more.
        const settled = outcomes.filter((o) => current.has(deliveryKey(o.delivery.tenantId, o.delivery.webhookId, o.delivery.eventSeq)));
        return settleSubscriptions(
          tx,
          settled.map((o) => ({ tenantId: o.delivery.tenantId, webhookId: o.delivery.webhookId, ok: o.ok, gone: o.gone, result: o.result })),
          now,
        );
      });
      logChanges(changes);
      for (const { outcome } of outcomes) for (const listener of outcomeListeners) listener(outcome);
    },

    /**
     * Records sent fresh batches in one transaction (migration 018): each batch whose every attempt finished moves its
     * subscription's cursor and makes retry rows of its failures, only while its claim is current (recordFreshBatches);
     * a batch cut short by the instance stopping (a null result) only logs the attempts it made and releases its
     * lease, so it is sent again whole by the next claim.
     */
    async recordFresh(sent: { batch: FreshBatch; results: (SendResult | null)[] }[]): Promise<void> {
      if (sent.length === 0) return;
      const now = clock();
      const complete: FreshOutcome[] = [];
      const judged: { key: WebhookKey; ok: boolean; gone: boolean; outcome: DeliveryOutcome; result: SendResult }[] = [];
      const cutShort: AttemptInput[] = [];
      for (const { batch, results } of sent) {
        const key = { tenantId: batch.tenantId, webhookId: batch.webhookId };
        const attemptOf = (index: number, result: SendResult) => logEntry(batch.events[index]!.id, now, result);
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
            const verdict = judge(result, 1, now, delayAfter);
            judged.push({ key, ...verdict, result });
            return {
              eventSeq: batch.events[index]!.sequence,
              attempt: attemptOf(index, result),
              retry: verdict.ok ? null : { state: verdict.nextAttemptAt === null ? ('failed' as const) : ('pending' as const), nextAttemptAt: verdict.nextAttemptAt },
            };
          }),
        });
      }
      const changes = await db.transaction(async (tx) => {
        const recorded = await recordFreshBatches(tx, complete, now);
        await insertAttempts(tx, cutShort);
        // A stale claim, or a subscription disabled or deleted meanwhile, changes nothing more.
        return settleSubscriptions(
          tx,
          judged.filter(({ key }) => recorded.has(`${key.tenantId}/${key.webhookId}`)).map(({ key, ok, gone, result }) => ({ ...key, ok, gone, result })),
          now,
        );
      });
      logChanges(changes);
      for (const { outcome } of judged) for (const listener of outcomeListeners) listener(outcome);
    },

    /** Logs a test ping's attempt (`POST /operatorapi/webhooks/{id}/test`): it schedules nothing and counts in no metric. */
    async recordTestPing(tenantId: string, webhookId: string, eventId: string, result: SendResult): Promise<void> {
      // A transaction: insertAttempts holds the subscription from its check to its insert.
      await db.transaction((tx) => insertAttempts(tx, [{ tenantId, webhookId, ...logEntry(eventId, clock(), result), nextAttemptAt: null }]));
    },

    /**
     * Deletes the attempts logged before each tenant's `eventDays` (the attempt log is kept as long as the events),
     * a tenant at a time in bounded batches; answers how many went.
     */
    async prune(): Promise<number> {
      const now = clock();
      return pruneEachTenantByPeriods(db, options.retentionDefaults, (tenantId, periods, limit) =>
        pruneAttempts(db, tenantId, now - periods.eventDays * DAY_MS, limit),
      );
    },
  };
}

export type AttemptRecorder = ReturnType<typeof createAttemptRecorder>;
