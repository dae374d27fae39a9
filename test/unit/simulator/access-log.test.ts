// The reference lock's access log (src/simulator/lock-simulator.ts, docs/api-reference.md 8.5): every decision logged in order,
// uploads of what is not acknowledged, bounded memory that drops the oldest, and logging that never opens anything.
import { randomUUID } from 'node:crypto';
import { CompactSign, exportJWK, generateKeyPair, type CryptoKey, type JWK } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { gapsAbove } from '../../../src/services/access-log.service.js';
import { ACCESS_LOG_UPLOAD_MAX, LockSimulator } from '../../../src/simulator/lock-simulator.js';

const ACME = 'https://locks.test/tenants/acme';
const HOUR = 3_600_000;
const BEGIN = Date.UTC(2026, 8, 1);
const END = BEGIN + 24 * HOUR;
const AT = BEGIN + HOUR;

describe('LockSimulator access log', () => {
  let privateKey: CryptoKey;
  let publicJwk: JWK;
  const ticketId = randomUUID();

  const credential = (overrides: Record<string, unknown> = {}) =>
    new CompactSign(
      new TextEncoder().encode(
        JSON.stringify({
          iss: ACME,
          jti: ticketId,
          sub: 'phone',
          aud: 'door',
          nbf: BEGIN / 1000,
          exp: END / 1000,
          iat: BEGIN / 1000,
          beginDate: BEGIN,
          endDate: END,
          cmd: ['open'],
          chn: ['btlespp'],
          ...overrides,
        }),
      ),
    )
      .setProtectedHeader({ alg: 'EdDSA', kid: 'acme-1', typ: 'ticket+jwt' })
      .sign(privateKey);

  const door = (logCapacity?: number) =>
    new LockSimulator(
      { securedObjectId: 'door', issuer: ACME, keys: { keys: [publicJwk] }, maxCredentialLifetime: 604_800 },
      logCapacity === undefined ? {} : { logCapacity },
    );

  beforeAll(async () => {
    const pair = await generateKeyPair('EdDSA', { extractable: true });
    privateKey = pair.privateKey;
    publicJwk = { ...(await exportJWK(pair.publicKey)), kid: 'acme-1', alg: 'EdDSA', use: 'sig' };
  });

  it('logs every decision in order: entryNo from 1, the decision\'s instant, the jti, command, channel, result and reason', async () => {
    const lock = door();
    const valid = await credential();
    expect(await lock.decide(valid, 'open', AT)).toMatchObject({ decision: 'open' });
    expect(await lock.decide(valid, 'clos', AT + 1000)).toEqual({ decision: 'deny', reason: 'command-not-granted', ticketId });
    expect(await lock.decide('garbage', 'open', AT + 2000)).toEqual({ decision: 'deny', reason: 'malformed' });
    expect(await lock.decide(await credential({ exp: BEGIN / 1000 + 1 }), 'open', AT + 3000, 'btlespp')).toMatchObject({ reason: 'expired' });
    expect(lock.accessLog).toEqual([
      { entryNo: 1, lockTime: AT, tokenId: ticketId, command: 'open', channel: 'btlespp', result: 'granted', reason: 'ok' },
      { entryNo: 2, lockTime: AT + 1000, tokenId: ticketId, command: 'clos', channel: 'btlespp', result: 'denied', reason: 'command-not-granted' },
      { entryNo: 3, lockTime: AT + 2000, command: 'open', channel: 'btlespp', result: 'denied', reason: 'malformed' },
      { entryNo: 4, lockTime: AT + 3000, tokenId: ticketId, command: 'open', channel: 'btlespp', result: 'denied', reason: 'expired' },
    ]);
  });

  it('uploads its applied serial, its clock and what is not acknowledged; an acknowledgement drops exactly those', async () => {
    const lock = door();
    expect(lock.accessLogUpload(AT)).toBeNull();
    const valid = await credential();
    for (let i = 0; i < 3; i++) await lock.decide(valid, 'open', AT + i);
    lock.serial = 17;
    const upload = lock.accessLogUpload(AT + 45_000)!;
    expect(upload).toMatchObject({ appliedSerial: 17, lockTime: AT + 45_000 });
    expect(upload.entries.map((entry) => entry.entryNo)).toEqual([1, 2, 3]);
    // A decision after the upload was taken is not acknowledged by its answer.
    await lock.decide(valid, 'open', AT + 10);
    expect(lock.acknowledgeAccessLog(3)).toBe(3);
    expect(lock.accessLog.map((entry) => entry.entryNo)).toEqual([4]);
    // Acknowledging again, or something malformed, drops nothing.
    expect(lock.acknowledgeAccessLog(3)).toBe(0);
    expect(lock.acknowledgeAccessLog(Number.NaN)).toBe(0);
    expect(lock.accessLogUpload(AT)!.entries.map((entry) => entry.entryNo)).toEqual([4]);
    // A clock that is not a valid instant is left out of the upload rather than sent.
    expect(lock.accessLogUpload(Number.NaN)).not.toHaveProperty('lockTime');
    // Changing the copies it handed out changes nothing in the lock.
    lock.accessLog[0]!.entryNo = 99;
    upload.entries[0]!.entryNo = 99;
    expect(lock.accessLog[0]!.entryNo).toBe(4);
  });

  it('sends at most one upload\'s worth at a time, oldest first', async () => {
    const lock = door();
    for (let i = 0; i < ACCESS_LOG_UPLOAD_MAX + 5; i++) await lock.decide('garbage', 'open', AT + i);
    const first = lock.accessLogUpload(AT)!;
    expect(first.entries).toHaveLength(ACCESS_LOG_UPLOAD_MAX);
    expect(first.entries[0]!.entryNo).toBe(1);
    lock.acknowledgeAccessLog(first.entries.at(-1)!.entryNo);
    expect(lock.accessLogUpload(AT)!.entries.map((entry) => entry.entryNo)).toEqual([1001, 1002, 1003, 1004, 1005]);
  });

  it('keeps a bounded log: beyond its capacity the oldest entries are dropped and the server sees a gap', async () => {
    const lock = door(3);
    for (let i = 0; i < 5; i++) await lock.decide('garbage', 'open', AT + i);
    const entryNos = lock.accessLog.map((entry) => entry.entryNo);
    expect(entryNos).toEqual([3, 4, 5]);
    // What the server answers for it (nothing stored before): entries 1 and 2 are missing.
    expect(gapsAbove(0, entryNos)).toEqual([[1, 2]]);
    expect(() => door(0)).toThrow(TypeError);
  });

  it('still fails closed, and logs what fits the upload format: a bad clock as 0, unfit text replaced or left out', async () => {
    const lock = door();
    const valid = await credential();
    expect(await lock.decide(valid, 'open', Number.NaN)).toEqual({ decision: 'deny', reason: 'malformed' });
    expect(await lock.decide(await credential({ jti: 'ticket\u0007' }), 'o\u0000pen', AT, '')).toMatchObject({ decision: 'deny' });
    expect(lock.accessLog).toEqual([
      { entryNo: 1, lockTime: 0, command: 'open', channel: 'btlespp', result: 'denied', reason: 'malformed' },
      { entryNo: 2, lockTime: AT, command: '?', channel: '?', result: 'denied', reason: 'command-not-granted' },
    ]);
  });
});

describe('gapsAbove (the gaps an upload reports, docs/api-reference.md 8.5)', () => {
  it.each([
    [0, [1, 2, 3], []],
    [0, [3, 1], [[2, 2]]],
    [5, [6, 9, 10, 14], [[7, 8], [11, 13]]],
    // At or below the high mark: older gaps filled, not reported again.
    [14, [7, 8, 11, 12, 13], []],
    [14, [2, 20, 20], [[15, 19]]],
    [0, [Number.MAX_SAFE_INTEGER], [[1, Number.MAX_SAFE_INTEGER - 1]]],
  ] as [number, number[], [number, number][]][])('above %d, %j → %j', (high, entryNos, gaps) => {
    expect(gapsAbove(high, entryNos)).toEqual(gaps);
  });
});
