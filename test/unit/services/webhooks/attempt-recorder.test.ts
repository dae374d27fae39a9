// What an attempt comes to (services/webhooks/attempt-recorder.ts): delivered, retried on the schedule with a jitter that
// only lengthens it, failed once the schedule is exhausted, gone on 410 (docs/api-reference.md 10).
import { describe, expect, it } from 'vitest';
import { judge, retryDelay } from '../../../../src/services/webhooks/attempt-recorder.js';

const SCHEDULE_MS = [1_000, 60_000, 3_600_000];
const NOW = 1_700_000_000_000;

describe('retryDelay', () => {
  it('is the schedule\'s delay after each attempt, with no jitter drawn at 0', () => {
    expect(SCHEDULE_MS.map((_, index) => retryDelay(SCHEDULE_MS, index + 1, () => 0))).toEqual(SCHEDULE_MS);
  });

  it('only lengthens a delay, by up to a quarter', () => {
    expect(retryDelay(SCHEDULE_MS, 2, () => 0.5)).toBe(67_500);
    expect(retryDelay(SCHEDULE_MS, 2, () => 0.999_999)).toBeLessThanOrEqual(75_000);
    expect(retryDelay(SCHEDULE_MS, 2, () => 0.999_999)).toBeGreaterThan(60_000);
  });

  it('is null once the schedule is exhausted, and draws no jitter then', () => {
    let draws = 0;
    expect(retryDelay(SCHEDULE_MS, 4, () => ++draws)).toBeNull();
    expect(draws).toBe(0);
  });
});

describe('judge', () => {
  const noJitter = (attempts: number) => retryDelay(SCHEDULE_MS, attempts, () => 0);

  it('counts any 2xx as delivered, schedules nothing and asks no delay', () => {
    const asked: number[] = [];
    for (const statusCode of [200, 202, 204, 299]) {
      expect(judge({ statusCode, durationMs: 5 }, 1, NOW, (attempts) => (asked.push(attempts), 1))).toEqual({
        ok: true,
        gone: false,
        nextAttemptAt: null,
        outcome: 'delivered',
      });
    }
    expect(asked).toEqual([]);
  });

  it('retries a failure after the delay of its attempt, whatever the answer (none, 3xx, 4xx, 5xx)', () => {
    expect(judge({ error: 'connection refused', durationMs: 1 }, 1, NOW, noJitter)).toEqual({ ok: false, gone: false, nextAttemptAt: NOW + 1_000, outcome: 'retrying' });
    expect(judge({ statusCode: 301, error: 'redirects are not followed', durationMs: 1 }, 2, NOW, noJitter).nextAttemptAt).toBe(NOW + 60_000);
    expect(judge({ statusCode: 404, durationMs: 1 }, 3, NOW, noJitter)).toMatchObject({ outcome: 'retrying', nextAttemptAt: NOW + 3_600_000 });
    expect(judge({ statusCode: 500, durationMs: 1 }, 1, NOW, noJitter).outcome).toBe('retrying');
  });

  it('fails an attempt past the schedule: no next attempt', () => {
    expect(judge({ statusCode: 503, durationMs: 1 }, 4, NOW, noJitter)).toEqual({ ok: false, gone: false, nextAttemptAt: null, outcome: 'failed' });
  });

  it('calls a 410 gone, whatever is left of the schedule (the subscription is disabled)', () => {
    expect(judge({ statusCode: 410, durationMs: 1 }, 1, NOW, noJitter)).toMatchObject({ ok: false, gone: true, outcome: 'gone' });
    expect(judge({ statusCode: 410, durationMs: 1 }, 4, NOW, noJitter)).toMatchObject({ gone: true, nextAttemptAt: null, outcome: 'gone' });
  });
});
