// The Device API (docs/api-reference.md 6): a phone downloads its valid tickets with credentials; an online lock syncs the
// tickets and revocations that concern it through the tenant's change log.
import type { Database, Queryable } from '../db/database.js';
import {
  findLockForClient,
  listLockChanges,
  listLockRevocations,
  listValidTicketsOfDevice,
  listValidTicketsOfResident,
  lockTimeZonesForShare,
  recordDownload,
  type CredentialedTicket,
  type LockRevocations,
  type NewCredential,
  type SyncPosition,
} from '../db/repositories/device-sync.repo.js';
import { findMobileDevice } from '../db/repositories/mobile-device.repo.js';
import { ForbiddenError, NotFoundError, ProblemError, ServiceUnavailableError, UnprocessableError } from '../errors.js';
import type { ChangeWatermarks } from './change-watermark.js';
import type { ActionContext, Clock } from './context.js';
import type { CredentialService, KeySet } from './credential.service.js';
import { isUuid } from '../shared/identifiers.js';
import type { LockTelemetryService } from './lock-telemetry.service.js';
import type { DomainMetrics } from './domain-metrics.js';
import { cutPage, decodeCursor, invalidCursor, pageOf, type Page } from '../shared/pagination.js';
import { toTicket, type Ticket } from './ticket.service.js';

export interface DownloadedTicket extends Ticket {
  /** Absent while the ticket begins beyond one credential lifetime (docs/api-reference.md 8.2). */
  credential?: string;
  /** When a download will first carry the credential, ms (docs/api-reference.md 8.2). */
  credentialAvailableFrom?: number;
  /** The signed revocation list of the ticket's lock, on the page's first ticket of each lock (docs/api-reference.md 8.3). */
  revocationList?: string;
}

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
}

/** The device or lock the caller's OAuth client is bound to (docs/api-reference.md 3.7), as its access token says; both absent: unbound. */
export interface DeviceBinding {
  clientId: string;
  mobileDeviceId?: string;
  securedObjectId?: string;
}

/**
 * A client bound to a device or lock reaches only that device's or lock's data (docs/api-reference.md 3.7, 6); another id of the
 * same kind answers as missing, so a bound client learns nothing about its neighbours. The rule lives here, beside
 * the data it guards, rather than in a route or the bearer plugin: every caller of download and sync gets it, a new
 * route cannot forget it, and the bearer plugin stays about tokens and scopes.
 */
export function assertBinding(binding: DeviceBinding, kind: 'mobileDeviceId' | 'securedObjectId', id: string, bindingRequired: string | null): void {
  const bound = binding[kind];
  const other = binding[kind === 'mobileDeviceId' ? 'securedObjectId' : 'mobileDeviceId'];
  if (bound !== undefined && bound !== id) throw new NotFoundError(`No ${kind === 'mobileDeviceId' ? 'mobile device' : 'secured object'} ${id}.`);
  if (other !== undefined) throw new ForbiddenError('This client is bound to another kind of device.');
  if (bindingRequired !== null && bound === undefined) throw new ForbiddenError(bindingRequired);
}

const DOWNLOAD_NEEDS_BINDING =
  'Tickets are downloaded with a client bound to the mobile device (POST /operatorapi/oauthclients with mobileDeviceId).';
const TRUST_NEEDS_BINDING =
  'A lock is provisioned through its own client: one bound to the secured object (POST /operatorapi/oauthclients with securedObjectId).';

const ZERO_UUID = '00000000-0000-0000-0000-000000000000';
/** What fits the card format (v2, C SDK 3.6+); more is refused rather than silently cut. */
const MAX_CARD_CREDENTIALS = 1000;

export function encodeSyncCursor(position: SyncPosition): string {
  return Buffer.from(`${position.seq}:${position.id}`, 'utf8').toString('base64url');
}

