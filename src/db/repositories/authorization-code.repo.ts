// SQL for authorization codes (RFC 6749 4.1.2, docs/api-reference.md 13): stored only as SHA-256 digests, single use.
import type { Queryable } from '../database.js';

export interface AuthorizationCodeRecord {
  tenantId: string;
  codeHash: Buffer;
  clientId: string;
  userId: string;
  /** The redirect URI the authorization request named, exactly as it was sent (RFC 6749 4.1.3). */
  redirectUri: string;
  /** RFC 7636 4.2: BASE64URL(SHA-256(code_verifier)), S256 only. */
  codeChallenge: string;
  /** The refresh-token family the exchange starts; revoked when the code is presented again (RFC 9700 4.2.1). */
  familyId: string;
  createdAt: number;
  expiresAt: number;
  usedAt: number | null;
}

interface AuthorizationCodeRow {
  tenant_id: string;
  code_hash: Buffer | Uint8Array;
  client_id: string;
  user_id: string;
  redirect_uri: string;
  code_challenge: string;
  family_id: string;
  created_at: number;
  expires_at: number;
  used_at: number | null;
}

const COLUMNS = 'tenant_id, code_hash, client_id, user_id, redirect_uri, code_challenge, family_id, created_at, expires_at, used_at';

const toAuthorizationCode = (row: AuthorizationCodeRow): AuthorizationCodeRecord => ({
  tenantId: row.tenant_id,
  codeHash: Buffer.from(row.code_hash),
  clientId: row.client_id,
  userId: row.user_id,
  redirectUri: row.redirect_uri,
  codeChallenge: row.code_challenge,
  familyId: row.family_id,
  createdAt: row.created_at,
  expiresAt: row.expires_at,
  usedAt: row.used_at,
});

export async function insertAuthorizationCode(db: Queryable, code: Omit<AuthorizationCodeRecord, 'usedAt'>): Promise<void> {
  await db.query(
    `INSERT INTO authorization_codes (tenant_id, code_hash, client_id, user_id, redirect_uri, code_challenge, family_id, created_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [code.tenantId, code.codeHash, code.clientId, code.userId, code.redirectUri, code.codeChallenge, code.familyId, code.createdAt, code.expiresAt],
  );
}

/**
 * Marks the code used and answers it, in one statement: of two concurrent exchanges exactly one gets the row. Null
 * when the tenant has no such code or it was used already (findAuthorizationCode then tells which).
 */
export async function consumeAuthorizationCode(
  db: Queryable,
  tenantId: string,
  codeHash: Buffer,
  now: number,
): Promise<AuthorizationCodeRecord | null> {
  const { rows } = await db.query<AuthorizationCodeRow>(
    `UPDATE authorization_codes SET used_at = $3 WHERE tenant_id = $1 AND code_hash = $2 AND used_at IS NULL RETURNING ${COLUMNS}`,
    [tenantId, codeHash, now],
  );
  return rows[0] ? toAuthorizationCode(rows[0]) : null;
}

export async function findAuthorizationCode(db: Queryable, tenantId: string, codeHash: Buffer): Promise<AuthorizationCodeRecord | null> {
  const { rows } = await db.query<AuthorizationCodeRow>(
    `SELECT ${COLUMNS} FROM authorization_codes WHERE tenant_id = $1 AND code_hash = $2`,
    [tenantId, codeHash],
  );
  return rows[0] ? toAuthorizationCode(rows[0]) : null;
}

/**
 * Deletes up to `limit` of the tenant's codes that expired before `before`. A used code is kept until then too, so
 * that presenting it again within its lifetime still revokes what it issued.
 */
export async function pruneAuthorizationCodes(db: Queryable, tenantId: string, before: number, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM authorization_codes WHERE tenant_id = $1 AND code_hash IN (
       SELECT code_hash FROM authorization_codes WHERE tenant_id = $1 AND expires_at <= $2::bigint LIMIT $3)`,
    [tenantId, before, limit],
  );
  return rowCount;
}
