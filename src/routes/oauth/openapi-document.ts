// The OpenAPI document of the authorization server (docs/api-reference.md 3): token, revocation, introspection, metadata and
// the key sets. Written out, not generated: those routes read their forms themselves, in RFC 6749's error format, so
// they carry no route schemas. test/openapi.test.ts checks that every operation here is one the server answers, and
// every test's answer from these endpoints is validated against this document (test/helpers/openapi-response-validator.ts).
import type { TSchema } from '@sinclair/typebox';
import { documentationSchema, nameDocumentSchemas } from '../../plugins/openapi-components.js';
import {
  AuthorizationServerMetadataSchema,
  IntrospectionRequestSchema,
  IntrospectionResponseSchema,
  JsonWebKeySetSchema,
  OAuthErrorSchema,
  RevocationRequestSchema,
  TokenRequestSchema,
  TokenResponseSchema,
} from '../../schemas/oauth.js';
import { ProblemSchema } from '../../schemas/problem.js';
import { ResponseHeaders } from '../../schemas/common.js';
import { TENANT_NAME_PATTERN } from '../../services/oauth/tenant.service.js';

const FORM = 'application/x-www-form-urlencoded';

const DESCRIPTION = `The OAuth 2.0 authorization server (RFC 6749) that issues the access tokens of the Operator, Access and
Device APIs, and the key sets that verify what this service signs.

## Getting a token

\`POST /oauth/token\` (or \`POST /oauth2/token\`: the same endpoint under the path older clients use) with an
\`application/x-www-form-urlencoded\` form. The client authenticates with HTTP Basic (\`client_secret_basic\`: the client id
and secret, each form-urlencoded, RFC 6749 section 2.3.1) or with \`client_id\` and \`client_secret\` in the form
(\`client_secret_post\`), never both. Parameters in the query string are refused: credentials never travel in a URL.

- \`grant_type=client_credentials\`: a backend (the Operator API), a phone (Device API, \`tokens:download\`) or a lock
  (Device API, \`sync\`) acting for itself. No refresh token.
- \`grant_type=password\` with \`username=USER@TENANT\` and \`password\`: a person using the Access API. The tenant's name
  is part of the user name because one server holds many tenants (\`alice@demo\`). Answers a refresh token too.
- \`grant_type=authorization_code\` with \`code\`, \`redirect_uri\`, \`client_id\` and \`code_verifier\`: the operator
  console (a public client, no secret) after a user signed in at \`GET /oauth/authorize\` (docs/api-reference.md 13).
  The access token is valid on the Operator and the Access API, with the scopes of the user's role; a refresh token comes
  with it.
- \`grant_type=refresh_token\` with \`refresh_token\`: a new access token and a new refresh token. Each refresh token works
  once; presenting a used one revokes its whole family (docs/api-reference.md 3.2). The scope can narrow, never widen.

\`scope\` (space-separated) asks for some of the client's scopes; without it the client gets all of them. The access
token is an RFC 9068 JWT (\`typ: at+jwt\`) signed with a key of \`GET /.well-known/jwks.json\`; its \`aud\` names the API.

## Signing in to the console

\`GET /oauth/authorize\` (RFC 6749 section 4.1, RFC 7636 with S256 only, RFC 9700 section 2.1) takes \`response_type=code\`,
\`client_id\` (the console's public client), \`redirect_uri\` (exactly the registered one), \`code_challenge\`,
\`code_challenge_method=S256\` and \`state\`, and shows a sign-in form (\`USER@TENANT\`, password) that posts back to
\`POST /oauth/authorize\`. Success answers 303 to the redirect URI with \`code\`, \`state\` and \`iss\` (RFC 9207). An
unknown client or a redirect URI that is not the registered one is an error page, never a redirect; other errors go
back to the redirect URI as \`error\` and \`error_description\`.

## Errors

Every error is an RFC 6749 section 5.2 body, \`{"error", "error_description"}\`, sent as \`application/json\` with
\`Cache-Control: no-store\`: \`invalid_request\`, \`invalid_client\` (401, with \`WWW-Authenticate: Basic\`), \`invalid_grant\`,
\`unauthorized_client\`, \`unsupported_grant_type\`, \`invalid_scope\`; \`temporarily_unavailable\` on 429 (too many requests
from one address) and 503 (the database is unreachable), with \`Retry-After\`; \`server_error\` on 500. A \`GET\` of these
endpoints answers 405 \`invalid_request\`.

## Keys

\`GET /.well-known/jwks.json\` holds the access-token keys. Each tenant's ticket keys, which sign the credentials and
revocation lists its locks check (the Device API document describes both), are at \`GET /tenants/{tenant}/jwks.json\`.
\`GET /.well-known/oauth-authorization-server\` (RFC 8414) lists the endpoints, grants, authentication methods and scopes.`;

