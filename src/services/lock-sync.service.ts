// An online lock's sync (docs/api-reference.md 6.2, docs/lock-sync.md): the tickets and revocations that concern it
// through the tenant's change log, answered from memory while nothing changed; and the trust an installer writes into it.
import type { Database } from '../db/database.js';
import {
  findLockForClient,
  findLockTrustFacts,
  listLockChanges,
  listLockChangesOfLocks,
  type LockChanges,
} from '../db/repositories/lock-sync.repo.js';
import { listLockRevocations } from '../db/repositories/download.repo.js';
import { findLockState } from '../db/repositories/lockdown.repo.js';
import { findLockTelemetry } from '../db/repositories/lock-telemetry.repo.js';
import type { HolderBinding } from '../shared/holder-binding.js';
import { NotFoundError, ProblemError, ServiceUnavailableError } from '../errors.js';
import type { ChangeWatermarks } from './change-watermark.js';
import type { HeldOutcome, HeldSyncs } from './held-syncs.js';
import type { Clock } from './context.js';
import type { CredentialService, KeySet } from './credential.service.js';
import type { LockTelemetryService } from './lock-telemetry.service.js';
import type { DomainMetrics } from './domain-metrics.js';
import { toTicket, type Ticket } from './ticket.service.js';
import { assertBinding, assertLockClientActive, type DeviceBinding } from '../shared/device-binding.js';
import { cutPage, decodeSyncCursor, encodeSyncCursor, invalidCursor, syncPositionBefore, type SyncPosition } from '../shared/pagination.js';
import { BoundedMap } from '../shared/bounded-map.js';

export interface SyncAnswer {
  tokens: Ticket[];
  revocations: { tokenId: string; revocationDate: number }[];
  /** Pass it back to get only what changed after this answer. */
  cursor: string;
  /** The change-log position the lock has reached once it applied this answer (docs/api-reference.md 8.3's serial). */
  serial: number;
  /** The tenant's ticket keys: on a full sync and after the set changed (docs/api-reference.md 8.1). */
  keys?: KeySet;
  /** The lock was deleted: its client syncs the revocations that deleting it caused, nothing else (docs/api-reference.md 4.1). */
  decommissioned?: true;
  /** The lock's effective holder-binding policy, in every answer (docs/api-reference.md 11.2). */
  holderBinding: HolderBinding;
  /** Phone keys revoked since the cursor whose bound credentials may still be alive (docs/api-reference.md 11.4). */
  revokedKeys: { jkt: string; revocationDate: number }[];
  /**
   * The lock's signed state (`lock-state+jwt`, docs/api-reference.md 15): on a full sync and after it changed, else
   * absent.
   */
  lockState?: string;
  /** True when the answer was cut at `limit`: ask again with the cursor at once. */
  more: boolean;
}

/** What an installer writes into a lock (docs/api-reference.md 8.1). */
export interface LockTrust {
  issuer: string;
  securedObjectId: string;
  keys: KeySet;
  /** CREDENTIAL_MAX_LIFETIME, seconds: a lock may refuse a credential that claims to last longer. */
  maxCredentialLifetime: number;
  /** docs/api-reference.md 11.2: the lock's effective policy. */
  holderBinding: HolderBinding;
  /** The lock's own registered key's thumbprint (docs/api-reference.md 11.1); absent while it has none. */
  keyThumbprint?: string;
  /**
   * The revocation serial the lock starts from: the tenant's change position now, so a lock provisioned offline
   * applies no revocation list older than what it was provisioned with (docs/api-reference.md 8.3).
   */
  serial: number;
  /** The lock's revoked tickets whose credential may still be alive: its first revoked set (docs/api-reference.md 8.2). */
  revoked: string[];
  /** The tenant's revoked phone keys a credential may still be bound to (docs/api-reference.md 11.4). */
  revokedKeys: string[];
  /** The lock's current state (docs/api-reference.md 15), its serial (0: no lockdown reached it) and whether it applied it. */
  lockMode: 'lockdown' | 'normal';
  lockStateSerial: number;
  lockStateApplied: boolean;
  /** The same state signed (`lock-state+jwt`), for the installer to write into the lock. */
  lockState: string;
}

