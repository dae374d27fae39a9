// Revoked access tokens, mirrored in memory on every instance: a bearer check costs map look-ups, not a query.
// Freshness: NOTIFY reloads at once; a poll every `pollMs` bounds the delay if a notification is lost.
import type { Logger } from 'pino';
import type { Database, Queryable } from '../../db/database.js';
import {
  REVOCATION_CHANNEL,
  deleteExpiredRevocations,
  insertRevocation,
  insertRevocations,
  listRevocationsAfter,
  type RevocationKind,
} from '../../db/repositories/revoked-access-token.repo.js';
import { DECOMMISSIONED_CLIENT_SCOPES } from '../../shared/scopes.js';

export interface RevocationServiceOptions {
  db: Database;
  clock: () => number;
  log: Logger;
  /** Safety net behind NOTIFY; docs/api-reference.md 3.4 allows 5 s. */
  pollMs: number;
}

/** What a bearer check knows of a token. */
export interface TokenSubjects {
  clientId: string;
  userId?: string | undefined;
  familyId?: string | undefined;
  jti: string;
  /** The token's scopes: a decommissioned client's token is refused only when it carries more than it may keep. */
  scopes: ReadonlySet<string>;
}

/** A scope a decommissioned client may no longer use (docs/api-reference.md 4.1). */
const beyondDecommissioned = (scope: string) => !DECOMMISSIONED_CLIENT_SCOPES.has(scope);

/**
 * Revocations of the last minute are read again on every load: one committed after a higher-numbered one was loaded
 * (two concurrent deletions) would otherwise be skipped for good. A minute covers any transaction that commits at all.
 */
const LATE_COMMIT_WINDOW_MS = 60_000;

/** With a 2 s poll, about every 10 minutes. */
const PRUNE_EVERY_POLLS = 300;

export function createRevocationService(options: RevocationServiceOptions) {
  const { db, clock, log } = options;
  /** `kind:subject` → when the entry may be forgotten. */
  const revoked = new Map<string, number>();
  let lastSeq = 0;
  let refreshing: Promise<void> | null = null;
  let refreshAgain = false;
  let timer: NodeJS.Timeout | null = null;
  let unlisten: (() => Promise<void>) | null = null;
  /**
   * Told of every deleted, rotated or decommissioned client this instance learns of (again for the late-commit
   * window).
   */
  const clientChangeListeners: ((clientId: string) => void)[] = [];

  const key = (kind: RevocationKind, subject: string) => `${kind}:${subject}`;

  function prune(now: number): void {
    for (const [entry, expiresAt] of revoked) if (expiresAt <= now) revoked.delete(entry);
  }

  async function loadNew(): Promise<void> {
    const now = clock();
    const rows = await listRevocationsAfter(db, lastSeq, now, now - LATE_COMMIT_WINDOW_MS);
    for (const row of rows) {
      lastSeq = Math.max(lastSeq, row.seq);
      if (row.kind === 'client' || row.kind === 'client-secret' || row.kind === 'client-decommissioned') {
        for (const listener of clientChangeListeners) listener(row.subject);
      }
      if (row.kind === 'client-secret') continue;
      const entry = key(row.kind, row.subject);
      revoked.set(entry, Math.max(row.expiresAt, revoked.get(entry) ?? 0));
    }
    prune(now);
  }

  /** Coalesces concurrent calls; a call during a load schedules one more so nothing committed meanwhile is missed. */
  function refresh(): Promise<void> {
    if (refreshing) {
      refreshAgain = true;
      return refreshing;
    }
    refreshing = (async () => {
      do {
        refreshAgain = false;
        await loadNew();
      } while (refreshAgain);
    })().finally(() => {
      refreshing = null;
    });
    return refreshing;
  }

  return {
    async start(): Promise<void> {
      await refresh();
      unlisten = await db.listen(REVOCATION_CHANNEL, () => {
        refresh().catch((error: unknown) => log.warn({ err: error }, 'revocation reload failed'));
      });
      let polls = 0;
      timer = setInterval(() => {
        refresh().catch((error: unknown) => log.warn({ err: error }, 'revocation poll failed'));
        // Now and then, drop what has expired so the table does not grow forever.
        if (++polls % PRUNE_EVERY_POLLS === 0) {
          deleteExpiredRevocations(db, clock()).catch((error: unknown) => log.warn({ err: error }, 'revocation prune failed'));
        }
      }, options.pollMs);
      timer.unref();
    },

    async stop(): Promise<void> {
      if (timer) clearInterval(timer);
      timer = null;
      await unlisten?.().catch(() => undefined);
    },

    refresh,

    /** Records a revocation in the caller's transaction; call `refresh()` after the commit. */
    async record(tx: Queryable, kind: RevocationKind, subject: string, expiresAt: number): Promise<void> {
      await insertRevocation(tx, kind, subject, clock(), expiresAt);
    },

    /** `record` for many subjects in one statement (set-based fan-out); nothing when `subjects` is empty. */
    async recordMany(tx: Queryable, kind: RevocationKind, subjects: string[], expiresAt: number): Promise<void> {
      await insertRevocations(tx, kind, subjects, clock(), expiresAt);
    },

    /** Calls `listener` with the id of every client deleted, given a new secret or decommissioned, on any instance. */
    onClientChanged(listener: (clientId: string) => void): void {
      clientChangeListeners.push(listener);
    },

    isRevoked(token: TokenSubjects): boolean {
      if (revoked.size === 0) return false;
      return (
        revoked.has(key('client', token.clientId)) ||
        revoked.has(key('jti', token.jti)) ||
        (token.userId !== undefined && revoked.has(key('user', token.userId))) ||
        (token.familyId !== undefined && revoked.has(key('family', token.familyId))) ||
        // docs/api-reference.md 4.1: once its lock is deleted, a client keeps `sync` only (secured-object.service.ts says
        // why such a token is refused whole rather than read with fewer scopes).
        (revoked.has(key('client-decommissioned', token.clientId)) && [...token.scopes].some(beyondDecommissioned))
      );
    },
  };
}

export type RevocationService = ReturnType<typeof createRevocationService>;
