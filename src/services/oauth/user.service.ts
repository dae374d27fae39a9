// Access API users (docs/api-reference.md 3.7): bcrypt-hashed passwords, created by the Operator API or the CLI.
import bcrypt from 'bcrypt';
import type { Database } from '../../db/database.js';
import {
  deleteUser,
  findUser,
  findUserById,
  findUserByLogin,
  insertUser,
  listUsers,
  updateUser,
  type UserRecord,
} from '../../db/repositories/user.repo.js';
import type { UserRole } from '../../shared/scopes.js';
import { BadRequestError, ConflictError, NotFoundError } from '../../errors.js';
import { USERNAME_PATTERN } from '../../shared/usernames.js';
import { recordChange } from '../audit.service.js';
import type { ActionContext, Clock } from '../context.js';
import { decodeCursor, pageOf, type Page } from '../../shared/pagination.js';
import type { RevocationService } from './revoked-access-tokens.service.js';

export interface User {
  id: string;
  username: string;
  creationDate: number;
  /** docs/api-reference.md 13: absent when the user has no console role. */
  role?: UserRole;
}

/** bcrypt reads at most 72 bytes: longer passwords are refused, never silently truncated (docs/security-cases.md 14). */
export const MAX_PASSWORD_BYTES = 72;
export const MIN_PASSWORD_LENGTH = 8;
// Defined in src/shared with the pattern, so the schemas can use the rule without importing a service.
export { MAX_USERNAME_LENGTH } from '../../shared/usernames.js';

export interface UserServiceOptions {
  db: Database;
  clock: Clock;
  bcryptCost: number;
  revocations: RevocationService;
  accessTokenTtlMs: number;
}

const toUser = (record: UserRecord): User => ({
  id: record.id,
  username: record.username,
  creationDate: record.createdAt,
  ...(record.role !== null ? { role: record.role } : {}),
});

export function createUserService(options: UserServiceOptions) {
  const { db, clock, revocations } = options;
  // Compared against for unknown users, so they cost what a wrong password costs (docs/security-cases.md 10).
  const dummyHash = bcrypt.hash('not a real password', options.bcryptCost);

  function validatePassword(password: string): void {
    if (Buffer.byteLength(password, 'utf8') > MAX_PASSWORD_BYTES) {
      throw new BadRequestError(`Passwords are limited to ${MAX_PASSWORD_BYTES} bytes (UTF-8).`, [
        { field: 'password', message: `longer than ${MAX_PASSWORD_BYTES} bytes` },
      ]);
    }
    if ([...password].length < MIN_PASSWORD_LENGTH) {
      throw new BadRequestError(`Passwords need at least ${MIN_PASSWORD_LENGTH} characters.`, [
        { field: 'password', message: `shorter than ${MIN_PASSWORD_LENGTH} characters` },
      ]);
    }
  }

  return {
    async create(context: ActionContext, username: string, password: string, role?: UserRole): Promise<User> {
      if (!new RegExp(USERNAME_PATTERN).test(username)) {
        throw new BadRequestError('A username has 1 to 128 characters, no `@` and no white space.', [
          { field: 'username', message: 'is invalid' },
        ]);
      }
      validatePassword(password);
      const passwordHash = await bcrypt.hash(password, options.bcryptCost);
      const created = await db.transaction(async (tx) => {
        const record = await insertUser(tx, {
          tenantId: context.tenantId,
          username,
          passwordHash,
          createdAt: clock(),
          role: role ?? null,
        });
        if (!record) return null;
        await recordChange(tx, context, record.createdAt, 'user.created', `user:${record.id}`, { userId: record.id });
        return record;
      });
      if (!created) throw new ConflictError(`The username ${username} is taken in this tenant.`);
      return toUser(created);
    },

    async list(tenantId: string, limit: number, cursor?: string): Promise<Page<User>> {
      const rows = await listUsers(db, tenantId, decodeCursor(cursor), limit + 1);
      return pageOf(rows, limit, (row) => ({ createdAt: row.createdAt, id: row.username }), toUser);
    },

    async get(tenantId: string, username: string): Promise<User> {
      const record = await findUser(db, tenantId, username);
      if (!record) throw new NotFoundError(`No user ${username}.`);
      return toUser(record);
    },

    /** The user by id within the tenant, or null (the console's grants read the role it has now). */
    async byId(tenantId: string, userId: string): Promise<UserRecord | null> {
      return findUserById(db, tenantId, userId);
    },

    /**
     * docs/api-reference.md 13: gives, changes or (null) removes the console role. The next refresh of a console
     * sign-in carries the new role's scopes; without a role it fails.
     */
    async update(context: ActionContext, username: string, patch: { role?: UserRole | null }): Promise<User> {
      const updated = await db.transaction(async (tx) => {
        const record = await updateUser(tx, context.tenantId, username, patch);
        if (!record) return null;
        await recordChange(tx, context, clock(), 'user.updated', `user:${record.id}`, { userId: record.id, role: record.role });
        return record;
      });
      if (!updated) throw new NotFoundError(`No user ${username}.`);
      return toUser(updated);
    },

    /** Deletes the user; its refresh tokens go with it and its access tokens are refused within seconds. */
    async delete(context: ActionContext, username: string): Promise<void> {
      const deletedId = await db.transaction(async (tx) => {
        const userId = await deleteUser(tx, context.tenantId, username);
        if (!userId) return null;
        await revocations.record(tx, 'user', userId, clock() + options.accessTokenTtlMs);
        await recordChange(tx, context, clock(), 'user.deleted', `user:${userId}`, { userId });
        return userId;
      });
      if (!deletedId) throw new NotFoundError(`No user ${username}.`);
      await revocations.refresh();
    },

    /** The user if the password matches; unknown tenants and users cost one bcrypt comparison too. */
    async verifyPassword(tenantName: string, username: string, password: string): Promise<UserRecord | null> {
      const record = await findUserByLogin(db, tenantName, username);
      const tooLong = Buffer.byteLength(password, 'utf8') > MAX_PASSWORD_BYTES;
      const matches = await bcrypt.compare(password, record && !tooLong ? record.passwordHash : await dummyHash);
      return record && matches && !tooLong ? record : null;
    },

    /** Spends the time of one comparison without a user (a locked login must look like a wrong password). */
    async spendComparison(password: string): Promise<void> {
      await bcrypt.compare(password, await dummyHash);
    },

    /**
     * The work of `verifyPassword` without its answer: the look-up and one comparison against no hash. A login refused
     * before the password is checked (locked, or another tenant's) then takes as long as a wrong password does.
     */
    async spendLookupAndComparison(tenantName: string, username: string, password: string): Promise<void> {
      await findUserByLogin(db, tenantName, username);
      await bcrypt.compare(password, await dummyHash);
    },
  };
}

export type UserService = ReturnType<typeof createUserService>;
