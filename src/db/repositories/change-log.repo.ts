// SQL for the per-tenant change log (docs/contract.md 6.2): the sequence number every ticket-writing transaction takes.
import type { Queryable } from '../database.js';

/**
 * The next change number of the tenant. Call it FIRST in every transaction that creates or revokes tickets: the
 * row lock it takes is held until commit, so a tenant's ticket changes commit in sequence order, and taking it
 * before any other lock keeps the lock order the same everywhere (no deadlocks).
 */
export async function nextChangeSeq(db: Queryable, tenantId: string): Promise<number> {
  const { rows } = await db.query<{ last_seq: number }>(NEXT_CHANGE_SEQ_CTE('$1'), [tenantId]);
  return rows[0]!.last_seq;
}

/** The same statement as a CTE body, for single-statement writes (ticket creation). `$tenant` is the placeholder. */
export const NEXT_CHANGE_SEQ_CTE = (tenantPlaceholder: string) => `
  INSERT INTO tenant_change_counters AS c (tenant_id, last_seq) VALUES (${tenantPlaceholder}, 1)
  ON CONFLICT (tenant_id) DO UPDATE SET last_seq = c.last_seq + 1
  RETURNING last_seq`;
