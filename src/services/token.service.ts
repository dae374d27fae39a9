// The OAuth 2.0 grants (contract 3.1–3.4), access-token issuing and verification, revocation and introspection.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import type { Logger } from 'pino';
import type { Database, Queryable } from '../db/database.js';
import { appendAuditEvent } from '../db/repositories/audit.repo.js';
import {
  clearLoginAttempts,
  countLoginAttempt,
  deleteStaleLoginAttempts,
} from '../db/repositories/login-failure.repo.js';
import {
  consumeRefreshToken,
  findRefreshToken,
  insertRefreshToken,
  revokeRefreshFamily,
  type RefreshTokenRecord,
} from '../db/repositories/refresh-token.repo.js';
import { OAuthError } from '../errors.js';
import type { AuthenticatedClient } from './client.service.js';
import type { Clock } from './context.js';
import { randomToken, sha256 } from './crypto.js';
import { signCompactJws } from './jws.js';
import type { KeyService } from './key.service.js';
import type { RevocationService } from './revocation.service.js';
import { DEVICE_SCOPES, INTROSPECTION_SCOPE, isAccessScope, isKnownScope, isOperatorScope, type Api } from './scopes.js';
import { MAX_USERNAME_LENGTH, type UserService } from './user.service.js';

export interface TokenServiceOptions {
  db: Database;
  clock: Clock;
  log: Logger;
  issuer: string;
  keys: KeyService;
  users: UserService;
  revocations: RevocationService;
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

/** The verified claims of an access token (contract 3.4), as the APIs use them. */
export interface AccessTokenClaims {
  tokenId: string;
  tenantId: string;
  subject: string;
  clientId: string;
  userId?: string;
  familyId?: string;
  mobileDeviceId?: string;
  securedObjectId?: string;
  scopes: Set<string>;
  audience: string[];
  expiresAt: number;
  issuedAt: number;
}

export class InvalidAccessTokenError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidAccessTokenError';
  }
}

const ACCESS_TOKEN_ALGORITHMS = ['EdDSA', 'ES256'];
const ACCESS_TOKEN_TYPE = 'at+jwt';
const INVALID_LOGIN = 'The username or password is wrong.';
const INVALID_REFRESH = 'The refresh token is invalid, expired, revoked or was issued to another client.';
/** How often rows of the lockout whose window and lock have both passed are deleted. */
const LOGIN_FAILURE_SWEEP_MS = 15 * 60_000;

interface IssueInput {
  client: AuthenticatedClient;
  subject: string;
  audience: Api[];
  scopes: string[];
  userId?: string;
  familyId?: string;
}

/** `USER@TENANT`, split on the last `@` (contract 3.2); null when either part is empty. */
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

