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
/** The `typ` of a lock state's protected header (docs/api-reference.md 15, docs/lock-integration.md 11). */
export const LOCK_STATE_TYPE = 'lock-state+jwt';

/**
 * How far before its `iat` a credential starts (docs/api-reference.md 6.3, docs/security-cases.md H54): `nbf` is the
 * later of `beginDate` and `iat` minus this many seconds. The skew lets a lock whose clock runs a little behind the
 * signer open at once; without the `iat` bound, a ticket beginning long ago would carry an old `nbf`, and a lock whose
 * clock was reset would accept every credential it was ever shown.
 */
export const CREDENTIAL_NBF_SKEW_SECONDS = 300;

/**
 * Every reason a lock gives for a decision: one vocabulary for the reference lock, its access log, receipts and the test
 * vectors (docs/lock-integration.md 3.2, where each is explained with the check that answers it). Stable: lock makers,
 * logs and the explain service quote them.
 */
export const LOCK_REASONS = [
  'ok',
  'malformed',
  'bad-signature',
  'unknown-key',
  'wrong-issuer',
  'wrong-lock',
  'not-yet-valid',
  'expired',
  'lifetime-exceeded',
  'command-not-granted',
  'channel-not-granted',
  'revoked',
  'outside-schedule',
  'binding-required',
  'bad-proof',
  'key-mismatch',
  'wrong-nonce',
  'nonce-used',
  'credential-mismatch',
  'key-revoked',
  'lockdown',
  'decommissioned',
] as const;

export type LockReason = (typeof LOCK_REASONS)[number];

/** The reasons checkCredential itself answers: the credential's own rules (docs/lock-integration.md 3.3, steps 0 and 4–6). */
export type CredentialCheckReason = Extract<
  LockReason,
  | 'ok'
  | 'malformed'
  | 'decommissioned'
  | 'wrong-issuer'
  | 'wrong-lock'
  | 'lifetime-exceeded'
  | 'not-yet-valid'
  | 'expired'
  | 'outside-schedule'
  | 'command-not-granted'
  | 'channel-not-granted'
  | 'revoked'
>;

export type CredentialCheck = { decision: 'open'; reason: 'ok' } | { decision: 'deny'; reason: Exclude<CredentialCheckReason, 'ok'> };

/** docs/lock-integration.md 3.1: the most a lock reads of one credential, and of its lists. Beyond is malformed. */
export const CREDENTIAL_LIMITS = {
  /** Characters of the compact credential (ASCII, so octets too): room for `windows` windows and the rest. */
  credentialLength: 32_768,
  /**
   * Schedule windows in `win`: the densest schedule (28 windows a week) over the longest CREDENTIAL_MAX_LIFETIME
   * (90 days) is 365 windows, so the service never signs more.
   */
  windows: 512,
  /** Entries of `cmd`, and of `chn`. */
  entries: 8,
  /** Characters of `jti`, `iss`, `sub`, `aud`. */
  textLength: 256,
} as const;

/**
 * How far ahead of the lock's clock a credential's `iat` may lie (docs/lock-integration.md 3.3 step 5): the signing
 * skew of docs/api-reference.md 6.4. A credential signed further in the future came from a signer whose clock is wrong,
 * or from a lock whose clock was set back; either way it is not valid yet.
 */
export const CREDENTIAL_IAT_SKEW_SECONDS = 300;

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

/** RFC 7638 SHA-256 thumbprint, base64url: 32 octets, 43 characters. */
const THUMBPRINT = /^[A-Za-z0-9_-]{43}$/;

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
  /** docs/lock-integration.md 11: an override ticket's credential, which opens during a lockdown. Only ever `true`. */
  ovr?: true;
}

const isInteger = (value: unknown): value is number => typeof value === 'number' && Number.isSafeInteger(value);
const isString = (value: unknown): value is string => typeof value === 'string';
/** A non-empty string within the limit: an empty `jti` would name no ticket a revocation could name. */
const isText = (value: unknown): value is string => isString(value) && value.length > 0 && value.length <= CREDENTIAL_LIMITS.textLength;
const isStringArray = (value: unknown): value is string[] => Array.isArray(value) && value.length <= CREDENTIAL_LIMITS.entries && value.every(isString);
const isWindowList = (value: unknown): value is [number, number][] =>
  Array.isArray(value) &&
  value.length <= CREDENTIAL_LIMITS.windows &&
  value.every((window) => Array.isArray(window) && window.length === 2 && isInteger(window[0]) && isInteger(window[1]));
/** docs/lock-integration.md 3.1: `cnf` holds exactly `jkt`; a confirmation method the lock does not know is never ignored. */
const isConfirmation = (value: unknown): value is { jkt: string } =>
  typeof value === 'object' &&
  value !== null &&
  !Array.isArray(value) &&
  Object.keys(value).length === 1 &&
  isString((value as { jkt?: unknown }).jkt) &&
  THUMBPRINT.test((value as { jkt: string }).jkt);

/** An instant a lock can compare with: a whole number of milliseconds within the safe integers. */
export const isValidInstant = (at: unknown): at is number => isInteger(at);

