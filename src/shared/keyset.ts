// Keyset pagination in SQL (docs/api-reference.md 7.3): the position a page starts after, and the one condition and order every list pages by.

/** The last row of the previous page: its creation time, then its unique id, which breaks ties between equal times. */
export interface KeysetPosition {
  createdAt: number;
  id: string;
}

/** The columns a list is ordered by: the creation time, then a unique id of the given SQL type. */
export interface KeysetColumns {
  /** e.g. `created_at`, or `g.created_at` when the statement names its table. */
  createdAt: string;
  id: string;
  /** The id column's type: the cursor's id is cast to it, so the comparison uses the column's own order. */
  idType: 'uuid' | 'text';
}

/** The SQL that pages a statement; see {@link keysetPage}. */
export interface KeysetClauses {
  /** The rows after the position, for the statement's WHERE; on the first page, the page index's condition alone. */
  condition: string;
  /** `ORDER BY <createdAt>, <id> LIMIT $n`, to end the statement with. */
  orderAndLimit: string;
}

/**
 * The predicate of each page index on (tenant_id, created_at, id) (migration 038), for the statement's created_at
 * column (`created_at`, `g.created_at`): every row meets it, and PostgreSQL uses a partial index only for a statement
 * that names its predicate. So a page names it and a look-up by key does not, and no statistics can make a look-up
 * scan a tenant's page index in place of the primary key (docs/scaling.md, *Plans that hold without fresh statistics*).
 */
export const PAGE_INDEX_CONDITION = (createdAt: string) => `${createdAt} >= '-9223372036854775808'::bigint`;

/**
 * The keyset condition and order for a page of `limit` rows after `after` (null: the first page). The row
 * comparison `(created_at, id) > (…)` is a range scan of an index ending in (created_at, id) (migrations 003, 004),
 * so a page costs the same anywhere in the table; the condition names the page indexes' predicate (PAGE_INDEX_CONDITION)
 * on every page. The parameters are appended to `params`: the statement's own come first.
 */
export function keysetPage(
  params: unknown[],
  columns: KeysetColumns,
  after: KeysetPosition | null,
  limit: number,
): KeysetClauses {
  let condition = PAGE_INDEX_CONDITION(columns.createdAt);
  if (after) {
    params.push(after.createdAt, after.id);
    condition += ` AND (${columns.createdAt}, ${columns.id}) > ($${params.length - 1}::bigint, $${params.length}::${columns.idType})`;
  }
  params.push(limit);
  return { condition, orderAndLimit: `ORDER BY ${columns.createdAt}, ${columns.id} LIMIT $${params.length}` };
}
