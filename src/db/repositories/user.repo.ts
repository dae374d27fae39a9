// SQL for Access API users. Passwords are stored only as bcrypt hashes.
import type { Queryable } from '../database.js';
import type { UserRole } from '../../shared/scopes.js';
import { keysetPage, type KeysetColumns, type KeysetPosition } from '../../shared/keyset.js';

export interface UserRecord {
  id: string;
  tenantId: string;
  username: string;
  passwordHash: string;
  createdAt: number;
  /** docs/api-reference.md 13: the console role; null when the user may not sign in to the console. */
  role: UserRole | null;
}

interface UserRow {
  id: string;
  tenant_id: string;
  username: string;
  password_hash: string;
  created_at: number;
  role: UserRole | null;
}

const COLUMNS = 'id, tenant_id, username, password_hash, created_at, role';

/** Users page by username, unique in the tenant: the Operator API names users by it (docs/api-reference.md 3.7). */
const KEYSET: KeysetColumns = { createdAt: 'created_at', id: 'username', idType: 'text' };

const toUser = (row: UserRow): UserRecord => ({
  id: row.id,
  tenantId: row.tenant_id,
  username: row.username,
  passwordHash: row.password_hash,
  createdAt: row.created_at,
  role: row.role,
});

/** Null when the username is taken in the tenant. */
export async function insertUser(
  db: Queryable,
  user: Omit<UserRecord, 'id'>,
): Promise<UserRecord | null> {
  const { rows } = await db.query<UserRow>(
    `INSERT INTO users (tenant_id, username, password_hash, created_at, role) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (tenant_id, username) DO NOTHING RETURNING ${COLUMNS}`,
    [user.tenantId, user.username, user.passwordHash, user.createdAt, user.role],
  );
  return rows[0] ? toUser(rows[0]) : null;
}

/**
 * The user `username` of the tenant named `tenantName` (a login `USER@TENANT`, docs/api-reference.md 3.2). The name is
 * resolved in `tenants`, a reference table, first, and the user is then read within that tenant: on Citus the second
 * read goes to the one node that holds the tenant (docs/scaling.md). Two index reads, whether the tenant exists or not,
 * so an unknown tenant costs what an unknown user does.
 */
export async function findUserByLogin(db: Queryable, tenantName: string, username: string): Promise<UserRecord | null> {
  const { rows: tenants } = await db.query<{ id: string }>('SELECT id FROM tenants WHERE name = $1', [tenantName]);
  const { rows } = await db.query<UserRow>(`SELECT ${COLUMNS} FROM users WHERE tenant_id = $1 AND username = $2`, [
    tenants[0]?.id ?? NO_TENANT,
    username,
  ]);
  return rows[0] ? toUser(rows[0]) : null;
}

/** The nil UUID (RFC 9562 5.9): never a tenant's id. */
const NO_TENANT = '00000000-0000-0000-0000-000000000000';

export async function listUsers(
  db: Queryable,
  tenantId: string,
  after: KeysetPosition | null,
  limit: number,
): Promise<UserRecord[]> {
  const params: unknown[] = [tenantId];
  const page = keysetPage(params, KEYSET, after, limit);
  const { rows } = await db.query<UserRow>(
    `SELECT ${COLUMNS} FROM users WHERE tenant_id = $1 AND ${page.condition} ${page.orderAndLimit}`,
    params,
  );
  return rows.map(toUser);
}

export async function findUser(db: Queryable, tenantId: string, username: string): Promise<UserRecord | null> {
  const { rows } = await db.query<UserRow>(`SELECT ${COLUMNS} FROM users WHERE tenant_id = $1 AND username = $2`, [tenantId, username]);
  return rows[0] ? toUser(rows[0]) : null;
}

export async function findUserById(db: Queryable, tenantId: string, userId: string): Promise<UserRecord | null> {
  const { rows } = await db.query<UserRow>(`SELECT ${COLUMNS} FROM users WHERE tenant_id = $1 AND id = $2`, [tenantId, userId]);
  return rows[0] ? toUser(rows[0]) : null;
}

/**
 * Sets what the patch names: the role (null removes it) and the password hash. Null when there is no such user.
 * `undefined` leaves a field as it is.
 */
export async function updateUser(
  db: Queryable,
  tenantId: string,
  username: string,
  patch: { role?: UserRole | null; passwordHash?: string },
): Promise<UserRecord | null> {
  const { rows } = await db.query<UserRow>(
    `UPDATE users
        SET role = CASE WHEN $3::boolean THEN $4::text ELSE role END,
            password_hash = COALESCE($5::text, password_hash)
      WHERE tenant_id = $1 AND username = $2
     RETURNING ${COLUMNS}`,
    [tenantId, username, patch.role !== undefined, patch.role ?? null, patch.passwordHash ?? null],
  );
  return rows[0] ? toUser(rows[0]) : null;
}

/** The deleted user's id, or null when there was none. */
export async function deleteUser(db: Queryable, tenantId: string, username: string): Promise<string | null> {
  const { rows } = await db.query<{ id: string }>(
    'DELETE FROM users WHERE tenant_id = $1 AND username = $2 RETURNING id',
    [tenantId, username],
  );
  return rows[0]?.id ?? null;
}
