// The one mapping of database errors: what a driver error means for the request (unavailable, a concurrent change, text it
// cannot store), which the API and OAuth renderers both answer from, and the check for text the database cannot store.

/** SQLSTATE classes and driver codes that mean the database cannot serve right now (not the client's fault). */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (!error || typeof error !== 'object') return false;
  const { code, message } = error as { code?: unknown; message?: unknown };
  if (typeof code === 'string') {
    if (/^(08|53|57P0)/.test(code)) return true; // connection exception, insufficient resources, shutdown
    if (['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH'].includes(code)) return true;
  }
  if (typeof message === 'string') {
    return /timeout exceeded when trying to connect|Query read timeout|Connection terminated|connection timeout|Client has encountered a connection error|PGlite is closed/i.test(
      message,
    );
  }
  return false;
}

/**
 * SQLSTATE 40P01 deadlock_detected and 40001 serialization_failure: PostgreSQL chose this transaction to roll back so
 * that a concurrent one could go on. Nothing was written and nothing in the request was at fault; the same request
 * asked again succeeds (PostgreSQL 15 docs, 13.2 and 13.3: applications retry such transactions).
 */
export function isTransactionConflict(error: unknown): boolean {
  const code = error && typeof error === 'object' ? (error as { code?: unknown }).code : undefined;
  return code === '40P01' || code === '40001';
}

/**
 * SQLSTATE 57014: the statement was cancelled, by `statement_timeout` or a cancel request. The database is up but did
 * not finish in time; nothing says the statement's rows were at fault.
 */
export function isStatementCanceled(error: unknown): boolean {
  return Boolean(error && typeof error === 'object' && (error as { code?: unknown }).code === '57014');
}

/**
 * The message of SQLSTATE 22021 (character_not_in_repertoire) for a NUL byte in text: the one way text from a client
 * can be invalid UTF-8 here, since the driver encodes JavaScript strings itself (a lone surrogate becomes U+FFFD).
 */
const NUL_BYTE_MESSAGE = /^invalid byte sequence for encoding "[^"]+": 0x00$/;

/**
 * Text PostgreSQL cannot store (U+0000, untranslatable characters): SQLSTATE 22P05, and 22021 when it names a NUL
 * byte. The request is at fault, so it is a 400, whichever field carried it. Another 22021 (bytes the database or a
 * node of a cluster produced itself) is no fault of the request's and stays a 500.
 */
export function isUnstorableText(error: unknown): boolean {
  if (!error || typeof error !== 'object') return false;
  const { code, message } = error as { code?: unknown; message?: unknown };
  if (code === '22P05') return true;
  return code === '22021' && typeof message === 'string' && NUL_BYTE_MESSAGE.test(message);
}

/**
 * The error the database raises for text it cannot store, raised before the text reaches it (`assertStorableText`).
 * It carries the database's own SQLSTATE (22P05, untranslatable character), so every renderer answers it exactly as it
 * answers the database's refusal (`isUnstorableText`): a 400 problem on the APIs, `invalid_request` on OAuth.
 */
export class UnstorableTextError extends Error {
  readonly code = '22P05';

  constructor() {
    super('The value holds text PostgreSQL cannot store (U+0000 or a lone UTF-16 surrogate).');
    this.name = 'UnstorableTextError';
  }
}

/**
 * Lone UTF-16 surrogates (`\p{Cs}` under the `u` flag matches only unpaired ones) have no UTF-8 form: PostgreSQL's
 * json parser refuses their escapes (SQLSTATE 22P02), and as plain parameters the driver would store U+FFFD instead.
 */
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Whether any string in `value`, nested arrays and objects included, holds text PostgreSQL cannot store: U+0000,
 * which its text types cannot hold, or a lone surrogate.
 */
export function holdsUnstorableText(value: unknown): boolean {
  if (typeof value === 'string') return value.includes('\u0000') || LONE_SURROGATE.test(value);
  if (Array.isArray(value)) return value.some(holdsUnstorableText);
  if (value !== null && typeof value === 'object') return Object.values(value).some(holdsUnstorableText);
  return false;
}

/**
 * Throws `UnstorableTextError` when `value` holds text PostgreSQL cannot store. For values written in a statement
 * shared with other requests' rows (services/batching.ts): the database's refusal would fail them all (docs/security-cases.md G47).
 */
export function assertStorableText(value: unknown): void {
  if (holdsUnstorableText(value)) throw new UnstorableTextError();
}

/** What a database error means for the request that met it, and what to tell its client. */
export interface DatabaseErrorMeaning {
  /**
   * `unavailable`, `conflict` and `timeout` are transient (503, nothing written, retry); `unstorable` is the client's
   * text (400).
   */
  kind: 'unavailable' | 'conflict' | 'timeout' | 'unstorable';
  status: 400 | 503;
  /** One sentence for the client: what happened and what to do. */
  detail: string;
}

const UNAVAILABLE: DatabaseErrorMeaning = {
  kind: 'unavailable',
  status: 503,
  detail: 'The service cannot reach its database right now. Retry shortly.',
};
const CONFLICT: DatabaseErrorMeaning = {
  kind: 'conflict',
  status: 503,
  detail: 'The request met a concurrent change and was not applied. Retry it.',
};
/**
 * A statement cancelled by `statement_timeout` (DB_STATEMENT_TIMEOUT_MS) rolled back with its transaction: the database
 * was too busy or the work too large for the bound, and nothing in the request was malformed. A 500 would say the
 * service is broken; a 503 says what is true, that it could not do it now.
 */
const TIMED_OUT: DatabaseErrorMeaning = {
  kind: 'timeout',
  status: 503,
  detail: 'The database did not finish the request in time, and nothing of it was applied. Retry shortly.',
};
const UNSTORABLE: DatabaseErrorMeaning = {
  kind: 'unstorable',
  status: 400,
  detail: 'The request holds a character the service cannot store (such as U+0000).',
};

/**
 * The meaning of `error` when it is one the database raised for a reason the request may hear about, else null (a
 * 500 whose detail reveals nothing). Every renderer answers from this, so the APIs (problem details) and the OAuth
 * endpoints (RFC 6749 bodies) never disagree about a database error.
 */
export function meaningOfDatabaseError(error: unknown): DatabaseErrorMeaning | null {
  if (isDatabaseUnavailable(error)) return UNAVAILABLE;
  if (isTransactionConflict(error)) return CONFLICT;
  if (isStatementCanceled(error)) return TIMED_OUT;
  if (isUnstorableText(error)) return UNSTORABLE;
  return null;
}
