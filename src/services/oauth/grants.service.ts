// The OAuth 2.0 grants (docs/api-reference.md 3.1–3.2): client credentials, password with its lockout, refresh with rotation.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Database, Queryable } from '../../db/database.js';
import {
  clearLoginAttempts,
  countLoginAttempt,
  deleteStaleLoginAttempts,
} from '../../db/repositories/login-failure.repo.js';
import { consumeRefreshToken, findRefreshToken, insertRefreshToken } from '../../db/repositories/refresh-token.repo.js';
import { OAuthError } from '../../errors.js';
import { recordChange } from '../audit.service.js';
import type { AuthenticatedClient } from './client.service.js';
import type { Clock } from '../context.js';
import { randomToken, sha256 } from '../../shared/crypto.js';
import type { AccessTokenKeyService } from '../keys/access-token-keys.service.js';
import type { DomainMetrics } from '../domain-metrics.js';
import type { RevocationService } from './revoked-access-tokens.service.js';
import { DECOMMISSIONED_CLIENT_SCOPES, DEVICE_SCOPES, isAccessScope, isKnownScope, isOperatorScope, type Api } from '../../shared/scopes.js';
import { MAX_USERNAME_LENGTH, type UserService } from './user.service.js';
import { createAccessTokenIssuer } from './access-token.js';
import { revokeFamily, type RefreshFamilyDependencies } from './refresh-family.js';

export interface GrantServiceOptions {
  db: Database;
  clock: Clock;
  log: Logger;
  issuer: string;
  keys: AccessTokenKeyService;
  users: UserService;
  revocations: RevocationService;
  /** Counts refused logins and lockouts (services/domain-metrics.ts). */
  metrics: DomainMetrics;
  accessTokenTtlSeconds: number;
  refreshTokenTtlSeconds: number;
  lockout: { threshold: number; windowMs: number; durationMs: number };
}

/** RFC 6749 section 5.1. */
export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  scope: string;
  refresh_token?: string;
}

const INVALID_LOGIN = 'The username or password is wrong.';
const INVALID_REFRESH = 'The refresh token is invalid, expired, revoked or was issued to another client.';
/** How often rows of the lockout whose window and lock have both passed are deleted. */
const LOGIN_FAILURE_SWEEP_MS = 15 * 60_000;

/** `USER@TENANT`, split on the last `@` (docs/api-reference.md 3.2); null when either part is empty. */
export function splitLogin(login: string): { username: string; tenantName: string } | null {
  const at = login.lastIndexOf('@');
  if (at <= 0 || at === login.length - 1) return null;
  return { username: login.slice(0, at), tenantName: login.slice(at + 1) };
}

/** requested ⊆ grantable, else `invalid_scope`; nothing requested means everything grantable. */
function grantScopes(requested: string[] | undefined, grantable: string[]): string[] {
  if (requested === undefined) return grantable;
  const allowed = new Set(grantable);
  const refused = requested.filter((scope) => !allowed.has(scope));
  if (refused.length > 0) {
    const unknown = refused.filter((scope) => !isKnownScope(scope));
    throw new OAuthError(
      'invalid_scope',
      unknown.length > 0
        ? `Unknown scope: ${unknown.join(' ')}.`
        : `The client may not request: ${refused.join(' ')}.`,
    );
  }
  if (requested.length === 0) throw new OAuthError('invalid_scope', 'The scope parameter is empty.');
  return requested;
}

