// What the services count for GET /metrics (README "Metrics"): a small port the app fills with prom-client counters,
// so no service imports a metrics library, and the CLI and unit tests run with the no-op one.
/** The grant types the token endpoint serves (docs/api-reference.md 3.1–3.2); an unsupported one is not a grant. */
export const GRANT_TYPES = ['client_credentials', 'password', 'refresh_token', 'authorization_code'] as const;
export type GrantType = (typeof GRANT_TYPES)[number];

/** `success`, or the RFC 6749 section 5.2 error code the token endpoint answered. */
export const GRANT_OUTCOMES = [
  'success',
  'invalid_request',
  'invalid_client',
  'invalid_grant',
  'unauthorized_client',
  'invalid_scope',
  'temporarily_unavailable',
  'server_error',
] as const;
export type GrantOutcome = (typeof GRANT_OUTCOMES)[number];

const grantOutcomes = new Set<string>(GRANT_OUTCOMES);
/** The outcome label of an answered error code; a code outside RFC 6749's list counts as `server_error`. */
export const grantOutcomeOf = (errorCode: string): GrantOutcome =>
  grantOutcomes.has(errorCode) ? (errorCode as GrantOutcome) : 'server_error';

/**
 * Why a password grant was refused (docs/api-reference.md 3.2): the username or password was wrong (or named another
 * tenant's user), or the login was locked and the password not even checked.
 */
export const LOGIN_FAILURE_REASONS = ['invalid_credentials', 'locked'] as const;
export type LoginFailureReason = (typeof LOGIN_FAILURE_REASONS)[number];

/**
 * What a lock's sync came to (docs/api-reference.md 6.2): tickets, revocations or keys to apply; nothing new since its cursor;
 * or refused by the service (no such lock, another lock's client, a cursor not issued here).
 */
export const SYNC_OUTCOMES = ['changes', 'nothing_new', 'refused'] as const;
export type SyncOutcome = (typeof SYNC_OUTCOMES)[number];

/** The signature algorithms of ticket keys (JWT_ALG). */
export const SIGNING_ALGORITHMS = ['EdDSA', 'ES256'] as const;

/**
 * Every label value is one of the lists above: no tenant, client, lock or user id ever becomes a label, so the
 * number of series stays fixed however many tenants there are. Counts of rows written in a transaction are reported
 * after it commits, never from inside it: a rolled-back change counts nothing.
 */
export interface DomainMetrics {
  /** One answer of the token endpoint to a supported grant type. */
  grantAnswered(grantType: GrantType, outcome: GrantOutcome): void;
  /** A password grant refused for its credentials or its lock (docs/api-reference.md 3.2). */
  loginFailed(reason: LoginFailureReason): void;
  /** A login reached the lockout threshold: it is locked for LOCKOUT_SECONDS (once per lock). */
  loginLocked(): void;
  /** Tickets written by a committed transaction: one create, or every ticket an access permission or membership made. */
  ticketsCreated(count: number): void;
  /** Tickets a committed transaction revoked (only those not already revoked). */
  ticketsRevoked(count: number): void;
  /** Ticket credentials signed and handed out by a download or token card (reused stored ones are not signed again). */
  credentialsSigned(alg: string, count: number): void;
  /** One lock sync answered or refused (lock-sync.service.ts). */
  lockSynced(outcome: SyncOutcome): void;
}

const nothing = () => {};

/** Counts nothing: for the CLI, the simulator and tests that build services alone. */
export const noMetrics: DomainMetrics = {
  grantAnswered: nothing,
  loginFailed: nothing,
  loginLocked: nothing,
  ticketsCreated: nothing,
  ticketsRevoked: nothing,
  credentialsSigned: nothing,
  lockSynced: nothing,
};
