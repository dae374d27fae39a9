// The bearer check of one API (docs/api-reference.md 3.4, 3.5; RFC 6750): every route declares the scope it needs.
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import fp from 'fastify-plugin';
import { ForbiddenError, ProblemError, UnauthorizedError } from '../errors.js';
import { DEPRECATIONS, deprecationHeaders, removalNotice } from '../shared/deprecations.js';
import type { Api } from '../shared/scopes.js';
import { ACCESS_TOKEN_REFUSALS, InvalidAccessTokenError, type AccessTokenClaims } from '../services/oauth/access-token.js';
import type { AccessTokenVerifier } from '../services/oauth/access-token-verifier.service.js';
import { routeConfig } from './route-config.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The scope a route requires; every route of an API must declare one (checked at start). */
    scope?: string;
  }
  interface FastifyRequest {
    /** The verified access token of the caller. */
    auth: AccessTokenClaims;
    /** Why the bearer check refused the request (401 or 403); thrown by the route's own onRequest hook. */
    authFailure: ProblemError | null;
  }
}

export interface BearerAuthOptions {
  audience: Api;
  tokens: Pick<AccessTokenVerifier, 'verifyAccessToken'>;
}

/** RFC 6750 section 2.1: `Bearer` (any case), one space or more, a b64token. */
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*)$/i;

export function bearerChallenge(realm: string, error?: { code: string; description?: string; scope?: string }): string {
  const parts = [`realm="${realm}"`];
  if (error) {
    parts.push(`error="${error.code}"`);
    if (error.description) parts.push(`error_description="${error.description.replaceAll('"', "'")}"`);
    if (error.scope) parts.push(`scope="${error.scope}"`);
  }
  return `Bearer ${parts.join(', ')}`;
}