/** How many database-bound syncs may wait for a connection, and how long a refused lock is told to wait (docs/lock-sync.md). */
export interface SyncAdmission {
  /** A sync that needs the database is refused (503) while more requests than this wait for a pooled connection. */
  maxWaiting: number;
  /** A refusal's `Retry-After` is drawn uniformly from 1 to this many seconds, so refused locks come back spread out. */
  retryAfterMaxSeconds: number;
  /** In [0, 1); Math.random unless a test fixes it. */
  random?: () => number;
}

const TRUST_NEEDS_BINDING =
  'A lock is provisioned through its own client: one bound to the secured object (POST /operatorapi/oauthclients with securedObjectId).';

export interface LockSyncServiceOptions {
  db: Database;
  clock: Clock;
  credentials: CredentialService;
  telemetry: LockTelemetryService;
  /** Each tenant's last change number from NOTIFY (docs/lock-sync.md); absent: every sync asks the database. */
  watermarks?: Pick<ChangeWatermarks, 'current'>;
  admission?: SyncAdmission;
  /** Counts the syncs answered (services/domain-metrics.ts). */
  metrics: DomainMetrics;
  /** Where a sync with `wait` and nothing new waits (docs/lock-sync.md); absent: `wait` is ignored. */
  held?: HeldSyncs;
}

/**
 * How many (tenant, lock, client) answers an instance remembers for "nothing new" (docs/lock-sync.md): one small entry
 * each; the oldest is forgotten first, and a forgotten lock's next sync asks the database once.
 */
const MAX_REMEMBERED_SYNCS = 100_000;

/** What the database confirmed for a lock's client at the tenant's change number `tenantSeq` (docs/lock-sync.md). */
interface ConfirmedSync {
  /** The tenant's last change number read with the answer. */
  tenantSeq: number;
  /** The cursor that answer handed out: everything of the lock up to `tenantSeq` lies at or before it. */
  cursor: string;
  serial: number;
  holderBinding: HolderBinding;
}

/** A held sync waits at most this long (docs/lock-sync.md), whatever `wait` asks. */
export const MAX_SYNC_WAIT_SECONDS = 30;

/** An answer with what a held sync needs to know of it: the tenant's change number it was read at. */
interface SyncLook {
  answer: SyncAnswer;
  tenantSeq: number;
}

/** A held sync as its batched look asks again (docs/lock-sync.md): the request's own lock, client, page and cursor. */
interface HeldSyncItem {
  binding: DeviceBinding;
  securedObjectId: string;
  limit: number;
  cursor: string | undefined;
}

/** Whether an answer tells the lock anything: a held sync ends with the first that does (docs/lock-sync.md). */
function hasNews(answer: SyncAnswer, cursor: string | undefined): boolean {
  return (
    answer.tokens.length > 0 ||
    answer.revocations.length > 0 ||
    answer.revokedKeys.length > 0 ||
    answer.keys !== undefined ||
    answer.lockState !== undefined ||
    answer.decommissioned === true ||
    answer.more ||
    // The cursor moved past a change with no ticket of its own (a policy change): the lock takes the new one now.
    answer.cursor !== cursor
  );
}

