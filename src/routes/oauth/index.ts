// The authorization server's endpoints: token (RFC 6749), revocation (RFC 7009), introspection (RFC 7662),
// metadata (RFC 8414) and JWKS (RFC 7517). Errors keep RFC 6749's `{error, error_description}` form.
import formbody from '@fastify/formbody';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { OAuthError } from '../../errors.js';
import { addressKey, rateLimitHook } from '../../plugins/client-rate-limit.js';
import { NO_STORE, sendOAuthError, toOAuthError } from '../../plugins/oauth-errors.js';
import type { Services } from '../../services/index.js';
import { GRANT_TYPES, grantOutcomeOf, type GrantType } from '../../services/domain-metrics.js';
import type { TokenResponse } from '../../services/oauth/grants.service.js';
import { ALL_SCOPES, parseScopeParameter } from '../../shared/scopes.js';
import { CLIENT_ASSERTION_ALGS, CLIENT_AUTH_METHODS } from '../../schemas/oauth.js';
import { authenticateClient, authenticateClientOrPublic, single, type FormBody } from './client-auth.js';
import { registerAuthorizationEndpoint } from './authorize.js';

export interface OAuthRoutesOptions {
  services: Services;
  issuer: string;
  rateLimitPerMinute: number;
}

const REALM = 'oauth';


/**
 * RFC 6749 5.1's body as JSON text, written directly rather than by walking the object: the access token is a compact
 * JWS, base64url and dots only (RFC 7515 7.1), so it goes between quotes as it is; the other strings are escaped.
 */
function serializeTokenResponse(body: TokenResponse): string {
  let json = `{"access_token":"${body.access_token}","token_type":"Bearer","expires_in":${body.expires_in},"scope":${JSON.stringify(body.scope)}`;
  if (body.refresh_token !== undefined) json += `,"refresh_token":${JSON.stringify(body.refresh_token)}`;
  return `${json}}`;
}


/** docs/security-cases.md 5: credentials and grant parameters travel in the body, never in the URL. */
function refuseQueryParameters(request: FastifyRequest): void {
  const query: unknown = request.query;
  if (typeof query === 'object' && query !== null && Object.keys(query).length > 0) {
    throw new OAuthError('invalid_request', 'Parameters must be sent in the request body, not in the query string.');
  }
}

function formOf(request: FastifyRequest): FormBody {
  const body = request.body;
  if (body === undefined || body === null) return {};
  // The form parser (@fastify/formbody's fast-querystring) answers an object that inherits nothing (Object.prototype
  // is not in its chain), a string for each name and an array for a repeated one: a parameter named __proto__ or
  // toString stays a parameter, and no name finds an inherited value, so the object is the form as it is, not a copy
  // (the token endpoint's hot path). Anything else is refused rather than read.
  if (typeof body !== 'object' || body instanceof Object) {
    throw new OAuthError('invalid_request', 'The request body must be a form.');
  }
  const form = body as FormBody;
  for (const name in form) {
    if (typeof form[name] !== 'string') throw new OAuthError('invalid_request', `The parameter ${name} is repeated.`);
  }
  return form;
}

function requestedScopes(form: FormBody): string[] | undefined {
  const scope = single(form, 'scope');
  if (scope === undefined) return undefined;
  const scopes = parseScopeParameter(scope);
  if (!scopes) throw new OAuthError('invalid_scope', 'The scope parameter is malformed (RFC 6749 section 3.3).');
  return scopes;
}

function required(form: FormBody, name: string): string {
  const value = single(form, name);
  if (value === undefined || value === '') throw new OAuthError('invalid_request', `The parameter ${name} is missing.`);
  return value;
}

