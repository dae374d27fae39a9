// "Revoke everywhere" (docs/api-reference.md 13): every valid ticket of every device of a resident, direct and
// granted, revoked in one transaction, audited and propagated as single revocations are.
import type { Database } from '../db/database.js';
import { nextChangeSeq } from '../db/repositories/change-log.repo.js';
import { revokeResidentTickets } from '../db/repositories/ticket.repo.js';
import { NotFoundError } from '../errors.js';
import { isUuid } from '../shared/identifiers.js';
import { auditEvent, recordChanges, ticketChunks } from './audit.service.js';
import type { ActionContext, Clock } from './context.js';
import type { DomainMetrics } from './domain-metrics.js';

export interface ResidentRevocation {
  revoked: number;
  tokenIds: string[];
}

export interface ResidentRevocationServiceOptions {
  db: Database;
  clock: Clock;
  metrics: DomainMetrics;
}

export function createResidentRevocationService({ db, clock, metrics }: ResidentRevocationServiceOptions) {
  const notFound = (id: string) => new NotFoundError(`No resident ${id}.`);
  return {
    /**
     * The tickets revoked get one change-log position, as a permission's deletion gives its tickets, so every lock
     * learns them at its next sync or from the next phone's revocation list (docs/api-reference.md 8.3, 8.4), and
     * `ticket.revoked` events, 1,000 ticket ids each, under the resident. The resident, its devices and its access
     * permissions stay: a device added later gets the permissions' tickets again (docs/api-reference.md 5).
     */
    async revokeEverywhere(context: ActionContext, residentId: string): Promise<ResidentRevocation> {
      if (!isUuid(residentId)) throw notFound(residentId);
      const tokenIds = await db.transaction(async (tx) => {
        const seq = await nextChangeSeq(tx, context.tenantId);
        const now = clock();
        const revoked = await revokeResidentTickets(tx, context.tenantId, residentId, now, seq);
        if (revoked === null) throw notFound(residentId);
        const target = `resident:${residentId}`;
        await recordChanges(tx, ticketChunks(revoked).map((ticketIds) => auditEvent(context, now, 'ticket.revoked', target, { residentId, ticketIds })));
        return revoked;
      });
      metrics.ticketsRevoked(tokenIds.length);
      return { revoked: tokenIds.length, tokenIds };
    },
  };
}

export type ResidentRevocationService = ReturnType<typeof createResidentRevocationService>;
