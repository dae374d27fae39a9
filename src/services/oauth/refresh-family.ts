// Revokes a refresh-token family with its access tokens: on reuse (the refresh grant) and on request (RFC 7009).
import type { Database } from '../../db/database.js';
import { revokeRefreshFamily, type RefreshTokenRecord } from '../../db/repositories/refresh-token.repo.js';
import type { EventType } from '../../shared/event-types.js';
import { recordChange } from '../audit.service.js';
import type { Clock } from '../context.js';
import type { RevocationService } from './revoked-access-tokens.service.js';

export interface RefreshFamilyDependencies {
  db: Database;
  clock: Clock;
  revocations: RevocationService;
  /** An access token issued from the family lives this long at most, so its revocation is kept that long. */
  accessTokenTtlMs: number;
}

/** Revokes a refresh family and the access tokens issued from it (RFC 9700 4.14.2). */
export async function revokeFamily(
  { db, clock, revocations, accessTokenTtlMs: ttlMs }: RefreshFamilyDependencies,
  record: Pick<RefreshTokenRecord, 'tenantId' | 'familyId' | 'userId'>,
  action: EventType | null,
  actor: string,
): Promise<void> {
  await db.transaction(async (tx) => {
    await revokeRefreshFamily(tx, record.tenantId, record.familyId, clock());
    await revocations.record(tx, 'family', record.familyId, clock() + ttlMs);
    if (action) {
      await recordChange(tx, { tenantId: record.tenantId, actor, requestId: null }, clock(), action, `user:${record.userId}`, { userId: record.userId });
    }
  });
  await revocations.refresh();
}
