// The worker's lanes (services/webhooks/delivery-worker.ts): a claim's attempts run at most `concurrency` at once, every
// one of them runs even when others fail, and each result stays at its item's place.
import { describe, expect, it } from 'vitest';
import { inLanes } from '../../../../src/services/webhooks/delivery-worker.js';

describe('inLanes', () => {
  it('never runs more than the lanes at once, and runs every item', async () => {
    let running = 0;
    let most = 0;
    const results = await inLanes([5, 1, 4, 2, 3, 0, 2], 3, async (ms) => {
      running += 1;
      most = Math.max(most, running);
      await new Promise((resolve) => setTimeout(resolve, ms));
      running -= 1;
      return ms * 10;
    });
    expect(most).toBe(3);
    expect(results).toEqual([50, 10, 40, 20, 30, 0, 20].map((value) => ({ status: 'fulfilled', value })));
  });

  it('settles a failure at its place without stopping the others', async () => {
    const failure = new Error('boom');
    const results = await inLanes(['a', 'fail', 'c'], 2, async (item) => {
      if (item === 'fail') throw failure;
      return item.toUpperCase();
    });
    expect(results).toEqual([
      { status: 'fulfilled', value: 'A' },
      { status: 'rejected', reason: failure },
      { status: 'fulfilled', value: 'C' },
    ]);
  });

  it('starts items in order and no more lanes than items', async () => {
    const started: number[] = [];
    await inLanes([0, 1, 2], 32, async (item) => {
      started.push(item);
    });
    expect(started).toEqual([0, 1, 2]);
    expect(await inLanes([], 4, async () => 1)).toEqual([]);
  });
});
