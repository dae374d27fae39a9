// Syncs held open (docs/lock-sync.md): a lock's `GET …/sync?wait=` with nothing new waits here, as a promise and a
// timer only (no database connection, no thread), until a change of its tenant is heard (change-watermark.ts: NOTIFY,
// so a change made on any instance) or its deadline. A woken sync asks the database again, a bounded number at once;
// an answer with news ends the wait, an empty one waits on. Bounded per instance: beyond, 503 with Retry-After.
import { ServiceUnavailableError } from '../errors.js';
import type { ChangeListener } from './change-watermark.js';

/** What a held sync's look at the database found. */
export interface HeldCheck<T> {
  /** The answer to send now, or the empty one to send at the deadline. */
  answer: T;
  /** True: the answer has news for the lock, so the wait ends. */
  news: boolean;
  /** The tenant's change number the look saw: a change above it wakes the sync again. */
  seenSeq: number;
}

export interface HeldSyncsOptions {
  /** Held syncs per instance (SYNC_WAIT_MAX_HELD); one more is refused with 503. */
  maxHeld: number;
  /** A refusal's Retry-After is drawn from 1 to this many seconds, so refused locks come back spread out. */
  retryAfterMaxSeconds: number;
  /** Woken syncs asking the database at once: the rest queue in memory, not for a pooled connection. */
  concurrency: number;
  /** The tenant's last change number while notifications are trusted; undefined: not trusted. */
  current(tenantId: string): number | undefined;
  /** In [0, 1); Math.random unless a test fixes it. */
  random?: () => number;
}

interface Held {
  tenantId: string;
  seenSeq: number;
  check: () => Promise<HeldCheck<unknown>>;
  /** The empty answer sent at the deadline, at shutdown, or when notifications stop being trusted. */
  fallback: unknown;
  resolve(value: unknown): void;
  reject(error: unknown): void;
  timer: NodeJS.Timeout | undefined;
  queued: boolean;
  running: boolean;
  /** A change was heard while its look was running: look again once it is done. */
  dirty: boolean;
  done: boolean;
  stopListening?: () => void;
}

export function createHeldSyncs({ maxHeld, retryAfterMaxSeconds, concurrency, current, random = Math.random }: HeldSyncsOptions) {
  const byTenant = new Map<string, Set<Held>>();
  let count = 0;
  const queue: Held[] = [];
  let running = 0;
  let closed = false;

  function finish(held: Held, outcome: { value: unknown } | { error: unknown }): void {
    if (held.done) return;
    held.done = true;
    if (held.timer !== undefined) clearTimeout(held.timer);
    held.stopListening?.();
    const tenant = byTenant.get(held.tenantId);
    tenant?.delete(held);
    if (tenant?.size === 0) byTenant.delete(held.tenantId);
    count--;
    if ('error' in outcome) held.reject(outcome.error);
    else held.resolve(outcome.value);
  }

  function wake(held: Held): void {
    if (held.done) return;
    if (held.running) {
      held.dirty = true;
      return;
    }
    if (held.queued) return;
    held.queued = true;
    queue.push(held);
    pump();
  }

  function pump(): void {
    while (running < concurrency && queue.length > 0) {
      const held = queue.shift()!;
      held.queued = false;
      if (held.done) continue;
      running++;
      held.running = true;
      held
        .check()
        .then(
          (result) => {
            if (result.news) return finish(held, { value: result.answer });
            held.fallback = result.answer;
            held.seenSeq = Math.max(held.seenSeq, result.seenSeq);
          },
          (error: unknown) => finish(held, { error }),
        )
        .finally(() => {
          running--;
          held.running = false;
          if (held.dirty && !held.done) {
            held.dirty = false;
            wake(held);
          }
          pump();
        });
    }
  }

  /** Answers every held sync with its empty answer now. */
  function releaseAll(): void {
    for (const tenant of [...byTenant.values()]) for (const held of [...tenant]) finish(held, { value: held.fallback });
  }

  const listener: ChangeListener = {
    changed(tenantId, seq) {
      const tenant = byTenant.get(tenantId);
      if (tenant === undefined) return;
      for (const held of tenant) if (seq > held.seenSeq) wake(held);
    },
    lost: releaseAll,
  };

  return {
    listener,

    /** How many syncs this instance holds now. */
    get count(): number {
      return count;
    },

    /**
     * Holds a sync whose first look found nothing new: resolves with the first later look that has news, or with the
     * latest empty answer at `waitMs`, at shutdown, when notifications stop being trusted, or when `signal` aborts
     * (the lock went away). Refused with 503 beyond `maxHeld`. Not held at all while the tenant's number is not
     * trusted (no notification would wake it) or while the instance is closing: the empty answer goes at once.
     */
    hold<T>(tenantId: string, first: HeldCheck<T>, waitMs: number, check: () => Promise<HeldCheck<T>>, signal?: AbortSignal): Promise<T> {
      const now = current(tenantId);
      if (closed || now === undefined || signal?.aborted) return Promise.resolve(first.answer);
      if (count >= maxHeld) {
        throw new ServiceUnavailableError(
          'This instance holds as many waiting syncs as it may. Retry after the number of seconds in Retry-After, or sync without wait (docs/lock-sync.md).',
          1 + Math.floor(random() * retryAfterMaxSeconds),
        );
      }
      return new Promise<T>((resolve, reject) => {
        const held: Held = {
          tenantId,
          seenSeq: first.seenSeq,
          check: check as () => Promise<HeldCheck<unknown>>,
          fallback: first.answer,
          resolve: resolve as (value: unknown) => void,
          reject,
          timer: undefined,
          queued: false,
          running: false,
          dirty: false,
          done: false,
        };
        let tenant = byTenant.get(tenantId);
        if (tenant === undefined) byTenant.set(tenantId, (tenant = new Set()));
        tenant.add(held);
        count++;
        held.timer = setTimeout(() => finish(held, { value: held.fallback }), waitMs);
        if (signal) {
          const abort = () => finish(held, { value: held.fallback });
          signal.addEventListener('abort', abort, { once: true });
          held.stopListening = () => signal.removeEventListener('abort', abort);
        }
        // A change committed between the first look and now was announced before this sync listened.
        if (now > held.seenSeq) wake(held);
      });
    },

    /** Graceful shutdown: every held sync answers now, and none is held from here on. */
    close(): void {
      closed = true;
      releaseAll();
    },
  };
}

export type HeldSyncs = ReturnType<typeof createHeldSyncs>;
