// The change watermark's state machine (docs/lock-sync.md): trusted only while listening and caught up, numbers only rise.
import { describe, expect, it } from 'vitest';
import { createWatermarkState } from '../../../src/services/change-watermark.js';
import { parseChangePayload } from '../../../src/db/repositories/change-log.repo.js';

describe('change watermark state', () => {
  it('trusts nothing before LISTEN holds, nor while the numbers committed before it are being read', () => {
    const state = createWatermarkState();
    state.advance('t1', 5);
    expect(state.phase).toBe('down');
    expect(state.current('t1')).toBeUndefined();
    const epoch = state.listening();
    state.advance('t1', 6);
    expect(state.phase).toBe('catching-up');
    expect(state.current('t1')).toBeUndefined();
    expect(state.caughtUp(epoch, [{ tenantId: 't1', seq: 4 }])).toBe(true);
    expect(state.phase).toBe('trusted');
    // The notification of 6 arrived before the read, which saw only 4: the larger stays.
    expect(state.current('t1')).toBe(6);
    // A tenant neither read nor notified has made no change.
    expect(state.current('t2')).toBe(0);
  });

  it('takes the read over an older notification and never goes back', () => {
    const state = createWatermarkState();
    const epoch = state.listening();
    state.advance('t1', 3);
    state.caughtUp(epoch, [{ tenantId: 't1', seq: 9 }]);
    expect(state.current('t1')).toBe(9);
    state.advance('t1', 7);
    expect(state.current('t1')).toBe(9);
    state.advance('t1', 10);
    expect(state.current('t1')).toBe(10);
  });

  it('stops trusting at once when the connection is lost, and forgets what it knew', () => {
    const state = createWatermarkState();
    state.caughtUp(state.listening(), [{ tenantId: 't1', seq: 2 }]);
    expect(state.current('t1')).toBe(2);
    state.lost();
    expect(state.phase).toBe('down');
    expect(state.current('t1')).toBeUndefined();
    // Notifications of this process's own commits while down are kept as lower bounds but not trusted.
    state.advance('t1', 3);
    expect(state.current('t1')).toBeUndefined();
  });

  it('ignores a catch-up read of a connection that was lost or replaced meanwhile', () => {
    const state = createWatermarkState();
    const first = state.listening();
    state.lost();
    expect(state.caughtUp(first, [{ tenantId: 't1', seq: 2 }])).toBe(false);
    expect(state.current('t1')).toBeUndefined();
    const second = state.listening();
    const third = state.listening();
    expect(state.isCurrent(second)).toBe(false);
    expect(state.caughtUp(second, [{ tenantId: 't1', seq: 2 }])).toBe(false);
    expect(state.phase).toBe('catching-up');
    expect(state.caughtUp(third, [{ tenantId: 't1', seq: 5 }])).toBe(true);
    expect(state.current('t1')).toBe(5);
    // A second read for the same connection changes nothing once trusted.
    expect(state.caughtUp(third, [{ tenantId: 't1', seq: 1 }])).toBe(false);
    expect(state.current('t1')).toBe(5);
  });

  it('forgets the numbers of a previous connection: only the new read and new notifications count', () => {
    const state = createWatermarkState();
    state.caughtUp(state.listening(), [{ tenantId: 't1', seq: 8 }]);
    state.lost();
    const epoch = state.listening();
    state.caughtUp(epoch, [{ tenantId: 't2', seq: 1 }]);
    expect(state.current('t1')).toBe(0);
    expect(state.current('t2')).toBe(1);
  });

  it('reads the NOTIFY payload `<seq>:<tenant>` and refuses anything else', () => {
    expect(parseChangePayload('12:9b2f0c1e-0000-4000-8000-000000000001')).toEqual({ seq: 12, tenantId: '9b2f0c1e-0000-4000-8000-000000000001' });
    expect(parseChangePayload('12:a:b')).toEqual({ seq: 12, tenantId: 'a:b' });
    for (const bad of ['', ':t', '12:', 'x:t', '-1:t', '1.5:t', 'no-colon']) expect(parseChangePayload(bad), bad).toBeNull();
  });
});