export function decodeSyncCursor(cursor: string | undefined): SyncPosition {
  if (cursor === undefined) return { seq: 0, id: ZERO_UUID };
  const [seq, id] = Buffer.from(cursor, 'base64url').toString('utf8').split(':');
  const value = Number(seq);
  if (!Number.isSafeInteger(value) || value < 0 || !id || !isUuid(id)) {
    throw invalidCursor();
  }
  return { seq: value, id };
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

/** A credential signed by this download, to be stored, with the algorithm it was signed with (for the metrics). */
type SignedToStore = NewCredential & { alg: string };

export interface DeviceServiceOptions {
  db: Database;
  clock: Clock;
  credentials: CredentialService;
  telemetry: LockTelemetryService;
  /** Each tenant's last change number from NOTIFY (docs/lock-sync.md); absent: every sync asks the database. */
  watermarks?: Pick<ChangeWatermarks, 'current'>;
  admission?: SyncAdmission;
  /** Counts credentials signed and syncs answered (services/domain-metrics.ts). */
  metrics: DomainMetrics;
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
}

export function createDeviceService({ db, clock, credentials, telemetry, watermarks, admission, metrics }: DeviceServiceOptions) {
  const confirmed = new Map<string, ConfirmedSync>();
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
    confirmed.delete(key);
    if (answer === null) return;
    // Re-inserted so the map's order is the order of answers: the oldest is forgotten first.
    confirmed.set(key, answer);
    if (confirmed.size > MAX_REMEMBERED_SYNCS) confirmed.delete(confirmed.keys().next().value!);
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

  /**
   * Hands tickets to a device (a phone's download, or a token card written for it): reuses the stored credential
   * while it has more than half its lifetime left and its key is still published, signs the others anew (docs/api-reference.md
   * 8.2), stores what it signed sealed (docs/security-cases.md G48), stamps the first download (audited once).
   */
  async function deliver(context: ActionContext, rows: CredentialedTicket[], now: number): Promise<DownloadedTicket[]> {
    if (rows.length === 0) return [];
    // The locks' serials first, then the key set (docs/api-reference.md 8.3): a rotation committing in between makes a list
    // carry a newer set under an older serial, which a later list corrects; the other order would carry an older set
    // under a serial that already counts the change, and the lock would ignore the correction as stale. Reading the set
    // also brings this instance's keys up to date, so nothing below signs with a withdrawn key.
    const revocations = await listLockRevocations(db, context.tenantId, [...new Set(rows.map((row) => row.securedObjectId))], now, credentials.lifetimeMs);
    const published = await credentials.keySet(context.tenantId);
    const publishedKids = new Set(published.keys.map((key) => key.kid));
    const handedOut = await Promise.all(
      rows.map(async (row): Promise<{ credential?: string; stored?: SignedToStore; availableFrom?: number }> => {
        const availableFrom = credentials.availableFrom(row, now);
        if (availableFrom !== undefined) return { availableFrom };
        if (!credentials.needsSigning(row, row.credential, publishedKids, now)) {
          return { credential: credentials.unseal(context.tenantId, row.id, row.credential!.sealed) };
        }
        const signed = await credentials.sign(row, now);
        return {
          credential: signed.credential,
          stored: { ...signed, sealed: credentials.seal(context.tenantId, row.id, signed.credential) },
        };
      }),
    );
    const store = (queryable: Queryable) =>
      recordDownload(
        queryable,
        context.tenantId,
        rows.map((row) => row.id),
        handedOut.map((out) => out.stored ?? null),
        now,
        context,
      );
    // docs/api-reference.md 9: a scheduled credential's windows are of the zone read with the tickets. A PATCH of the zone
    // committing since then would leave old windows handed out and stored (a renewal only at half-life), so the
    // locks' zones are read again, held until the credentials are stored, and a credential of another zone is
    // signed anew in the current one.
    const scheduled = rows.filter((row, index) => row.schedule !== null && handedOut[index]!.credential !== undefined);
    const stamps =
      scheduled.length === 0
        ? await store(db)
        : await db.transaction(async (tx) => {
            const zones = await lockTimeZonesForShare(tx, context.tenantId, [...new Set(scheduled.map((row) => row.securedObjectId))]);
            await Promise.all(
              rows.map(async (row, index) => {
                const zone = zones.get(row.securedObjectId);
                if (row.schedule === null || handedOut[index]!.credential === undefined || zone === undefined || zone === row.lockTimeZone) return;
                const signed = await credentials.sign({ ...row, lockTimeZone: zone }, now);
                handedOut[index] = { credential: signed.credential, stored: { ...signed, sealed: credentials.seal(context.tenantId, row.id, signed.credential) } };
              }),
            );
            return store(tx);
          });
    countSigned(rows, handedOut, stamps);
    const lists = await signRevocationLists(context.tenantId, revocations, published, now);
    return rows.flatMap((row, index) => {
      const downloadedAt = stamps.get(row.id);
      // Absent: removed or revoked between the two statements; its credential is never handed out (recordDownload).
      if (downloadedAt === undefined) return [];
      // Once per lock and page, on its first ticket handed out: a phone with several tickets for one door carries one list.
      const revocationList = lists.get(row.securedObjectId);
      lists.delete(row.securedObjectId);
      const { credential, availableFrom } = handedOut[index]!;
      return [
        {
          ...toTicket({ ...row, downloadedAt }, now),
          ...(credential !== undefined ? { credential } : {}),
          ...(availableFrom !== undefined ? { credentialAvailableFrom: availableFrom } : {}),
          ...(revocationList !== undefined ? { revocationList } : {}),
        },
      ];
    });
  }

  /**
   * The credentials signed anew that are handed out, by algorithm, once they are stored: a signature whose ticket was
   * revoked meanwhile (no stamp) or superseded in the zone check is never handed out and is not counted.
   */
  function countSigned(
    rows: CredentialedTicket[],
    handedOut: { stored?: SignedToStore }[],
    stamps: ReadonlyMap<string, number>,
  ): void {
    const byAlgorithm = new Map<string, number>();
    rows.forEach((row, index) => {
      const stored = handedOut[index]!.stored;
      if (stored === undefined || !stamps.has(row.id)) return;
      byAlgorithm.set(stored.alg, (byAlgorithm.get(stored.alg) ?? 0) + 1);
    });
    for (const [alg, count] of byAlgorithm) metrics.credentialsSigned(alg, count);
  }

  /** One signed revocation list per lock (docs/api-reference.md 8.3), by lock id. */
  async function signRevocationLists(tenantId: string, revocations: LockRevocations[], published: KeySet, now: number): Promise<Map<string, string>> {
    const signed = await Promise.all(revocations.map((lock) => credentials.revocationList(tenantId, lock, published, now)));
    return new Map(revocations.map((lock, index) => [lock.securedObjectId, signed[index]!]));
  }

  /** One sync's answer (`sync` counts it). */
  async function syncAnswer(tenantId: string, binding: DeviceBinding, securedObjectId: string, limit: number, cursor?: string): Promise<SyncAnswer> {
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
      return { tokens: [], revocations: [], cursor: remembered.cursor, serial: remembered.serial, more: false };
    }
    const position = decodeSyncCursor(cursor);
    // A full sync always carries the key set: the tenant's first key (a key-set change of its own) is made before the
    // position is read, so the next sync does not send it again.
    if (cursor === undefined) await credentials.ensureKey(tenantId);
    const now = clock();
    // No await between the check and the query: the query joins the pool's queue in the same turn.
    admit();
    const lock = await listLockChanges(db, tenantId, securedObjectId, binding.clientId, position, now, limit + 1, credentials.lifetimeMs);
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
    // A key-set change writes no ticket, so no ticket carries its number: once every ticket change before it has
    // been answered, the cursor moves past it and the next sync does not send the keys again.
    if (!more && reached.seq < lock.keySetSeq) reached = { seq: lock.keySetSeq, id: ZERO_UUID };
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
      more,
    };
    // docs/lock-sync.md: what the next sync with this cursor may be answered from memory. Only a whole answer (a cut
    // one has more of the same change number to come) for a lock that exists and a client that is not
    // decommissioned: those answers carry more than empty arrays. Nor one that left out a revocation only because the
    // lock's clock is not known to run behind: an estimate later (an access-log upload) takes no change number, and
    // the database would then send it (docs/api-reference.md 8.5).
    const whole = !more && lock.lockExists && lock.decommissionedSeq === null && !lock.clockDependent;
    remember(tenantId, securedObjectId, binding.clientId, whole ? { tenantSeq: lock.lastSeq, cursor: answer.cursor, serial: answer.serial } : null);
    return answer;
  }

  return {
    /**
     * docs/api-reference.md 6.1: the device's VALID tickets, each with its credential. Credentials are signed on first
     * download and cached (a 100k-ticket permission signs nothing until its devices ask); the first download
     * sets `downloadDate` once and is audited. Only a client bound to this device downloads (docs/api-reference.md 3.7).
     */
    async download(
      context: ActionContext,
      binding: DeviceBinding,
      mobileDeviceId: string,
      limit: number,
      cursor?: string,
    ): Promise<Page<DownloadedTicket>> {
      assertBinding(binding, 'mobileDeviceId', mobileDeviceId, DOWNLOAD_NEEDS_BINDING);
      if (!(await findMobileDevice(db, context.tenantId, mobileDeviceId))) throw new NotFoundError(`No mobile device ${mobileDeviceId}.`);
      const now = clock();
      const rows = await listValidTicketsOfDevice(db, context.tenantId, mobileDeviceId, now, decodeCursor(cursor, isUuid), limit + 1);
      const page = pageOf(rows, limit, (row) => ({ createdAt: row.createdAt, id: row.id }), (row) => row);
      return { items: await deliver(context, page.items, now), nextCursor: page.nextCursor };
    },

    /**
     * docs/api-reference.md 5: a token card (v2) holds the credentials of the resident's VALID tickets, as base64 of
     * `{"version":2,"credentials":[…]}`. Writing a card is its devices' download: credentials are cached and
     * first downloads stamped as in docs/api-reference.md 6.1.
     */
    async tokenCard(context: ActionContext, residentId: string): Promise<{ version: 2; cardData: string }> {
      const now = clock();
      const rows = await listValidTicketsOfResident(db, context.tenantId, residentId, now, MAX_CARD_CREDENTIALS + 1);
      if (rows.length > MAX_CARD_CREDENTIALS) {
        throw new UnprocessableError(`A token card holds at most ${MAX_CARD_CREDENTIALS} credentials; this resident has more valid tickets.`);
      }
      const cardCredentials = (await deliver(context, rows, now)).flatMap((ticket) => (ticket.credential !== undefined ? [ticket.credential] : []));
      const cardData = Buffer.from(JSON.stringify({ version: 2, credentials: cardCredentials }), 'utf8').toString('base64');
      return { version: 2, cardData };
    },

    /**
     * docs/api-reference.md 6.2: no cursor, everything current; with one, only what changed after it. A client bound to this
     * lock or an unbound one syncs (docs/api-reference.md 3.7). The answer carries the tenant's key set on a full sync and
     * after the set changed (docs/api-reference.md 8.1), and only revocations a lock still needs (8.2). A client whose lock
     * was deleted still learns every revocation the deletion caused (docs/api-reference.md 4.1, docs/security-cases.md G43).
     */
    async sync(tenantId: string, binding: DeviceBinding, securedObjectId: string, limit: number, cursor?: string): Promise<SyncAnswer> {
      let answer: SyncAnswer;
      try {
        answer = await syncAnswer(tenantId, binding, securedObjectId, limit, cursor);
      } catch (error) {
        // A refusal the lock is told (unknown lock, another lock's client, a cursor not issued here); a failure of the
        // server (the database down) is no answer about the lock and is left to the HTTP metrics.
        if (error instanceof ProblemError && error.status < 500) metrics.lockSynced('refused');
        throw error;
      }
      const changed = answer.tokens.length > 0 || answer.revocations.length > 0 || answer.keys !== undefined;
      metrics.lockSynced(changed ? 'changes' : 'nothing_new');
      return answer;
    },

    /**
     * docs/api-reference.md 8.1: the issuer and key set an installer writes into the lock, for the lock's own client only.
     * A deleted lock's client only syncs (docs/api-reference.md 4.1).
     */
    async trust(tenantId: string, binding: DeviceBinding, securedObjectId: string): Promise<LockTrust> {
      assertBinding(binding, 'securedObjectId', securedObjectId, TRUST_NEEDS_BINDING);
      const lock = await findLockForClient(db, tenantId, securedObjectId, binding.clientId);
      if (lock.decommissionedSeq !== null) {
        throw new ForbiddenError('This lock was deleted: its client can only sync the revocations that deleting it caused.');
      }
      if (!lock.lockExists) throw new NotFoundError(`No secured object ${securedObjectId}.`);
      return {
        issuer: await credentials.issuerOf(tenantId),
        securedObjectId,
        keys: await credentials.keySet(tenantId),
        maxCredentialLifetime: credentials.lifetimeMs / 1000,
      };
    },
  };
}

export type DeviceService = ReturnType<typeof createDeviceService>;