/**
 * The claims with every type a lock relies on checked, or null. `win` and `cnf` are optional; every other claim of
 * docs/api-reference.md 6.3 is required. A JSON array or null is not a claims set. Claims the lock does not know are
 * ignored (docs/lock-integration.md 3.1).
 */
export function parseCredentialClaims(claims: unknown): CredentialClaims | null {
  if (typeof claims !== 'object' || claims === null || Array.isArray(claims)) return null;
  const c = claims as Record<string, unknown>;
  if (!isText(c.iss) || !isText(c.jti) || !isText(c.sub) || !isText(c.aud)) return null;
  if (!isInteger(c.nbf) || !isInteger(c.exp) || !isInteger(c.iat)) return null;
  if (!isInteger(c.beginDate) || !isInteger(c.endDate)) return null;
  if (!isStringArray(c.cmd) || !isStringArray(c.chn)) return null;
  if (c.win !== undefined && !isWindowList(c.win)) return null;
  if (c.cnf !== undefined && !isConfirmation(c.cnf)) return null;
  // docs/lock-integration.md 11: anything but `true` is refused, never read as "no override".
  if (c.ovr !== undefined && c.ovr !== true) return null;
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
    ...(c.cnf !== undefined ? { cnf: { jkt: c.cnf.jkt } } : {}),
    ...(c.ovr === true ? { ovr: true as const } : {}),
  };
}

/** Whether the lock holds a whole trust (docs/lock-integration.md 1): without it, it refuses everything as `malformed`. */
export const isProvisioned = (lock: LockTrustState): boolean =>
  isString(lock.issuer) &&
  lock.issuer !== '' &&
  isString(lock.securedObjectId) &&
  lock.securedObjectId !== '' &&
  isInteger(lock.maxCredentialLifetime) &&
  lock.maxCredentialLifetime > 0;

/**
 * Does the credential (its verified protected header and claims) open the lock for the request? The checks run in the
 * order of docs/lock-integration.md 3.3, so the reason is the first that fails: the lock's own clock and state, the
 * credential's type and shape, whose it is (issuer, lock), how long it may live, when it is valid, what it permits,
 * and revocation last. A lock with no clock reading it can judge with, or without a whole trust, cannot read what it
 * is shown: `malformed` (fail closed, docs/lock-integration.md 3.3 step 0).
 */
export function checkCredential(header: unknown, claims: unknown, lock: LockTrustState, request: AccessRequest): CredentialCheck {
  const deny = (reason: Exclude<CredentialCheckReason, 'ok'>): CredentialCheck => ({ decision: 'deny', reason });
  const { at } = request;
  if (!isValidInstant(at) || !isProvisioned(lock)) return deny('malformed');
  if (lock.decommissioned === true) return deny('decommissioned');
  // RFC 8725 3.11: explicit typing keeps an access token (at+jwt) from ever passing as a credential.
  if (typeof header !== 'object' || header === null || (header as { typ?: unknown }).typ !== CREDENTIAL_TYPE) return deny('malformed');
  const claimSet = parseCredentialClaims(claims);
  if (!claimSet) return deny('malformed');
  // docs/api-reference.md 8.1, docs/security-cases.md G39: another tenant's credential never opens this lock, even
  // one for a lock with the same id, so the issuer is compared before the lock id.
  if (claimSet.iss !== lock.issuer) return deny('wrong-issuer');
  if (claimSet.aud !== lock.securedObjectId) return deny('wrong-lock');
  // docs/api-reference.md 8.2: a credential lives at most one CREDENTIAL_MAX_LIFETIME, so a revocation that reaches the
  // lock later than that no longer matters; one signed for longer is refused whatever its other dates say.
  if (claimSet.exp - claimSet.iat > lock.maxCredentialLifetime) return deny('lifetime-exceeded');
  // Both the JWT window [nbf, exp) in seconds and the ticket's [beginDate, endDate) in milliseconds must hold; no
  // tolerance at either bound (docs/lock-integration.md 3.4). A credential signed in the lock's future is not valid yet.
  if (at < claimSet.nbf * 1000 || at < claimSet.beginDate || at < (claimSet.iat - CREDENTIAL_IAT_SKEW_SECONDS) * 1000) return deny('not-yet-valid');
  if (at >= claimSet.exp * 1000 || at >= claimSet.endDate) return deny('expired');
  if (claimSet.win !== undefined && !claimSet.win.some(([start, end]) => start <= at && at < end)) return deny('outside-schedule');
  if (!claimSet.cmd.includes(request.command)) return deny('command-not-granted');
  if (!claimSet.chn.includes(request.channel)) return deny('channel-not-granted');
  if (lock.revoked.has(claimSet.jti)) return deny('revoked');
  return { decision: 'open', reason: 'ok' };
}

/**
 * The start of the first schedule window of `win` (docs/api-reference.md 9) that begins after `at`, or null when the
 * credential holds none: what a lock refusing `outside-schedule` at `at` would next open at, for the explain service
 * (docs/api-reference.md 8.6). Pure, like checkCredential; windows need not be sorted.
 */
export function nextWindowStart(win: readonly (readonly [number, number])[], at: number): number | null {
  let next: number | null = null;
  for (const [start, end] of win) {
    if (start > at && start < end && (next === null || start < next)) next = start;
  }
  return next;
}