export default fp(
  async function bearerAuth(app: FastifyInstance, options: BearerAuthOptions) {
    const realm = options.audience;
    app.decorateRequest('auth', null as unknown as AccessTokenClaims);
    app.decorateRequest('authFailure', null);

    /**
     * The refusal itself, a route-level hook: Fastify runs it after every instance-level onRequest hook, so the rate
     * limit (registered after this plugin) counts a failed authentication against its address before it is refused
     * (docs/security-cases.md G46). Fail-closed: a request without verified claims never reaches validation or a handler.
     */
    function refuseUnauthenticated(request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void): void {
      // Callback style: an async hook costs a promise on every request, and this one awaits nothing.
      if (request.authFailure) return done(request.authFailure);
      if (!request.auth) return done(new UnauthorizedError('This API requires an access token.', bearerChallenge(realm)));
      done();
    }

    // Auth is declared, not matched: a route of this API without a scope is a programming error.
    app.addHook('onRoute', (route) => {
      const scope = (route.config as { scope?: unknown } | undefined)?.scope;
      if (typeof scope !== 'string' || scope.length === 0) {
        throw new Error(`Route ${route.method} ${route.url} of the ${realm} API declares no scope`);
      }
      const hooks = route.onRequest;
      route.onRequest = [...(Array.isArray(hooks) ? hooks : hooks ? [hooks] : []), refuseUnauthenticated];
    });

    const tokenUrl = options.audience === 'accessapi' ? '/oauth2/token' : '/oauth/token';
    /**
     * The last Authorization header that had the Bearer form, and its token: a client sends the same header on request
     * after request, and comparing it costs less than matching the pattern over its ~700 characters again.
     */
    let lastHeader: string | undefined;
    let lastToken = '';

    /** The bearer token of the request, or the refusal of an Authorization header without one. */
    function bearerToken(request: FastifyRequest): string | ProblemError {
      const header = request.headers.authorization;
      if (header !== undefined && header === lastHeader) return lastToken;
      if (header === undefined || header.trim() === '') {
        return new UnauthorizedError(
          `This API requires an access token: Authorization: Bearer <token> (obtain one from POST ${tokenUrl}).`,
          bearerChallenge(realm),
        );
      }
      if (/^Basic(\s|$)/i.test(header)) {
        // docs/api-reference.md 3.5: Basic was removed on 01.01.2019; it carries no bearer token, so the challenge has no error code.
        // Like every removed interface (docs/api-reference.md 4.4) the answer names the date (`Sunset`, RFC 8594) and the successor
        // (`Link: </oauth/token>; rel="successor-version"`).
        const basicAuth = DEPRECATIONS.basicAuth;
        return new UnauthorizedError(removalNotice(basicAuth), bearerChallenge(realm), deprecationHeaders(basicAuth, false));
      }
      const match = BEARER.exec(header);
      if (!match) {
        return new UnauthorizedError(
          'The Authorization header is not of the form `Bearer <token>`.',
          bearerChallenge(realm, { code: 'invalid_token', description: 'malformed Authorization header' }),
        );
      }
      lastHeader = header;
      lastToken = match[1]!;
      return lastToken;
    }

    /** The 401 for a token the verifier refused; any other failure (the key store unreachable) is returned as it is. */
    function tokenRefusal(error: unknown): unknown {
      if (!(error instanceof InvalidAccessTokenError)) return error;
      const reason = ACCESS_TOKEN_REFUSALS[error.reason];
      const remedy = error.reason === 'wrong_audience' ? `Obtain a token for this API from POST ${tokenUrl}.` : 'Obtain a new one.';
      return new UnauthorizedError(
        `${reason[0]!.toUpperCase()}${reason.slice(1)}. ${remedy}`,
        bearerChallenge(realm, { code: 'invalid_token', description: reason }),
      );
    }

    /** Who made a request, on every log line it writes (ids only, never a token): one object per verified token. */
    const logBindings = new WeakMap<AccessTokenClaims, Readonly<Record<string, string>>>();
    function bindingsOf(claims: AccessTokenClaims): Readonly<Record<string, string>> {
      let bindings = logBindings.get(claims);
      if (bindings === undefined) {
        bindings = Object.freeze({ tenantId: claims.tenantId, clientId: claims.clientId, ...(claims.userId ? { userId: claims.userId } : {}) });
        logBindings.set(claims, bindings);
      }
      return bindings;
    }

    /** Takes verified claims; the refusal when they lack the route's scope. */
    function accept(request: FastifyRequest, claims: AccessTokenClaims, scope: string): ForbiddenError | null {
      // Set before the scope check: a 403 is counted against its client's rate limit (refused by the route's hook).
      request.auth = claims;
      (request.log as FastifyBaseLogger & Pick<Logger, 'setBindings'>).setBindings(bindingsOf(claims));
      if (claims.scopes.has(scope)) return null;
      return new ForbiddenError(`This request needs the scope ${scope}.`, {
        'www-authenticate': bearerChallenge(realm, { code: 'insufficient_scope', scope }),
      });
    }

    /** A refusal waits for refuseUnauthenticated; an outage (the key store unreachable) answers at once. */
    function settle(request: FastifyRequest, error: unknown, done: (error?: Error) => void): void {
      if (!(error instanceof ProblemError) || (error.status !== 401 && error.status !== 403)) {
        // A falsy error would tell Fastify the hook succeeded; the async hook this was made a 500 of it.
        return done(error ? (error as Error) : new Error('The access token check failed without a reason.'));
      }
      request.authFailure = error;
      done();
    }

    // Callback style: the verification's own promise is the only one a request pays for here.
    app.addHook('onRequest', (request, _reply, done) => {
      const config = routeConfig(request);
      // Unmatched URLs (404) have no route config; they stay 404 for everyone.
      if (!config.url) return done();
      const scope = config.scope;
      if (!scope) return settle(request, new ForbiddenError('This route declares no scope.'), done);
      const token = bearerToken(request);
      if (typeof token !== 'string') return settle(request, token, done);
      // A throw inside these callbacks would reject a promise no one awaits: the request would never be answered and
      // the rejection would go unhandled. Each outcome is worked out inside a try, and done is called once, outside it.
      options.tokens.verifyAccessToken(token, options.audience).then(
        (claims) => {
          let refusal: ForbiddenError | null;
          try {
            refusal = accept(request, claims, scope);
          } catch (error) {
            return settle(request, error, done);
          }
          if (refusal === null) done();
          else settle(request, refusal, done);
        },
        (error: unknown) => {
          let refusal: unknown;
          try {
            refusal = tokenRefusal(error);
          } catch (thrown) {
            refusal = thrown;
          }
          settle(request, refusal, done);
        },
      );
    });
  },
  { name: 'bearer-auth' },
);
