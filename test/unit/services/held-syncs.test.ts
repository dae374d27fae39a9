// The held syncs of docs/lock-sync.md (src/services/held-syncs.ts) without a server: a change of the tenant wakes each
// held sync to look again, an empty look keeps it waiting, a look with news answers it; looks run at most
// `concurrency` at once; the bound refuses with 503; a loss of trust, shutdown and a hang-up answer at once.
import { describe, expect, it, vi } from 'vitest';
import { ServiceUnavailableError } from '../../../src/errors.js';
import { createHeldSyncs, type HeldCheck } from '../../../src/services/held-syncs.js';

/** A look whose answer the test decides, counting how many run at once. */
function looks() {
  const pending: ((result: HeldCheck<string>) => void)[] = [];
  let running = 0;
  let peak = 0;
  return {
    look: () =>
      new Promise<HeldCheck<string>>((resolve) => {
        running++;
        peak = Math.max(peak, running);
        pending.push((result) => {
          running--;
          resolve(result);
        });
      }),
    pending,
    get peak() {
      return peak;
    },
  };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));
const empty = (seenSeq: number): HeldCheck<string> => ({ answer: `empty@${seenSeq}`, news: false, seenSeq });

describe('held syncs', () => {
  it('a change wakes the tenant\'s held syncs; an empty look waits on, a look with news answers', async () => {
    let current = 5;
    const held = createHeldSyncs({ maxHeld: 10, retryAfterMaxSeconds: 5, concurrency: 4, current: () => current });
    const probe = looks();
    const answer = held.hold('t1', empty(5), 60_000, probe.look);
    expect(held.count).toBe(1);
    // Another tenant's change wakes nothing.
    held.listener.changed('t2', 9);
    await settle();
    expect(probe.pending).toHaveLength(0);
    current = 6;
    held.listener.changed('t1', 6);
    await settle();
    expect(probe.pending).toHaveLength(1);
    probe.pending.shift()!(empty(6));
    await settle();
    expect(held.count).toBe(1);
    // A change it already saw wakes nothing.
    held.listener.changed('t1', 6);
    await settle();
    expect(probe.pending).toHaveLength(0);
    held.listener.changed('t1', 7);
    await settle();
    probe.pending.shift()!({ answer: 'news', news: true, seenSeq: 7 });
    await expect(answer).resolves.toBe('news');
    expect(held.count).toBe(0);
  });

  it('a change heard while its look runs makes it look once more', async () => {
    const held = createHeldSyncs({ maxHeld: 10, retryAfterMaxSeconds: 5, concurrency: 4, current: () => 1 });
    const probe = looks();
    const answer = held.hold('t', empty(1), 60_000, probe.look);
    held.listener.changed('t', 2);
    await settle();
    held.listener.changed('t', 3);
    held.listener.changed('t', 4);
    probe.pending.shift()!(empty(2));
    await settle();
    expect(probe.pending).toHaveLength(1);
    probe.pending.shift()!({ answer: 'news', news: true, seenSeq: 4 });
    await expect(answer).resolves.toBe('news');
  });

  it('runs at most `concurrency` looks at once; the rest wait in memory', async () => {
    const held = createHeldSyncs({ maxHeld: 100, retryAfterMaxSeconds: 5, concurrency: 3, current: () => 1 });
    const probe = looks();
    const answers = Array.from({ length: 20 }, () => held.hold('t', empty(1), 60_000, probe.look));
    held.listener.changed('t', 2);
    let answered = 0;
    while (answered < 20) {
      await settle();
      expect(probe.pending.length).toBeLessThanOrEqual(3);
      const next = probe.pending.shift();
      if (next) {
        next({ answer: 'news', news: true, seenSeq: 2 });
        answered++;
      }
    }
    expect(await Promise.all(answers)).toEqual(Array(20).fill('news'));
    expect(probe.peak).toBe(3);
  });

  it('beyond maxHeld refuses with 503 and a Retry-After within the bound', () => {
    const held = createHeldSyncs({ maxHeld: 1, retryAfterMaxSeconds: 5, concurrency: 1, current: () => 1, random: () => 0.99 });
    void held.hold('t', empty(1), 60_000, looks().look);
    let refusal: unknown;
    try {
      void held.hold('t', empty(1), 60_000, looks().look);
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toBeInstanceOf(ServiceUnavailableError);
    expect((refusal as ServiceUnavailableError).status).toBe(503);
    expect((refusal as ServiceUnavailableError).headers?.['retry-after']).toBe('5');
    held.close();
  });

  it('is not held while the watermark is untrusted; a loss of trust, a hang-up and close answer the empty answer at once', async () => {
    let trusted = true;
    const held = createHeldSyncs({ maxHeld: 10, retryAfterMaxSeconds: 5, concurrency: 1, current: () => (trusted ? 1 : undefined) });
    const lostOne = held.hold('t', empty(1), 60_000, looks().look);
    held.listener.lost();
    await expect(lostOne).resolves.toBe('empty@1');
    const hangUp = new AbortController();
    const hungUp = held.hold('t', empty(1), 60_000, looks().look, hangUp.signal);
    hangUp.abort();
    await expect(hungUp).resolves.toBe('empty@1');
    const closed = held.hold('t', empty(1), 60_000, looks().look);
    held.close();
    await expect(closed).resolves.toBe('empty@1');
    expect(held.count).toBe(0);
    // Closed: answered at once from here on.
    await expect(held.hold('t', empty(1), 60_000, looks().look)).resolves.toBe('empty@1');
    trusted = false;
    const untrusted = createHeldSyncs({ maxHeld: 10, retryAfterMaxSeconds: 5, concurrency: 1, current: () => (trusted ? 1 : undefined) });
    await expect(untrusted.hold('t', empty(1), 60_000, looks().look)).resolves.toBe('empty@1');
    expect(untrusted.count).toBe(0);
  });

  it('answers the latest empty answer at its deadline', async () => {
    // The deadline on a fake clock: on a loaded machine a real 20 ms could pass before the look below is answered.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const held = createHeldSyncs({ maxHeld: 10, retryAfterMaxSeconds: 5, concurrency: 1, current: () => 1 });
      const probe = looks();
      const answer = held.hold('t', empty(1), 20, probe.look);
      held.listener.changed('t', 2);
      await settle();
      probe.pending.shift()!(empty(2));
      await settle();
      vi.advanceTimersByTime(20);
      await expect(answer).resolves.toBe('empty@2');
    } finally {
      vi.useRealTimers();
    }
  });
});
