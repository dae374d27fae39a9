// The webhook worker's pacing (services/webhooks/pacing.ts): the pause after a batch follows the requests served, the
// duty cycle and the floor rate.
import { describe, expect, it } from 'vitest';
import { createRequestLoad, deliveryPauseMs } from '../../../../src/services/webhooks/pacing.js';

const base = { busyMs: 50, delivered: 32, requestsMeanwhile: 10, busyPercent: 20, minPerSecond: 100 };

describe('deliveryPauseMs', () => {
  it('never pauses when no request was served during the batch', () => {
    expect(deliveryPauseMs({ ...base, requestsMeanwhile: 0 })).toBe(0);
  });

  it('never pauses after an empty batch, or with the limit off (100 %)', () => {
    expect(deliveryPauseMs({ ...base, delivered: 0 })).toBe(0);
    expect(deliveryPauseMs({ ...base, busyPercent: 100 })).toBe(0);
  });

  it('under requests, pauses so that sending takes the configured share of wall time', () => {
    // 50 ms of sending at 20 %: 250 ms in all, so 200 ms of pause (the floor, 32 in 320 ms, allows it).
    expect(deliveryPauseMs(base)).toBe(200);
    // 10 %: 450 ms wanted, but the floor of 100 a second caps the round at 320 ms.
    expect(deliveryPauseMs({ ...base, busyPercent: 10 })).toBe(270);
    // A lower floor lets the duty cycle decide.
    expect(deliveryPauseMs({ ...base, busyPercent: 10, minPerSecond: 50 })).toBe(450);
  });

  it('never pauses below the floor rate: a batch slower than the floor allows is followed at once', () => {
    // 32 deliveries at 100 a second may take 320 ms; a batch that took 400 ms gets no pause.
    expect(deliveryPauseMs({ ...base, busyMs: 400 })).toBe(0);
    // A batch faster than the floor: the rate over it and its pause is never below the floor.
    for (const busyMs of [1, 10, 100, 319]) {
      const pause = deliveryPauseMs({ ...base, busyMs, busyPercent: 1 });
      expect((base.delivered * 1000) / (busyMs + pause)).toBeGreaterThanOrEqual(base.minPerSecond - 0.5);
    }
  });

  it('grows with the time the batch took and shrinks as the share grows', () => {
    const pauses = [10, 20, 40].map((busyMs) => deliveryPauseMs({ ...base, busyMs, minPerSecond: 1 }));
    expect(pauses).toEqual([40, 80, 160]);
    const byShare = [10, 25, 50, 90].map((busyPercent) => deliveryPauseMs({ ...base, busyPercent, minPerSecond: 1 }));
    expect(byShare).toEqual([450, 150, 50, 6]);
  });
});

describe('createRequestLoad', () => {
  it('counts the requests noted', () => {
    const load = createRequestLoad();
    const before = load.requests();
    load.note();
    load.note();
    expect(load.requests() - before).toBe(2);
  });
});
