// Syncs held open (docs/lock-sync.md): a lock's `GET …/sync?wait=` with nothing new waits here, as a promise and a
// timer only (no database connection, no thread), until a change of its tenant is heard (change-watermark.ts: NOTIFY,
// so a change made on any instance) or its deadline. Woken syncs ask the database again, a bounded number of looks at
// once; syncs held with a shared batched look (`BatchedCheck`) of one tenant are asked together, up to `batchSize` in
// one look, so a change that wakes every lock of a tenant costs a few statements, not one per lock. An answer with
// news ends the wait, an empty one waits on. Bounded per instance: beyond, 503 with Retry-After.
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

/** A batched look's answer for one sync: its check, or the refusal that answers that sync alone. */
export type HeldOutcome<T> = HeldCheck<T> | { error: unknown };

/**
 * A look shared by many held syncs of one tenant: asked with the items of up to `batchSize` woken syncs, it answers
 * one check per item, in their order. Syncs held with the same `look` (the same function) are batched together.
 */
export interface BatchedCheck<I, T> {
  look: (tenantId: string, items: I[]) => Promise<HeldOutcome<T>[]>;
  item: I;
}

type AnyLook = (tenantId: string, items: unknown[]) => Promise<HeldOutcome<unknown>[]>;

/** Woken syncs of one tenant asked in one batched look, unless a test or the configuration says otherwise. */
export const DEFAULT_HELD_BATCH_SIZE = 1000;

/**
 * How many looks of woken held syncs run at once on a pool of `poolMax` connections: half of it, at least one. A change
 * that wakes thousands of held syncs (a lockdown of the tenant) still leaves the other half to every other request,
 * which would otherwise wait behind their looks until the pool's connect timeout answered 503 (docs/lock-sync.md).
 */
export function heldLookConcurrency(poolMax: number): number {
  return Math.max(1, Math.floor(poolMax / 2));
}

export interface HeldSyncsOptions {
  /** Held syncs per instance (SYNC_WAIT_MAX_HELD); one more is refused with 503. */
  maxHeld: number;
  /** A refusal's Retry-After is drawn from 1 to this many seconds, so refused locks come back spread out. */
  retryAfterMaxSeconds: number;
  /** Looks asking the database at once: the rest queue in memory, not for a pooled connection. */
  concurrency: number;
  /** Woken syncs of one tenant sharing a batched look asked in one look; DEFAULT_HELD_BATCH_SIZE when absent. */
  batchSize?: number;
  /** The tenant's last change number while notifications are trusted; undefined: not trusted. */
  current(tenantId: string): number | undefined;
  /** In [0, 1); Math.random unless a test fixes it. */
  random?: () => number;
}

interface Group {
  look: AnyLook;
  tenantId: string;
  waiting: Held[];
  inTurns: boolean;
}

interface Held {
  tenantId: string;
  seenSeq: number;
  /** The look this sync is asked through, with its own item. */
  look: AnyLook;
  item: unknown;
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

export function createHeldSyncs({
  maxHeld,
  retryAfterMaxSeconds,
  concurrency,
  batchSize = DEFAULT_HELD_BATCH_SIZE,
  current,
  random = Math.random,
}: HeldSyncsOptions) {
  const byTenant = new Map<string, Set<Held>>();
  let count = 0;
  // Woken syncs wait in groups of one tenant and one look; groups take turns, up to `batchSize` syncs a turn.
  const groups = new WeakMap<AnyLook, Map<string, Group>>();
  const turns: Group[] = [];
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
    let byLook = groups.get(held.look);
    if (byLook === undefined) groups.set(held.look, (byLook = new Map()));
    let group = byLook.get(held.tenantId);
    if (group === undefined) byLook.set(held.tenantId, (group = { look: held.look, tenantId: held.tenantId, waiting: [], inTurns: false }));
    group.waiting.push(held);
    if (!group.inTurns) {
      group.inTurns = true;
      turns.push(group);
    }
    schedulePump();
  }

  /** Pumps once the current turn of the event loop is done: the syncs one change wakes together are batched together. */
  let pumpScheduled = false;
  function schedulePump(): void {
    if (pumpScheduled) return;
    pumpScheduled = true;
    queueMicrotask(() => {
      pumpScheduled = false;
      pump();
    });
  }

  /** The next group's turn: up to `batchSize` of its woken syncs; the group goes to the back while more wait. */
  function nextBatch(): Held[] {
    const group = turns.shift()!;
    const batch = group.waiting.splice(0, batchSize).filter((held) => !held.done);
    if (group.waiting.length > 0) turns.push(group);
    else {
      group.inTurns = false;
      groups.get(group.look)?.delete(group.tenantId);
    }
    return batch;
  }

  function settleOne(held: Held, result: HeldOutcome<unknown> | undefined): void {
    if (result === undefined) return finish(held, { error: new Error('a batched look answered fewer checks than it was asked') });
    if ('error' in result) return finish(held, { error: result.error });
    if (result.news) return finish(held, { value: result.answer });
    held.fallback = result.answer;
    held.seenSeq = Math.max(held.seenSeq, result.seenSeq);
  }

  function pump(): void {
    while (running < concurrency && turns.length > 0) {
      const batch = nextBatch();
      if (batch.length === 0) continue;
      running++;
      for (const held of batch) {
        held.queued = false;
        held.running = true;
      }
      const first = batch[0]!;
      first
        .look(
          first.tenantId,
          batch.map((held) => held.item),
        )
        .then(
          (results) => batch.forEach((held, index) => settleOne(held, results[index])),
          (error: unknown) => batch.forEach((held) => finish(held, { error })),
        )
        .finally(() => {
          running--;
          for (const held of batch) {
            held.running = false;
            if (held.dirty && !held.done) {
              held.dirty = false;
              wake(held);
            }
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
     * `check` is the sync's own look, or a batched look shared with the tenant's other held syncs and this sync's item.
     */
    hold<T, I = never>(
      tenantId: string,
      first: HeldCheck<T>,
      waitMs: number,
      check: (() => Promise<HeldCheck<T>>) | BatchedCheck<I, T>,
      signal?: AbortSignal,
    ): Promise<T> {
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
          ...(typeof check === 'function'
            ? { look: (async () => [await check()]) as AnyLook, item: undefined }
            : { look: check.look as AnyLook, item: check.item }),
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
