// When a lock's clock counts as off (docs/api-reference.md 8.5): beyond 30 s either way, never when not estimated.
import { describe, expect, it } from 'vitest';
import { CLOCK_DRIFT_LIMIT_MS, clockDrifts } from '../../../src/shared/clock-drift.js';

describe('clockDrifts', () => {
  it('flags an offset beyond the limit, ahead or behind, and not one at it', () => {
    expect(CLOCK_DRIFT_LIMIT_MS).toBe(30_000);
    expect(clockDrifts(30_000)).toBe(false);
    expect(clockDrifts(-30_000)).toBe(false);
    expect(clockDrifts(30_001)).toBe(true);
    expect(clockDrifts(-30_001)).toBe(true);
    expect(clockDrifts(0)).toBe(false);
  });

  it('never flags a clock that was never estimated', () => {
    expect(clockDrifts(null)).toBe(false);
  });
});
