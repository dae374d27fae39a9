// The one reading of a lock's receipt (docs/api-reference.md 8.5, "Signed receipts"; docs/lock-integration.md 4.4): what it
// accepts as the lock's word and every way it refuses, without a database.
import { createPublicKey } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { readLockReceipt } from '../../../src/shared/lock-receipt.js';
import { newKeyPair, receipt, signJws } from '../../helpers/holder-keys.js';

const key = newKeyPair();
/** The verifier holds only the lock's public key, as the service does. */
const lockKey = createPublicKey(key.privateKey);

const entry = { entryNo: 1, lockTime: 1767300100000, tokenId: 'jti-1', command: 'open', channel: 'btlespp', result: 'granted', reason: 'ok' };

describe('readLockReceipt', () => {
  it('reads a receipt signed by the lock\'s key for this lock', () => {
    const signed = receipt(key, 'door', { appliedSerial: 17, lockTime: 1767300123000, entries: [entry] });
    expect(readLockReceipt(signed, lockKey, 'door')).toEqual({ receipt: { appliedSerial: 17, lockTime: 1767300123000, entries: [entry] } });
    // No appliedSerial: a receipt that acknowledges nothing.
    expect(readLockReceipt(receipt(key, 'door', { lockTime: 5, entries: [] }), lockKey, 'door')).toEqual({ receipt: { lockTime: 5, entries: [] } });
  });

  it('refuses what the lock did not sign, or signed for something else', () => {
    const body = { appliedSerial: 17, lockTime: 1767300123000, entries: [entry] };
    const cases: [unknown, RegExp][] = [
      [receipt(newKeyPair(), 'door', body), /not signed ES256/],
      [receipt(key, 'other-door', body), /another lock/],
      [receipt(key, 'door', body, { typ: 'lock-hello+jwt' }), /typ lock-receipt\+jwt/],
      [receipt(key, 'door', body, { alg: 'ES384' }), /not signed ES256/],
      [receipt(key, 'door', body, { crit: ['exp'] }), /crit/],
      [signJws(key.privateKey, { alg: 'ES256', typ: 'lock-receipt+jwt' }, { sub: 'door', lockTime: 1.5, entries: [] }), /lockTime/],
      [signJws(key.privateKey, { alg: 'ES256', typ: 'lock-receipt+jwt' }, { sub: 'door', lockTime: 1, appliedSerial: -1, entries: [] }), /appliedSerial/],
      [signJws(key.privateKey, { alg: 'ES256', typ: 'lock-receipt+jwt' }, { sub: 'door', lockTime: 1, entries: {} }), /entries must be an array/],
      [receipt(key, 'door', { lockTime: 1, entries: [{ ...entry, entryNo: 0 }] }), /entries\[0\]\.entryNo/],
      [receipt(key, 'door', { lockTime: 1, entries: [{ ...entry, result: 'maybe' }] }), /entries\[0\]\.result/],
      [receipt(key, 'door', { lockTime: 1, entries: [{ ...entry, command: '' }] }), /entries\[0\]\.command/],
      [receipt(key, 'door', { lockTime: 1, entries: [{ ...entry, channel: undefined }] }), /entries\[0\]\.channel/],
      [receipt(key, 'door', { lockTime: 1, entries: [{ ...entry, tokenId: 'x'.repeat(257) }] }), /entries\[0\]\.tokenId/],
      [receipt(key, 'door', { lockTime: 1, entries: [{ ...entry, reason: '\ud800' }] }), /entries\[0\]\.reason/],
      [receipt(key, 'door', { lockTime: 1, entries: ['x' as unknown as Record<string, unknown>] }), /entries\[0\] is not an object/],
      ['a.b', /compact JWS/],
      [42, /compact JWS/],
    ];
    for (const [jws, error] of cases) {
      const reading = readLockReceipt(jws, lockKey, 'door');
      expect('error' in reading && reading.error, String(jws).slice(0, 60)).toMatch(error);
    }
  });
});
