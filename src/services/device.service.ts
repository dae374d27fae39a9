// The Device API (docs/contract.md 6): a phone downloads its valid tickets with credentials; an online lock syncs the
// tickets and revocations that concern it through the tenant's change log.
import type { Database } from '../db/database.js';
import {
  listLockChanges,
  listValidTicketsOfDevice,
  listValidTicketsOfResident,
  recordDownload,
  type CredentialedTicket,
  type NewCredential,
  type SyncPosition,
} from '../db/repositories/device-sync.repo.js';
import { findMobileDevice } from '../db/repositories/mobile-device.repo.js';
import { ForbiddenError, NotFoundError, UnprocessableError } from '../errors.js';
import type { ActionContext, Clock } from './context.js';
import type { CredentialService } from './credential.service.js';
import { isUuid } from './identifiers.js';
import { cutPage, decodeCursor, invalidCursor, pageOf, type Page } from './pagination.js';
import { toTicket, type Ticket } from './ticket.service.js';

export interface DownloadedTicket extends Ticket {
  /** Absent while the ticket begins beyond one credential lifetime (docs/contract.md 8.2). */
  credential?: string;
  /** When a download will first carry the credential, ms (docs/contract.md 8.2). */
  credentialAvailableFrom?: number;
}

export interface SyncAnswer {
  tokens: Ticket[];
  revocations: { tokenId: string; revocationDate: number }[];
  /** Pass it back to get only what changed after this answer. */
  cursor: string;
  /** True when the answer was cut at `limit`: ask again with the cursor at once. */
  more: boolean;
}

/** The device or lock the caller's OAuth client is bound to (docs/contract.md 3.7), as its access token says; both absent: unbound. */
export interface DeviceBinding {
  mobileDeviceId?: string;
  securedObjectId?: string;
}

/**
 * A client bound to a device or lock reaches only that device's or lock's data (docs/contract.md 3.7, 6); another id of the
 * same kind answers as missing, so a bound client learns nothing about its neighbours. The rule lives here, beside
 * the data it guards, rather than in a route or the bearer plugin: every caller of download and sync gets it, a new
 * route cannot forget it, and the bearer plugin stays about tokens and scopes.
 */
function assertBinding(binding: DeviceBinding, kind: 'mobileDeviceId' | 'securedObjectId', id: string, bindingRequired: boolean): void {
  const bound = binding[kind];
  const other = binding[kind === 'mobileDeviceId' ? 'securedObjectId' : 'mobileDeviceId'];
  if (bound !== undefined && bound !== id) throw new NotFoundError(`No ${kind === 'mobileDeviceId' ? 'mobile device' : 'secured object'} ${id}.`);
  if (other !== undefined) throw new ForbiddenError('This client is bound to another kind of device.');
  if (bindingRequired && bound === undefined) {
    throw new ForbiddenError('Tickets are downloaded with a client bound to the mobile device (POST /operatorapi/oauthclients with mobileDeviceId).');
  }
}

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

export interface DeviceServiceOptions {
  db: Database;
  clock: Clock;
  credentials: CredentialService;
}

export function createDeviceService({ db, clock, credentials }: DeviceServiceOptions) {
  /**
   * Hands tickets to a device (a phone's download, or a token card written for it): reuses the stored credential
   * while it has more than half its lifetime left and its key is still published, signs the others anew (docs/contract.md
   * 8.2), stores what it signed sealed (docs/security-checklist.md G48), stamps the first download (audited once).
   */
  async function deliver(context: ActionContext, rows: CredentialedTicket[], now: number): Promise<DownloadedTicket[]> {
    const publishedKids = credentials.publishedKids(context.tenantId);
    const handedOut = await Promise.all(
      rows.map(async (row): Promise<{ credential?: string; stored?: NewCredential; availableFrom?: number }> => {
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
    const stamps = await recordDownload(
      db,
      context.tenantId,
      rows.map((row) => row.id),
      handedOut.map((out) => out.stored ?? null),
      now,
      context,
    );
    return rows.flatMap((row, index) => {
      const downloadedAt = stamps.get(row.id);
      // Absent: removed between the two statements.
      if (downloadedAt === undefined) return [];
      const { credential, availableFrom } = handedOut[index]!;
      return [
        {
          ...toTicket({ ...row, downloadedAt }, now),
          ...(credential !== undefined ? { credential } : {}),
          ...(availableFrom !== undefined ? { credentialAvailableFrom: availableFrom } : {}),
        },
      ];
    });
  }

  return {
    /**
     * docs/contract.md 6.1: the device's VALID tickets, each with its credential. Credentials are signed on first
     * download and cached (a 100k-ticket permission signs nothing until its devices ask); the first download
     * sets `downloadDate` once and is audited. Only a client bound to this device downloads (docs/contract.md 3.7).
     */
    async download(
      context: ActionContext,
      binding: DeviceBinding,
      mobileDeviceId: string,
      limit: number,
      cursor?: string,
    ): Promise<Page<DownloadedTicket>> {
      assertBinding(binding, 'mobileDeviceId', mobileDeviceId, true);
      if (!(await findMobileDevice(db, context.tenantId, mobileDeviceId))) throw new NotFoundError(`No mobile device ${mobileDeviceId}.`);
      const now = clock();
      const rows = await listValidTicketsOfDevice(db, context.tenantId, mobileDeviceId, now, decodeCursor(cursor, isUuid), limit + 1);
      const page = pageOf(rows, limit, (row) => ({ createdAt: row.createdAt, id: row.id }), (row) => row);
      return { items: await deliver(context, page.items, now), nextCursor: page.nextCursor };
    },

    /**
     * docs/contract.md 5: a token card (v2) holds the credentials of the resident's VALID tickets, as base64 of
     * `{"version":2,"credentials":[…]}`. Writing a card is its devices' download: credentials are cached and
     * first downloads stamped as in 6.1.
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
     * docs/contract.md 6.2: no cursor, everything current; with one, only what changed after it. A client bound to this lock
     * or an unbound one syncs (docs/contract.md 3.7).
     */
    async sync(tenantId: string, binding: DeviceBinding, securedObjectId: string, limit: number, cursor?: string): Promise<SyncAnswer> {
      assertBinding(binding, 'securedObjectId', securedObjectId, false);
      const position = decodeSyncCursor(cursor);
      const now = clock();
      const rows = await listLockChanges(db, tenantId, securedObjectId, position, now, limit + 1);
      if (!rows) throw new NotFoundError(`No secured object ${securedObjectId}.`);
      const { rows: changes, more, last } = cutPage(rows, limit);
      return {
        tokens: changes.filter((row) => row.revokedAt === null).map((row) => toTicket(row, now)),
        revocations: changes
          .filter((row) => row.revokedAt !== null)
          .map((row) => ({ tokenId: row.id, revocationDate: row.revokedAt! })),
        cursor: last ? encodeSyncCursor({ seq: last.changeSeq, id: last.id }) : (cursor ?? encodeSyncCursor(position)),
        more,
      };
    },
  };
}

export type DeviceService = ReturnType<typeof createDeviceService>;
