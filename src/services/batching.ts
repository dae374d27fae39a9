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
}

/**
 * `write` gets the key and up to `maxBatch` items and answers one result per item, in order. If it throws, every
 * item of that batch is rejected with the error (they shared one transaction, so none of them was written).
 */
export function createKeyedBatcher<Item, Result>(
  write: (key: string, items: Item[]) => Promise<Result[]>,
  maxBatch: number,
  options: KeyedBatcherOptions = {},
) {
  const queues = new Map<string, Pending<Item, Result>[]>();

  async function drain(key: string, queue: Pending<Item, Result>[]): Promise<void> {
    while (queue.length > 0) {
      const batch = queue.splice(0, maxBatch);
      try {
        const results = await write(key, batch.map((pending) => pending.item));
        if (results.length !== batch.length) throw new Error(`A batch of ${batch.length} answered ${results.length} results`);
        batch.forEach((pending, index) => pending.resolve(results[index]!));
      } catch (error) {
        const shed = options.shedQueuedOn?.(error) ? queue.splice(0) : [];
        for (const pending of [...batch, ...shed]) pending.reject(error);
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
