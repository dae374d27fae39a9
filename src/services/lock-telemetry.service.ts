// Revocation propagation (docs/api-reference.md 8.4): a lock's syncs acknowledge what it has applied, and the operator sees how far each revocation has reached.
import type { Database } from '../db/database.js';
import {
  listRevocations,
  recordLockContact,
  type RevocationFilter,
} from '../db/repositories/lock-telemetry.repo.js';
import { findSecuredObjectWithPropagation, type SecuredObjectRecord } from '../db/repositories/secured-object.repo.js';
import type { Clock } from './context.js';
import { clockDrifts } from '../shared/clock-drift.js';
import { isUuid } from '../shared/identifiers.js';
import { decodeCursor, pageOf, type Page } from '../shared/pagination.js';
import { toTicket, type Ticket } from './ticket.service.js';
import { BoundedMap } from '../shared/bounded-map.js';

/**
 * How fine `lastSeenTime` is (docs/glossary.md): a sync that acknowledges nothing new is written at most once per this
 * much per lock and instance, so an online lock polling every second costs a write every 30 s, not every second. A
 * rise of the applied position is always written at once: it is what the operator waits for.
 */
export const LAST_SEEN_RESOLUTION_MS = 30_000;

/** How many locks one instance remembers its last write for; the oldest written is forgotten first. */
const MAX_REMEMBERED_LOCKS = 10_000;

/** What GET /operatorapi/securedobjects/{id} adds to a lock (docs/api-reference.md 8.4, 8.5); absent fields: never seen or estimated. */
export interface LockPropagationFields {
  lastSeenTime?: number;
  appliedThrough?: number;
  pendingRevocations: number;
  pendingKeyRevocations: number;
  clockOffset?: number;
  clockDrift: boolean;
  /** docs/api-reference.md 15: the lock's current state; absent while no lockdown ever reached it. */
  lockMode?: 'lockdown' | 'normal';
  /** Whether the lock has applied its current state (its sync or a signed receipt reached its serial); absent with lockMode. */
  lockdownApplied?: boolean;
}

export interface LockTelemetryServiceOptions {
  db: Database;
  clock: Clock;
  /** CREDENTIAL_MAX_LIFETIME in ms: how far a lock's clock running behind widens what is still alive there (CLOCK_MARGIN_SQL). */
  credentialLifetimeMs: number;
}

export function createLockTelemetryService({ db, clock, credentialLifetimeMs }: LockTelemetryServiceOptions) {
  /** Per tenant and lock: the applied position this instance last wrote (or the database answered) and when. */
  const written = new BoundedMap<string, { applied: number; at: number }>(MAX_REMEMBERED_LOCKS);
  const keyOf = (tenantId: string, securedObjectId: string) => `${tenantId}\n${securedObjectId}`;
  /** A write is due unless this instance wrote the lock less than LAST_SEEN_RESOLUTION_MS ago at the same position or further. */
  const due = (last: { applied: number; at: number } | undefined, applied: number | undefined, now: number) =>
    last === undefined || (applied ?? 0) > last.applied || now - last.at >= LAST_SEEN_RESOLUTION_MS;

  return {
    /**
     * Records a lock's sync (docs/api-reference.md 8.4): `applied` is the position the lock has applied everything up to
     * (absent: a full sync, which acknowledges nothing but that the lock was seen). The write is skipped when the
     * position did not rise since this instance's last write for the lock and that write is less than
     * LAST_SEEN_RESOLUTION_MS old: the hot path of an online lock that polls stays a read.
     */
    async acknowledgeSync(tenantId: string, securedObjectId: string, applied: number | undefined, actor?: string): Promise<void> {
      const key = keyOf(tenantId, securedObjectId);
      const now = clock();
      if (!due(written.get(key), applied, now)) return;
      const telemetry = await recordLockContact(db, tenantId, securedObjectId, {
        seenAt: now,
        ...(applied !== undefined ? { appliedThrough: applied } : {}),
        ...(actor !== undefined ? { actor } : {}),
      });
      // Re-inserted so the map's order is the order of writes: the oldest written is forgotten first.
      written.set(key, { applied: telemetry.appliedThrough, at: now });
    },

    /** Whether acknowledgeSync would write: false while the lock's last write here is recent and at least as far. */
    acknowledgementDue(tenantId: string, securedObjectId: string, applied: number | undefined): boolean {
      return due(written.get(keyOf(tenantId, securedObjectId)), applied, clock());
    },

    /** A lock registered again with a deleted lock's id is another lock: this instance forgets what it wrote for the old one. */
    forget(tenantId: string, securedObjectId: string): void {
      written.delete(keyOf(tenantId, securedObjectId));
    },

    /**
     * A lock with its telemetry fields (docs/api-reference.md 8.4, 8.5), read in one statement; null when the tenant has
     * no lock of that id.
     */
    async lockWithPropagation(tenantId: string, securedObjectId: string): Promise<{ record: SecuredObjectRecord; fields: LockPropagationFields } | null> {
      const found = await findSecuredObjectWithPropagation(db, tenantId, securedObjectId, clock(), credentialLifetimeMs);
      if (found === null) return null;
      const { telemetry, pendingRevocations, pendingKeyRevocations, lockState } = found.propagation;
      const offset = telemetry?.clockOffsetMs ?? null;
      return {
        record: found.record,
        fields: {
          ...(telemetry !== null ? { lastSeenTime: telemetry.lastSeenAt, appliedThrough: telemetry.appliedThrough } : {}),
          pendingRevocations,
          pendingKeyRevocations,
          ...(offset !== null ? { clockOffset: offset } : {}),
          clockDrift: clockDrifts(offset),
          // Like a revocation's propagation (docs/api-reference.md 8.4): applied once the lock reached the state's serial.
          ...(lockState.serial > 0
            ? { lockMode: lockState.mode, lockdownApplied: (telemetry?.appliedThrough ?? 0) >= lockState.serial }
            : {}),
        },
      };
    },

    /**
     * docs/api-reference.md 8.4: revoked tickets whose lock applied the revocation (`applied: true`), has not yet while a
     * credential may still be alive there (`applied: false`: the doors that may still open for a revoked phone), or
     * both. An unknown lock id lists nothing, as the tickets' filters do.
     */
    async revocations(tenantId: string, filter: RevocationFilter, limit: number, cursor?: string): Promise<Page<Ticket>> {
      const after = decodeCursor(cursor, isUuid);
      // Resident ids are UUIDs: another string names no resident, so nothing is revoked for it.
      if (filter.residentId !== undefined && !isUuid(filter.residentId)) return { items: [], nextCursor: null };
      const now = clock();
      const rows = await listRevocations(db, tenantId, filter, now, after, limit + 1, credentialLifetimeMs);
      return pageOf(rows, limit, (row) => ({ createdAt: row.createdAt, id: row.id }), (row) => toTicket(row, now));
    },
  };
}

export type LockTelemetryService = ReturnType<typeof createLockTelemetryService>;
