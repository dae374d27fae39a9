// Schemas of the authorization server's endpoints (docs/api-reference.md 3): the token, revocation and introspection forms,
// their answers, RFC 6749 5.2 errors, the RFC 8414 metadata and the JWKS. Documentation only: those routes read their
// forms themselves (routes/oauth/index.ts), so these schemas describe them without validating anything.
import { Type } from '@sinclair/typebox';
import { ALL_SCOPES } from '../shared/scopes.js';
import { named } from './common.js';

const GRANT_TYPES = ['authorization_code', 'client_credentials', 'password', 'refresh_token'];
/** RFC 8414 2: how clients authenticate at the token, revocation and introspection endpoints (docs/api-reference.md 3.1). */
export const CLIENT_AUTH_METHODS = ['client_secret_basic', 'client_secret_post', 'private_key_jwt'];
/** RFC 7591 2: `none` adds a public client (the console's, docs/api-reference.md 13) naming itself by `client_id`. */
const TOKEN_AUTH_METHODS = [...CLIENT_AUTH_METHODS, 'none'];
/** RFC 8414 2: the one algorithm a private_key_jwt assertion is signed with, a device's P-256 key (docs/api-reference.md 3.1). */
export const CLIENT_ASSERTION_ALGS = ['ES256'];

const EXAMPLE_ISSUER = 'https://acs.example.com';
const EXAMPLE_CLIENT_ID = '3f2a9c4e-1b7d-4e8f-9a0b-1c2d3e4f5a6b';
const EXAMPLE_ACCESS_TOKEN =
  'eyJhbGciOiJFUzI1NiIsImtpZCI6ImF0LTIwMjYtMDEiLCJ0eXAiOiJhdCtqd3QifQ.eyJpc3MiOiJodHRwczovL2Fjcy5leGFtcGxlLmNvbSIsInN1YiI6ImFsaWNlIn0.' +
  'MEUCIQC7gA2lqXq5b1Y0d2e3f4g5h6i7j8k9l0m1n2o3p4q5r6s7';
const EXAMPLE_REFRESH_TOKEN = 'rt_8Q2mX7vK1pL9sD4fG6hJ3kZ0wE5rT2yU';

const clientFields = {
  client_id: Type.Optional(
    Type.String({ description: 'client_secret_post: the client id. Send it with `client_secret`, or use HTTP Basic instead, never both.' }),
  ),
  client_secret: Type.Optional(Type.String({ description: 'client_secret_post: the client secret (RFC 6749 section 2.3.1).' })),
  client_assertion_type: Type.Optional(
    Type.Unsafe<string>({
      type: 'string',
      enum: ['urn:ietf:params:oauth:client-assertion-type:jwt-bearer'],
      description: 'private_key_jwt (RFC 7523 section 2.2): always `urn:ietf:params:oauth:client-assertion-type:jwt-bearer`, with `client_assertion`.',
    }),
  ),
  client_assertion: Type.Optional(
    Type.String({
      description:
        'private_key_jwt (RFC 7523 section 3, docs/api-reference.md 3.1): a JWT signed ES256 by the key of the mobile device the ' +
        'client is bound to, with `iss` and `sub` the client id, `aud` the token endpoint or the issuer, `exp` at most 5 ' +
        'minutes ahead, and a `jti` used once. Never together with a client secret.',
    }),
  ),
};

