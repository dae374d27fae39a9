// The authorization endpoint (RFC 6749 4.1, RFC 7636, RFC 9700 2.1; docs/api-reference.md 13): which requests it
// answers, the sign-in form's CSRF token, and the authorization codes it issues.
import { createHmac, randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Database } from '../../db/database.js';
import { insertAuthorizationCode, pruneAuthorizationCodes } from '../../db/repositories/authorization-code.repo.js';
import { digestsEqual, randomToken, sha256 } from '../../shared/crypto.js';
import type { Clock } from '../context.js';
import { pruneEachTenant, sweepPeriodically } from '../retention.js';
import type { AuthenticatedClient, ClientService } from './client.service.js';
import { splitLogin, type LoginCheck } from './login.js';

/** docs/api-reference.md 13: a code is valid for 60 s. */
export const AUTHORIZATION_CODE_TTL_MS = 60_000;
/**
 * A used or expired code is kept this long after it expired, so that presenting it again still finds what its first
 * exchange issued and revokes it (RFC 9700 4.2.1); then it is pruned.
 */
const SPENT_CODE_RETENTION_MS = 24 * 3600_000;

/** RFC 7636 4.2: BASE64URL(SHA-256(verifier)) is 43 characters of the base64url alphabet. */
const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;
/** A `state` the server carries back untouched; bounded so that a redirect stays a reasonable URL. */
const MAX_STATE_LENGTH = 1024;
const MAX_PARAMETER_LENGTH = 2048;

export type AuthorizationParameters = Record<string, string | string[] | undefined>;

/** A request the endpoint can act on: a public client, its exact redirect URI, an S256 challenge. */
export interface AuthorizationRequest {
  client: AuthenticatedClient;
  redirectUri: string;
  codeChallenge: string;
  state?: string;
}

/**
 * What an authorization request comes to (RFC 6749 4.1.2.1): an error shown on the page when the client or the
 * redirect URI cannot be trusted (never a redirect to an unverified URI), an error sent back to the verified redirect
 * URI otherwise, or a request to act on.
 */
export type AuthorizationOutcome =
  | { kind: 'error-page'; description: string }
  | { kind: 'error-redirect'; redirectUri: string; error: 'invalid_request' | 'unsupported_response_type'; description: string; state?: string }
  | { kind: 'valid'; request: AuthorizationRequest };

export interface AuthorizationServiceOptions {
  db: Database;
  clock: Clock;
  log: Logger;
  /** PUBLIC_URL: a registered redirect URI starting with `/` is relative to it. */
  issuer: string;
  clients: ClientService;
  checkLogin: LoginCheck;
  /** Signs the sign-in form's CSRF tokens; derived from SECRETS_KEY, so every instance checks every other's. */
  csrfKey: Buffer;
}

/** The registered redirect URI as the client must send it, byte for byte (RFC 9700 2.1). */
export function registeredRedirectUri(client: Pick<AuthenticatedClient, 'redirectUri'>, issuer: string): string | null {
  if (client.redirectUri === null) return null;
  return client.redirectUri.startsWith('/') ? `${issuer.replace(/\/+$/, '')}${client.redirectUri}` : client.redirectUri;
}

/** One value, or undefined; repeated is `null` (RFC 6749 3.1: parameters must not be included more than once). */
function one(parameters: AuthorizationParameters, name: string): string | null | undefined {
  const value = parameters[name];
  if (Array.isArray(value)) return null;
  return value;
}

