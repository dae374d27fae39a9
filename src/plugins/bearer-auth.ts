// The bearer check of one API (contract 3.4, 3.5; RFC 6750): every route declares the scope it needs.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { ForbiddenError, UnauthorizedError } from '../errors.js';
import { DEPRECATIONS, deprecationHeaders, removalNotice } from '../services/deprecations.js';
import type { Api } from '../services/scopes.js';
import { InvalidAccessTokenError, type AccessTokenClaims, type TokenService } from '../services/token.service.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The scope a route requires; every route of an API must declare one (checked at start). */
    scope?: string;
  }
  interface FastifyRequest {
    /** The verified access token of the caller. */
    auth: AccessTokenClaims;
  }
}

export interface BearerAuthOptions {
  audience: Api;
  tokens: TokenService;
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

    // Auth is declared, not matched: a route of this API without a scope is a programming error.
    app.addHook('onRoute', (route) => {
      const scope = (route.config as { scope?: unknown } | undefined)?.scope;
      if (typeof scope !== 'string' || scope.length === 0) {
        throw new Error(`Route ${route.method} ${route.url} of the ${realm} API declares no scope`);
      }
    });

    async function authenticate(request: FastifyRequest): Promise<void> {
      const scope = request.routeOptions.config.scope;
      if (!scope) throw new ForbiddenError('This route declares no scope.');
      const header = request.headers.authorization;
      if (header === undefined || header.trim() === '') {
        throw new UnauthorizedError(
          `This API requires an access token: Authorization: Bearer <token> (obtain one from POST ${options.audience === 'accessapi' ? '/oauth2/token' : '/oauth/token'}).`,
          bearerChallenge(realm),
        );
      }
      if (/^Basic(\s|$)/i.test(header)) {
        // Contract 3.5: Basic was removed on 01.01.2019; it carries no bearer token, so the challenge has no error code.
        // Like every removed interface (contract 4.4) the answer names the date (`Sunset`, RFC 8594) and the successor
        // (`Link: </oauth/token>; rel="successor-version"`).
        const basicAuth = DEPRECATIONS.basicAuth;
        throw new UnauthorizedError(removalNotice(basicAuth), bearerChallenge(realm), deprecationHeaders(basicAuth, false));
      }
      const match = BEARER.exec(header);
      if (!match) {
        throw new UnauthorizedError(
          'The Authorization header is not of the form `Bearer <token>`.',
          bearerChallenge(realm, { code: 'invalid_token', description: 'malformed Authorization header' }),
        );
      }
      let claims: AccessTokenClaims;
      try {
        claims = await options.tokens.verifyAccessToken(match[1]!, options.audience);
      } catch (error) {
        if (!(error instanceof InvalidAccessTokenError)) throw error;
        throw new UnauthorizedError(
          'The access token is invalid, expired, revoked, or not meant for this API. Obtain a new one.',
          bearerChallenge(realm, { code: 'invalid_token' }),
        );
      }
      if (!claims.scopes.has(scope)) {
        throw new ForbiddenError(`This request needs the scope ${scope}.`, {
          'www-authenticate': bearerChallenge(realm, { code: 'insufficient_scope', scope }),
        });
      }
      request.auth = claims;
    }

    app.addHook('onRequest', async (request) => {
      // Unmatched URLs (404) have no route config; they stay 404 for everyone.
      if (!request.routeOptions.url) return;
      await authenticate(request);
    });
  },
  { name: 'bearer-auth' },
);