export function createTokenService(options: TokenServiceOptions) {
  const { db, clock, keys, users, revocations, issuer } = options;
  const ttlMs = options.accessTokenTtlSeconds * 1000;
  let sweep: NodeJS.Timeout | null = null;

  const getKey: JWTVerifyGetKey = async (header) => {
    if (typeof header.kid !== 'string' || header.kid.length > 100) throw new InvalidAccessTokenError('unknown key');
    const found = await keys.verificationKey(header.kid);
    if (!found || found.alg !== header.alg) throw new InvalidAccessTokenError('unknown key');
    return found.key;
  };

  async function issue(input: IssueInput): Promise<{ token: string; claims: JWTPayload }> {
    const now = clock();
    const iat = Math.floor(now / 1000);
    const claims: JWTPayload & Record<string, unknown> = {
      iss: issuer,
      sub: input.subject,
      aud: input.audience.length === 1 ? input.audience[0] : input.audience,
      client_id: input.client.clientId,
      tenant: input.client.tenantId,
      scope: input.scopes.join(' '),
      iat,
      exp: iat + options.accessTokenTtlSeconds,
      jti: randomUUID(),
      ...(input.familyId ? { sid: input.familyId } : {}),
      ...(input.client.mobileDeviceId ? { mobile_device_id: input.client.mobileDeviceId } : {}),
      ...(input.client.securedObjectId ? { secured_object_id: input.client.securedObjectId } : {}),
    };
    const signing = await keys.signingKey();
    const token = await signCompactJws(signing, ACCESS_TOKEN_TYPE, claims);
    return { token, claims };
  }

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

  /** Revokes a refresh family and the access tokens issued from it (RFC 9700 4.14.2). */
  async function revokeFamily(record: RefreshTokenRecord, action: string | null, actor: string): Promise<void> {
    await db.transaction(async (tx) => {
      await revokeRefreshFamily(tx, record.familyId, clock());
      await revocations.record(tx, 'family', record.familyId, clock() + ttlMs);
      if (action) {
        await appendAuditEvent(tx, {
          tenantId: record.tenantId,
          time: clock(),
          actor,
          action,
          target: `user:${record.userId}`,
          requestId: null,
        });
      }
    });
    await revocations.refresh();
  }

  /** Deletes the lockout rows whose window and lock have both passed: they count for nothing any more. */
  function pruneLoginFailures(): Promise<number> {
    const now = clock();
    return deleteStaleLoginAttempts(db, now, now - options.lockout.windowMs);
  }

  const looksLikeJwt = (token: string) => /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(token);

  /**
   * Tokens whose signature and claims were checked already, by their exact string: an operator backend reuses one
   * token for an hour, so the signature is checked once, not on every request. Expiry, audience and revocation are
   * still checked on every use; a different string (any changed byte) is a different key.
   */
  const verified = new Map<string, AccessTokenClaims>();
  const VERIFIED_CACHE_SIZE = 10_000;

  async function verifySignatureAndClaims(token: string): Promise<AccessTokenClaims> {
    // RFC 7515 7.1: unpadded base64url only. A padded or base64 spelling of a valid token is refused, not decoded.
    if (!looksLikeJwt(token)) throw new InvalidAccessTokenError('not a compact JWS');
    const known = verified.get(token);
    if (known && clock() < known.expiresAt) return known;
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, getKey, {
        issuer,
        algorithms: ACCESS_TOKEN_ALGORITHMS,
        typ: ACCESS_TOKEN_TYPE,
        requiredClaims: ['iss', 'sub', 'aud', 'exp', 'iat', 'jti'],
        currentDate: new Date(clock()),
      }));
    } catch (error) {
      throw new InvalidAccessTokenError(error instanceof Error ? error.message : 'invalid token');
    }
    const claims = payload as JWTPayload & Record<string, unknown>;
    if (
      typeof claims.client_id !== 'string' ||
      typeof claims.tenant !== 'string' ||
      typeof claims.scope !== 'string' ||
      typeof claims.jti !== 'string'
    ) {
      throw new InvalidAccessTokenError('missing claims');
    }
    const isUser = claims.sub !== claims.client_id;
    const result: AccessTokenClaims = {
      tokenId: claims.jti,
      tenantId: claims.tenant,
      subject: claims.sub!,
      clientId: claims.client_id,
      ...(isUser ? { userId: claims.sub! } : {}),
      ...(typeof claims.sid === 'string' ? { familyId: claims.sid } : {}),
      ...(typeof claims.mobile_device_id === 'string' ? { mobileDeviceId: claims.mobile_device_id } : {}),
      ...(typeof claims.secured_object_id === 'string' ? { securedObjectId: claims.secured_object_id } : {}),
      scopes: new Set(claims.scope.split(' ').filter(Boolean)),
      audience: Array.isArray(claims.aud) ? claims.aud : [claims.aud!],
      expiresAt: claims.exp! * 1000,
      issuedAt: claims.iat! * 1000,
    };
    if (verified.size >= VERIFIED_CACHE_SIZE) verified.delete(verified.keys().next().value!);
    verified.set(token, result);
    return result;
  }

  async function verify(token: string, audience?: Api): Promise<AccessTokenClaims> {
    const result = await verifySignatureAndClaims(token);
    // RFC 9068 4: a token is accepted only by the API named in its `aud`.
    if (audience && !result.audience.includes(audience)) throw new InvalidAccessTokenError('wrong audience');
    if (revocations.isRevoked({ clientId: result.clientId, userId: result.userId, familyId: result.familyId, jti: result.tokenId })) {
      throw new InvalidAccessTokenError('revoked');
    }
    return result;
  }

  return {
    /** Contract 3.1 and 3.4: Operator API scopes; `deviceapi` joins the audience with `sync`/`tokens:download`. */
    async clientCredentials(client: AuthenticatedClient, requested: string[] | undefined): Promise<TokenResponse> {
      const grantable = client.scopes.filter(isOperatorScope);
      if (grantable.length === 0) {
        throw new OAuthError('unauthorized_client', 'This client may not use the client_credentials grant.');
      }
      const scopes = grantScopes(requested, grantable);
      const bound = Boolean(client.mobileDeviceId || client.securedObjectId);
      const audience: Api[] = bound
        ? ['deviceapi']
        : scopes.some((scope) => DEVICE_SCOPES.includes(scope))
          ? ['operatorapi', 'deviceapi']
          : ['operatorapi'];
      const { token } = await issue({ client, subject: client.clientId, audience, scopes });
      return response(token, scopes);
    },

    /** Contract 3.2: `USER@TENANT`; every failure, including a locked login, answers the same `invalid_grant`. */
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
        throw new OAuthError('invalid_grant', INVALID_LOGIN);
      }

      // A username the API never accepts (src/schemas/user.ts) names nobody and is not stored.
      if (parts.username.length > MAX_USERNAME_LENGTH) {
        await users.spendComparison(password);
        throw new OAuthError('invalid_grant', INVALID_LOGIN);
      }
      // The attempt counts before the password is checked, atomically, so a burst of parallel guesses cannot slip
      // past the threshold (G40): beyond it the answer is the same, after the same work, without looking.
      // Contract 3.2: a client names only users of its own tenant. Another tenant's login is not counted (null): it
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
        throw new OAuthError('invalid_grant', INVALID_LOGIN);
      }
      const user = await users.verifyPassword(parts.tenantName, parts.username, password);
      if (!user || user.tenantId !== client.tenantId) {
        if (attempt.attempts === threshold) {
          // Exactly one attempt reaches the threshold: the user's tenant sees the lock once (contract 7.5).
          await appendAuditEvent(db, {
            tenantId: client.tenantId,
            time: now,
            actor: `client:${client.clientId}`,
            action: 'login.locked',
            target: `login:${parts.username}@${parts.tenantName}`,
            requestId: null,
          });
        }
        // Slowed down before refused (contract 3.2): 200 ms, 400 ms, … up to 2 s.
        if (attempt.attempts >= 2) await sleep(Math.min(100 * 2 ** (attempt.attempts - 1), 2000));
        throw new OAuthError('invalid_grant', INVALID_LOGIN);
      }
      // Success resets the count (SECURITY-CHECKLIST 11), including a lock this very attempt started.
      await clearLoginAttempts(db, client.tenantId, parts.username);

      const familyId = randomUUID();
      const { token } = await issue({ client, subject: user.id, audience: ['accessapi'], scopes, userId: user.id, familyId });
      const refreshToken = scopes.includes('offline')
        ? await newRefreshToken(db, client, user.id, familyId, scopes)
        : undefined;
      return response(token, scopes, refreshToken);
    },

    /** Contract 3.2: rotation on every use; a reused token revokes its family; the scope cannot widen. */
    async refresh(client: AuthenticatedClient, refreshToken: string, requested: string[] | undefined): Promise<TokenResponse> {
      if (accessGrantable(client).length === 0) {
        throw new OAuthError('unauthorized_client', 'This client may not use the refresh_token grant.');
      }
      const tokenHash = sha256(refreshToken);
      const outcome = await db.transaction(async (tx) => {
        const record = await consumeRefreshToken(tx, tokenHash, client.clientId, clock());
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
        const existing = await findRefreshToken(db, tokenHash);
        if (existing && existing.clientId === client.clientId && existing.usedAt !== null && existing.revokedAt === null) {
          options.log.warn({ familyId: existing.familyId }, 'refresh token reused; revoking its family');
          await revokeFamily(existing, 'token.refresh_reuse', `client:${client.clientId}`);
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

    /** RFC 7009: only the client's own tokens are revoked; anything else is a silent no-op. */
    async revoke(client: AuthenticatedClient, token: string): Promise<void> {
      if (looksLikeJwt(token)) {
        let claims: AccessTokenClaims;
        try {
          claims = await verify(token);
        } catch {
          return;
        }
        if (claims.clientId !== client.clientId) return;
        await db.transaction((tx) => revocations.record(tx, 'jti', claims.tokenId, claims.expiresAt));
        await revocations.refresh();
        return;
      }
      const record = await findRefreshToken(db, sha256(token));
      if (!record || record.clientId !== client.clientId || record.revokedAt !== null) return;
      await revokeFamily(record, null, `client:${client.clientId}`);
    },

    /**
     * RFC 7662: `{active: false}` for anything expired, revoked, unknown, or that this client may not learn about.
     * Contract 3.3 (RFC 7662 section 4 leaves the choice to the server): a client learns about the tokens issued to
     * itself; one holding `tokens:introspect`, a resource server, about any token of its tenant. A client bound to a
     * device or lock never learns about another client's token, scope or not: its secret lives on an end user's phone
     * or in a door (SECURITY-CHECKLIST G44). Refusals look exactly like an inactive token, so nobody learns that a
     * token exists from being refused.
     */
    async introspect(client: AuthenticatedClient, token: string): Promise<Record<string, unknown>> {
      const inactive = { active: false };
      const bound = Boolean(client.mobileDeviceId || client.securedObjectId);
      const seesTenant = !bound && client.scopes.includes(INTROSPECTION_SCOPE);
      const mayLearnAbout = (issuedTo: { tenantId: string; clientId: string }) =>
        issuedTo.tenantId === client.tenantId && (issuedTo.clientId === client.clientId || seesTenant);
      if (looksLikeJwt(token)) {
        let claims: AccessTokenClaims;
        try {
          claims = await verify(token);
        } catch {
          return inactive;
        }
        if (!mayLearnAbout(claims)) return inactive;
        return {
          active: true,
          token_type: 'Bearer',
          scope: [...claims.scopes].join(' '),
          client_id: claims.clientId,
          sub: claims.subject,
          aud: claims.audience.length === 1 ? claims.audience[0] : claims.audience,
          iss: issuer,
          exp: Math.floor(claims.expiresAt / 1000),
          iat: Math.floor(claims.issuedAt / 1000),
          jti: claims.tokenId,
          tenant: claims.tenantId,
        };
      }
      const record = await findRefreshToken(db, sha256(token));
      if (
        !record ||
        !mayLearnAbout(record) ||
        record.usedAt !== null ||
        record.revokedAt !== null ||
        record.expiresAt <= clock()
      ) {
        return inactive;
      }
      // No token_type: RFC 7662 2.2 means an access token type (RFC 6749 7.1), and a refresh token has none.
      return {
        active: true,
        scope: record.scopes.join(' '),
        client_id: record.clientId,
        sub: record.userId,
        iss: issuer,
        exp: Math.floor(record.expiresAt / 1000),
        iat: Math.floor(record.createdAt / 1000),
        tenant: record.tenantId,
      };
    },

    /** The bearer check (contract 3.4, RFC 9068 section 4): signature, `typ`, `iss`, `aud`, `exp`, revocation. */
    verifyAccessToken(token: string, audience: Api): Promise<AccessTokenClaims> {
      return verify(token, audience);
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

export type TokenService = ReturnType<typeof createTokenService>;
