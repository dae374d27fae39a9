// The scope names (docs/api-reference.md 3.6), one definition for the schemas that document them and the services that grant them.

/** Scopes of the Operator API and the Device API (client credentials grant). */
export const OPERATOR_SCOPES = [
  'tokens:create',
  'tokens:read',
  'tokens:delete',
  'tokens:download',
  'devices:read',
  'devices:write',
  'sync',
  'clients:manage',
  'users:manage',
  'audit:read',
  'events:read',
  'webhooks:manage',
] as const;

/** Scopes of the Access API (password and refresh grants). `devices:read` belongs to both. */
export const ACCESS_SCOPES = [
  'offline',
  'nfc-token-writer',
  'device-groups:write',
  'device-groups:read',
  'devices:read',
  'access-permissions:read',
  'access-permissions:write',
] as const;

/**
 * Permissions a client holds at the authorization server itself, not scopes of an API (docs/api-reference.md 3.3, 3.6):
 * `tokens:introspect` lets a resource server of the tenant introspect any token of its tenant (RFC 7662 section 4
 * leaves to the server which clients may learn about which tokens). They never go into an access token: no API route
 * asks for them, and the introspection endpoint authenticates the client itself (RFC 7662 section 2.1), not a bearer
 * token. So the grants leave them out (they are neither Operator nor Access API scopes), and a client holding nothing
 * else gets `unauthorized_client` from the token endpoint.
 */
export const AUTHORIZATION_SERVER_SCOPES = ['tokens:introspect'] as const;

export const ALL_SCOPES: readonly string[] = [
  ...new Set<string>([...OPERATOR_SCOPES, ...ACCESS_SCOPES, ...AUTHORIZATION_SERVER_SCOPES]),
];
