// The bounded map of the in-memory caches (src/shared/bounded-map.ts): the oldest set go first, a tenth at a time.
import { describe, expect, it } from 'vitest';
import { BoundedMap } from '../../../src/shared/bounded-map.js';

const keysOf = (map: BoundedMap<string, number>, candidates: string[]) => candidates.filter((key) => map.has(key));

describe('BoundedMap', () => {
  it('keeps up to its capacity and a tenth more, then drops the oldest back to its capacity', () => {
    const map = new BoundedMap<string, number>(100);
    const keys = Array.from({ length: 111 }, (_, i) => `k${i}`);
    for (const [i, key] of keys.slice(0, 110).entries()) map.set(key, i);
    expect(map.size).toBe(110);
    map.set(keys[110]!, 110);
    expect(map.size).toBe(100);
    expect(keysOf(map, keys)).toEqual(keys.slice(11));
    expect(map.get('k110')).toBe(110);
    expect(map.get('k0')).toBeUndefined();
  });

  it('moves a key set again behind the others, so it is forgotten last', () => {
    const map = new BoundedMap<string, number>(3);
    map.set('a', 1).set('b', 2).set('c', 3);
    map.set('a', 4);
    map.set('d', 5);
    expect(keysOf(map, ['a', 'b', 'c', 'd'])).toEqual(['a', 'c', 'd']);
    expect(map.get('a')).toBe(4);
  });

  it('holds exactly its capacity under 10, and forgets what is deleted or cleared', () => {
    const map = new BoundedMap<string, number>(2);
    map.set('a', 1).set('b', 2).set('c', 3);
    expect(map.size).toBe(2);
    expect(keysOf(map, ['a', 'b', 'c'])).toEqual(['b', 'c']);
    expect(map.delete('b')).toBe(true);
    expect(map.delete('b')).toBe(false);
    expect(keysOf(map, ['a', 'b', 'c'])).toEqual(['c']);
    map.clear();
    expect(map.size).toBe(0);
  });

  it('refuses a capacity that is not a positive integer', () => {
    for (const capacity of [0, -1, 1.5, Number.NaN]) expect(() => new BoundedMap(capacity)).toThrow(RangeError);
  });
});
