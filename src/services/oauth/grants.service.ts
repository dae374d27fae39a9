// The OAuth 2.0 grants (docs/api-reference.md 3.1–3.2): client credentials, password with its lockout, refresh with rotation.
import { hash, randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Database, Queryable } from '../../db/database.js';
import { deleteStaleLoginAttempts } from '../../db/repositories/login-failure.repo.js';
import { pruneEachTenant } from '../retention.js';
import { consumeAuthorizationCode, findAuthorizationCode } from '../../db/repositories/authorization-code.repo.js';
import { findUserById } from '../../db/repositories/user.repo.js';
import { consumeRefreshToken, findRefreshToken, insertRefreshToken } from '../../db/repositories/refresh-token.repo.js';
import { OAuthError } from '../../errors.js';
import type { AuthenticatedClient } from './client.service.js';
import type { Clock } from '../context.js';
import { digestsEqual, randomToken, sha256 } from '../../shared/crypto.js';
import type { AccessTokenKeyService } from '../keys/access-token-keys.service.js';
import type { DomainMetrics } from '../domain-metrics.js';
import type { RevocationService } from './revoked-access-tokens.service.js';
import {
  DECOMMISSIONED_CLIENT_SCOPES,
  DEVICE_SCOPES,
  isAccessScope,
  isKnownScope,
  isOperatorScope,
  ROLE_SCOPES,
  type Api,
} from '../../shared/scopes.js';
import type { UserService } from './user.service.js';
import { createLoginCheck, splitLogin } from './login.js';
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

// The split moved to login.ts with the rest of the login check; tests and the CLI keep importing it from here.
export { splitLogin };

const INVALID_CODE = 'The authorization code is invalid, expired, used, or was issued to another client or redirect URI.';
/** Both the Operator and the Access API accept a console sign-in (docs/api-reference.md 13). */
const CONSOLE_AUDIENCE: Api[] = ['operatorapi', 'accessapi'];

/** RFC 7636 4.1: 43 to 128 characters of [A-Z] / [a-z] / [0-9] / "-" / "." / "_" / "~". */
const CODE_VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;

/** RFC 7636 4.6: S256 compares BASE64URL(SHA-256(ASCII(code_verifier))) with the stored challenge, in constant time. */
function verifierMatches(verifier: string, challenge: string): boolean {
  if (!CODE_VERIFIER.test(verifier)) return false;
  // CODE_VERIFIER allows ASCII only, whose UTF-8 is its ASCII.
  const computed = hash('sha256', verifier, 'base64url');
  return digestsEqual(sha256(computed), sha256(challenge));
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
  const { db, clock, revocations } = options;
  const issue = createAccessTokenIssuer(options);
  const accessTokenTtlMs = options.accessTokenTtlSeconds * 1000;
  const family: RefreshFamilyDependencies = { db, clock, revocations, accessTokenTtlMs };
  const checkLogin = createLoginCheck(options);
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

  /** docs/api-reference.md 13: the scopes of the user's console role now; null without a role (or a user). */
  async function roleScopesOf(tx: Queryable, tenantId: string, userId: string): Promise<string[] | null> {
    const user = await findUserById(tx, tenantId, userId);
    return user?.role ? [...ROLE_SCOPES[user.role]] : null;
  }

  /**
   * Deletes the lockout rows whose window and lock have both passed (they count for nothing any more), a tenant at a
   * time in bounded batches (services/retention.ts).
   */
  function pruneLoginFailures(): Promise<number> {
    const now = clock();
    return pruneEachTenant(db, (tenantId, limit) => deleteStaleLoginAttempts(db, tenantId, now, now - options.lockout.windowMs, limit));
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
      const user = await checkLogin({ tenantId: client.tenantId, clientId: client.clientId }, parts, password);
      if (!user) throw new OAuthError('invalid_grant', INVALID_LOGIN);

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
        // docs/api-reference.md 13: a console sign-in carries the scopes of the role its user holds now; without a
        // role it ends (rolled back: the token stays unused, and works again if the role comes back).
        const covered = client.isPublic ? await roleScopesOf(tx, client.tenantId, record.userId) : record.scopes;
        if (!covered) throw new OAuthError('invalid_grant', INVALID_REFRESH);
        const scopes = requested === undefined ? covered : requested;
        const widened = scopes.filter((scope) => !covered.includes(scope));
        if (widened.length > 0 || scopes.length === 0) {
          // Rolls the consumption back: a refused scope must not cost the client its refresh token.
          throw new OAuthError(
            'invalid_scope',
            scopes.length === 0 ? 'The scope parameter is empty.' : `The refresh token does not cover: ${widened.join(' ')}.`,
          );
        }
        const next = await newRefreshToken(tx, client, record.userId, record.familyId, covered);
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
        audience: client.isPublic ? CONSOLE_AUDIENCE : ['accessapi'],
        scopes: outcome.rotated.scopes,
        userId: outcome.record.userId,
        familyId: outcome.record.familyId,
      });
      return response(token, outcome.rotated.scopes, outcome.rotated.next);
    },

    /**
     * RFC 6749 4.1.3 with RFC 7636 4.6 (docs/api-reference.md 13): a public client exchanges its code, once, with the
     * redirect URI of the authorization request and the PKCE verifier. Every refusal is the same `invalid_grant`, and
     * the code is spent by it. A code presented again revokes the tokens its first exchange issued (RFC 9700 4.2.1).
     */
    async authorizationCode(client: AuthenticatedClient, code: string, redirectUri: string, verifier: string): Promise<TokenResponse> {
      if (!client.isPublic) {
        throw new OAuthError('unauthorized_client', 'This client may not use the authorization_code grant.');
      }
      const codeHash = sha256(code);
      const now = clock();
      const outcome = await db.transaction(async (tx) => {
        const record = await consumeAuthorizationCode(tx, client.tenantId, codeHash, now);
        if (!record) return { record: null, issued: null };
        const valid =
          record.clientId === client.clientId &&
          record.expiresAt > now &&
          record.redirectUri === redirectUri &&
          verifierMatches(verifier, record.codeChallenge);
        const scopes = valid ? await roleScopesOf(tx, client.tenantId, record.userId) : null;
        // Returned, not thrown: the code stays spent (one guess per code at its verifier).
        if (!scopes) return { record, issued: null };
        const refreshToken = await newRefreshToken(tx, client, record.userId, record.familyId, scopes);
        return { record, issued: { scopes, refreshToken } };
      });
      if (!outcome.record) {
        const existing = await findAuthorizationCode(db, client.tenantId, codeHash);
        if (existing && existing.usedAt !== null && existing.clientId === client.clientId) {
          options.log.warn({ familyId: existing.familyId }, 'authorization code reused; revoking what it issued');
          await revokeFamily(family, existing, 'token.code_reuse', `client:${client.clientId}`);
        }
        throw new OAuthError('invalid_grant', INVALID_CODE);
      }
      if (!outcome.issued) throw new OAuthError('invalid_grant', INVALID_CODE);
      const { token } = await issue({
        client,
        subject: outcome.record.userId,
        audience: CONSOLE_AUDIENCE,
        scopes: outcome.issued.scopes,
        userId: outcome.record.userId,
        familyId: outcome.record.familyId,
      });
      return response(token, outcome.issued.scopes, outcome.issued.refreshToken);
    },

    checkLogin,

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
