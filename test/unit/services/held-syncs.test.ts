// The held syncs of docs/lock-sync.md (src/services/held-syncs.ts) without a server: a change of the tenant wakes each
// held sync to look again, an empty look keeps it waiting, a look with news answers it; looks run at most
// `concurrency` at once; the bound refuses with 503; a loss of trust, shutdown and a hang-up answer at once.
import { describe, expect, it, vi } from 'vitest';
import { ServiceUnavailableError } from '../../../src/errors.js';
import { createHeldSyncs, heldLookConcurrency, type HeldCheck, type HeldOutcome } from '../../../src/services/held-syncs.js';

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

  it('the service runs half as many looks at once as its pool has connections, at least one, so the rest serve other requests', () => {
    expect([1, 2, 3, 10, 11, 1000].map(heldLookConcurrency)).toEqual([1, 1, 1, 5, 5, 500]);
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

  it('syncs sharing a batched look are asked together per tenant, up to batchSize a look, tenants taking turns', async () => {
    const calls: { tenantId: string; items: number[] }[] = [];
    const pending: (() => void)[] = [];
    // Item 3 is refused alone; even items have news; odd ones wait on.
    const look = (tenantId: string, items: number[]) =>
      new Promise<HeldOutcome<string>[]>((resolve) => {
        calls.push({ tenantId, items });
        pending.push(() =>
          resolve(
            items.map((item) =>
              item === 3 ? { error: new Error('lock 3 went away') } : { answer: `${tenantId}:${item}`, news: item % 2 === 0, seenSeq: 2 },
            ),
          ),
        );
      });
    const held = createHeldSyncs({ maxHeld: 100, retryAfterMaxSeconds: 5, concurrency: 1, batchSize: 4, current: () => 1 });
    const big = Array.from({ length: 10 }, (_, item) => held.hold('big', empty(1), 60_000, { look, item }));
    const small = [0, 3].map((item) => held.hold('small', empty(1), 60_000, { look, item }));
    // Refusals are awaited below, after the looks: marked handled now.
    for (const answer of [...big, ...small]) answer.catch(() => undefined);
    held.listener.changed('big', 2);
    held.listener.changed('small', 2);
    await settle();
    // One look at a time: the first four of the big tenant.
    expect(calls).toEqual([{ tenantId: 'big', items: [0, 1, 2, 3] }]);
    pending.shift()!();
    await settle();
    // The small tenant's turn comes before the rest of the big one.
    expect(calls[1]).toEqual({ tenantId: 'small', items: [0, 3] });
    pending.shift()!();
    await settle();
    expect(calls[2]).toEqual({ tenantId: 'big', items: [4, 5, 6, 7] });
    pending.shift()!();
    await settle();
    expect(calls[3]).toEqual({ tenantId: 'big', items: [8, 9] });
    pending.shift()!();
    await settle();
    expect(calls).toHaveLength(4);
    await expect(small[0]).resolves.toBe('small:0');
    await expect(small[1]).rejects.toThrow('lock 3 went away');
    await expect(big[0]).resolves.toBe('big:0');
    await expect(big[3]).rejects.toThrow('lock 3 went away');
    await expect(big[8]).resolves.toBe('big:8');
    // The odd ones wait on with their latest empty answer; shutdown sends it.
    expect(held.count).toBe(4);
    held.close();
    await expect(big[9]).resolves.toBe('big:9');
    await expect(big[1]).resolves.toBe('big:1');
  });
});
