// The published key sets (JWKS, RFC 7517 section 5): the server's for access tokens, each tenant's for ticket
// credentials (docs/api-reference.md 8.1). Public halves only (docs/security-cases.md 31): `d` never leaves the service.
import type { JWK } from 'jose';
import { listLiveTenantKeys, type SigningKeyRecord } from '../../db/repositories/signing-key.repo.js';
import type { SigningKeyRing } from './signing-key-ring.js';

/** The key as it is published: the stored JWK without a private member, should one ever be there. */
function publicMembers(record: SigningKeyRecord): JWK {
  const { d: _d, ...publicJwk } = record.publicJwk as JWK & { d?: string };
  return publicJwk;
}

/**
 * The published keys this instance holds (of one tenant, or of all when `tenantId` is undefined), newest first:
 * announced, signing, and retired within one retention; never withdrawn ones. A retired key dropping out here changes
 * no change number: a lock still holding it holds a key whose credentials have all expired, which admits nothing.
 */
export function publishedJwks(ring: SigningKeyRing, tenantId?: string | null): JWK[] {
  const now = ring.clock();
  return ring
    .loaded()
    .filter((key) => (tenantId === undefined || key.tenantId === tenantId) && ring.publishedAt(key.record, now))
    .sort((a, b) => b.record.activatesAt - a.record.activatesAt || b.record.createdAt - a.record.createdAt)
    .map((key) => publicMembers(key.record));
}

/**
 * The tenant's published keys as the database has them now, for what reaches a lock (docs/api-reference.md 8.1: sync
 * answers, revocation lists, the trust endpoint). This instance's copy follows other instances and the CLI only
 * through NOTIFY and a periodic re-read; a sync that moved a lock's cursor past a key change while answering an older
 * set would leave the lock without the new keys (or holding a withdrawn one) until the next change. When the copy
 * disagrees, it is reloaded at once, so this instance also stops signing with a withdrawn key.
 */
export async function currentPublishedJwks(ring: SigningKeyRing, tenantId: string): Promise<JWK[]> {
  const now = ring.clock();
  const records = (await listLiveTenantKeys(ring.db, ring.purpose, tenantId, now - ring.retentionMs)).filter((record) => ring.publishedAt(record, now));
  const inMemory = new Set(publishedJwks(ring, tenantId).map((key) => key.kid));
  if (records.length !== inMemory.size || records.some((record) => !inMemory.has(record.kid))) await ring.reloadAfterWrite();
  return records.map(publicMembers);
}
