// The per-client rate limit's counting (plugins/client-rate-limit.ts): fixed windows per key in an LRU of keys, and
// the per-address key of the OAuth endpoints.
import { normalizeIP } from '@fastify/rate-limit';
import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { addressKey, createRateLimitCounter } from '../../../src/plugins/client-rate-limit.js';

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

describe('address key', () => {
  const keyOf = (ip: string) => addressKey({ ip } as FastifyRequest);

  it('is the address as @fastify/rate-limit normalises it: IPv4 as it is, IPv6 by its /64, a mapped IPv4 as IPv4', () => {
    const addresses = ['127.0.0.1', '203.0.113.7', '::1', '2001:DB8:0:0:8:800:200C:417A', '2001:db8::1', '::ffff:192.0.2.1', '::FFFF:198.51.100.9'];
    for (const ip of addresses) expect(keyOf(ip)).toBe(`ip:${normalizeIP(ip)}`);
    expect(keyOf('203.0.113.7')).toBe('ip:203.0.113.7');
    expect(keyOf('::ffff:192.0.2.1')).toBe('ip:192.0.2.1');
    // One host rotating through its /64 is one key.
    expect(keyOf('2001:db8:1:2:aaaa::1')).toBe(keyOf('2001:db8:1:2:bbbb:cccc:dddd:eeee'));
    expect(keyOf('2001:db8:1:2::1')).not.toBe(keyOf('2001:db8:1:3::1'));
  });
});
