// A map that forgets its oldest entries past a size: the in-memory caches (verified tokens, clients, signed lock
// states, remembered syncs, rate-limit windows) keep one per key seen, and keys come from outside.
//
// Why the oldest go a tenth at a time, not one per set: V8's Map leaves a hole for each deleted entry until its table
// is rebuilt, and a new iterator walks past every hole at the front. Evicting with `keys().next()` on each set of a
// full map of 10,000 (the front all holes from earlier evictions) cost 5.5 µs a set, measured in a loop; dropping a
// tenth in one pass of one iterator, 0.2 µs. A held sync's answer sets two such caches, so a lockdown of 10,000 held
// syncs paid for it twice over (docs/scaling.md).

/** At most `capacity` entries plus a tenth of it (none for a capacity under 10); the oldest set go first. */
export class BoundedMap<K, V> {
  readonly #entries = new Map<K, V>();
  readonly #capacity: number;
  readonly #limit: number;

  constructor(capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError(`capacity must be a positive integer, not ${capacity}`);
    this.#capacity = capacity;
    this.#limit = capacity + Math.floor(capacity / 10);
  }

  get size(): number {
    return this.#entries.size;
  }

  get(key: K): V | undefined {
    return this.#entries.get(key);
  }

  has(key: K): boolean {
    return this.#entries.has(key);
  }

  /**
   * Stores `value` under `key` as the newest entry: a key already here moves behind every other, so it is forgotten
   * last. Past the limit, the oldest entries go until `capacity` are left.
   */
  set(key: K, value: V): this {
    this.#entries.delete(key);
    this.#entries.set(key, value);
    if (this.#entries.size > this.#limit) {
      let excess = this.#entries.size - this.#capacity;
      for (const oldest of this.#entries.keys()) {
        if (excess-- <= 0) break;
        this.#entries.delete(oldest);
      }
    }
    return this;
  }

  delete(key: K): boolean {
    return this.#entries.delete(key);
  }

  clear(): void {
    this.#entries.clear();
  }
}