const noStore = ResponseHeaders.noStore;
const pragma = { type: 'string', enum: ['no-cache'], description: 'For HTTP/1.0 caches (RFC 6749 section 5.1).' };
const rateLimitHeaders = {
  'RateLimit-Limit': ResponseHeaders.rateLimitLimit,
  'RateLimit-Remaining': ResponseHeaders.rateLimitRemaining,
  'RateLimit-Reset': ResponseHeaders.rateLimitReset,
};

/** A header map as OpenAPI Header Objects: the schema's description lifted out, as @fastify/swagger does for routes. */
function headers(map: Record<string, unknown>) {
  return Object.fromEntries(
    Object.entries(map).map(([name, schema]) => {
      const { description, ...rest } = documentationSchema(schema) as { description?: string };
      return [name, { description, schema: rest }];
    }),
  );
}

function json(schema: TSchema) {
  return { 'application/json': { schema: documentationSchema(schema) } };
}

function oauthError(description: string, extraHeaders: Record<string, unknown> = {}) {
  return {
    description,
    headers: headers({ 'Cache-Control': noStore, Pragma: pragma, ...extraHeaders }),
    content: json(OAuthErrorSchema),
  };
}

/** The errors every form endpoint can answer (routes/oauth/index.ts, toOAuthError). */
function formErrors() {
  return {
    400: oauthError(
      '`invalid_request` (a parameter missing or repeated, parameters in the query string, a body that is not a form, ' +
        'client credentials both in Basic and the form, a client secret together with a client assertion) and the grant errors: `invalid_grant`, `unauthorized_client`, ' +
        '`unsupported_grant_type`, `invalid_scope`.',
    ),
    401: oauthError('`invalid_client`: no client credentials, an unknown client, a wrong secret, or a client assertion that was not accepted.', {
      'WWW-Authenticate': { type: 'string', description: '`Basic realm="oauth"` (RFC 6749 section 5.2).' },
    }),
    413: oauthError('`invalid_request`: the form is larger than 64 KiB.'),
    429: oauthError('`temporarily_unavailable`: too many requests from this address.', {
      'Retry-After': ResponseHeaders.retryAfter,
      ...rateLimitHeaders,
    }),
    500: oauthError('`server_error`: an unexpected error; the description reveals nothing.'),
    503: oauthError('`temporarily_unavailable`: the database is unreachable; retry shortly.', { 'Retry-After': ResponseHeaders.retryAfter }),
  };
}

/**
 * HTTP Basic, or (the empty requirement) `client_id` and `client_secret` in the form: OpenAPI 3.0 has no security
 * scheme for client_secret_post, whose credentials are the form fields TokenRequest describes.
 */
const clientAuthentication = [{ clientSecretBasic: [] }, {}];

function formBody(schema: TSchema, examples?: Record<string, { summary: string; value: unknown }>) {
  return { required: true, content: { [FORM]: { schema: documentationSchema(schema), ...(examples ? { examples } : {}) } } };
}

