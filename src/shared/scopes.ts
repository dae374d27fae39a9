// The scope vocabulary (docs/api-reference.md 3.6): the names the schemas document and the grants give, and which API each belongs to.

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
  'keys:rotate',
  'keys:register',
  'settings:manage',
  'lockdown:manage',
  // docs/api-reference.md 14: a bulk job of residents, lock groups or access permissions needs the scope their
  // Access API endpoints need, so these two belong to both APIs (as `devices:read` does).
  'device-groups:write',
  'access-permissions:write',
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

/** docs/api-reference.md 3.3: introspecting tokens issued to other clients of the tenant. */
export const INTROSPECTION_SCOPE: (typeof AUTHORIZATION_SERVER_SCOPES)[number] = 'tokens:introspect';

/** Scopes that reach the Device API: a token holding one also gets `aud: deviceapi` (docs/api-reference.md 3.4). */
export const DEVICE_SCOPES: readonly string[] = ['sync', 'tokens:download'];

/**
 * What a client keeps once its lock is deleted (docs/api-reference.md 4.1): it may still sync, so the lock learns every
 * revocation its deletion caused (docs/security-cases.md G43), and nothing else.
 */
export const DECOMMISSIONED_CLIENT_SCOPES: ReadonlySet<string> = new Set(['sync']);

/**
 * What `tenant create` gives the management client (docs/api-reference.md 2). Not `keys:rotate`: an emergency rotation
 * leaves every lock that is never online refusing new credentials until an installer visits (docs/api-reference.md
 * 8.1), so only a client made for it may rotate. Nor `lockdown:manage`: a lockdown shuts every door of the tenant
 * (docs/api-reference.md 15), so only a client made for it may start one.
 */
export const MANAGEMENT_SCOPES = [
  'tokens:create',
  'tokens:read',
  'tokens:delete',
  'devices:read',
  'devices:write',
  'clients:manage',
  'users:manage',
  'audit:read',
  'events:read',
  'webhooks:manage',
  'settings:manage',
];

/**
 * What every client bound to a mobile device or a secured object holds besides the scopes it was made with
 * (docs/api-reference.md 11.1): it registers its own device's or lock's public key, and only that one.
 */
export const BOUND_CLIENT_SCOPES: readonly string[] = ['keys:register'];

/** docs/api-reference.md 13: the roles a user may hold; a user without one cannot sign in to the console. */
export const USER_ROLES = ['admin', 'operator', 'viewer'] as const;
export type UserRole = (typeof USER_ROLES)[number];

/**
 * Scopes no console sign-in carries: the ones a device or lock holds for itself (the Device API's `sync` and
 * `tokens:download`, `keys:register`), and `offline`, since the authorization code grant always answers a refresh token.
 */
const NOT_FOR_CONSOLE: ReadonlySet<string> = new Set(['sync', 'tokens:download', 'keys:register', 'offline']);

/** Administration of the tenant itself, which only an `admin` may do (docs/api-reference.md 13). */
const ADMINISTRATION_SCOPES: ReadonlySet<string> = new Set(['clients:manage', 'users:manage', 'webhooks:manage']);

/** The scopes that only read. */
export const READ_SCOPES: readonly string[] = [
  'tokens:read',
  'devices:read',
  'audit:read',
  'events:read',
  'device-groups:read',
  'access-permissions:read',
];

const CONSOLE_SCOPES: readonly string[] = [...new Set<string>([...OPERATOR_SCOPES, ...ACCESS_SCOPES])].filter(
  (scope) => !NOT_FOR_CONSOLE.has(scope),
);

/**
 * docs/api-reference.md 13: the scopes of a console sign-in by role. `admin`: every Operator and Access API scope;
 * `operator`: all but the tenant's administration; `viewer`: the read scopes. Defined once, here.
 */
export const ROLE_SCOPES: Readonly<Record<UserRole, readonly string[]>> = {
  admin: CONSOLE_SCOPES,
  operator: CONSOLE_SCOPES.filter((scope) => !ADMINISTRATION_SCOPES.has(scope)),
  viewer: CONSOLE_SCOPES.filter((scope) => READ_SCOPES.includes(scope)),
};

export const isUserRole = (value: unknown): value is UserRole => (USER_ROLES as readonly unknown[]).includes(value);

const operatorSet = new Set<string>(OPERATOR_SCOPES);
const accessSet = new Set<string>(ACCESS_SCOPES);
const allSet = new Set<string>(ALL_SCOPES);

export const isKnownScope = (scope: string): boolean => allSet.has(scope);
export const isOperatorScope = (scope: string): boolean => operatorSet.has(scope);
export const isAccessScope = (scope: string): boolean => accessSet.has(scope);

/** RFC 6749 3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ), separated by single spaces. */
export function parseScopeParameter(value: string): string[] | null {
  if (!/^[\x21\x23-\x5B\x5D-\x7E]+( [\x21\x23-\x5B\x5D-\x7E]+)*$/.test(value)) return null;
  return [...new Set(value.split(' '))];
}

export type Api = 'operatorapi' | 'accessapi' | 'deviceapi';