export const TokenRequestSchema = named(
  'TokenRequest',
  Type.Object(
    {
      grant_type: Type.Unsafe<string>({
        type: 'string',
        enum: GRANT_TYPES,
        description:
          '`authorization_code` (RFC 6749 section 4.1, RFC 7636): the console\'s public client exchanging the code of ' +
          '`GET /oauth/authorize` with `code`, `redirect_uri`, `client_id` and `code_verifier`. ' +
          '`client_credentials` (RFC 6749 section 4.4): a backend, a phone or a lock acting for itself. `password` (section 4.3): ' +
          'a user of the Access API, with `username` and `password`. `refresh_token` (section 6): a new access token from ' +
          'the refresh token of a password grant; the refresh token is rotated on every use.',
      }),
      scope: Type.Optional(
        Type.String({
          description:
            `Space-separated scopes (RFC 6749 section 3.3), each one the client may request: ${ALL_SCOPES.join(', ')}. Absent: ` +
            'every scope the client may request (for a refresh: the scopes of the refresh token; it cannot widen).',
        }),
      ),
      username: Type.Optional(
        Type.String({
          pattern: '^[^@\\s]+@[^@\\s]+$',
          description:
            '`password` grant: `USER@TENANT`, the user name and its tenant\'s name (`alice@demo`), as the CLI\'s ' +
            '`user create USER@TENANT` makes it. The tenant is part of the name because one server holds many tenants.',
        }),
      ),
      password: Type.Optional(Type.String({ description: '`password` grant: the user\'s password.' })),
      refresh_token: Type.Optional(Type.String({ description: '`refresh_token` grant: the refresh token of the last answer.' })),
      code: Type.Optional(Type.String({ description: '`authorization_code` grant: the code, used once, within 60 s.' })),
      redirect_uri: Type.Optional(
        Type.String({ description: '`authorization_code` grant: the redirect URI of the authorization request, byte for byte.' }),
      ),
      code_verifier: Type.Optional(
        Type.String({
          minLength: 43,
          maxLength: 128,
          description: '`authorization_code` grant: the PKCE verifier whose S256 challenge the authorization request sent (RFC 7636 section 4.5).',
        }),
      ),
      ...clientFields,
    },
    {
      additionalProperties: false,
      description:
        'An `application/x-www-form-urlencoded` form (RFC 6749 section 4); every parameter at most once, none in the query ' +
        'string. The client authenticates with HTTP Basic (client_secret_basic), with `client_id` and `client_secret` in ' +
        'the form (client_secret_post), or, bound to a mobile device that has a key, with `client_assertion_type` and ' +
        '`client_assertion` (private_key_jwt); one method per request.',
    },
  ),
  { grant_type: 'client_credentials', scope: 'tokens:create tokens:read' },
);

export const TokenResponseSchema = named(
  'TokenResponse',
  Type.Object(
    {
      access_token: Type.String({ description: 'An RFC 9068 JWT access token (`typ: at+jwt`), verified with `/.well-known/jwks.json`.' }),
      token_type: Type.Unsafe<'Bearer'>({ type: 'string', enum: ['Bearer'], description: 'Always `Bearer` (RFC 6750).' }),
      expires_in: Type.Integer({ minimum: 1, description: 'Seconds the access token is valid.' }),
      scope: Type.String({ description: 'The granted scopes, space-separated.' }),
      refresh_token: Type.Optional(
        Type.String({
          description:
            'Password, authorization code and refresh grants only: the next refresh token. Each can be used once (docs/api-reference.md 3.2).',
        }),
      ),
    },
    { additionalProperties: false },
  ),
  { access_token: EXAMPLE_ACCESS_TOKEN, token_type: 'Bearer', expires_in: 3600, scope: 'tokens:create tokens:read' },
);

export const OAUTH_ERROR_CODES = [
  'invalid_request',
  'invalid_client',
  'invalid_grant',
  'unauthorized_client',
  'unsupported_grant_type',
  'invalid_scope',
  'temporarily_unavailable',
  'server_error',
];

export const OAuthErrorSchema = named(
  'OAuthError',
  Type.Object(
    {
      error: Type.Unsafe<string>({
        type: 'string',
        enum: OAUTH_ERROR_CODES,
        description:
          'RFC 6749 section 5.2: `invalid_request` (a parameter missing, repeated, in the query string, or the body not a form), ' +
          '`invalid_client` (client authentication failed: 401), `invalid_grant` (wrong user name or password, or a refresh ' +
          'token that is unknown, used, expired or revoked), `unauthorized_client` (the client may not use this grant), ' +
          '`unsupported_grant_type`, `invalid_scope` (a scope unknown or beyond the client\'s). RFC 6749 section 4.1.2.1 adds ' +
          '`temporarily_unavailable` (429, 503) and `server_error` (500).',
      }),
      error_description: Type.String({ description: 'What went wrong, for people.' }),
    },
    { additionalProperties: false, description: 'An RFC 6749 section 5.2 error, sent as `application/json`.' },
  ),
  { error: 'invalid_grant', error_description: 'The user name or password is wrong.' },
);

export const RevocationRequestSchema = named(
  'RevocationRequest',
  Type.Object(
    {
      token: Type.String({ description: 'The access or refresh token to revoke (RFC 7009 section 2.1).' }),
      token_type_hint: Type.Optional(
        Type.Unsafe<string>({ type: 'string', enum: ['access_token', 'refresh_token'], description: 'Ignored: the server finds out itself.' }),
      ),
      ...clientFields,
    },
    { additionalProperties: false },
  ),
  { token: EXAMPLE_REFRESH_TOKEN },
);

