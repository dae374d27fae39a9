// What the webhook delivery worker, its sender and its attempt recorder share (docs/api-reference.md 10): made once by the delivery service and passed to each.
import type { Logger } from 'pino';
import type { Database } from '../../db/database.js';
import type { Clock } from '../context.js';

/** What became of one attempt, as the metrics count it. */
export type DeliveryOutcome = 'delivered' | 'retrying' | 'failed' | 'gone';

export interface DeliveryContext {
  db: Database;
  clock: Clock;
  log: Logger;
  /** WEBHOOK_TIMEOUT_MS: one attempt's whole exchange; the leases cover it. */
  timeoutMs: number;
  /** How many attempts one instance has under way at once (and keeps connections for, per receiver origin). */
  concurrency: number;
  /** Told the outcome of each attempt the recorder records (the metrics: plugins/metrics.ts). */
  outcomeListeners: ((outcome: DeliveryOutcome) => void)[];
}
