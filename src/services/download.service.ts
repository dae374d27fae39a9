// The phone's download (docs/api-reference.md 6.1) and the token card written for a resident (docs/api-reference.md 5):
// a device's valid tickets with their credentials and the revocation lists of their locks.
import type { Database, Queryable } from '../db/database.js';
import {
  listLockRevocations,
  listValidTicketsOfDevice,
  listValidTicketsOfResident,
  lockTimeZonesForShare,
  recordDownload,
  type CredentialedTicket,
  type DownloadedDevice,
  type LockRevocations,
  type NewCredential,
} from '../db/repositories/download.repo.js';
import { findMobileDevice } from '../db/repositories/mobile-device.repo.js';
import { NotFoundError, UnprocessableError } from '../errors.js';
import type { ActionContext, Clock } from './context.js';
import { boundThumbprint, type CredentialService, type KeySet } from './credential.service.js';
import type { HolderPublicKey } from '../shared/holder-keys.js';
import type { DomainMetrics } from './domain-metrics.js';
import { toTicket, type Ticket } from './ticket.service.js';
import { assertBinding, type DeviceBinding } from '../shared/device-binding.js';
import { isUuid } from '../shared/identifiers.js';
import { decodeCursor, pageOf, type Page } from '../shared/pagination.js';

export interface DownloadedTicket extends Ticket {
  /** Absent while the ticket begins beyond one credential lifetime (docs/api-reference.md 8.2). */
  credential?: string;
  /** When a download will first carry the credential, ms (docs/api-reference.md 8.2). */
  credentialAvailableFrom?: number;
  /** The signed revocation list of the ticket's lock, on the page's first ticket of each lock (docs/api-reference.md 8.3). */
  revocationList?: string;
  /** The lock's signed state, beside `revocationList` (docs/api-reference.md 15). */
  lockState?: string;
  /** The lock's own public key, so the phone can check the lock before it shows anything (docs/api-reference.md 11.2). */
  lockKey?: HolderPublicKey;
}

const DOWNLOAD_NEEDS_BINDING =
  'Tickets are downloaded with a client bound to the mobile device (POST /operatorapi/oauthclients with mobileDeviceId).';

/** What fits the card format (v2, C SDK 3.6+); more is refused rather than silently cut. */
const MAX_CARD_CREDENTIALS = 1000;

/** Who holds what a delivery hands out: a phone (its credentials bound to its key) or a token card (bound to none). */
type Holder = 'phone' | 'card';

/** A credential signed by this download, to be stored, with the algorithm it was signed with (for the metrics). */
type SignedToStore = NewCredential & { alg: string };

export interface DownloadServiceOptions {
  db: Database;
  clock: Clock;
  credentials: CredentialService;
  /** Counts the credentials signed (services/domain-metrics.ts). */
  metrics: DomainMetrics;
}