export const IntrospectionRequestSchema = named(
  'IntrospectionRequest',
  Type.Object(
    {
      token: Type.String({ description: 'The access or refresh token to look at (RFC 7662 section 2.1).' }),
      token_type_hint: Type.Optional(
        Type.Unsafe<string>({ type: 'string', enum: ['access_token', 'refresh_token'], description: 'Ignored: the server finds out itself.' }),
      ),
      ...clientFields,
    },
    { additionalProperties: false },
  ),
  { token: EXAMPLE_ACCESS_TOKEN },
);

export const IntrospectionResponseSchema = named(
  'IntrospectionResponse',
  Type.Object(
    {
      active: Type.Boolean({
        description:
          'False for a token that is expired, revoked, unknown, or that this client may not learn about (a client bound to a ' +
          'device or lock learns only about its own tokens): then nothing else is answered (RFC 7662 section 2.2).',
      }),
      token_type: Type.Optional(Type.Unsafe<'Bearer'>({ type: 'string', enum: ['Bearer'], description: 'Access tokens only.' })),
      scope: Type.Optional(Type.String({ description: 'Its scopes, space-separated.' })),
      client_id: Type.Optional(Type.String({ description: 'The client it was issued to.' })),
      sub: Type.Optional(Type.String({ description: 'Its subject: the user (password grant) or the client.' })),
      aud: Type.Optional(
        Type.Unsafe<string | string[]>({
          anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }],
          description: 'Access tokens only: the API(s) it is for, e.g. `operatorapi`.',
        }),
      ),
      iss: Type.Optional(Type.String({ description: 'The issuer (`PUBLIC_URL`).' })),
      exp: Type.Optional(Type.Integer({ description: 'When it expires, Unix seconds.' })),
      iat: Type.Optional(Type.Integer({ description: 'When it was issued, Unix seconds.' })),
      jti: Type.Optional(Type.String({ description: 'Access tokens only: its id.' })),
      tenant: Type.Optional(Type.String({ description: 'The tenant it belongs to.' })),
    },
    { additionalProperties: false },
  ),
  {
    active: true,
    token_type: 'Bearer',
    scope: 'tokens:create tokens:read',
    client_id: EXAMPLE_CLIENT_ID,
    sub: EXAMPLE_CLIENT_ID,
    aud: 'operatorapi',
    iss: EXAMPLE_ISSUER,
    exp: 1767229200,
    iat: 1767225600,
    jti: '4e5f6a7b-8c9d-4e0f-a1b2-c3d4e5f6a7b8',
    tenant: '0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d',
  },
);

