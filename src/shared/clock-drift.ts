// When a lock's clock counts as off (docs/api-reference.md 8.5): one limit for the telemetry, its SQL and the explain.

/** A lock whose clock is off by more than this is flagged (`clockDrift`, `secured_object.clock_drift`). */
export const CLOCK_DRIFT_LIMIT_MS = 30_000;

/** Whether the lock's clock offset (its clock minus the server's, ms; null: never estimated) is beyond the limit. */
export function clockDrifts(offsetMs: number | null): boolean {
  return offsetMs !== null && Math.abs(offsetMs) > CLOCK_DRIFT_LIMIT_MS;
}