export function createDownloadService({ db, clock, credentials, metrics }: DownloadServiceOptions) {
  /**
   * Hands tickets to a device (a phone's download, or a token card written for it): reuses the stored credential
   * while it has more than half its lifetime left and its key is still published, signs the others anew (docs/api-reference.md
   * 8.2), stores what it signed sealed (docs/security-cases.md G48), stamps the first download (audited once).
   */
  async function deliver(context: ActionContext, rows: CredentialedTicket[], now: number, holder: Holder): Promise<DownloadedTicket[]> {
    // docs/api-reference.md 11.2: a phone gets credentials bound to its key; a card holds no key, so its credentials
    // are bound to none (a lock that requires binding refuses them, as it refuses any credential without `cnf`).
    const bindingOf = (row: CredentialedTicket) => (holder === 'phone' ? row.deviceKeyThumbprint : null);
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
          const stored = credentials.unseal(context.tenantId, row.id, row.credential!.sealed);
          // docs/api-reference.md 11.2: a credential bound to another key than the device's (or to none, before it
          // registered one) is signed anew for the key it has now.
          if (boundThumbprint(stored) === bindingOf(row)) return { credential: stored };
        }
        const signed = await credentials.sign({ ...row, deviceKeyThumbprint: bindingOf(row) }, now);
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
        boundDevices(rows, handedOut, holder),
      );
    // docs/api-reference.md 9: a scheduled credential's windows are of the zone read with the tickets. A PATCH of the zone
    // committing since then would leave old windows handed out and stored (a renewal only at half-life), so the
    // locks' zones are read again, held until the credentials are stored, and a credential of another zone is
    // signed anew in the current one.
    const scheduled = rows.filter((row, index) => row.schedule !== null && handedOut[index]!.credential !== undefined);
    const stamps =
      scheduled.length === 0
        ? await db.transaction(store)
        : await db.transaction(async (tx) => {
            const zones = await lockTimeZonesForShare(tx, context.tenantId, [...new Set(scheduled.map((row) => row.securedObjectId))]);
            await Promise.all(
              rows.map(async (row, index) => {
                const zone = zones.get(row.securedObjectId);
                if (row.schedule === null || handedOut[index]!.credential === undefined || zone === undefined || zone === row.lockTimeZone) return;
                const signed = await credentials.sign({ ...row, lockTimeZone: zone, deviceKeyThumbprint: bindingOf(row) }, now);
                handedOut[index] = { credential: signed.credential, stored: { ...signed, sealed: credentials.seal(context.tenantId, row.id, signed.credential) } };
              }),
            );
            return store(tx);
          });
    countSigned(rows, handedOut, stamps);
    const lists = await signRevocationLists(context.tenantId, revocations, published, now);
    // docs/api-reference.md 15: a phone carries each lock's state too. A token card holds credentials only
    // (docs/api-reference.md 5), so it gets none.
    const states =
      holder === 'phone'
        ? new Map(
            await Promise.all(
              revocations.map(async (lock) => [lock.securedObjectId, await credentials.lockState(context.tenantId, lock.securedObjectId, lock.lockState, now)] as const),
            ),
          )
        : new Map<string, string>();
    return rows.flatMap((row, index) => {
      const downloadedAt = stamps.get(row.id);
      // Absent: removed or revoked between the two statements; its credential is never handed out (recordDownload).
      if (downloadedAt === undefined) return [];
      // Once per lock and page, on its first ticket handed out: a phone with several tickets for one door carries one list.
      const revocationList = lists.get(row.securedObjectId);
      lists.delete(row.securedObjectId);
      const lockState = states.get(row.securedObjectId);
      states.delete(row.securedObjectId);
      const { credential, availableFrom } = handedOut[index]!;
      return [
        {
          ...toTicket({ ...row, downloadedAt }, now),
          ...(credential !== undefined ? { credential } : {}),
          ...(availableFrom !== undefined ? { credentialAvailableFrom: availableFrom } : {}),
          ...(revocationList !== undefined ? { revocationList } : {}),
          ...(lockState !== undefined ? { lockState } : {}),
          ...(row.lockPublicKey !== null ? { lockKey: row.lockPublicKey } : {}),
        },
      ];
    });
  }

  /**
   * Each device of the rows with the key its credentials are bound to and the latest `exp` handed out for it
   * (docs/api-reference.md 11.4: a revocation of the key must reach the locks until then). One entry per device.
   */
  function boundDevices(rows: CredentialedTicket[], handedOut: { credential?: string; stored?: SignedToStore }[], holder: Holder): DownloadedDevice[] {
    const devices = new Map<string, DownloadedDevice>();
    rows.forEach((row, index) => {
      const device = devices.get(row.mobileDeviceId) ?? { mobileDeviceId: row.mobileDeviceId, keyThumbprint: row.deviceKeyThumbprint, boundUntil: 0 };
      const out = handedOut[index]!;
      const expiresAt = out.stored?.expiresAt ?? (out.credential !== undefined ? row.credential?.expiresAt : undefined);
      if (holder === 'phone' && expiresAt !== undefined && row.deviceKeyThumbprint !== null) device.boundUntil = Math.max(device.boundUntil, expiresAt);
      devices.set(row.mobileDeviceId, device);
    });
    return [...devices.values()];
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
      return { items: await deliver(context, page.items, now, 'phone'), nextCursor: page.nextCursor };
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
      const cardCredentials = (await deliver(context, rows, now, 'card')).flatMap((ticket) => (ticket.credential !== undefined ? [ticket.credential] : []));
      const cardData = Buffer.from(JSON.stringify({ version: 2, credentials: cardCredentials }), 'utf8').toString('base64');
      return { version: 2, cardData };
    },
  };
}

export type DownloadService = ReturnType<typeof createDownloadService>;
