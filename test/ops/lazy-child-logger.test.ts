// The per-request child logger is made only when the request logs at an enabled level, and then writes exactly what
// an eager child would: the request id bound, secrets redacted.
import { Writable } from 'node:stream';
import { describe, expect, it, vi } from 'vitest';
import { createLogger, lazyChildLogger } from '../../src/logger.js';

function capturedLogger(level: string) {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _encoding, callback) {
      lines.push(JSON.parse(String(chunk)) as Record<string, unknown>);
      callback();
    },
  });
  return { logger: createLogger(level, sink), lines };
}

describe('lazyChildLogger', () => {
  it('makes no child while nothing is logged at an enabled level', () => {
    const { logger, lines } = capturedLogger('warn');
    const child = vi.spyOn(logger, 'child');
    const requestLog = lazyChildLogger(logger, { requestId: 'r-1' }, {});
    requestLog.info('below the level');
    requestLog.debug({ detail: 1 }, 'below the level');
    expect(child).not.toHaveBeenCalled();
    expect(lines).toEqual([]);
  });

  it('writes enabled lines through one child bound to the request, redacted like any line', () => {
    const { logger, lines } = capturedLogger('info');
    const child = vi.spyOn(logger, 'child');
    const requestLog = lazyChildLogger(logger, { requestId: 'r-2' }, {});
    requestLog.info({ password: 'hunter2' }, 'first');
    requestLog.warn('second');
    expect(child).toHaveBeenCalledTimes(1);
    expect(lines.map((line) => [line.requestId, line.msg, line.password])).toEqual([
      ['r-2', 'first', '[Redacted]'],
      ['r-2', 'second', undefined],
    ]);
    expect(requestLog.bindings()).toEqual({ requestId: 'r-2' });
    requestLog.child({ part: 'x' }).error('third');
    expect(lines[2]).toMatchObject({ requestId: 'r-2', part: 'x', msg: 'third' });
  });
});
