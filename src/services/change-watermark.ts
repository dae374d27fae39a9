// Each tenant's latest change number, kept in memory from NOTIFY, so an online lock's "nothing new" sync is answered
// without the database (docs/lock-sync.md). Trusted only while notifications flow: from the moment LISTEN holds and
// the numbers committed before it were read, until the listening connection drops; otherwise callers ask the database.
import type { Database } from '../db/database.js';
import { listChangeWatermarks, parseChangePayload, TENANT_CHANGES_CHANNEL } from '../db/repositories/change-log.repo.js';

/** How soon a failed catch-up read is tried again while the connection still listens. */
const CATCH_UP_RETRY_MS = 1000;
/**
 * How often the numbers are read again while trusted, behind the notifications (as the token revocations have their
 * poll, services/index.ts). A notification can be lost without the connection noticing: a half-open TCP connection is
 * found only by keepalive, hours later by the operating system's default. Reading again bounds how long such a loss
 * hides a change: at most this long, then the lock's next sync asks the database (docs/lock-sync.md).
 */
const RECHECK_MS = 2000;

export type WatermarkPhase = 'down' | 'catching-up' | 'trusted';

/**
 * The state machine, without I/O. `down`: not listening, nothing is trusted. `listening()` → `catching-up`: every
 * commit from now on is delivered, but those before are not known yet. `caughtUp(epoch, read)` → `trusted` when the
 * read (made after LISTEN held) belongs to the current connection: every commit is then either in the read or
 * delivered. `lost()` → `down` at once. Numbers only rise: a read and a notification of the same change in either
 * order leave the larger.
 */
export function createWatermarkState() {
  let phase: WatermarkPhase = 'down';
  let epoch = 0;
  let marks = new Map<string, number>();

  const advance = (tenantId: string, seq: number) => {
    if (seq > (marks.get(tenantId) ?? 0)) marks.set(tenantId, seq);
  };

  return {
    get phase(): WatermarkPhase {
      return phase;
    },

    /** LISTEN holds on a (new) connection; returns the epoch its catch-up read must present. */
    listening(): number {
      phase = 'catching-up';
      marks = new Map();
      return ++epoch;
    },

    /** The numbers read after `listening()` returned `readEpoch`; ignored when the connection changed since. */
    caughtUp(readEpoch: number, read: readonly { tenantId: string; seq: number }[]): boolean {
      if (readEpoch !== epoch || phase !== 'catching-up') return false;
      for (const { tenantId, seq } of read) advance(tenantId, seq);
      phase = 'trusted';
      return true;
    },

    /** The listening connection dropped: what commits from now on may never be delivered. */
    lost(): void {
      phase = 'down';
      epoch++;
      marks = new Map();
    },

    /** A committed change (a notification, or this process's own commit). */
    advance,

    /** Whether `epoch` is still the connection a catch-up was started for. */
    isCurrent(readEpoch: number): boolean {
      return readEpoch === epoch && phase === 'catching-up';
    },

    /** The tenant's last change number (0: none yet) while trusted; undefined: ask the database. */
    current(tenantId: string): number | undefined {
      return phase === 'trusted' ? (marks.get(tenantId) ?? 0) : undefined;
    },
  };
}

export type WatermarkState = ReturnType<typeof createWatermarkState>;

/**
 * Who hears each change as it becomes known (docs/lock-sync.md: a held sync answers as soon as its tenant changes):
 * `changed` for a tenant whose number rose, `lost` when the numbers stop being trusted (a held sync then answers,
 * so its lock asks the database again rather than wait for a notification that may never come).
 */
export interface ChangeListener {
  changed(tenantId: string, seq: number): void;
  lost(): void;
}

export interface ChangeWatermarksOptions {
  db: Database;
  log: { warn(object: object, message: string): void };
  /** How often the numbers are read again while trusted (default RECHECK_MS). */
  recheckMs?: number;
}

export function createChangeWatermarks({ db, log, recheckMs = RECHECK_MS }: ChangeWatermarksOptions) {
  const state = createWatermarkState();
  let unlisten: (() => Promise<void>) | null = null;
  let retryTimer: NodeJS.Timeout | null = null;
  let recheckTimer: NodeJS.Timeout | null = null;
  let recheckFailing = false;
  const listeners = new Set<ChangeListener>();

  /** Raises the tenant's number and tells the listeners when it rose (and is trusted). */
  function advance(tenantId: string, seq: number): void {
    const before = state.current(tenantId);
    state.advance(tenantId, seq);
    if (before !== undefined && seq > before) for (const listener of listeners) listener.changed(tenantId, seq);
  }

  function lost(): void {
    state.lost();
    for (const listener of listeners) listener.lost();
  }

  /**
   * Reads every tenant's number again and raises what is known (numbers only rise, so a read that races a
   * notification or a reconnection never lowers one; a higher number only sends a sync to the database).
   */
  async function recheck(): Promise<void> {
    if (state.phase !== 'trusted') return;
    try {
      for (const { tenantId, seq } of await listChangeWatermarks(db)) advance(tenantId, seq);
      recheckFailing = false;
    } catch (error) {
      // The database is unreachable: syncs that need it fail anyway; said once per outage, not every interval.
      if (!recheckFailing) log.warn({ err: error }, 'change watermark re-read failed');
      recheckFailing = true;
    }
  }

  async function catchUp(readEpoch: number): Promise<void> {
    try {
      state.caughtUp(readEpoch, await listChangeWatermarks(db));
    } catch (error) {
      log.warn({ err: error }, 'change watermark catch-up failed; syncs ask the database meanwhile');
      if (!state.isCurrent(readEpoch)) return;
      retryTimer = setTimeout(() => {
        retryTimer = null;
        if (state.isCurrent(readEpoch)) void catchUp(readEpoch);
      }, CATCH_UP_RETRY_MS);
      retryTimer.unref();
    }
  }

  return {
    async start(): Promise<void> {
      unlisten = await db.listen(
        TENANT_CHANGES_CHANNEL,
        (payload) => {
          // null: the connection was (re)made; onState says so too, and the catch-up read replaces what was known.
          const change = payload === null ? null : parseChangePayload(payload);
          if (change) advance(change.tenantId, change.seq);
        },
        (listenState) => {
          if (listenState === 'lost') lost();
          else void catchUp(state.listening());
        },
      );
      recheckTimer = setInterval(() => void recheck(), recheckMs);
      recheckTimer.unref();
    },

    async stop(): Promise<void> {
      if (retryTimer) clearTimeout(retryTimer);
      retryTimer = null;
      if (recheckTimer) clearInterval(recheckTimer);
      recheckTimer = null;
      lost();
      await unlisten?.().catch(() => undefined);
      unlisten = null;
    },

    /** The tenant's last change number while it can be trusted; undefined: ask the database. */
    current: (tenantId: string): number | undefined => state.current(tenantId),

    /** Hears every change from now on (and every loss of trust); returns the way to stop. */
    subscribe(listener: ChangeListener): () => void {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },

    get phase(): WatermarkPhase {
      return state.phase;
    },
  };
}

export type ChangeWatermarks = ReturnType<typeof createChangeWatermarks>;
