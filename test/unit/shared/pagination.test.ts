// The page helpers every paged service uses (docs/api-reference.md 7.3): cutting `limit + 1` rows, keyset cursors, the cursor 400.
import { describe, expect, it } from 'vitest';
import { BadRequestError } from '../../../src/errors.js';
import { isUuid } from '../../../src/shared/identifiers.js';
import { cutPage, decodeCursor, decodeSyncCursor, encodeCursor, encodeSyncCursor, invalidCursor, pageOf } from '../../../src/shared/pagination.js';

const rows = [
  { createdAt: 1, id: 'a' },
  { createdAt: 1, id: 'b' },
  { createdAt: 2, id: 'c' },
];

/** The error `run` throws; fails the test when it throws none. */
function thrown(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('nothing was thrown');
}

describe('cutPage', () => {
  it('drops the extra row fetched and says that more follow', () => {
    expect(cutPage(rows, 2)).toEqual({ rows: rows.slice(0, 2), more: true, last: rows[1] });
  });

  it('keeps every row of the last page', () => {
    expect(cutPage(rows, 3)).toEqual({ rows, more: false, last: rows[2] });
    expect(cutPage([], 3)).toEqual({ rows: [], more: false, last: undefined });
  });
});

describe('pageOf', () => {
  it('names the last row of the page in the next cursor', () => {
    const page = pageOf(rows, 2, (row) => row, (row) => row.id);
    expect(page.items).toEqual(['a', 'b']);
    expect(decodeCursor(page.nextCursor ?? undefined)).toEqual({ createdAt: 1, id: 'b' });
  });

  it('answers no cursor on the last page', () => {
    expect(pageOf(rows, 3, (row) => row, (row) => row.id)).toEqual({ items: ['a', 'b', 'c'], nextCursor: null });
  });
});

describe('cursors', () => {
  it('decode to the position they were encoded from', () => {
    const position = { createdAt: 1_700_000_000_000, id: '0b7f6a52-6c1e-4d55-9a43-1f0e6a2b9c11' };
    expect(decodeCursor(encodeCursor(position), isUuid)).toEqual(position);
    expect(decodeCursor(undefined)).toBeNull();
  });

  it('answer one 400 for every cursor this server did not issue, keyset and sync alike', () => {
    const expected = {
      status: 400,
      detail: 'The cursor is not one this server issued.',
      errors: [{ field: 'cursor', message: 'is invalid' }],
    };
    expect(invalidCursor()).toBeInstanceOf(BadRequestError);
    expect(invalidCursor()).toMatchObject(expected);
    const foreign = ['not base64 json', encodeCursor({ createdAt: 1, id: 'x' }), Buffer.from('[1.5,"a"]').toString('base64url')];
    for (const cursor of foreign) {
      expect(thrown(() => decodeCursor(cursor, isUuid))).toMatchObject(expected);
    }
    expect(thrown(() => decodeSyncCursor('bm90LWEtY3Vyc29y'))).toMatchObject(expected);
    expect(decodeSyncCursor(encodeSyncCursor({ seq: 7, id: '0b7f6a52-6c1e-4d55-9a43-1f0e6a2b9c11' }))).toEqual({
      seq: 7,
      id: '0b7f6a52-6c1e-4d55-9a43-1f0e6a2b9c11',
    });
  });
});
