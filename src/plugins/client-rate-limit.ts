// Rate limits (docs/api-reference.md 7.4): per client on the APIs, per address on the OAuth endpoints; 429 with Retry-After and RateLimit-* headers.
import { normalizeIP } from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { ProblemError } from '../errors.js';
import { BoundedMap } from '../shared/bounded-map.js';

/** The window of a limit: a budget of `perMinute` requests. */
const WINDOW_MS = 60_000;
/** How many keys (clients and addresses) one API remembers; the least recently seen is forgotten first. */
const REMEMBERED_KEYS = 5000;

/**
 * A caller with a valid access token is counted as its client, whatever address it calls from; one without (missing,
 * malformed or invalid token: the bearer check leaves `auth` unset) is counted as its address, an IPv6 one by its /64
 * as @fastify/rate-limit does by default, so guessing tokens or sending 401s costs a budget too (docs/security-cases.md G46).
 */
function limitKey(request: FastifyRequest): string {
  return request.auth ? `client:${request.auth.clientId}` : addressKey(request);
}

/** One key's window: requests counted since it started. */
interface Window {
  count: number;
  startedAt: number;
}

export interface RateLimitCount {
  /** Requests counted in the current window, this one included. */
  count: number;
  /** Milliseconds until the window ends. */
  ttlMs: number;
}

/**
 * Fixed windows per key, in an LRU of `capacity` keys (and up to a tenth more, bounded-map.ts): the counting
 * @fastify/rate-limit's in-memory store does (a window starts at a key's first request and lasts `windowMs`; a
 * forgotten key starts afresh), without its promises.
 * `count` returns the same object each call (read it before the next call): this runs on every request.
 */
export function createRateLimitCounter(windowMs: number, capacity: number, now: () => number = Date.now) {
  const windows = new BoundedMap<string, Window>(capacity);
  /** The key counted last: it is already the most recently used, so it needs no move. */
  let lastKey: string | undefined;
  const result: RateLimitCount = { count: 0, ttlMs: 0 };

  return {
    count(key: string): RateLimitCount {
      const at = now();
      let window = windows.get(key);
      if (window === undefined) {
        window = { count: 0, startedAt: at };
        windows.set(key, window);
      } else if (key !== lastKey) {
        // Set again, it is the newest entry: the last to be forgotten.
        windows.set(key, window);
      }
      lastKey = key;
      if (window.startedAt + windowMs <= at) {
        window.count = 0;
        window.startedAt = at;
      }
      window.count++;
      result.count = window.count;
      result.ttlMs = window.startedAt + windowMs - at;
      return result;
    },
  };
}

/** An address's key: an IPv6 address by its /64 (as @fastify/rate-limit does by default), so one host cannot rotate through its prefix. */
export function addressKey(request: FastifyRequest): string {
  const ip = request.ip;
  // An IPv4 address (no colon) is its own key, as normalizeIP answers it (digits and dots, nothing to lower-case),
  // without the IPv6 pattern it tests every address against first (on every OAuth request).
  return ip.includes(':') ? `ip:${normalizeIP(ip)}` : `ip:${ip}`;
}

export interface RateLimitHookOptions {
  /** Requests each key may send per minute. */
  perMinute: number;
  /** Whose budget a request counts against. */
  keyOf: (request: FastifyRequest) => string;
  /** The error a request over the limit is refused with (its status 429), told when the window starts afresh. */
  refusal: (request: FastifyRequest, retryAfterSeconds: number) => Error;
}

/**
 * The onRequest hook of a per-key rate limit (docs/api-reference.md 7.4), one way for every surface: the APIs count per
 * client (the plugin below), the OAuth endpoints per address (routes/oauth). draft-ietf-httpapi-ratelimit-headers on
 * every answer, Retry-After over the limit. Callback style: it awaits nothing.
 */
export function rateLimitHook(options: RateLimitHookOptions) {
  const { perMinute: max, keyOf, refusal } = options;
  const counter = createRateLimitCounter(WINDOW_MS, REMEMBERED_KEYS);
  return function limit(request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void): void {
    const { count, ttlMs } = counter.count(keyOf(request));
    const resetSeconds = Math.ceil(ttlMs / 1000);
    // Numbers, as Node writes them.
    reply.header('ratelimit-limit', max);
    if (count <= max) {
      reply.header('ratelimit-remaining', max - count);
      reply.header('ratelimit-reset', resetSeconds);
      return done();
    }
    reply.header('ratelimit-remaining', 0);
    reply.header('ratelimit-reset', resetSeconds);
    reply.header('retry-after', resetSeconds);
    done(refusal(request, resetSeconds));
  };
}

export default fp(
  async function clientRateLimit(app: FastifyInstance, options: { perMinute: number }) {
    const max = options.perMinute;
    /**
     * docs/security-cases.md G46: counted in onRequest, before the body is parsed and validated, so invalid bodies
     * count too. This instance hook runs after the bearer check's (registered first) and before its route-level hook
     * that refuses a failed authentication, so a 401 or 403 is counted as well.
     */
    app.addHook(
      'onRequest',
      rateLimitHook({
        perMinute: max,
        keyOf: limitKey,
        refusal: (request, resetSeconds) =>
          new ProblemError(429, 'rate-limited', 'Too Many Requests', {
            detail: request.auth
              ? `This client sent more than ${max} requests in a minute. Retry after ${resetSeconds} s.`
              : `This address sent more than ${max} requests without a valid access token in a minute. Retry after ${resetSeconds} s.`,
          }),
      }),
    );
  },
  { name: 'client-rate-limit', dependencies: ['bearer-auth'] },
);
