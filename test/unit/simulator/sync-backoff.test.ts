// The reference lock's retry of a refused sync (docs/lock-sync.md): exponential backoff, full jitter, Retry-After honoured.
import { describe, expect, it } from 'vitest';
import { SYNC_BACKOFF, syncRetryDelayMs, withSyncBackoff, type SyncHttpAnswer } from '../../../src/simulator/lock-simulator.js';

const NOW = Date.UTC(2026, 10, 24, 8, 0, 0);

function answer(status: number, retryAfter?: string): SyncHttpAnswer {
  return { status, headers: { get: (name) => (name.toLowerCase() === 'retry-after' ? (retryAfter ?? null) : null) } };
}

describe('syncRetryDelayMs', () => {
  it('draws uniformly up to base * 2^attempt, bounded by the cap', () => {
    expect(syncRetryDelayMs(0, null, NOW, () => 0.999)).toBe(999);
    expect(syncRetryDelayMs(3, null, NOW, () => 0.5)).toBe(4000);
    expect(syncRetryDelayMs(3, null, NOW, () => 0)).toBe(0);
    expect(syncRetryDelayMs(40, null, NOW, () => 0.5)).toBe(SYNC_BACKOFF.capMs / 2);
  });

  it('never retries before Retry-After, in seconds or as an HTTP-date', () => {
    expect(syncRetryDelayMs(0, '7', NOW, () => 0.5)).toBe(7000);
    expect(syncRetryDelayMs(5, '7', NOW, () => 0.5)).toBe(16_000);
    expect(syncRetryDelayMs(0, new Date(NOW + 12_000).toUTCString(), NOW, () => 0)).toBe(12_000);
    // Unreadable: the backoff alone decides.
    expect(syncRetryDelayMs(1, 'soon', NOW, () => 0.5)).toBe(1000);
  });
});

describe('withSyncBackoff', () => {
  it('retries 503 and 429 after the delays it computed, and returns the first other answer', async () => {
    const answers = [answer(503, '3'), answer(429, '1'), answer(503), answer(200)];
    const waits: number[] = [];
    const result = await withSyncBackoff(async () => answers.shift()!, {
      sleep: async (ms) => {
        waits.push(ms);
      },
      random: () => 0.5,
      clock: () => NOW,
    });
    expect(result.status).toBe(200);
    expect(waits).toEqual([3000, 1000, 2000]);
  });

  it('does not retry other errors, and gives up after maxAttempts refusals with the last answer', async () => {
    let sent = 0;
    const notFound = await withSyncBackoff(async () => (sent++, answer(404)), { sleep: async () => undefined });
    expect([notFound.status, sent]).toEqual([404, 1]);
    sent = 0;
    const refused = await withSyncBackoff(async () => (sent++, answer(503, '1')), { sleep: async () => undefined, maxAttempts: 3 });
    expect([refused.status, sent]).toEqual([503, 3]);
  });

  it('retries a failed connection with the backoff', async () => {
    let sent = 0;
    const waits: number[] = [];
    const result = await withSyncBackoff(
      async () => {
        sent++;
        if (sent < 3) throw new Error('ECONNREFUSED');
        return answer(200);
      },
      { sleep: async (ms) => void waits.push(ms), random: () => 0.25, clock: () => NOW },
    );
    expect(result.status).toBe(200);
    expect(waits).toEqual([250, 500]);
  });
});
