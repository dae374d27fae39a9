// The one mapping of database errors: which refusals are the client's text (400) and which are not.
import { describe, expect, it } from 'vitest';
import { isUnstorableText, meaningOfDatabaseError, UnstorableTextError } from '../../../src/db/errors.js';

const databaseError = (code: string, message: string) => Object.assign(new Error(message), { code });

describe('isUnstorableText', () => {
  it('is the client text the database refused: a NUL byte, an untranslatable character, the check made before the database', () => {
    expect(isUnstorableText(databaseError('22021', 'invalid byte sequence for encoding "UTF8": 0x00'))).toBe(true);
    expect(isUnstorableText(databaseError('22P05', 'unsupported Unicode escape sequence'))).toBe(true);
    expect(isUnstorableText(new UnstorableTextError())).toBe(true);
    expect(meaningOfDatabaseError(databaseError('22021', 'invalid byte sequence for encoding "UTF8": 0x00'))).toMatchObject({
      kind: 'unstorable',
      status: 400,
    });
  });

  it('is not any other 22021: bytes the database or a node of a cluster made are no fault of the request', () => {
    const other = databaseError('22021', 'invalid byte sequence for encoding "UTF8": 0xc3 0x28');
    expect(isUnstorableText(other)).toBe(false);
    expect(isUnstorableText(databaseError('22021', 'could not run distributed query'))).toBe(false);
    expect(isUnstorableText(databaseError('0A000', 'could not run distributed query with FOR UPDATE/SHARE commands'))).toBe(false);
    expect(meaningOfDatabaseError(other)).toBeNull();
    expect(isUnstorableText(null)).toBe(false);
    expect(isUnstorableText({ code: '22021' })).toBe(false);
  });
});

describe('meaningOfDatabaseError', () => {
  it('is a 503 to retry for a statement cancelled at its statement timeout (SQLSTATE 57014), like a deadlock', () => {
    expect(meaningOfDatabaseError(databaseError('57014', 'canceling statement due to statement timeout'))).toMatchObject({
      kind: 'timeout',
      status: 503,
    });
    expect(meaningOfDatabaseError(databaseError('40P01', 'deadlock detected'))).toMatchObject({ kind: 'conflict', status: 503 });
  });
});
