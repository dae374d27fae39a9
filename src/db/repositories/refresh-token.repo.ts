// SQL for refresh tokens: rotation is an atomic compare-and-set, reuse revokes the family (RFC 9700 4.14.2). Every
// look-up comes from an authenticated client, so it is made within the client's tenant (migration 016).
import type { Queryable } from '../database.js';

export interface RefreshTokenRecord {
  tokenHash: Buffer;
  familyId: string;
  tenantId: string;
  clientId: string;
  userId: string;
  scopes: string[];
  createdAt: number;
  expiresAt: number;
  usedAt: number | null;
  revokedAt: number | null;
}

interface RefreshTokenRow {
  token_hash: Buffer | Uint8Array;
  family_id: string;
  tenant_id: string;
  client_id: string;
  user_id: string;
  scopes: string[];
  created_at: number;
  expires_at: number;
  used_at: number | null;
  revoked_at: number | null;
}

const COLUMNS =
  'token_hash, family_id, tenant_id, client_id, user_id, scopes, created_at, expires_at, used_at, revoked_at';

const toRecord = (row: RefreshTokenRow): RefreshTokenRecord => ({
  tokenHash: Buffer.from(row.token_hash),
  familyId: row.family_id,
  tenantId: row.tenant_id,
  clientId: row.client_id,
  userId: row.user_id,
  scopes: row.scopes,
  createdAt: row.created_at,
  expiresAt: row.expires_at,
  usedAt: row.used_at,
  revokedAt: row.revoked_at,
});

export async function insertRefreshToken(
  db: Queryable,
  token: Omit<RefreshTokenRecord, 'usedAt' | 'revokedAt'>,
): Promise<void> {
  await db.query(
    `INSERT INTO refresh_tokens (token_hash, family_id, tenant_id, client_id, user_id, scopes, created_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [token.tokenHash, token.familyId, token.tenantId, token.clientId, token.userId, token.scopes, token.createdAt, token.expiresAt],
  );
}

/**
 * Marks the token used if, and only if, it is still usable by this client: of two concurrent refreshes with one
 * token exactly one gets the row back.
 */
export async function consumeRefreshToken(
  db: Queryable,
  tenantId: string,
  tokenHash: Buffer,
  clientId: string,
  now: number,
): Promise<RefreshTokenRecord | null> {
  const { rows } = await db.query<RefreshTokenRow>(
    `UPDATE refresh_tokens SET used_at = $3
      WHERE tenant_id = $4 AND token_hash = $1 AND client_id = $2 AND used_at IS NULL AND revoked_at IS NULL
        AND expires_at > $3
      RETURNING ${COLUMNS}`,
    [tokenHash, clientId, now, tenantId],
  );
  return rows[0] ? toRecord(rows[0]) : null;
}

/** The tenant's token with this hash: a token of another tenant is not found (no client may learn of it). */
export async function findRefreshToken(db: Queryable, tenantId: string, tokenHash: Buffer): Promise<RefreshTokenRecord | null> {
  const { rows } = await db.query<RefreshTokenRow>(`SELECT ${COLUMNS} FROM refresh_tokens WHERE tenant_id = $1 AND token_hash = $2`, [
    tenantId,
    tokenHash,
  ]);
  return rows[0] ? toRecord(rows[0]) : null;
}

/** Revokes every refresh token of the family; returns how many were still unrevoked. */
export async function revokeRefreshFamily(db: Queryable, tenantId: string, familyId: string, now: number): Promise<number> {
  const { rowCount } = await db.query(
    'UPDATE refresh_tokens SET revoked_at = $3 WHERE tenant_id = $1 AND family_id = $2 AND revoked_at IS NULL',
    [tenantId, familyId, now],
  );
  return rowCount;
}
