// How the webhook worker yields to request handling: a duty-cycle limit with a floor rate.
//
// On a small machine the worker's sending (claims, POSTs, outcome statements) competes with the API requests for the
// same cores. While the instance is serving requests, the worker pauses after each batch so that it spends at most a
// share of wall time sending; the pause is never so long that it sends fewer than a floor of deliveries per second,
// so a backlog always drains. Without requests it never pauses. Delivery is later under load, never lost: the
// `webhook_oldest_undelivered_age_seconds` gauge shows how much later.

/** Counts the API requests an instance starts, so the worker can tell whether it is serving any. */
export interface RequestLoad {
  /** Called once per request, as it starts. */
  note(): void;
  /** How many requests have started since the instance did (only differences mean anything). */
  requests(): number;
}

export function createRequestLoad(): RequestLoad {
  let count = 0;
  return {
    note() {
      count++;
    },
    requests: () => count,
  };
}

export interface PacingInput {
  /** Wall time the batch took, from its claim to its outcome statement, ms. */
  busyMs: number;
  /** Deliveries the batch sent. */
  delivered: number;
  /** API requests the instance started while the batch ran. */
  requestsMeanwhile: number;
  /** WEBHOOK_DELIVERY_BUSY_PERCENT: the share of wall time the worker may send while requests are served, 1–100. */
  busyPercent: number;
  /** WEBHOOK_DELIVERY_MIN_PER_SECOND: the floor, deliveries per second, however busy the instance is. */
  minPerSecond: number;
}

/**
 * The pause after a batch, ms: none without requests (or with the limit off at 100 %); else what keeps sending at
 * `busyPercent` of wall time, but never longer than what keeps `minPerSecond` deliveries a second.
 */
export function deliveryPauseMs({ busyMs, delivered, requestsMeanwhile, busyPercent, minPerSecond }: PacingInput): number {
  if (requestsMeanwhile <= 0 || delivered <= 0 || busyPercent >= 100) return 0;
  const busy = Math.max(0, busyMs);
  const share = Math.max(1, busyPercent) / 100;
  const dutyPause = (busy * (1 - share)) / share;
  const floorPause = Math.max(0, (delivered * 1000) / Math.max(1, minPerSecond) - busy);
  return Math.round(Math.min(dutyPause, floorPause));
}
