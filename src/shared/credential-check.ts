// Does this credential open this lock (docs/api-reference.md 6.3, 8.1, 8.2, 9): the one rule, shared by the lock simulator
// and every service that must answer the same question (the explain service of docs/api-reference.md 8.6).
//
// The rule works on a header and claims whose signature the caller has already verified with a key of the lock's own
// set; it checks everything else a lock checks offline. It fails closed, as firmware must: a claim that is missing or
// of the wrong type, an instant that is not a whole number of milliseconds, or a lock state that is not provisioned
// is a refusal, never a comparison that happens to come out false (`NaN < x` is false for every x).
//
// Pure: no clock, no I/O, no exceptions. Same inputs, same answer.

/** The `typ` of a credential's protected header (docs/api-reference.md 6.3); an access token's `at+jwt` is never one. */
export const CREDENTIAL_TYPE = 'ticket+jwt';
/** The `typ` of a revocation list's protected header (docs/api-reference.md 8.3): never mistaken for a credential. */
export const REVOCATION_LIST_TYPE = 'revocation-list+jwt';

/**
 * How far before its `iat` a credential starts (docs/api-reference.md 6.3, docs/security-cases.md H54): `nbf` is the
 * later of `beginDate` and `iat` minus this many seconds. The skew lets a lock whose clock runs a little behind the
 * signer open at once; without the `iat` bound, a ticket beginning long ago would carry an old `nbf`, and a lock whose
 * clock was reset would accept every credential it was ever shown.
 */
export const CREDENTIAL_NBF_SKEW_SECONDS = 300;

/** Why a credential opens or does not open a lock. Stable: tests, logs and the explain service quote them. */
export type CredentialCheckReason =
  | 'valid'
  | 'invalid time'
  | 'lock not provisioned'
  | 'lock decommissioned'
  | 'not a ticket credential'
  | 'malformed credential'
  | 'wrong issuer'
  | 'wrong lock'
  | "lifetime exceeds the lock's maximum"
  | 'not yet valid'
  | 'expired'
  | 'outside schedule'
  | 'command not permitted'
  | 'channel not permitted'
  | 'revoked';

export type CredentialCheck = { decision: 'open'; reason: 'valid' } | { decision: 'deny'; reason: Exclude<CredentialCheckReason, 'valid'> };

/** What a lock holds (docs/api-reference.md 8.1: the trust answer an installer writes into it, plus what it learnt since). */
export interface LockTrustState {
  /** The tenant's credential issuer, `{PUBLIC_URL}/tenants/{tenant}`: the only `iss` the lock accepts. */
  issuer: string;
  /** The lock's own secured-object id: the only `aud` it accepts. */
  securedObjectId: string;
  /** CREDENTIAL_MAX_LIFETIME in seconds (docs/api-reference.md 8.2): a credential with `exp - iat` above it is refused. */
  maxCredentialLifetime: number;
  /** Ticket ids the lock learnt are revoked (by sync or a revocation list); a set never forgets one. */
  revoked: { has(ticketId: string): boolean };
  /** The backend deleted the lock (docs/api-reference.md 4.1): it opens for nobody any more. */
  decommissioned?: boolean;
}

/** What is asked of the lock: a command, over a channel, at an instant of the lock's clock (Unix milliseconds). */
export interface AccessRequest {
  command: string;
  channel: string;
  at: number;
}

/** The claims of a credential once their types are checked (docs/api-reference.md 6.3). */
export interface CredentialClaims {
  iss: string;
  jti: string;
  sub: string;
  aud: string;
  /** Seconds. */
  nbf: number;
  /** Seconds; the credential is not accepted on or after it (RFC 7519 4.1.4). */
  exp: number;
  /** Seconds. */
  iat: number;
  /** Milliseconds. */
  beginDate: number;
  /** Milliseconds, exclusive. */
  endDate: number;
  cmd: string[];
  chn: string[];
  /** The schedule's windows `[[startMs, endMs)…]` (docs/api-reference.md 9); absent when the ticket has no schedule. */
  win?: [number, number][];
  /** RFC 7800 3.1: the thumbprint of the phone key the credential is bound to (docs/api-reference.md 11.2). */
  cnf?: { jkt: string };
}

const isInteger = (value: unknown): value is number => typeof value === 'number' && Number.isSafeInteger(value);
const isString = (value: unknown): value is string => typeof value === 'string';
const isStringArray = (value: unknown): value is string[] => Array.isArray(value) && value.every(isString);
const isWindowList = (value: unknown): value is [number, number][] =>
  Array.isArray(value) && value.every((window) => Array.isArray(window) && window.length === 2 && isInteger(window[0]) && isInteger(window[1]));

/** An instant a lock can compare with: a whole number of milliseconds within the safe integers. */
export const isValidInstant = (at: unknown): at is number => isInteger(at);

