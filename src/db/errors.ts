// Classifies driver errors: which mean "the database is unavailable" (503) and which are constraint violations.

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

/** The constraint a unique violation (SQLSTATE 23505) hit, or null for any other error. */
export function uniqueViolation(error: unknown): string | null {
  if (error && typeof error === 'object' && (error as { code?: unknown }).code === '23505') {
    return String((error as { constraint?: unknown }).constraint ?? '');
  }
  return null;
}

/**
 * Text PostgreSQL cannot store (U+0000, invalid encodings): SQLSTATE 22021 and 22P05. The request is at fault, so it
 * is a 400, whichever field carried it.
 */
export function isUnstorableText(error: unknown): boolean {
  const code = error && typeof error === 'object' ? (error as { code?: unknown }).code : undefined;
  return code === '22021' || code === '22P05';
}
