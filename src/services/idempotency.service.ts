// Idempotency-Key (docs/api-reference.md 4.3): the first response to a client's key is replayed to its repeats of the request for 24 h.
import type { Logger } from 'pino';
import type { Database } from '../db/database.js';
import {
  completeIdempotencyKey,
  deleteExpiredIdempotencyKeys,
  findIdempotencyKey,
  releaseIdempotencyKey,
  reserveIdempotencyKey,
  type IdempotencyOwner,
} from '../db/repositories/idempotency.repo.js';
import { ConflictError, UnprocessableError } from '../errors.js';
import { sha256 } from '../shared/crypto.js';
import type { Clock } from './context.js';
import { pruneEachTenant } from './retention.js';

export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export type IdempotencyOutcome = { kind: 'proceed' } | { kind: 'replay'; response: StoredResponse };

export interface IdempotencyServiceOptions {
  db: Database;
  clock: Clock;
  log: Logger;
  /** How long a stored answer is replayed. */
  ttlMs: number;
  /**
   * How long a request may hold its key without answering. Longer than any request runs, so a slow request is never
   * run twice; short, so a request whose instance died (docs/api-reference.md 7.6) frees its key within it.
   */
  leaseMs: number;
}

/** JSON with sorted keys: the same body in another key order is the same request. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export function requestFingerprint(method: string, path: string, body: unknown): Buffer {
  return sha256(`${method} ${path}\n${canonicalJson(body ?? null)}`);
}

const SWEEP_INTERVAL_MS = 15 * 60_000;

export function createIdempotencyService({ db, clock, log, ttlMs, leaseMs }: IdempotencyServiceOptions) {
  let timer: NodeJS.Timeout | null = null;

  return {
    /**
     * Reserves the key, or tells how to answer a repeat: the stored response, 422 for another request under the
     * same key, 409 while the first is still running. Keys are per client (`owner`): another client's identical key
     * is another request, never answered with this one's response.
     */
    async begin(owner: IdempotencyOwner, key: string, fingerprint: Buffer): Promise<IdempotencyOutcome> {
      for (let attempt = 0; attempt < 2; attempt++) {
        const now = clock();
        if (await reserveIdempotencyKey(db, owner, key, fingerprint, now, now + leaseMs)) return { kind: 'proceed' };
        const existing = await findIdempotencyKey(db, owner, key);
        if (!existing) continue; // released between the two statements: try to reserve again
        if (!existing.requestHash.equals(fingerprint)) {
          throw new UnprocessableError(
            'This Idempotency-Key was used with a different request. Use a new key for a new request.',
            [{ field: 'Idempotency-Key', message: 'reused with a different request' }],
          );
        }
        if (!existing.response) {
          throw new ConflictError('A request with this Idempotency-Key is still being processed. Retry shortly.');
        }
        return { kind: 'replay', response: existing.response };
      }
      throw new ConflictError('A request with this Idempotency-Key is still being processed. Retry shortly.');
    },

    complete: (owner: IdempotencyOwner, key: string, response: StoredResponse) =>
      completeIdempotencyKey(db, owner, key, response, ttlMs),

    release: (owner: IdempotencyOwner, key: string) => releaseIdempotencyKey(db, owner, key),

    start(): void {
      timer = setInterval(() => {
        const now = clock();
        // A tenant at a time in bounded batches (services/retention.ts).
        pruneEachTenant(db, (tenantId, limit) => deleteExpiredIdempotencyKeys(db, tenantId, now, limit)).catch((error: unknown) =>
          log.warn({ err: error }, 'idempotency sweep failed'),
        );
      }, SWEEP_INTERVAL_MS);
      timer.unref();
    },

    stop(): void {
      if (timer) clearInterval(timer);
      timer = null;
    },
  };
}

export type IdempotencyService = ReturnType<typeof createIdempotencyService>;
