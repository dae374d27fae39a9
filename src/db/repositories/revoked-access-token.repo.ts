// SQL for access-token revocations, which every instance mirrors in memory.
import type { Queryable } from '../database.js';

/**
 * `client-secret` is no token revocation: it tells every instance that a client's secret changed.
 * `client-decommissioned` refuses only the client's tokens that carry a scope beyond `sync` (its lock was deleted,
 * docs/api-reference.md 4.1), and tells every instance that the client changed.
 */
export type RevocationKind = 'client' | 'user' | 'family' | 'jti' | 'client-secret' | 'client-decommissioned';

export interface RevocationRecord {
  seq: number;
  kind: RevocationKind;
  subject: string;
  expiresAt: number;
}

/** Channel on which a revocation is announced; every instance reloads what is new. */
export const REVOCATION_CHANNEL = 'acs_token_revocations';

export async function insertRevocation(
  db: Queryable,
  kind: RevocationKind,
  subject: string,
  revokedAt: number,
  expiresAt: number,
): Promise<void> {
  await insertRevocations(db, kind, [subject], revokedAt, expiresAt);
}

/** One revocation per subject, in one statement, and one announcement; nothing when `subjects` is empty. */
export async function insertRevocations(
  db: Queryable,
  kind: RevocationKind,
  subjects: string[],
  revokedAt: number,
  expiresAt: number,
): Promise<void> {
  if (subjects.length === 0) return;
  await db.query(
    `INSERT INTO token_revocations (kind, subject, revoked_at, expires_at)
     SELECT $1, subject, $3, $4 FROM unnest($2::text[]) WITH ORDINALITY AS s (subject, ordinal) ORDER BY ordinal`,
    [kind, subjects, revokedAt, expiresAt],
  );
  // Delivered at commit, to every instance listening (PostgreSQL NOTIFY semantics); each reloads everything new.
  await db.query('SELECT pg_notify($1, $2)', [REVOCATION_CHANNEL, `${kind}:${subjects[0]}`]);
}

/**
 * Unexpired revocations numbered after `seq`, and also those revoked after `recentSince` whatever their number:
 * sequence numbers are taken at insert but become visible at commit, so a slow transaction can commit a lower number
 * after a higher one was read.
 */
export async function listRevocationsAfter(
  db: Queryable,
  seq: number,
  now: number,
  recentSince: number,
): Promise<RevocationRecord[]> {
  const { rows } = await db.query<{ seq: number; kind: RevocationKind; subject: string; expires_at: number }>(
    `SELECT seq, kind, subject, expires_at FROM token_revocations
      WHERE (seq > $1 OR revoked_at > $3) AND expires_at > $2 ORDER BY seq`,
    [seq, now, recentSince],
  );
  return rows.map((row) => ({ seq: row.seq, kind: row.kind, subject: row.subject, expiresAt: row.expires_at }));
}

/** Forgets revocations no token can outlive any more. */
export async function deleteExpiredRevocations(db: Queryable, now: number): Promise<number> {
  const { rowCount } = await db.query('DELETE FROM token_revocations WHERE expires_at <= $1', [now]);
  return rowCount;
}