/**
 * The claims with every type a lock relies on checked, or null. `win` is optional; every other claim of
 * docs/api-reference.md 6.3 is required. A JSON array or null is not a claims set.
 */
export function parseCredentialClaims(claims: unknown): CredentialClaims | null {
  if (typeof claims !== 'object' || claims === null || Array.isArray(claims)) return null;
  const c = claims as Record<string, unknown>;
  if (!isString(c.iss) || !isString(c.jti) || !isString(c.sub) || !isString(c.aud)) return null;
  if (!isInteger(c.nbf) || !isInteger(c.exp) || !isInteger(c.iat)) return null;
  if (!isInteger(c.beginDate) || !isInteger(c.endDate)) return null;
  if (!isStringArray(c.cmd) || !isStringArray(c.chn)) return null;
  if (c.win !== undefined && !isWindowList(c.win)) return null;
  return {
    iss: c.iss,
    jti: c.jti,
    sub: c.sub,
    aud: c.aud,
    nbf: c.nbf,
    exp: c.exp,
    iat: c.iat,
    beginDate: c.beginDate,
    endDate: c.endDate,
    cmd: c.cmd,
    chn: c.chn,
    ...(c.win !== undefined ? { win: c.win } : {}),
  };
}

const isProvisioned = (lock: LockTrustState): boolean =>
  isString(lock.issuer) &&
  lock.issuer !== '' &&
  isString(lock.securedObjectId) &&
  lock.securedObjectId !== '' &&
  isInteger(lock.maxCredentialLifetime) &&
  lock.maxCredentialLifetime > 0;

/**
 * Does the credential (its verified protected header and claims) open the lock for the request? The checks run in a
 * fixed order, so the reason is the first that fails: the lock's own clock and state, the credential's type and
 * shape, whose it is (issuer, lock), how long it may live, when it is valid, what it permits, and revocation last.
 */
export function checkCredential(header: unknown, claims: unknown, lock: LockTrustState, request: AccessRequest): CredentialCheck {
  const deny = (reason: Exclude<CredentialCheckReason, 'valid'>): CredentialCheck => ({ decision: 'deny', reason });
  const { at } = request;
  if (!isValidInstant(at)) return deny('invalid time');
  if (!isProvisioned(lock)) return deny('lock not provisioned');
  if (lock.decommissioned === true) return deny('lock decommissioned');
  // RFC 8725 3.11: explicit typing keeps an access token (at+jwt) from ever passing as a credential.
  if (typeof header !== 'object' || header === null || (header as { typ?: unknown }).typ !== CREDENTIAL_TYPE) {
    return deny('not a ticket credential');
  }
  const claimSet = parseCredentialClaims(claims);
  if (!claimSet) return deny('malformed credential');
  // docs/api-reference.md 8.1, docs/security-cases.md G39: another tenant's credential never opens this lock, even
  // one for a lock with the same id, so the issuer is compared before the lock id.
  if (claimSet.iss !== lock.issuer) return deny('wrong issuer');
  if (claimSet.aud !== lock.securedObjectId) return deny('wrong lock');
  // docs/api-reference.md 8.2: a credential lives at most one CREDENTIAL_MAX_LIFETIME, so a revocation that reaches the
  // lock later than that no longer matters; one signed for longer is refused whatever its other dates say.
  if (claimSet.exp - claimSet.iat > lock.maxCredentialLifetime) return deny("lifetime exceeds the lock's maximum");
  // Both the JWT window [nbf, exp) in seconds and the ticket's [beginDate, endDate) in milliseconds must hold.
  if (at < claimSet.nbf * 1000 || at < claimSet.beginDate) return deny('not yet valid');
  if (at >= claimSet.exp * 1000 || at >= claimSet.endDate) return deny('expired');
  if (claimSet.win !== undefined && !claimSet.win.some(([start, end]) => start <= at && at < end)) return deny('outside schedule');
  if (!claimSet.cmd.includes(request.command)) return deny('command not permitted');
  if (!claimSet.chn.includes(request.channel)) return deny('channel not permitted');
  if (lock.revoked.has(claimSet.jti)) return deny('revoked');
  return { decision: 'open', reason: 'valid' };
}

/**
 * The start of the first schedule window of `win` (docs/api-reference.md 9) that begins after `at`, or null when the
 * credential holds none: what a lock refusing "outside schedule" at `at` would next open at, for the explain service
 * (docs/api-reference.md 8.6). Pure, like checkCredential; windows need not be sorted.
 */
export function nextWindowStart(win: readonly (readonly [number, number])[], at: number): number | null {
  let next: number | null = null;
  for (const [start, end] of win) {
    if (start > at && start < end && (next === null || start < next)) next = start;
  }
  return next;
}