export function createGrantService(options: GrantServiceOptions) {
  const { db, clock, users, revocations, metrics } = options;
  const issue = createAccessTokenIssuer(options);
  const accessTokenTtlMs = options.accessTokenTtlSeconds * 1000;
  const family: RefreshFamilyDependencies = { db, clock, revocations, accessTokenTtlMs };
  let sweep: NodeJS.Timeout | null = null;

  function response(token: string, scopes: string[], refreshToken?: string): TokenResponse {
    return {
      access_token: token,
      token_type: 'Bearer',
      expires_in: options.accessTokenTtlSeconds,
      scope: scopes.join(' '),
      ...(refreshToken ? { refresh_token: refreshToken } : {}),
    };
  }

  /** Scopes a client may use with the password and refresh grants: its Access API scopes. Bound clients have none. */
  function accessGrantable(client: AuthenticatedClient): string[] {
    if (client.mobileDeviceId || client.securedObjectId) return [];
    return client.scopes.filter(isAccessScope);
  }

  async function newRefreshToken(
    tx: Queryable,
    client: AuthenticatedClient,
    userId: string,
    familyId: string,
    scopes: string[],
  ): Promise<string> {
    const refreshToken = randomToken(32);
    const now = clock();
    await insertRefreshToken(tx, {
      tokenHash: sha256(refreshToken),
      familyId,
      tenantId: client.tenantId,
      clientId: client.clientId,
      userId,
      scopes,
      createdAt: now,
      expiresAt: now + options.refreshTokenTtlSeconds * 1000,
    });
    return refreshToken;
  }

  /** Deletes the lockout rows whose window and lock have both passed: they count for nothing any more. */
  function pruneLoginFailures(): Promise<number> {
    const now = clock();
    return deleteStaleLoginAttempts(db, now, now - options.lockout.windowMs);
  }

  return {
    /** docs/api-reference.md 3.1 and 3.4: Operator API scopes; `deviceapi` joins the audience with `sync`/`tokens:download`. */
    async clientCredentials(client: AuthenticatedClient, requested: string[] | undefined): Promise<TokenResponse> {
      const grantable = client.scopes.filter(isOperatorScope);
      if (grantable.length === 0) {
        throw new OAuthError('unauthorized_client', 'This client may not use the client_credentials grant.');
      }
      let scopes = grantScopes(requested, grantable);
      if (client.decommissionedSeq !== null) {
        // docs/api-reference.md 4.1: the client's lock was deleted; what it asked for is narrowed to what it may still do.
        scopes = scopes.filter((scope) => DECOMMISSIONED_CLIENT_SCOPES.has(scope));
        if (scopes.length === 0) {
          throw new OAuthError(
            'invalid_scope',
            `The secured object this client is bound to was deleted; only the scope ${[...DECOMMISSIONED_CLIENT_SCOPES].join(' ')} remains.`,
          );
        }
      }
      const bound = Boolean(client.mobileDeviceId || client.securedObjectId);
      const audience: Api[] = bound
        ? ['deviceapi']
        : scopes.some((scope) => DEVICE_SCOPES.includes(scope))
          ? ['operatorapi', 'deviceapi']
          : ['operatorapi'];
      const { token } = await issue({ client, subject: client.clientId, audience, scopes });
      return response(token, scopes);
    },

    /** docs/api-reference.md 3.2: `USER@TENANT`; every failure, including a locked login, answers the same `invalid_grant`. */
    async password(
      client: AuthenticatedClient,
      login: string,
      password: string,
      requested: string[] | undefined,
    ): Promise<TokenResponse> {
      const grantable = accessGrantable(client);
      if (grantable.length === 0) {
        throw new OAuthError('unauthorized_client', 'This client may not use the password grant.');
      }
      const parts = splitLogin(login);
      if (!parts) throw new OAuthError('invalid_request', 'The username must have the form USER@TENANT.');
      const scopes = grantScopes(requested, grantable);
      if (login.includes('\u0000')) {
        // PostgreSQL text cannot hold NUL, so no such login exists; looking it up would fail with a 500.
        await users.spendComparison(password);
        metrics.loginFailed('invalid_credentials');
        throw new OAuthError('invalid_grant', INVALID_LOGIN);
      }

      // A username the API never accepts (src/schemas/user.ts) names nobody and is not stored.
      if (parts.username.length > MAX_USERNAME_LENGTH) {
        await users.spendComparison(password);
        metrics.loginFailed('invalid_credentials');
        throw new OAuthError('invalid_grant', INVALID_LOGIN);
      }
      // The attempt counts before the password is checked, atomically, so a burst of parallel guesses cannot slip
      // past the threshold (G40): beyond it the answer is the same, after the same work, without looking.
      // docs/api-reference.md 3.2: a client names only users of its own tenant. Another tenant's login is not counted (null): it
      // is as wrong as a bad password, costs a comparison too, and never counts against that user (G41).
      const now = clock();
      const { threshold } = options.lockout;
      const attempt = await countLoginAttempt(db, {
        tenantId: client.tenantId,
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
        throw new OAuthError('invalid_grant', INVALID_LOGIN);
      }
      const user = await users.verifyPassword(parts.tenantName, parts.username, password);
      if (!user || user.tenantId !== client.tenantId) {
        if (attempt.attempts === threshold) {
          // Exactly one attempt reaches the threshold: the user's tenant sees the lock once (docs/api-reference.md 7.5).
          const context = { tenantId: client.tenantId, actor: `client:${client.clientId}`, requestId: null };
          await recordChange(db, context, now, 'login.locked', `login:${parts.username}@${parts.tenantName}`);
          metrics.loginLocked();
        }
        metrics.loginFailed('invalid_credentials');
        // Slowed down before refused (docs/api-reference.md 3.2): 200 ms, 400 ms, … up to 2 s.
        if (attempt.attempts >= 2) await sleep(Math.min(100 * 2 ** (attempt.attempts - 1), 2000));
        throw new OAuthError('invalid_grant', INVALID_LOGIN);
      }
      // Success resets the count (docs/security-cases.md 11), including a lock this very attempt started.
      await clearLoginAttempts(db, client.tenantId, parts.username);

      const familyId = randomUUID();
      const { token } = await issue({ client, subject: user.id, audience: ['accessapi'], scopes, userId: user.id, familyId });
      const refreshToken = scopes.includes('offline')
        ? await newRefreshToken(db, client, user.id, familyId, scopes)
        : undefined;
      return response(token, scopes, refreshToken);
    },

    /** docs/api-reference.md 3.2: rotation on every use; a reused token revokes its family; the scope cannot widen. */
    async refresh(client: AuthenticatedClient, refreshToken: string, requested: string[] | undefined): Promise<TokenResponse> {
      if (accessGrantable(client).length === 0) {
        throw new OAuthError('unauthorized_client', 'This client may not use the refresh_token grant.');
      }
      const tokenHash = sha256(refreshToken);
      const outcome = await db.transaction(async (tx) => {
        const record = await consumeRefreshToken(tx, client.tenantId, tokenHash, client.clientId, clock());
        if (!record) return { record: null, rotated: null };
        const scopes = requested === undefined ? record.scopes : requested;
        const widened = scopes.filter((scope) => !record.scopes.includes(scope));
        if (widened.length > 0 || scopes.length === 0) {
          // Rolls the consumption back: a refused scope must not cost the client its refresh token.
          throw new OAuthError(
            'invalid_scope',
            scopes.length === 0 ? 'The scope parameter is empty.' : `The refresh token does not cover: ${widened.join(' ')}.`,
          );
        }
        const next = await newRefreshToken(tx, client, record.userId, record.familyId, record.scopes);
        return { record, rotated: { scopes, next } };
      });
      if (!outcome.record || !outcome.rotated) {
        const existing = await findRefreshToken(db, client.tenantId, tokenHash);
        if (existing && existing.clientId === client.clientId && existing.usedAt !== null && existing.revokedAt === null) {
          options.log.warn({ familyId: existing.familyId }, 'refresh token reused; revoking its family');
          await revokeFamily(family, existing, 'token.refresh_reuse', `client:${client.clientId}`);
        }
        throw new OAuthError('invalid_grant', INVALID_REFRESH);
      }
      const { token } = await issue({
        client,
        subject: outcome.record.userId,
        audience: ['accessapi'],
        scopes: outcome.rotated.scopes,
        userId: outcome.record.userId,
        familyId: outcome.record.familyId,
      });
      return response(token, outcome.rotated.scopes, outcome.rotated.next);
    },

    pruneLoginFailures,

    /** Starts the periodic prune: without it every guessed username would stay in the table for good. */
    start(): void {
      sweep = setInterval(() => {
        pruneLoginFailures().catch((error: unknown) => options.log.warn({ err: error }, 'login failure prune failed'));
      }, LOGIN_FAILURE_SWEEP_MS);
      sweep.unref();
    },

    stop(): void {
      if (sweep) clearInterval(sweep);
      sweep = null;
    },
  };
}

export type GrantService = ReturnType<typeof createGrantService>;
