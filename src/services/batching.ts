// Group commit in the application: while one batch of a key (a tenant) is being written, the items submitted for
// that key wait and are written together in the next batch. A tenant's ticket writes take its change counter, which
// is held until commit (the change log's ordering, migration 005), so they cannot overlap; one transaction per
// batch instead of per item lets them share the wait for the commit's flush, as PostgreSQL's own group commit does
// for writes that do not contend. Nothing waits on a timer: an item submitted while its key is idle starts at once.

interface Pending<Item, Result> {
  item: Item;
  resolve: (result: Result) => void;
  reject: (error: unknown) => void;
}

export interface KeyedBatcherOptions {
  /**
   * Errors after which the items still queued for the key are rejected with the same error instead of being written
   * in a next batch. For "the database did not answer": a queued item would otherwise wait out the failed batch's
   * timeout and then its own, twice the bound a caller was promised; none of them was started, so failing them is
   * honest, and the callers' retries start fresh batches.
   */
  shedQueuedOn?: (error: unknown) => boolean;
  /**
   * Errors after which the items of a failed batch (of more than one) are written again one by one, each its own
   * batch of one, so that an item the writer refuses fails only itself and not the others that happened to share
   * its batch (docs/security-cases.md G47). Only for writers whose batch is all or nothing (one transaction): a failed batch
   * wrote none of its items, so each is written exactly once. `shedQueuedOn` is asked first: an error it sheds by
   * is never retried, and one met while retrying fails the items not yet retried and the queue, as above.
   */
  retryAloneOn?: (error: unknown) => boolean;
}

/**
 * `write` gets the key and up to `maxBatch` items and answers one result per item, in order. If it throws, every
 * item of that batch is rejected with the error (they shared one transaction, so none of them was written), unless
 * `retryAloneOn` has them written again one by one.
 */
export function createKeyedBatcher<Item, Result>(
  write: (key: string, items: Item[]) => Promise<Result[]>,
  maxBatch: number,
  options: KeyedBatcherOptions = {},
) {
  const queues = new Map<string, Pending<Item, Result>[]>();

  /** Writes one batch and settles its items; answers the error when it failed, or null. */
  async function writeBatch(key: string, batch: Pending<Item, Result>[]): Promise<unknown> {
    try {
      const results = await write(key, batch.map((pending) => pending.item));
      if (results.length !== batch.length) throw new Error(`A batch of ${batch.length} answered ${results.length} results`);
      batch.forEach((pending, index) => pending.resolve(results[index]!));
      return null;
    } catch (error) {
      return error ?? new Error('The batch failed');
    }
  }

  /** Rejects `failed` with `error`, and with it the items queued for the key when the error is one to shed by. */
  function fail(failed: Pending<Item, Result>[], error: unknown, queue: Pending<Item, Result>[]): void {
    const shed = options.shedQueuedOn?.(error) ? queue.splice(0) : [];
    for (const pending of [...failed, ...shed]) pending.reject(error);
  }

  async function drain(key: string, queue: Pending<Item, Result>[]): Promise<void> {
    while (queue.length > 0) {
      const batch = queue.splice(0, maxBatch);
      const error = await writeBatch(key, batch);
      if (error === null) continue;
      if (batch.length === 1 || options.shedQueuedOn?.(error) || !options.retryAloneOn?.(error)) {
        fail(batch, error, queue);
        continue;
      }
      // The batch wrote nothing: each item alone now, so only the one the writer refuses fails.
      for (const [index, pending] of batch.entries()) {
        const alone = await writeBatch(key, [pending]);
        if (alone === null) continue;
        if (options.shedQueuedOn?.(alone)) {
          fail(batch.slice(index), alone, queue);
          break;
        }
        pending.reject(alone);
      }
    }
    queues.delete(key);
  }

  return {
    submit(key: string, item: Item): Promise<Result> {
      return new Promise<Result>((resolve, reject) => {
        const queue = queues.get(key);
        if (queue) {
          queue.push({ item, resolve, reject });
          return;
        }
        const started: Pending<Item, Result>[] = [{ item, resolve, reject }];
        queues.set(key, started);
        void drain(key, started);
      });
    },
  };
}