export function createAuthorizationService(options: AuthorizationServiceOptions) {
  const { db, clock, clients, issuer } = options;
  let stopSweep: (() => void) | null = null;

  function csrfTokenFor(secret: string): string {
    return createHmac('sha256', options.csrfKey).update(`authorize-csrf:${secret}`).digest('base64url');
  }

  return {
    /** RFC 6749 4.1.1 and 4.1.2.1, RFC 7636 4.3 and 4.4.1: the checks, in the order that decides where an error goes. */
    async validate(parameters: AuthorizationParameters): Promise<AuthorizationOutcome> {
      const clientId = one(parameters, 'client_id');
      if (!clientId) return { kind: 'error-page', description: 'The request names no client (client_id), or names it twice.' };
      const client = clientId.length <= 256 ? await clients.findPublic(clientId) : null;
      if (!client) return { kind: 'error-page', description: 'The client (client_id) is unknown or may not sign users in here.' };
      const redirectUri = one(parameters, 'redirect_uri');
      const registered = registeredRedirectUri(client, issuer);
      if (!redirectUri || registered === null || redirectUri !== registered) {
        return { kind: 'error-page', description: 'The redirect URI (redirect_uri) is missing or is not the one the client registered.' };
      }
      const state = one(parameters, 'state');
      const refuse = (error: 'invalid_request' | 'unsupported_response_type', description: string): AuthorizationOutcome => ({
        kind: 'error-redirect',
        redirectUri,
        error,
        description,
        ...(typeof state === 'string' && state.length <= MAX_STATE_LENGTH ? { state } : {}),
      });
      for (const [name, value] of Object.entries(parameters)) {
        if (Array.isArray(value)) return refuse('invalid_request', `The parameter ${name} is repeated.`);
        if (typeof value === 'string' && value.length > MAX_PARAMETER_LENGTH) return refuse('invalid_request', `The parameter ${name} is too long.`);
      }
      if (state === null || (state !== undefined && (state.length === 0 || state.length > MAX_STATE_LENGTH))) {
        return refuse('invalid_request', `The state parameter must have 1 to ${MAX_STATE_LENGTH} characters.`);
      }
      const responseType = one(parameters, 'response_type');
      if (!responseType) return refuse('invalid_request', 'The parameter response_type is missing.');
      if (responseType !== 'code') return refuse('unsupported_response_type', 'Only response_type=code is supported.');
      // RFC 9700 2.1.1: PKCE with S256; plain would send the verifier's equal through the browser.
      const method = one(parameters, 'code_challenge_method');
      if (method !== 'S256') return refuse('invalid_request', 'PKCE is required with code_challenge_method=S256 (RFC 7636); plain is not accepted.');
      const challenge = one(parameters, 'code_challenge');
      if (!challenge || !S256_CHALLENGE.test(challenge)) {
        return refuse('invalid_request', 'The code_challenge is missing or is not BASE64URL(SHA-256(code_verifier)) (RFC 7636 section 4.2).');
      }
      return { kind: 'valid', request: { client, redirectUri, codeChallenge: challenge, ...(state !== undefined ? { state } : {}) } };
    },

    /**
     * The sign-in form's CSRF pair: a random secret for a cookie only this endpoint receives, and the token the form
     * carries, the secret's HMAC. A form posted from another site has neither (docs/api-reference.md 13).
     * An existing secret is kept, so a form re-shown after an error still matches a form open in another tab.
     */
    csrfPair(existingSecret: string | undefined): { secret: string; token: string } {
      const secret = existingSecret && /^[A-Za-z0-9_-]{43}$/.test(existingSecret) ? existingSecret : randomToken(32);
      return { secret, token: csrfTokenFor(secret) };
    },

    csrfValid(secret: string | undefined, token: string | undefined): boolean {
      if (!secret || !token) return false;
      return digestsEqual(sha256(csrfTokenFor(secret)), sha256(token));
    },

    /**
     * Checks the login with the password grant's rules and lockout (docs/api-reference.md 3.2) and answers a new code,
     * or null for every failure alike: wrong password, unknown user, locked login, a user without a console role.
     */
    async signIn(request: AuthorizationRequest, login: string, password: string): Promise<string | null> {
      const parts = splitLogin(login);
      if (!parts) return null;
      const { client } = request;
      const user = await options.checkLogin({ tenantId: client.tenantId, clientId: client.clientId }, parts, password);
      if (!user || user.role === null) return null;
      const code = randomToken(32);
      const now = clock();
      await insertAuthorizationCode(db, {
        tenantId: client.tenantId,
        codeHash: sha256(code),
        clientId: client.clientId,
        userId: user.id,
        redirectUri: request.redirectUri,
        codeChallenge: request.codeChallenge,
        familyId: randomUUID(),
        createdAt: now,
        expiresAt: now + AUTHORIZATION_CODE_TTL_MS,
      });
      return code;
    },

    /** Deletes codes spent or expired long enough ago, tenant by tenant. */
    pruneCodes(): Promise<number> {
      const before = clock() - SPENT_CODE_RETENTION_MS;
      return pruneEachTenant(db, (tenantId, limit) => pruneAuthorizationCodes(db, tenantId, before, limit));
    },

    start(): void {
      stopSweep = sweepPeriodically(() => this.pruneCodes(), options.log, 'authorization code');
    },

    stop(): void {
      stopSweep?.();
      stopSweep = null;
    },
  };
}

export type AuthorizationService = ReturnType<typeof createAuthorizationService>;