export function createLockSyncService({ db, clock, credentials, telemetry, watermarks, admission, metrics, held }: LockSyncServiceOptions) {
  const confirmed = new BoundedMap<string, ConfirmedSync>(MAX_REMEMBERED_SYNCS);
  const syncKey = (tenantId: string, securedObjectId: string, clientId: string) => `${tenantId}\u0000${securedObjectId}\u0000${clientId}`;

  /**
   * docs/lock-sync.md: the answer from memory to a sync with the cursor the database last handed this client, while the
   * tenant's change number is still the one read with it. The database then confirmed that the lock existed, that
   * this client was not decommissioned, and that nothing of the lock lay beyond the cursor; everything that could
   * change that (a ticket created or revoked, the lock deleted, the key set changed) takes a change number, which the
   * trusted watermark would show. So this is the database's own answer, empty arrays and the same cursor. A change
   * whose notification is still on its way is not seen yet: the cursor stays where the database put it and the lock
   * learns the change on a later sync. Undefined: ask the database.
   */
  function rememberedNothingNew(tenantId: string, securedObjectId: string, clientId: string, cursor: string): ConfirmedSync | undefined {
    if (watermarks === undefined) return undefined;
    const known = confirmed.get(syncKey(tenantId, securedObjectId, clientId));
    if (known === undefined || known.cursor !== cursor) return undefined;
    return watermarks.current(tenantId) === known.tenantSeq ? known : undefined;
  }

  function remember(tenantId: string, securedObjectId: string, clientId: string, answer: ConfirmedSync | null): void {
    const key = syncKey(tenantId, securedObjectId, clientId);
    if (answer === null) {
      confirmed.delete(key);
      return;
    }
    // The newest entry: the oldest answer is forgotten first.
    confirmed.set(key, answer);
  }

  /**
   * docs/lock-sync.md: a storm of syncs (every lock back after an outage) must not queue without bound for the
   * database. While more than `maxWaiting` requests wait for a pooled connection, a sync that needs one is refused with
   * 503 and a Retry-After drawn from 1..retryAfterMaxSeconds, so the refused locks come back spread out rather than
   * together; a sync answered from memory is never refused.
   */
  function admit(): void {
    if (admission === undefined || db.stats().waiting <= admission.maxWaiting) return;
    const random = admission.random ?? Math.random;
    const retryAfter = 1 + Math.floor(random() * admission.retryAfterMaxSeconds);
    throw new ServiceUnavailableError(
      'Too many locks are syncing at once. Retry after the number of seconds in Retry-After (docs/lock-sync.md).',
      Math.min(retryAfter, admission.retryAfterMaxSeconds),
    );
  }

  /** One sync's answer (`sync` counts it), with the tenant's change number it was read at. */
  async function syncAnswer(tenantId: string, binding: DeviceBinding, securedObjectId: string, limit: number, cursor?: string): Promise<SyncLook> {
    assertBinding(binding, 'securedObjectId', securedObjectId, null);
    // A remembered cursor is one the database handed out, so it needs no decoding: looked up first.
    const remembered = cursor === undefined ? undefined : rememberedNothingNew(tenantId, securedObjectId, binding.clientId, cursor);
    if (remembered !== undefined) {
      // The acknowledgement the database path would make (below): nothing new, so everything up to the cursor. It
      // writes only when that rises or last-seen is due (lock-telemetry.service.ts), not once per sync; asked first
      // without a promise, as an online lock's polls mostly need no write.
      if (binding.securedObjectId !== undefined && telemetry.acknowledgementDue(tenantId, securedObjectId, remembered.serial)) {
        await telemetry.acknowledgeSync(tenantId, securedObjectId, remembered.serial, `client:${binding.clientId}`);
      }
      return {
        answer: {
          tokens: [],
          revocations: [],
          cursor: remembered.cursor,
          serial: remembered.serial,
          // A policy change takes a change number (docs/api-reference.md 11.2), so the remembered one is still the policy.
          holderBinding: remembered.holderBinding,
          revokedKeys: [],
          more: false,
        },
        tenantSeq: remembered.tenantSeq,
      };
    }
    const position = decodeSyncCursor(cursor);
    // A full sync always carries the key set: the tenant's first key (a key-set change of its own) is made before the
    // position is read, so the next sync does not send it again.
    if (cursor === undefined) await credentials.ensureKey(tenantId);
    const now = clock();
    // No await between the check and the query: the query joins the pool's queue in the same turn.
    admit();
    const lock = await listLockChanges(db, tenantId, securedObjectId, binding.clientId, position, now, limit + 1, credentials.lifetimeMs);
    return answerFrom(tenantId, binding, securedObjectId, limit, cursor, position, lock, now);
  }

  /** The answer to a sync from what the database read for its lock (listLockChanges) at `now`. */
  async function answerFrom(
    tenantId: string,
    binding: DeviceBinding,
    securedObjectId: string,
    limit: number,
    cursor: string | undefined,
    position: SyncPosition,
    lock: LockChanges,
    now: number,
  ): Promise<SyncLook> {
    if (!lock.lockExists && lock.decommissionedSeq === null) throw new NotFoundError(`No secured object ${securedObjectId}.`);
    // A cursor beyond every change the tenant has made was not issued here; its serial would make the lock ignore
    // every revocation list a phone brings (docs/api-reference.md 8.3).
    if (position.seq > lock.lastSeq) throw invalidCursor();
    const { rows: changes, more, last } = cutPage(lock.changes, limit);
    // docs/api-reference.md 8.4: the lock has applied everything up to its cursor, except the cursor's own change number
    // when the previous answer was cut inside it (its remaining tickets come first now). A full sync acknowledges
    // nothing. A decommissioned client whose lock id now names a newly registered lock speaks for another lock and
    // acknowledges nothing; one whose lock is gone does: the deleted door may open until it applied what its
    // deletion revoked (docs/security-cases.md G43). Only the lock's own client speaks for the lock: an unbound
    // sync client (a hub, an integration that reads) may sync any lock of the tenant (docs/api-reference.md 6.2), and
    // letting it acknowledge would let any holder of the `sync` scope mark every revocation of every door applied.
    // A hub's locks therefore show their revocations pending: the safe side of "may the door still open".
    if (binding.securedObjectId !== undefined && !(lock.lockExists && lock.decommissionedSeq !== null)) {
      const applied = cursor === undefined ? undefined : changes[0]?.changeSeq === position.seq ? position.seq - 1 : position.seq;
      await telemetry.acknowledgeSync(
        tenantId,
        securedObjectId,
        applied === undefined ? undefined : Math.max(applied, 0),
        `client:${binding.clientId}`,
      );
    }
    let reached = last ? { seq: last.changeSeq, id: last.id } : position;
    const keysChanged = cursor === undefined || position.seq < lock.keySetSeq;
    // docs/api-reference.md 15: the state on a full sync and after it changed. A deleted lock's client is told no
    // state: it opens for nobody anyway (docs/api-reference.md 4.1).
    const stateChanged = lock.decommissionedSeq === null && (cursor === undefined || position.seq < lock.lockStateSeq);
    // A key-set change, a policy change and a phone-key revocation write no ticket, so no ticket carries their
    // numbers (each takes one of its own, docs/api-reference.md 11.2, 11.4): once every ticket change before them has
    // been answered, the cursor moves past them and the next sync does not send them again.
    const untickedSeq = Math.max(lock.keySetSeq, lock.holderBindingSeq, lock.revokedKeysSeq, lock.lockStateSeq);
    if (!more && reached.seq < untickedSeq) reached = syncPositionBefore(untickedSeq);
    // An answer cut inside change number r carries the key revocations before r; the next one, from r, the rest.
    const revokedKeys = lock.revokedKeys.filter((key) => !more || key.changeSeq < reached.seq);
    const answer: SyncAnswer = {
      tokens: changes.filter((row) => row.revokedAt === null).map((row) => toTicket(row, now)),
      revocations: changes
        .filter((row) => row.revokedAt !== null)
        .map((row) => ({ tokenId: row.id, revocationDate: row.revokedAt! })),
      cursor: reached === position && cursor !== undefined ? cursor : encodeSyncCursor(reached),
      // Cut inside a change number: that number may have more to come, so the lock has reached the one before.
      serial: more ? reached.seq - 1 : reached.seq,
      // Read after the position (docs/api-reference.md 8.1): a rotation committing meanwhile is sent again, never lost.
      ...(keysChanged ? { keys: await credentials.keySet(tenantId) } : {}),
      ...(lock.decommissionedSeq !== null ? { decommissioned: true as const } : {}),
      ...(stateChanged
        ? { lockState: await credentials.lockState(tenantId, securedObjectId, { serial: lock.lockStateSeq, mode: lock.lockStateMode }, now) }
        : {}),
      holderBinding: lock.holderBinding,
      revokedKeys: revokedKeys.map((key) => ({ jkt: key.jkt, revocationDate: key.revocationDate })),
      more,
    };
    // docs/lock-sync.md: what the next sync with this cursor may be answered from memory. Only a whole answer (a cut
    // one has more of the same change number to come) for a lock that exists and a client that is not
    // decommissioned: those answers carry more than empty arrays. Nor one that left out a revocation only because the
    // lock's clock is not known to run behind: an estimate later (an access-log upload) takes no change number, and
    // the database would then send it (docs/api-reference.md 8.5).
    const whole = !more && lock.lockExists && lock.decommissionedSeq === null && !lock.clockDependent;
    remember(
      tenantId,
      securedObjectId,
      binding.clientId,
      whole ? { tenantSeq: lock.lastSeq, cursor: answer.cursor, serial: answer.serial, holderBinding: answer.holderBinding } : null,
    );
    return { answer, tenantSeq: lock.lastSeq };
  }

  /**
   * docs/lock-sync.md: the held syncs of one tenant that a change woke look again together: one statement reads what
   * each lock has past its own cursor (listLockChangesOfLocks), then each answer is built as an immediate sync would
   * build it. A refusal of one lock (deleted meanwhile, say) answers that sync alone.
   */
  async function lookAgain(tenantId: string, items: HeldSyncItem[]): Promise<HeldOutcome<SyncAnswer>[]> {
    const positions = items.map((item) => decodeSyncCursor(item.cursor));
    if (items.some((item) => item.cursor === undefined)) await credentials.ensureKey(tenantId);
    const now = clock();
    admit();
    const locks = await listLockChangesOfLocks(
      db,
      tenantId,
      items.map((item, index) => ({
        securedObjectId: item.securedObjectId,
        clientId: item.binding.clientId,
        position: positions[index]!,
        limit: item.limit + 1,
      })),
      now,
      credentials.lifetimeMs,
    );
    return Promise.all(
      items.map(async (item, index): Promise<HeldOutcome<SyncAnswer>> => {
        try {
          const next = await answerFrom(tenantId, item.binding, item.securedObjectId, item.limit, item.cursor, positions[index]!, locks[index]!, now);
          return { answer: next.answer, news: hasNews(next.answer, item.cursor), seenSeq: next.tenantSeq };
        } catch (error) {
          return { error };
        }
      }),
    );
  }

  /**
   * docs/lock-sync.md: a sync with `wait` whose answer has nothing new is held (held-syncs.ts) until a change of the
   * tenant is heard and a new look has news for this lock, or the wait ends with the empty answer. Every look asks
   * with the request's own cursor, so whatever answer goes out is the one an immediate sync would have given then.
   */
  async function answerOrHold(
    tenantId: string,
    binding: DeviceBinding,
    securedObjectId: string,
    limit: number,
    cursor: string | undefined,
    wait: { seconds: number; signal?: AbortSignal | undefined } | undefined,
  ): Promise<SyncAnswer> {
    const first = await syncAnswer(tenantId, binding, securedObjectId, limit, cursor);
    if (held === undefined || wait === undefined || wait.seconds <= 0 || hasNews(first.answer, cursor)) return first.answer;
    return held.hold(
      tenantId,
      { answer: first.answer, news: false, seenSeq: first.tenantSeq },
      Math.min(wait.seconds, MAX_SYNC_WAIT_SECONDS) * 1000,
      { look: lookAgain, item: { binding, securedObjectId, limit, cursor } },
      wait.signal,
    );
  }

  return {
    /**
     * docs/api-reference.md 6.2: no cursor, everything current; with one, only what changed after it. A client bound to this
     * lock or an unbound one syncs (docs/api-reference.md 3.7). The answer carries the tenant's key set on a full sync and
     * after the set changed (docs/api-reference.md 8.1), and only revocations a lock still needs (8.2). A client whose lock
     * was deleted still learns every revocation the deletion caused (docs/api-reference.md 4.1, docs/security-cases.md G43).
     */
    async sync(
      tenantId: string,
      binding: DeviceBinding,
      securedObjectId: string,
      limit: number,
      cursor?: string,
      wait?: { seconds: number; signal?: AbortSignal | undefined },
    ): Promise<SyncAnswer> {
      let answer: SyncAnswer;
      try {
        answer = await answerOrHold(tenantId, binding, securedObjectId, limit, cursor, wait);
      } catch (error) {
        // A refusal the lock is told (unknown lock, another lock's client, a cursor not issued here); a failure of the
        // server (the database down) is no answer about the lock and is left to the HTTP metrics.
        if (error instanceof ProblemError && error.status < 500) metrics.lockSynced('refused');
        throw error;
      }
      const changed =
        answer.tokens.length > 0 || answer.revocations.length > 0 || answer.revokedKeys.length > 0 || answer.keys !== undefined || answer.lockState !== undefined;
      metrics.lockSynced(changed ? 'changes' : 'nothing_new');
      return answer;
    },

    /**
     * docs/api-reference.md 8.1: the issuer and key set an installer writes into the lock, for the lock's own client only.
     * A deleted lock's client only syncs (docs/api-reference.md 4.1).
     */
    async trust(tenantId: string, binding: DeviceBinding, securedObjectId: string): Promise<LockTrust> {
      assertBinding(binding, 'securedObjectId', securedObjectId, TRUST_NEEDS_BINDING);
      assertLockClientActive(await findLockForClient(db, tenantId, securedObjectId, binding.clientId), securedObjectId);
      // The serial before the key set (as a revocation list reads them, download.service.ts): a rotation committing in
      // between is carried again by a later list, never missed under a serial that already counts it.
      const facts = await findLockTrustFacts(db, tenantId, securedObjectId);
      // What a revocation list at that serial would carry, read after it (a change meanwhile is carried again later):
      // lists at or below the serial are ignored by the lock, so the trust itself must hold what they held.
      const now = clock();
      const [lock] = await listLockRevocations(db, tenantId, [securedObjectId], now, credentials.lifetimeMs);
      // docs/api-reference.md 15: the state a lock provisioned now starts in, and whether the lock already has it.
      const [state, telemetry] = await Promise.all([findLockState(db, tenantId, securedObjectId), findLockTelemetry(db, tenantId, securedObjectId)]);
      return {
        issuer: await credentials.issuerOf(tenantId),
        securedObjectId,
        keys: await credentials.keySet(tenantId),
        maxCredentialLifetime: credentials.lifetimeMs / 1000,
        holderBinding: facts.holderBinding,
        ...(facts.keyThumbprint !== null ? { keyThumbprint: facts.keyThumbprint } : {}),
        serial: facts.lastSeq,
        revoked: lock?.revoked ?? [],
        revokedKeys: lock?.revokedKeys ?? [],
        lockMode: state.mode,
        lockStateSerial: state.serial,
        lockStateApplied: (telemetry?.appliedThrough ?? 0) >= state.serial,
        lockState: await credentials.lockState(tenantId, securedObjectId, state, now),
      };
    },
  };
}

export type LockSyncService = ReturnType<typeof createLockSyncService>;
