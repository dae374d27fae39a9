// The check of a `USER@TENANT` login and its password, with the lockout (docs/api-reference.md 3.2): one rule for the
// password grant and the console's sign-in form (docs/api-reference.md 13), so both count against the same limit.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Database } from '../../db/database.js';
import { clearLoginAttempts, countLoginAttempt } from '../../db/repositories/login-failure.repo.js';
import type { UserRecord } from '../../db/repositories/user.repo.js';
import { recordChange } from '../audit.service.js';
import type { Clock } from '../context.js';
import type { DomainMetrics } from '../domain-metrics.js';
import { MAX_USERNAME_LENGTH, type UserService } from './user.service.js';

export interface LoginCheckOptions {
  db: Database;
  clock: Clock;
  users: UserService;
  metrics: DomainMetrics;
  lockout: { threshold: number; windowMs: number; durationMs: number };
}

/** `USER@TENANT`, split on the last `@` (docs/api-reference.md 3.2); null when either part is empty. */
export function splitLogin(login: string): { username: string; tenantName: string } | null {
  const at = login.lastIndexOf('@');
  if (at <= 0 || at === login.length - 1) return null;
  return { username: login.slice(0, at), tenantName: login.slice(at + 1) };
}

/** Who is trying: the client's tenant (a client names only users of its own) and the client, for the audit trail. */
export interface LoginAttemptBy {
  tenantId: string;
  clientId: string;
}

export function createLoginCheck(options: LoginCheckOptions) {
  const { db, clock, users, metrics } = options;

  /**
   * The user when the login names a user of the client's tenant and the password is right; null for every failure
   * (wrong password, unknown user or tenant, another tenant's user, a locked login), after the same work.
   */
  return async function checkLogin(
    by: LoginAttemptBy,
    parts: { username: string; tenantName: string },
    password: string,
  ): Promise<UserRecord | null> {
    // PostgreSQL text cannot hold NUL, so no such login exists; looking it up would fail with a 500. A username the API
    // never accepts (src/schemas/user.ts) names nobody and is not stored either.
    if (parts.username.includes('\u0000') || parts.tenantName.includes('\u0000') || parts.username.length > MAX_USERNAME_LENGTH) {
      await users.spendComparison(password);
      metrics.loginFailed('invalid_credentials');
      return null;
    }
    // The attempt counts before the password is checked, atomically, so a burst of parallel guesses cannot slip
    // past the threshold (G40): beyond it the answer is the same, after the same work, without looking.
    // docs/api-reference.md 3.2: a client names only users of its own tenant. Another tenant's login is not counted (null): it
    // is as wrong as a bad password, costs a comparison too, and never counts against that user (G41).
    const now = clock();
    const { threshold } = options.lockout;
    const attempt = await countLoginAttempt(db, {
      tenantId: by.tenantId,
      tenantName: parts.tenantName,
      username: parts.username,
      now,
      windowStart: now - options.lockout.windowMs,
      threshold,
      lockedUntil: now + options.lockout.durationMs,
    });
    if (!attempt || attempt.attempts > threshold) {
      await users.spendLookupAndComparison(parts.tenantName, parts.username, password);
      metrics.loginFailed(attempt ? 'locked' : 'invalid_credentials');
      return null;
    }
    const user = await users.verifyPassword(parts.tenantName, parts.username, password);
    if (!user || user.tenantId !== by.tenantId) {
      if (attempt.attempts === threshold) {
        // Exactly one attempt reaches the threshold: the user's tenant sees the lock once (docs/api-reference.md 7.5).
        const context = { tenantId: by.tenantId, actor: `client:${by.clientId}`, requestId: null };
        await recordChange(db, context, now, 'login.locked', `login:${parts.username}@${parts.tenantName}`);
        metrics.loginLocked();
      }
      metrics.loginFailed('invalid_credentials');
      // Slowed down before refused (docs/api-reference.md 3.2): 200 ms, 400 ms, … up to 2 s.
      if (attempt.attempts >= 2) await sleep(Math.min(100 * 2 ** (attempt.attempts - 1), 2000));
      return null;
    }
    // Success resets the count (docs/security-cases.md 11), including a lock this very attempt started.
    await clearLoginAttempts(db, by.tenantId, parts.username);
    return user;
  };
}

export type LoginCheck = ReturnType<typeof createLoginCheck>;