function tokenOperation(operationId: string, summary: string, extra: string) {
  return {
    operationId,
    summary,
    tags: ['Tokens'],
    description:
      'Issues an access token (RFC 6749 sections 4.3, 4.4, 6). The client authenticates with HTTP Basic, with ' +
      '`client_id` and `client_secret` in the form, or, bound to a mobile device that has a key, with a private_key_jwt ' +
      `assertion (RFC 7523: \`client_assertion_type\` and \`client_assertion\`, docs/api-reference.md 3.1). ${extra}`,
    security: clientAuthentication,
    requestBody: formBody(TokenRequestSchema, {
      clientCredentials: { summary: 'A backend, phone or lock (client credentials)', value: { grant_type: 'client_credentials', scope: 'tokens:create tokens:read' } },
      password: {
        summary: 'A person of the Access API (USER@TENANT)',
        value: { grant_type: 'password', username: 'alice@demo', password: 'correct horse battery', client_id: '3f2a9c4e-1b7d-4e8f-9a0b-1c2d3e4f5a6b', client_secret: 'Vq3k8Zx1Rt6Yw0Pm4Ns7Lb2Hc9Jd5Fg' },
      },
      refresh: { summary: 'A new token from a refresh token', value: { grant_type: 'refresh_token', refresh_token: 'rt_8Q2mX7vK1pL9sD4fG6hJ3kZ0wE5rT2yU' } },
      privateKeyJwt: {
        summary: 'A phone authenticating with its device key (private_key_jwt)',
        value: {
          grant_type: 'client_credentials',
          client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
          client_assertion:
            'eyJhbGciOiJFUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiIzZjJhOWM0ZSIsInN1YiI6IjNmMmE5YzRlIiwiYXVkIjoiaHR0cHM6Ly9hY3MuZXhhbXBsZS5jb20iLCJleHAiOjE3NjcyMjU5MDAsImp0aSI6IjlmN2MifQ.' +
            'c2lnbmF0dXJlLW9mLXRoZS1kZXZpY2Uta2V5LXNpZ25hdHVyZS1vZi10aGUtZGV2aWNlLWtleS1hYmNkZWZnaGlqa2xtbm9w',
        },
      },
    }),
    responses: {
      200: {
        description: 'The token (RFC 6749 section 5.1).',
        headers: headers({ 'Cache-Control': noStore, Pragma: pragma, ...rateLimitHeaders }),
        content: json(TokenResponseSchema),
      },
      ...formErrors(),
    },
  };
}

function problemComponent() {
  const { $id: _id, ...schema } = documentationSchema(ProblemSchema) as Record<string, unknown>;
  return schema;
}

function problem(description: string) {
  return { description, content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } } };
}

/** Served by the OAuth routes, so rate limited per address like them and answering in their error format. */
function discoveryErrors() {
  const { 429: tooMany, 500: failed } = formErrors();
  return { 429: tooMany, 500: failed };
}

/** The sign-in pages are rate limited per address like the other OAuth routes, and fail in their error format. */
function signInErrors(readsForm = false) {
  const { 413: tooLarge, 429: tooMany, 500: failed, 503: unavailable } = formErrors();
  return { ...(readsForm ? { 413: tooLarge } : {}), 429: tooMany, 500: failed, 503: unavailable };
}

const publicKeySetResponse = (description: string, cacheControl: string) => ({
  200: {
    description,
    headers: headers({ 'Cache-Control': { type: 'string', enum: [cacheControl], description: 'Cacheable briefly: a rotated key must reach verifiers soon.' } }),
    content: json(JsonWebKeySetSchema),
  },
});

