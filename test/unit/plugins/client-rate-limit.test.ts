// The per-client rate limit's counting (plugins/client-rate-limit.ts): fixed windows per key in an LRU of keys.
import { describe, expect, it } from 'vitest';
import { createRateLimitCounter } from '../../../src/plugins/client-rate-limit.js';

describe('rate limit counter', () => {
  it('counts a key within its window and starts afresh when the window has passed', () => {
    let now = 1_000;
    const counter = createRateLimitCounter(60_000, 10, () => now);
    expect(counter.count('client:a')).toEqual({ count: 1, ttlMs: 60_000 });
    now += 15_500;
    expect(counter.count('client:a')).toEqual({ count: 2, ttlMs: 44_500 });
    expect(counter.count('client:b')).toEqual({ count: 1, ttlMs: 60_000 });
    now = 1_000 + 59_999;
    expect(counter.count('client:a')).toEqual({ count: 3, ttlMs: 1 });
    // The window's end belongs to the next window.
    now = 1_000 + 60_000;
    expect(counter.count('client:a')).toEqual({ count: 1, ttlMs: 60_000 });
    expect(counter.count('client:b')).toEqual({ count: 2, ttlMs: 15_500 });
  });

  it('forgets the least recently counted key first when full', () => {
    const now = 0;
    const counter = createRateLimitCounter(60_000, 2, () => now);
    counter.count('a');
    counter.count('b');
    counter.count('a');
    // Full: `b` is the least recently counted, so `c` takes its place and `a` keeps its count.
    counter.count('c');
    expect(counter.count('a').count).toBe(3);
    // Now `c` is the oldest: `b` comes back afresh in its place.
    expect(counter.count('b').count).toBe(1);
    expect(counter.count('a').count).toBe(4);
    expect(counter.count('c').count).toBe(1);
  });

  it('keeps a key counted twice in a row as the most recent one', () => {
    const counter = createRateLimitCounter(60_000, 2, () => 0);
    counter.count('a');
    counter.count('b');
    counter.count('b');
    counter.count('a');
    counter.count('a');
    counter.count('c');
    expect(counter.count('a').count).toBe(4);
    expect(counter.count('b').count).toBe(1);
  });
});