export const AuthorizationServerMetadataSchema = named(
  'AuthorizationServerMetadata',
  Type.Object(
    {
      issuer: Type.String({ description: 'The `iss` of every access token: `PUBLIC_URL`.' }),
      authorization_endpoint: Type.String({ description: '`{PUBLIC_URL}/oauth/authorize`: the console\'s sign-in (docs/api-reference.md 13).' }),
      token_endpoint: Type.String({ description: '`{PUBLIC_URL}/oauth/token` (`/oauth2/token` answers the same).' }),
      jwks_uri: Type.String({ description: 'The access-token keys: `{PUBLIC_URL}/.well-known/jwks.json`.' }),
      revocation_endpoint: Type.String(),
      introspection_endpoint: Type.String(),
      grant_types_supported: Type.Array(Type.Unsafe<string>({ type: 'string', enum: GRANT_TYPES })),
      response_types_supported: Type.Array(Type.Unsafe<string>({ type: 'string', enum: ['code'] }), {
        description: '`code` only: the authorization code flow, never the implicit one (RFC 9700 section 2.1.2).',
      }),
      response_modes_supported: Type.Array(Type.Unsafe<string>({ type: 'string', enum: ['query'] })),
      code_challenge_methods_supported: Type.Array(Type.Unsafe<string>({ type: 'string', enum: ['S256'] }), {
        description: 'PKCE (RFC 7636) is required, with S256 only.',
      }),
      authorization_response_iss_parameter_supported: Type.Boolean({
        description: 'RFC 9207: every authorization response carries `iss`.',
      }),
      token_endpoint_auth_methods_supported: Type.Array(Type.Unsafe<string>({ type: 'string', enum: TOKEN_AUTH_METHODS })),
      token_endpoint_auth_signing_alg_values_supported: Type.Array(Type.Unsafe<string>({ type: 'string', enum: CLIENT_ASSERTION_ALGS }), {
        description: 'The algorithms of private_key_jwt assertions: `ES256` (a device key, docs/api-reference.md 3.1).',
      }),
      revocation_endpoint_auth_methods_supported: Type.Array(Type.Unsafe<string>({ type: 'string', enum: TOKEN_AUTH_METHODS })),
      revocation_endpoint_auth_signing_alg_values_supported: Type.Array(Type.Unsafe<string>({ type: 'string', enum: CLIENT_ASSERTION_ALGS })),
      introspection_endpoint_auth_methods_supported: Type.Array(Type.Unsafe<string>({ type: 'string', enum: CLIENT_AUTH_METHODS })),
      introspection_endpoint_auth_signing_alg_values_supported: Type.Array(Type.Unsafe<string>({ type: 'string', enum: CLIENT_ASSERTION_ALGS })),
      scopes_supported: Type.Array(Type.Unsafe<string>({ type: 'string', enum: [...ALL_SCOPES] })),
      service_documentation: Type.String({ description: 'The Operator API\'s Swagger UI.' }),
    },
    { additionalProperties: false },
  ),
  {
    issuer: EXAMPLE_ISSUER,
    authorization_endpoint: `${EXAMPLE_ISSUER}/oauth/authorize`,
    token_endpoint: `${EXAMPLE_ISSUER}/oauth/token`,
    jwks_uri: `${EXAMPLE_ISSUER}/.well-known/jwks.json`,
    revocation_endpoint: `${EXAMPLE_ISSUER}/oauth/revoke`,
    introspection_endpoint: `${EXAMPLE_ISSUER}/oauth/introspect`,
    grant_types_supported: GRANT_TYPES,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    code_challenge_methods_supported: ['S256'],
    authorization_response_iss_parameter_supported: true,
    token_endpoint_auth_methods_supported: TOKEN_AUTH_METHODS,
    token_endpoint_auth_signing_alg_values_supported: CLIENT_ASSERTION_ALGS,
    revocation_endpoint_auth_methods_supported: TOKEN_AUTH_METHODS,
    revocation_endpoint_auth_signing_alg_values_supported: CLIENT_ASSERTION_ALGS,
    introspection_endpoint_auth_methods_supported: CLIENT_AUTH_METHODS,
    introspection_endpoint_auth_signing_alg_values_supported: CLIENT_ASSERTION_ALGS,
    scopes_supported: [...ALL_SCOPES],
    service_documentation: `${EXAMPLE_ISSUER}/operatorapi/apidocs/index.html`,
  },
);

export const PublicJwkSchema = named(
  'PublicJwk',
  Type.Object(
    {
      kty: Type.Unsafe<string>({ type: 'string', enum: ['OKP', 'EC'], description: '`OKP` (Ed25519) or `EC` (P-256).' }),
      kid: Type.String({ description: 'The key id, as in the `kid` of what it signed.' }),
      alg: Type.Unsafe<string>({ type: 'string', enum: ['EdDSA', 'ES256'], description: 'The algorithm it signs with.' }),
      use: Type.Optional(Type.Unsafe<string>({ type: 'string', enum: ['sig'], description: 'Signatures only.' })),
      crv: Type.Optional(Type.Unsafe<string>({ type: 'string', enum: ['Ed25519', 'P-256'] })),
      x: Type.Optional(Type.String({ description: 'The public key (RFC 8037, RFC 7518 section 6.2.1.2), base64url.' })),
      y: Type.Optional(Type.String({ description: 'EC keys: the y coordinate, base64url.' })),
    },
    { additionalProperties: false, description: 'A public key (RFC 7517): never a private member.' },
  ),
  { kty: 'OKP', crv: 'Ed25519', kid: 'at-2026-01', alg: 'EdDSA', use: 'sig', x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo' },
);

export const JsonWebKeySetSchema = named(
  'JsonWebKeySet',
  Type.Object(
    { keys: Type.Array(PublicJwkSchema, { description: 'Announced, signing and recently retired keys: rotation keeps old keys published.' }) },
    { additionalProperties: false },
  ),
  { keys: [{ kty: 'OKP', crv: 'Ed25519', kid: 'at-2026-01', alg: 'EdDSA', use: 'sig', x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo' }] },
);
