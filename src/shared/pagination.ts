// Keyset pagination (docs/api-reference.md 7.3): opaque cursors that name the last row of the previous page.
import type { KeysetPosition } from './keyset.js';
import { BadRequestError } from '../errors.js';
import { isUuid } from './identifiers.js';

export interface Page<T> {
  items: T[];
  /** The cursor of the next page, or null on the last one. */
  nextCursor: string | null;
}

/** The 400 for a cursor this server did not issue (or one altered on the way), the same for every paged list. */
export function invalidCursor(): BadRequestError {
  return new BadRequestError('The cursor is not one this server issued.', [{ field: 'cursor', message: 'is invalid' }]);
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
  throw invalidCursor();
}

/**
 * A cursor that names one number in a list ordered by it (a sequence or a row number), behind a tag per list, so a
 * cursor of one list (or of an earlier numbering) is refused with a 400 instead of silently starting elsewhere.
 */
export function numberCursor(tag: string) {
  return {
    encode: (position: number | string): string => Buffer.from(`${tag}${position}`, 'utf8').toString('base64url'),
    decode(cursor: string | undefined): number | null {
      if (cursor === undefined) return null;
      const text = Buffer.from(cursor, 'base64url').toString('utf8');
      const digits = text.slice(tag.length);
      const position = text.startsWith(tag) && /^[0-9]{1,15}$/.test(digits) ? Number(digits) : NaN;
      if (!Number.isSafeInteger(position)) throw invalidCursor();
      return position;
    },
  };
}

/** A position in a lock's sync (docs/api-reference.md 6.2): the change-log number and the ticket id within it. */
export interface SyncPosition {
  seq: number;
  id: string;
}

const ZERO_UUID = '00000000-0000-0000-0000-000000000000';

/** The position before every ticket change numbered `seq` (no ticket id sorts before the zero UUID); 0: a full sync. */
export function syncPositionBefore(seq: number): SyncPosition {
  return { seq, id: ZERO_UUID };
}

export function encodeSyncCursor(position: SyncPosition): string {
  return Buffer.from(`${position.seq}:${position.id}`, 'utf8').toString('base64url');
}

export function decodeSyncCursor(cursor: string | undefined): SyncPosition {
  if (cursor === undefined) return syncPositionBefore(0);
  const [seq, id] = Buffer.from(cursor, 'base64url').toString('utf8').split(':');
  const value = Number(seq);
  if (!Number.isSafeInteger(value) || value < 0 || !id || !isUuid(id)) {
    throw invalidCursor();
  }
  return { seq: value, id };
}

/** A page cut from the rows a list fetched; `last` is its last row, the one the next cursor names. */
export interface CutPage<Row> {
  rows: Row[];
  /** True when another page follows. */
  more: boolean;
  last: Row | undefined;
}

/**
 * Lists fetch `limit + 1` rows: the extra one only tells that another page exists, without a count query. Any
 * cursor format pages this way (keyset positions here, change-log positions in the Device API's sync).
 */
export function cutPage<Row>(rows: Row[], limit: number): CutPage<Row> {
  const more = rows.length > limit;
  const pageRows = more ? rows.slice(0, limit) : rows;
  return { rows: pageRows, more, last: pageRows[pageRows.length - 1] };
}

/** The page of `limit + 1` fetched rows, its items made by `toItem`, with the keyset cursor of the next page. */
export function pageOf<Row, Item>(
  rows: Row[],
  limit: number,
  position: (row: Row) => KeysetPosition,
  toItem: (row: Row) => Item,
): Page<Item> {
  const page = cutPage(rows, limit);
  return { items: page.rows.map(toItem), nextCursor: page.more && page.last ? encodeCursor(position(page.last)) : null };
}