export default async function oauthRoutes(app: FastifyInstance, options: OAuthRoutesOptions) {
  const { services, issuer } = options;
  const base = issuer.replace(/\/+$/, '');

  await app.register(formbody, { bodyLimit: 64 * 1024 });
  // JSON bodies are not OAuth requests: without a parser they answer 415, rendered as invalid_request.
  app.removeContentTypeParser('application/json');

  app.setErrorHandler(function renderOAuthError(error: FastifyError, request, reply) {
    const oauthError = toOAuthError(error);
    if (oauthError.status >= 500) request.log.error({ err: error }, 'OAuth request failed');
    return sendOAuthError(reply, oauthError);
  });

  // Per address (no client is known before its authentication, which is what is guessed): every endpoint here, before
  // the body is parsed, so malformed requests count too (docs/security-cases.md B11).
  app.addHook(
    'onRequest',
    rateLimitHook({
      perMinute: options.rateLimitPerMinute,
      keyOf: addressKey,
      refusal: (_request, retryAfterSeconds) => new OAuthError('temporarily_unavailable', `Too many requests. Retry after ${retryAfterSeconds} s.`, 429),
    }),
  );

  async function token(request: FastifyRequest, reply: FastifyReply) {
    refuseQueryParameters(request);
    const form = formOf(request);
    const grantType = single(form, 'grant_type');
    if (!grantType) throw new OAuthError('invalid_request', 'The parameter grant_type is missing.');
    if (!(GRANT_TYPES as readonly string[]).includes(grantType)) {
      throw new OAuthError('unsupported_grant_type', `The grant type ${grantType} is not supported.`);
    }
    // Counted here, where every outcome is known (client authentication's too), by the code the client is answered.
    try {
      const body = await grant(request, form, grantType as GrantType);
      services.metrics.grantAnswered(grantType as GrantType, 'success');
      return reply.headers(NO_STORE).type('application/json').send(serializeTokenResponse(body));
    } catch (error) {
      services.metrics.grantAnswered(grantType as GrantType, grantOutcomeOf(toOAuthError(error as FastifyError).error));
      throw error;
    }
  }

  async function grant(request: FastifyRequest, form: FormBody, grantType: GrantType) {
    // RFC 6749 4.1.3 and 6: a public client (the console's) names itself by client_id for its code and its refreshes.
    const client =
      grantType === 'authorization_code' || grantType === 'refresh_token'
        ? await authenticateClientOrPublic(request, form, services, REALM)
        : await authenticateClient(request, form, services, REALM);
    if (grantType === 'authorization_code') {
      if (single(form, 'scope') !== undefined) {
        throw new OAuthError('invalid_request', 'The authorization_code grant takes no scope: the user\'s role decides it.');
      }
      return services.tokens.authorizationCode(
        client,
        required(form, 'code'),
        required(form, 'redirect_uri'),
        required(form, 'code_verifier'),
      );
    }
    const scopes = requestedScopes(form);
    switch (grantType) {
      case 'client_credentials':
        return services.tokens.clientCredentials(client, scopes);
      case 'password':
        return services.tokens.password(client, required(form, 'username'), required(form, 'password'), scopes);
      default:
        return services.tokens.refresh(client, required(form, 'refresh_token'), scopes);
    }
  }

  const methodNotAllowed = async (_request: FastifyRequest, reply: FastifyReply) => {
    reply.header('allow', 'POST');
    return sendOAuthError(reply, new OAuthError('invalid_request', 'Use POST.', 405));
  };

  // docs/api-reference.md 3.3: both paths accept the same grants (docs/service-overview.md names /oauth/token and /oauth2/token).
  for (const path of ['/oauth/token', '/oauth2/token']) app.post(path, token);
  // RFC 6749 3.2, RFC 7009 2.1, RFC 7662 2.1: POST only. A GET (a credential in a URL is what clients get wrong)
  // is told so, in the OAuth error format, rather than answered as an unknown path.
  for (const path of ['/oauth/token', '/oauth2/token', '/oauth/revoke', '/oauth/introspect']) app.get(path, methodNotAllowed);

  app.post('/oauth/revoke', async (request, reply) => {
    refuseQueryParameters(request);
    const form = formOf(request);
    // RFC 7009 2.1: a public client revokes its own tokens by its client_id (the console's sign-out).
    const client = await authenticateClientOrPublic(request, form, services, REALM);
    await services.tokens.revoke(client, required(form, 'token'));
    // RFC 7009 2.2: 200 whether or not anything was revoked.
    return reply.headers(NO_STORE).code(200).send();
  });

  app.post('/oauth/introspect', async (request, reply) => {
    refuseQueryParameters(request);
    const form = formOf(request);
    const client = await authenticateClient(request, form, services, REALM);
    return reply.headers(NO_STORE).type('application/json').send(await services.tokens.introspect(client, required(form, 'token')));
  });

  app.get('/.well-known/oauth-authorization-server', async (_request, reply) => {
    const authMethods = CLIENT_AUTH_METHODS;
    // RFC 8414 2: with private_key_jwt, the algorithms its assertions may use (docs/api-reference.md 3.1).
    const signingAlgs = CLIENT_ASSERTION_ALGS;
    return reply.header('cache-control', 'public, max-age=300').send({
      issuer,
      authorization_endpoint: `${base}/oauth/authorize`,
      token_endpoint: `${base}/oauth/token`,
      jwks_uri: `${base}/.well-known/jwks.json`,
      revocation_endpoint: `${base}/oauth/revoke`,
      introspection_endpoint: `${base}/oauth/introspect`,
      grant_types_supported: ['authorization_code', 'client_credentials', 'password', 'refresh_token'],
      // docs/api-reference.md 13: the authorization code flow only (no implicit flow, RFC 9700 2.1.2), PKCE with S256 only.
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      code_challenge_methods_supported: ['S256'],
      // RFC 9207: authorization responses carry `iss`, so a client can tell which server answered.
      authorization_response_iss_parameter_supported: true,
      // RFC 7591 2: `none` is the public client's (the console's) way at the token endpoint.
      token_endpoint_auth_methods_supported: [...authMethods, 'none'],
      token_endpoint_auth_signing_alg_values_supported: signingAlgs,
      revocation_endpoint_auth_methods_supported: [...authMethods, 'none'],
      revocation_endpoint_auth_signing_alg_values_supported: signingAlgs,
      introspection_endpoint_auth_methods_supported: authMethods,
      introspection_endpoint_auth_signing_alg_values_supported: signingAlgs,
      scopes_supported: ALL_SCOPES,
      service_documentation: `${base}/operatorapi/apidocs/index.html`,
    });
  });

  registerAuthorizationEndpoint(app, { services, issuer });

  app.get('/.well-known/jwks.json', async (_request, reply) => {
    // Short caching: a rotated key must reach verifiers soon (RFC 7517; rotation keeps old keys published).
    // Access-token keys only (RFC 9068; docs/api-reference.md 8.1, docs/security-cases.md G39): each tenant's ticket
    // keys are published in that tenant's own set, GET /tenants/{tenant}/jwks.json.
    return reply.header('cache-control', 'public, max-age=60').send({ keys: services.accessTokenKeys.publicJwks() });
  });
}
