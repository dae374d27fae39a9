// The webhook delivery service as the app calls it (docs/api-reference.md 10): the worker, its sender and its attempt recorder made on one context, and the operator's delivery endpoints (the attempt log, replays, test pings).
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Database } from '../../db/database.js';
import {
  findWebhookTarget,
  listAttempts,
  oldestPendingAgeMs,
  replayDeliveries,
  unreplayableEvents,
  type Attempt,
} from '../../db/repositories/webhook-delivery.repo.js';
import { BadRequestError, NotFoundError, UnprocessableError } from '../../errors.js';
import type { SecretsKey } from '../../shared/crypto.js';
import type { RetentionPeriods } from '../../shared/retention-periods.js';
import { cutPage, numberCursor, type Page } from '../../shared/pagination.js';
import type { Clock } from '../context.js';
import { createAttemptRecorder } from './attempt-recorder.js';
import type { DeliveryContext, DeliveryOutcome } from './delivery-context.js';
import { createDeliveryWorker, type DeliveryPacing } from './delivery-worker.js';
import { AbandonedError, createWebhookSender, type SendResult } from './sender.js';
import type { WebhookUrlGuard } from './url-guard.js';

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
  /** The instance's retention periods; a tenant's own `eventDays` decides how long its attempt log is kept. */
  retentionDefaults: RetentionPeriods;
  /** How many attempts one instance has under way at once. */
  concurrency?: number;
  /** The worker's pacing (services/webhooks/pacing.ts). Without it the worker never pauses. */
  pacing?: DeliveryPacing;
  /** Jitter source in [0, 1); tests pin it. */
  random?: () => number;
}

/** WEBHOOK_RETRY_SCHEDULE as numbers. */
export function parseRetrySchedule(text: string): number[] {
  return text.split(',').map(Number);
}

/** The attempt log's cursor: the log's own number of the last attempt shown (pages run newest first). */
const attemptCursor = numberCursor('w1:');
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function createWebhookDeliveryService(options: WebhookDeliveryOptions) {
  const { db, clock } = options;
  const context: DeliveryContext = {
    db,
    clock,
    log: options.log,
    timeoutMs: options.timeoutMs,
    concurrency: options.concurrency ?? 32,
    outcomeListeners: [],
  };
  const sender = createWebhookSender(context, { secretsKey: options.secretsKey, guard: options.guard });
  const recorder = createAttemptRecorder(context, {
    retryScheduleSeconds: options.retryScheduleSeconds,
    disableAfterSeconds: options.disableAfterSeconds,
    retentionDefaults: options.retentionDefaults,
    random: options.random ?? Math.random,
  });
  const worker = createDeliveryWorker(context, { sender, recorder, intervalMs: options.intervalMs, pacing: options.pacing });

  async function requireWebhook(tenantId: string, webhookId: string) {
    const target = UUID.test(webhookId) ? await findWebhookTarget(db, tenantId, webhookId) : null;
    if (!target) throw new NotFoundError('No such webhook subscription.');
    return target;
  }

  return {
    start: worker.start,
    stop: worker.stop,
    runOnce: worker.runOnce,
    prune: recorder.prune,

    onOutcome(listener: (outcome: DeliveryOutcome) => void): void {
      context.outcomeListeners.push(listener);
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
      const result: SendResult = await sender.send(target.url, ping.id, JSON.stringify(ping), sender.signersOf({ tenantId, webhookId, ...target }, now)).catch((error: unknown) => {
        if (error instanceof AbandonedError) return { error: 'the server is shutting down', durationMs: 0 } satisfies SendResult;
        throw error;
      });
      await recorder.recordTestPing(tenantId, webhookId, ping.id, result);
      return { eventId: ping.id, ...result };
    },
  };
}

export type WebhookDeliveryService = ReturnType<typeof createWebhookDeliveryService>;
