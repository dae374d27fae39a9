// Removing a secured object or a mobile device (docs/api-reference.md 4.1, 4.2): the row goes, its tickets are revoked and
// its bound clients retired, at once.
import type { Database, Queryable } from '../db/database.js';
import { nextChangeSeq } from '../db/repositories/change-log.repo.js';
import type { RevocationKind } from '../db/repositories/revoked-access-token.repo.js';
import { revokeTicketsOf } from '../db/repositories/ticket.repo.js';
import { NotFoundError } from '../errors.js';
import type { AuditEventInput } from '../db/repositories/audit.repo.js';
import type { EventType } from '../shared/event-types.js';
import { auditEvent, recordChanges, ticketChunks } from './audit.service.js';
import type { ActionContext, Clock } from './context.js';
import type { DomainMetrics } from './domain-metrics.js';
import type { RevocationService } from './oauth/revoked-access-tokens.service.js';

/** What becomes of the OAuth clients bound to the removed row (docs/api-reference.md 3.7). */
export interface BoundClientRetirement {
  /** Deletes or marks the tenant's clients bound to the row, with the deleting transaction's change number; their ids. */
  retire(db: Queryable, tenantId: string, id: string, seq: number): Promise<string[]>;
  /** The revocation recorded for each retired client, so every instance acts on it within seconds (docs/api-reference.md 3.4). */
  revocationKind: Extract<RevocationKind, 'client' | 'client-decommissioned'>;
  /** The event type of each retired client, e.g. `client.deleted` (docs/api-reference.md 10, 7.5). */
  auditAction: EventType;
}

/** What differs between the two removals: the row's delete, the tickets' column that names it, its clients, its nouns. */
export interface TicketHolder {
  /** Deletes the tenant's row; false when the tenant has none with this id. */
  remove(db: Queryable, tenantId: string, id: string): Promise<boolean>;
  ticketColumn: 'secured_object_id' | 'mobile_device_id';
  boundClients: BoundClientRetirement;
  /** The noun in messages, e.g. `secured object`. */
  noun: string;
  /** The noun in event types and targets, e.g. `secured_object`. */
  auditNoun: 'secured_object' | 'mobile_device';
  /** The key naming the row in an event's `data`. */
  dataKey: 'securedObjectId' | 'mobileDeviceId';
  /**
   * What goes with the row besides its tickets and clients, in the same transaction after its change number and
   * before the row is deleted: a mobile device's key is revoked at every lock (docs/api-reference.md 11.4).
   */
  beforeRemove?(db: Queryable, tenantId: string, id: string): Promise<void>;
}

export interface RemovalDependencies {
  db: Database;
  clock: Clock;
  revocations: RevocationService;
  /** Access-token lifetime: how long a retired client's revocation must be kept. */
  accessTokenTtlMs: number;
  /** Counts what the service did, after it committed (services/domain-metrics.ts). */
  metrics: DomainMetrics;
}

/**
 * Removes the row and, in the same transaction, retires its bound clients and revokes every ticket issued for it
 * (docs/api-reference.md 4.1, 4.2); 404 when the tenant has no such row, and then nothing changed. LOCK ORDER: the
 * tenant's change counter first (change-log.repo.ts), then the row, its clients and its tickets, the audit counter
 * last (audit.repo.ts). Client creation holds the bound row (FOR KEY SHARE) until it commits, so no client can be
 * bound to the row behind this deletion's back.
 */
export async function removeWithTickets(
  dependencies: RemovalDependencies,
  holder: TicketHolder,
  context: ActionContext,
  id: string,
): Promise<void> {
  const { db, metrics, revocations } = dependencies;
  const removed = await db.transaction(async (tx) => {
    const seq = await nextChangeSeq(tx, context.tenantId);
    const removal = await removeInTransaction(tx, dependencies, holder, context, id, seq);
    if (removal === null) throw new NotFoundError(`No ${holder.noun} ${id}.`);
    await recordChanges(tx, removal.events);
    return removal;
  });
  metrics.ticketsRevoked(removed.revoked);
  // This instance acts on the revocations at once (the token endpoint answers invalid_client right away); the others
  // on the NOTIFY delivered at commit, or the poll.
  if (removed.clientIds.length > 0) await revocations.refresh();
}

/** What a removal did in its transaction, and the events it leaves to the caller to append (last, audit.repo.ts). */
export interface Removal {
  clientIds: string[];
  revoked: number;
  events: AuditEventInput[];
}

/**
 * The removal's work inside the caller's transaction, which took the tenant's change number `seq` first: the row, its
 * clients and its tickets; null when the tenant has no such row, and then nothing changed. The caller appends `events`
 * (the tickets' `ticket.revoked` first), reports the metrics and refreshes the revocations after commit (a claim's
 * replacement does, docs/api-reference.md 12).
 */
export async function removeInTransaction(
  tx: Queryable,
  dependencies: Pick<RemovalDependencies, 'clock' | 'revocations' | 'accessTokenTtlMs'>,
  holder: TicketHolder,
  context: ActionContext,
  id: string,
  seq: number,
): Promise<Removal | null> {
  const { clock, revocations, accessTokenTtlMs } = dependencies;
  await holder.beforeRemove?.(tx, context.tenantId, id);
  if (!(await holder.remove(tx, context.tenantId, id))) return null;
  const now = clock();
  const clientIds = await holder.boundClients.retire(tx, context.tenantId, id, seq);
  // Every access token issued before now expires within one lifetime: the revocations need to outlive none longer.
  await revocations.recordMany(tx, holder.boundClients.revocationKind, clientIds, now + accessTokenTtlMs);
  const revoked = await revokeTicketsOf(tx, context.tenantId, holder.ticketColumn, id, now, seq);
  const target = `${holder.auditNoun}:${id}`;
  const data = { [holder.dataKey]: id };
  return {
    clientIds,
    revoked: revoked.length,
    events: [
      // The tickets' events first, in chunks of 1,000 (docs/api-reference.md 10), then the row's and its clients'.
      ...ticketChunks(revoked).map((ticketIds) => auditEvent(context, now, 'ticket.revoked', target, { ...data, ticketIds })),
      auditEvent(context, now, `${holder.auditNoun}.deleted` as const, target, data),
      ...clientIds.map((clientId) => auditEvent(context, now, holder.boundClients.auditAction, `client:${clientId}`, { clientId })),
    ],
  };
}