/** The document served at `/oauth/apidocs/json`, its models components like the other documents'. */
export function oauthOpenApiDocument(version: string) {
  const document = {
    openapi: '3.0.3',
    info: {
      title: 'OAuth 2.0 authorization server',
      description: DESCRIPTION,
      version,
      license: { name: 'Apache-2.0', url: 'https://www.apache.org/licenses/LICENSE-2.0' },
    },
    servers: [{ url: '/', description: 'The server this document is served by.' }],
    tags: [
      { name: 'Tokens', description: 'Access and refresh tokens: issued (RFC 6749), revoked (RFC 7009), looked at (RFC 7662).' },
      { name: 'Discovery', description: 'What a client or verifier learns without authenticating: metadata (RFC 8414) and key sets (RFC 7517).' },
    ],
    paths: {
      '/oauth/token': { post: tokenOperation('requestToken', 'Get an access token', 'The endpoint the metadata names.') },
      '/oauth2/token': {
        post: tokenOperation('requestTokenOAuth2Path', 'Get an access token (/oauth2 path)', 'The same endpoint as `POST /oauth/token`, at the path older clients use.'),
      },
      '/oauth/authorize': {
        get: {
          operationId: 'authorize',
          summary: 'Start a console sign-in',
          tags: ['Tokens'],
          description:
            'RFC 6749 section 4.1.1 with PKCE (RFC 7636, S256 only): checks the request and shows the sign-in form, an HTML ' +
            'page with no script and no third-party resource, under a strict `Content-Security-Policy` and ' +
            '`X-Frame-Options: DENY`. It sets a CSRF cookie that only this endpoint receives.',
          security: [],
          parameters: [
            ['response_type', 'Always `code`.'],
            ['client_id', 'The console\'s client id (`consoleClientId` of `tenant create`).'],
            ['redirect_uri', 'Exactly the client\'s registered redirect URI, `{PUBLIC_URL}/console/callback`.'],
            ['code_challenge', 'BASE64URL(SHA-256(code_verifier)), 43 characters (RFC 7636 section 4.2).'],
            ['code_challenge_method', 'Always `S256`; `plain` is refused.'],
            ['state', 'Carried back unchanged to the redirect URI (1 to 1,024 characters).'],
          ].map(([name, description]) => ({ name, in: 'query', required: name !== 'state', schema: { type: 'string' }, description })),
          responses: {
            200: { description: 'The sign-in form.', content: { 'text/html': { schema: { type: 'string' } } } },
            302: { description: 'An error sent back to the verified redirect URI (`error`, `error_description`, `state`, `iss`).' },
            400: { description: 'An unknown client or a redirect URI that is not the registered one: an error page.', content: { 'text/html': { schema: { type: 'string' } } } },
            ...signInErrors(),
          },
        },
        post: {
          operationId: 'authorizeSignIn',
          summary: 'Sign in to the console',
          tags: ['Tokens'],
          description:
            'The sign-in form\'s post: the request parameters of `GET /oauth/authorize`, `csrf_token`, `username` ' +
            '(`USER@TENANT`) and `password`. The lockout of the password grant applies. A wrong password, an unknown user ' +
            'and a user without a console role all re-show the form with one generic error.',
          security: [],
          requestBody: {
            required: true,
            content: {
              [FORM]: {
                schema: { type: 'object', additionalProperties: { type: 'string' } },
                example: {
                  response_type: 'code',
                  client_id: 'console-3f2a9c4e1b7d4e8f9a0b1c',
                  redirect_uri: 'https://acs.example.com/console/callback',
                  code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
                  code_challenge_method: 'S256',
                  state: 'af0ifjsldkj',
                  csrf_token: 'vN3k8Qp0cGkTzq2r8lX4b7mYJ0dF6sH1aW9eU5tR3oI',
                  username: 'alice@demo',
                  password: 'correct horse battery',
                },
              },
            },
          },
          responses: {
            200: { description: 'The form again with the one generic error: wrong user or password, locked, or no console role.', content: { 'text/html': { schema: { type: 'string' } } } },
            303: { description: 'Signed in: to the redirect URI with `code` (single use, 60 s), `state` and `iss`; or an error sent there.' },
            400: { description: 'An unknown client or a redirect URI that is not the registered one: the error page.', content: { 'text/html': { schema: { type: 'string' } } } },
            403: { description: 'The CSRF token or cookie is missing or wrong: the form again.', content: { 'text/html': { schema: { type: 'string' } } } },
            ...signInErrors(true),
          },
        },
      },
      '/oauth/revoke': {
        post: {
          operationId: 'revokeToken',
          summary: 'Revoke a token',
          tags: ['Tokens'],
          description:
            'RFC 7009: revokes an access token or a refresh token (and the refresh token\'s family) of the calling client. ' +
            'Answers 200 whether or not there was anything to revoke.',
          security: clientAuthentication,
          requestBody: formBody(RevocationRequestSchema),
          responses: {
            200: { description: 'Revoked, or nothing to revoke (RFC 7009 section 2.2). No body.', headers: headers({ 'Cache-Control': noStore, Pragma: pragma }) },
            ...formErrors(),
          },
        },
      },
      '/oauth/introspect': {
        post: {
          operationId: 'introspectToken',
          summary: 'Look at a token',
          tags: ['Tokens'],
          description: 'RFC 7662: whether a token is active, and its claims. A client bound to a device or lock learns about its own tokens only.',
          security: clientAuthentication,
          requestBody: formBody(IntrospectionRequestSchema),
          responses: {
            200: { description: 'The token\'s state.', headers: headers({ 'Cache-Control': noStore, Pragma: pragma }), content: json(IntrospectionResponseSchema) },
            ...formErrors(),
          },
        },
      },
      '/.well-known/oauth-authorization-server': {
        get: {
          operationId: 'getAuthorizationServerMetadata',
          summary: 'Authorization server metadata',
          tags: ['Discovery'],
          description: 'RFC 8414: the endpoints, grant types, client authentication methods and scopes. No authentication.',
          security: [],
          responses: {
            200: {
              description: 'The metadata; URLs are absolute, from `PUBLIC_URL`.',
              headers: headers({ 'Cache-Control': { type: 'string', enum: ['public, max-age=300'], description: 'Cacheable for five minutes.' } }),
              content: json(AuthorizationServerMetadataSchema),
            },
            ...discoveryErrors(),
          },
        },
      },
      '/.well-known/jwks.json': {
        get: {
          operationId: 'getAccessTokenKeys',
          summary: 'Access-token keys',
          tags: ['Discovery'],
          description:
            'RFC 7517: the public keys access tokens are signed with; an API verifies a token\'s `kid` against them. Ticket keys ' +
            'are not here: each tenant publishes its own (`GET /tenants/{tenant}/jwks.json`). No authentication.',
          security: [],
          responses: { ...publicKeySetResponse('The key set.', 'public, max-age=60'), ...discoveryErrors() },
        },
      },
      '/tenants/{tenant}/jwks.json': {
        get: {
          operationId: 'getTenantTicketKeys',
          summary: 'A tenant\'s ticket keys',
          tags: ['Discovery'],
          description:
            'RFC 7517: the keys the tenant\'s credentials and revocation lists are signed with (docs/api-reference.md 8.1), what its ' +
            'locks verify them with. No authentication: public halves only.',
          security: [],
          parameters: [
            {
              name: 'tenant',
              in: 'path',
              required: true,
              description: 'The tenant name, as in `tenant create NAME`.',
              schema: { type: 'string', pattern: TENANT_NAME_PATTERN.source },
            },
          ],
          responses: {
            ...publicKeySetResponse('The tenant\'s announced, signing and recently retired ticket keys.', 'public, max-age=300'),
            400: problem('The name cannot be a tenant\'s.'),
            404: problem('No such tenant.'),
            414: problem('The request target is longer than 8 KiB, or the tenant name longer than 256 characters.'),
            500: problem('An unexpected error; the detail reveals nothing.'),
            503: problem('The database is unreachable or the server is shutting down; retry shortly.'),
          },
        },
      },
    },
    components: {
      // The problem answers of the tenant key set, which is served outside the OAuth routes' error handler.
      schemas: { Problem: problemComponent() },
      securitySchemes: {
        clientSecretBasic: {
          type: 'http',
          scheme: 'basic',
          description: 'client_secret_basic: the client id as user name and the client secret as password (RFC 6749 section 2.3.1).',
        },
      },
    },
  };
  return nameDocumentSchemas(document);
}
