// SQL for the values sealed under SECRETS_KEY, read and written by their row for a re-encryption under a new key
// (README, "SECRETS_KEY"). Each kind of value is written by its own repository in normal use; this file only pages
// through them and swaps a sealed value for the same value sealed under another key.
import type { Queryable } from '../database.js';

export type SealedKind = 'signingKey' | 'credential' | 'webhookSecret' | 'previousWebhookSecret';

interface SealedColumn {
  table: string;
  /** The row's key, in index order: paged by it, and each sealed value's additional data is made from it. */
  key: readonly { column: string; type: 'text' | 'uuid' }[];
  column: string;
}

/** The key of a tenant-owned row (migration 016): its tenant and its id. */
const TENANT_ROW_KEY: SealedColumn['key'] = [
  { column: 'tenant_id', type: 'uuid' },
  { column: 'id', type: 'uuid' },
];

const SEALED_COLUMNS: Record<SealedKind, SealedColumn> = {
  signingKey: { table: 'signing_keys', key: [{ column: 'kid', type: 'text' }], column: 'private_jwk_encrypted' },
  credential: {
    table: 'tickets',
    key: TENANT_ROW_KEY,
    column: 'credential_encrypted',
  },
  webhookSecret: {
    table: 'webhooks',
    key: TENANT_ROW_KEY,
    column: 'secret_sealed',
  },
  previousWebhookSecret: {
    table: 'webhooks',
    key: TENANT_ROW_KEY,
    column: 'previous_secret_sealed',
  },
};

export const SEALED_KINDS = Object.keys(SEALED_COLUMNS) as SealedKind[];

export interface SealedValue {
  /** The row's key values, in the order of its key columns. */
  key: string[];
  sealed: Buffer;
}

/** The next page of `kind`'s sealed values after `after` (a row key; none: from the first), in key order. */
export async function listSealedValues(db: Queryable, kind: SealedKind, after: string[] | null, limit: number): Promise<SealedValue[]> {
  const { table, key, column } = SEALED_COLUMNS[kind];
  const keyList = key.map((part) => part.column).join(', ');
  const position = key.map((part, index) => `$${index + 2}::${part.type}`).join(', ');
  const { rows } = await db.query<Record<string, unknown>>(
    `SELECT ${key.map((part) => `${part.column}::text AS k_${part.column}`).join(', ')}, ${column} AS sealed
       FROM ${table}
      WHERE ${column} IS NOT NULL ${after ? `AND (${keyList}) > (${position})` : ''}
      ORDER BY ${keyList}
      LIMIT $1`,
    [limit, ...(after ?? [])],
  );
  return rows.map((row) => ({
    key: key.map((part) => row[`k_${part.column}`] as string),
    sealed: Buffer.from(row.sealed as Uint8Array),
  }));
}

/**
 * Writes each row's value sealed anew, only where the row still holds the value that was read: a value changed
 * meanwhile (a webhook secret rotated, a credential signed again) was sealed under the current key already and is
 * kept. One statement for the whole batch, or for a tenant-owned table one per tenant (docs/house-style.md
 * convention 6: each then names its tenant). Returns how many rows were written.
 */
export async function replaceSealedValues(
  db: Queryable,
  kind: SealedKind,
  values: { key: string[]; was: Buffer; now: Buffer }[],
): Promise<number> {
  if (SEALED_COLUMNS[kind].key[0]!.column !== 'tenant_id') return replaceInOneStatement(db, kind, values);
  const tenants = new Map<string, { key: string[]; was: Buffer; now: Buffer }[]>();
  for (const value of values) {
    let ofTenant = tenants.get(value.key[0]!);
    if (!ofTenant) tenants.set(value.key[0]!, (ofTenant = []));
    ofTenant.push(value);
  }
  let replaced = 0;
  for (const ofTenant of tenants.values()) replaced += await replaceInOneStatement(db, kind, ofTenant);
  return replaced;
}

/** replaceSealedValues' statement; a tenant-owned table's values are one tenant's, named by its first key column. */
async function replaceInOneStatement(db: Queryable, kind: SealedKind, values: { key: string[]; was: Buffer; now: Buffer }[]): Promise<number> {
  if (values.length === 0) return 0;
  const { table, key, column } = SEALED_COLUMNS[kind];
  const tenantIndex = key.length + 3;
  const ofTenant = key[0]!.column === 'tenant_id' ? `AND t.tenant_id = $${tenantIndex}::uuid` : '';
  const keyArrays = key.map((part, index) => `$${index + 1}::text[]`);
  const wasIndex = key.length + 1;
  const { rows } = await db.query<{ replaced: number }>(
    `WITH replaced AS (
       UPDATE ${table} t SET ${column} = decode(v.now, 'hex')
         FROM unnest(${keyArrays.join(', ')}, $${wasIndex}::text[], $${wasIndex + 1}::text[])
              AS v(${key.map((part) => `k_${part.column}`).join(', ')}, was, now)
        WHERE ${key.map((part) => `t.${part.column} = v.k_${part.column}::${part.type}`).join(' AND ')}
          AND t.${column} = decode(v.was, 'hex') ${ofTenant}
        RETURNING 1
     )
     SELECT count(*)::int AS replaced FROM replaced`,
    [
      ...key.map((_, index) => values.map((value) => value.key[index]!)),
      values.map((value) => value.was.toString('hex')),
      values.map((value) => value.now.toString('hex')),
      ...(ofTenant ? [values[0]!.key[0]!] : []),
    ],
  );
  return rows[0]!.replaced;
}
