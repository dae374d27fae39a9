// SQL for the per-tenant change log (docs/api-reference.md 6.2): the sequence number every ticket-writing transaction takes.
import type { Queryable } from '../database.js';

/**
 * The next change number of the tenant. Call it FIRST in every transaction that creates or revokes tickets: the
 * row lock it takes is held until commit, so a tenant's ticket changes commit in sequence order, and taking it
 * before any other lock keeps the lock order the same everywhere (no deadlocks).
 */
export async function nextChangeSeq(db: Queryable, tenantId: string): Promise<number> {
  const { rows } = await db.query<{ last_seq: number }>(NEXT_CHANGE_SEQ_SQL, [tenantId]);
  const seq = Number(rows[0]!.last_seq);
  announceChange(db, tenantId, seq);
  return seq;
}

/**
 * The channel on which every advance of a tenant's change counter is announced, with the payload
 * `<last_seq>:<tenant_id>` (announceChange, docs/lock-sync.md).
 */
export const TENANT_CHANGES_CHANNEL = 'tenant_changes';

export const changePayload = (tenantId: string, seq: number): string => `${seq}:${tenantId}`;

/** The change number and tenant of a payload on TENANT_CHANGES_CHANNEL; null when it is not one. */
export function parseChangePayload(payload: string): { tenantId: string; seq: number } | null {
  const colon = payload.indexOf(':');
  const seq = Number(payload.slice(0, colon));
  if (colon <= 0 || !Number.isSafeInteger(seq) || seq < 0 || colon === payload.length - 1) return null;
  return { tenantId: payload.slice(colon + 1), seq };
}

/**
 * Announces the tenant's new change number once its transaction commits (Queryable.announceOnCommit): this process
 * at once, the other instances by the NOTIFY the database adapter sends after the commit, a little later. Every
 * statement that advances tenant_change_counters is nextChangeSeq's or a call of issue_tickets (migration 034,
 * ticket.repo.ts createTickets), and each calls it in the same queryable: it is the only announcement there is
 * (migration 032 dropped the trigger).
 */
export function announceChange(db: Queryable, tenantId: string, seq: number): void {
  db.announceOnCommit?.(TENANT_CHANGES_CHANNEL, changePayload(tenantId, seq));
}

/** Every tenant's last change number, for an instance that has just started listening (docs/lock-sync.md). */
export async function listChangeWatermarks(db: Queryable): Promise<{ tenantId: string; seq: number }[]> {
  const { rows } = await db.query<{ tenant_id: string; last_seq: number }>('SELECT tenant_id, last_seq FROM tenant_change_counters');
  return rows.map((row) => ({ tenantId: row.tenant_id, seq: Number(row.last_seq) }));
}

/**
 * The statement of nextChangeSeq as a CTE body, for the bench's seeding statements. `tenantPlaceholder` is the
 * tenant's placeholder. Whatever runs it announces the number itself (announceChange), or nobody hears of it.
 */
export const NEXT_CHANGE_SEQ_CTE = (tenantPlaceholder: string) => `
  INSERT INTO tenant_change_counters AS c (tenant_id, last_seq) VALUES (${tenantPlaceholder}, 1)
  ON CONFLICT (tenant_id) DO UPDATE SET last_seq = c.last_seq + 1
  RETURNING last_seq`;

const NEXT_CHANGE_SEQ_SQL = NEXT_CHANGE_SEQ_CTE('$1');

/**
 * The change-log position of the tenant's last ticket-key-set change (docs/api-reference.md 8.1), 0 while there was none,
 * as an SQL expression over the tenant's placeholder: a primary-key read of ticket_key_set_changes.
 */
export const KEY_SET_SEQ_SQL = (tenantPlaceholder: string) =>
  `coalesce((SELECT change_seq FROM ticket_key_set_changes WHERE tenant_id = ${tenantPlaceholder}), 0)`;

/**
 * The effective holder-binding policy of a lock (docs/api-reference.md 11.2) as an SQL expression: its own override,
 * else its tenant's. Primary-key reads.
 */
export const HOLDER_BINDING_SQL = (tenantPlaceholder: string, lockExpression: string) =>
  `coalesce((SELECT holder_binding FROM secured_objects WHERE tenant_id = ${tenantPlaceholder} AND id = ${lockExpression}),
            (SELECT holder_binding FROM tenants WHERE id = ${tenantPlaceholder}), 'optional')`;

/**
 * The change-log position of the last change of a lock's holder-binding policy (docs/api-reference.md 11.2): the
 * tenant's policy or the lock's override, whichever changed last; 0 while neither did.
 */
export const HOLDER_BINDING_SEQ_SQL = (tenantPlaceholder: string, lockExpression: string) =>
  `greatest(coalesce((SELECT holder_binding_seq FROM tenants WHERE id = ${tenantPlaceholder}), 0),
            coalesce((SELECT holder_binding_seq FROM secured_objects WHERE tenant_id = ${tenantPlaceholder} AND id = ${lockExpression}), 0))`;

/**
 * The change-log position of the tenant's last phone-key revocation (docs/api-reference.md 11.4), 0 while there was
 * none: revoked_device_keys_sync_idx read backwards, one row.
 */
export const REVOKED_KEYS_SEQ_SQL = (tenantPlaceholder: string) =>
  `coalesce((SELECT change_seq FROM revoked_device_keys WHERE tenant_id = ${tenantPlaceholder} ORDER BY change_seq DESC LIMIT 1), 0)`;

/**
 * A lock's lock state (docs/api-reference.md 15) as SQL expressions: the mode and the change-log position (the state's
 * serial) of the newest lockdown that reached it; `normal` and 0 while none did. lockdown_locks_lock_idx read backwards.
 */
export const LOCK_STATE_MODE_SQL = (tenantPlaceholder: string, lockExpression: string) =>
  `coalesce((SELECT mode FROM lockdown_locks WHERE tenant_id = ${tenantPlaceholder} AND secured_object_id = ${lockExpression}
              ORDER BY change_seq DESC LIMIT 1), 'normal')`;
export const LOCK_STATE_SEQ_SQL = (tenantPlaceholder: string, lockExpression: string) =>
  `coalesce((SELECT change_seq FROM lockdown_locks WHERE tenant_id = ${tenantPlaceholder} AND secured_object_id = ${lockExpression}
              ORDER BY change_seq DESC LIMIT 1), 0)`;

/**
 * A lock's serial (docs/api-reference.md 8.3) as an SQL expression: the change-log position of the last change that
 * concerns it, key-set changes, its holder-binding policy, its lock state and the tenant's phone-key revocations
 * included (docs/api-reference.md 11.2, 11.4, 15) — the furthest any sync answer or revocation list for it can reach
 * (tickets_sync_idx read backwards, one row).
 */
export const LOCK_SERIAL_SQL = (tenantPlaceholder: string, lockExpression: string) =>
  `greatest(
     coalesce((SELECT change_seq FROM tickets WHERE tenant_id = ${tenantPlaceholder} AND secured_object_id = ${lockExpression}
                ORDER BY change_seq DESC LIMIT 1), 0),
     ${KEY_SET_SEQ_SQL(tenantPlaceholder)},
     ${HOLDER_BINDING_SEQ_SQL(tenantPlaceholder, lockExpression)},
     ${LOCK_STATE_SEQ_SQL(tenantPlaceholder, lockExpression)},
     ${REVOKED_KEYS_SEQ_SQL(tenantPlaceholder)})`;
