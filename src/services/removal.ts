// Removing a secured object or a mobile device (docs/contract.md 4.1, 4.2): the row goes and its tickets are revoked, at once.
import type { Database, Queryable } from '../db/database.js';
import { nextChangeSeq } from '../db/repositories/change-log.repo.js';
import { revokeTicketsOf } from '../db/repositories/ticket.repo.js';
import { NotFoundError } from '../errors.js';
import { recordChange } from './audit.service.js';
import type { ActionContext, Clock } from './context.js';

/** What differs between the two removals: the row's delete, the tickets' column that names it, and its nouns. */
export interface TicketHolder {
  /** Deletes the tenant's row; false when the tenant has none with this id. */
  remove(db: Queryable, tenantId: string, id: string): Promise<boolean>;
  ticketColumn: 'secured_object_id' | 'mobile_device_id';
  /** The noun in messages, e.g. `secured object`. */
  noun: string;
  /** The noun in audit actions and targets, e.g. `secured_object`. */
  auditNoun: string;
}

/**
 * Removes the row and, in the same transaction, revokes every ticket issued for it (docs/contract.md 4.1, 4.2); 404 when the
 * tenant has no such row. LOCK ORDER: the tenant's change counter first (change-log.repo.ts), then the row and its
 * tickets, the audit counter last (audit.repo.ts).
 */
export async function removeWithTickets(
  db: Database,
  clock: Clock,
  holder: TicketHolder,
  context: ActionContext,
  id: string,
): Promise<void> {
  await db.transaction(async (tx) => {
    const seq = await nextChangeSeq(tx, context.tenantId);
    if (!(await holder.remove(tx, context.tenantId, id))) throw new NotFoundError(`No ${holder.noun} ${id}.`);
    const now = clock();
    await revokeTicketsOf(tx, context.tenantId, holder.ticketColumn, id, now, seq, context);
    await recordChange(tx, context, now, `${holder.auditNoun}.deleted`, `${holder.auditNoun}:${id}`);
  });
}
