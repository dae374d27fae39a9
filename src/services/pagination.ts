// Keyset pagination (contract 7.3): opaque cursors that name the last row of the previous page.
import type { KeysetPosition } from '../db/keyset.js';
import { BadRequestError } from '../errors.js';

export interface Page<T> {
  items: T[];
  /** The cursor of the next page, or null on the last one. */
  nextCursor: string | null;
}

export function encodeCursor(position: KeysetPosition): string {
  return Buffer.from(JSON.stringify([position.createdAt, position.id]), 'utf8').toString('base64url');
}

/** The position a cursor names; `isValidId` checks the id's form (UUIDs for server-made ids). */
export function decodeCursor(cursor: string | undefined, isValidId: (id: string) => boolean = () => true): KeysetPosition | null {
  if (cursor === undefined) return null;
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (
      Array.isArray(value) &&
      value.length === 2 &&
      Number.isSafeInteger(value[0]) &&
      typeof value[1] === 'string' &&
      isValidId(value[1])
    ) {
      return { createdAt: value[0] as number, id: value[1] };
    }
  } catch {
    // falls through to the 400 below
  }
  throw new BadRequestError('The cursor is not one this server issued.', [{ field: 'cursor', message: 'is invalid' }]);
}

/** Fetches `limit + 1` rows to learn whether another page exists without a count query. */
export function pageOf<Row, Item>(
  rows: Row[],
  limit: number,
  position: (row: Row) => KeysetPosition,
  toItem: (row: Row) => Item,
): Page<Item> {
  const hasMore = rows.length > limit;
  const pageRows = hasMore ? rows.slice(0, limit) : rows;
  const last = pageRows[pageRows.length - 1];
  return { items: pageRows.map(toItem), nextCursor: hasMore && last ? encodeCursor(position(last)) : null };
}
