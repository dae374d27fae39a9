// The explain service (docs/api-reference.md 8.6): would this phone's credential open this lock at that instant, and why
// not. It reads what the server knows of the lock and what the phone holds, and hands those facts to the rules
// (shared/explain-rules.ts), which decide through the one rule the lock simulator uses.
import type { Database } from '../db/database.js';
import { listTicketsOfDeviceForLock } from '../db/repositories/download.repo.js';
import { findLockBindingFacts } from '../db/repositories/holder-key.repo.js';
import { findLockTelemetry } from '../db/repositories/lock-telemetry.repo.js';
import { findLockModeThrough, findLockState } from '../db/repositories/lockdown.repo.js';
import { findMobileDevice } from '../db/repositories/mobile-device.repo.js';
import { findSecuredObject } from '../db/repositories/secured-object.repo.js';
import { findTicketKeySetSeq, listTicketKeyAnnouncements } from '../db/repositories/signing-key.repo.js';
import type { TicketStatus } from '../db/repositories/ticket.repo.js';
import { NotFoundError } from '../errors.js';
import {
  MAX_EXPLAINED_TICKETS,
  decodeCredential,
  explainRequest,
  explainTicket,
  lockReasons,
  lockView,
  summarize,
  type AccessCheckReason,
  type AccessDecision,
  type TicketEvidence,
} from '../shared/explain-rules.js';
import type { Clock } from './context.js';
import type { CredentialService } from './credential.service.js';
import { ticketStatus } from './ticket.service.js';

export interface TicketAccessCheck {
  id: string;
  status: TicketStatus;
  /** The decision the lock takes for this ticket with what it has. */
  decision: AccessDecision;
  reasons: AccessCheckReason[];
}

export interface AccessCheck {
  decision: AccessDecision;
  reasons: AccessCheckReason[];
  tokens: TicketAccessCheck[];
  /** More tickets exist than the MAX_EXPLAINED_TICKETS judged here (those that may open first, listTicketsOfDeviceForLock). */
  truncated: boolean;
  /** The instant asked about, server time (ms). */
  at: number;
  /** The same instant on the lock's clock (ms): what the lock judges with (docs/api-reference.md 8.5's clock offset). */
  lockTime: number;
  command: string;
  channel: string;
}

export interface AccessCheckQuery {
  mobileDeviceId: string;
  securedObjectId: string;
  at?: number | undefined;
  command?: string | undefined;
  channel?: string | undefined;
}

export interface AccessCheckServiceOptions {
  db: Database;
  clock: Clock;
  credentials: CredentialService;
}

export function createAccessCheckService({ db, clock, credentials }: AccessCheckServiceOptions) {
  return {
    /**
     * docs/api-reference.md 8.6: the decision the lock would take at `at` (default now) with what it has — the credentials
     * the phone holds, the revocations it applied, its clock, the tenant's key set — and why.
     */
    async check(tenantId: string, query: AccessCheckQuery): Promise<AccessCheck> {
      const now = clock();
      const [lock, device] = await Promise.all([
        findSecuredObject(db, tenantId, query.securedObjectId),
        findMobileDevice(db, tenantId, query.mobileDeviceId),
      ]);
      // Named as the other endpoints name them ("No secured object X."); another tenant's answers as a missing one.
      const missing = [
        ...(lock ? [] : [`secured object ${query.securedObjectId}`]),
        ...(device ? [] : [`mobile device ${query.mobileDeviceId}`]),
      ];
      if (!lock || !device) throw new NotFoundError(`No ${missing.join(' and no ')}.`);

      const [telemetry, issuer, keySetSeq, lockState] = await Promise.all([
        findLockTelemetry(db, tenantId, lock.id),
        credentials.issuerOf(tenantId),
        findTicketKeySetSeq(db, tenantId),
        findLockState(db, tenantId, lock.id),
      ]);
      const clockOffsetMs = telemetry?.clockOffsetMs ?? null;
      // A state the lock has not acknowledged: what it holds instead is the newest one it had by its acknowledged position.
      const appliedThrough = telemetry?.appliedThrough ?? null;
      const heldMode =
        lockState.serial > 0 && appliedThrough !== null && appliedThrough < lockState.serial
          ? await findLockModeThrough(db, tenantId, lock.id, appliedThrough)
          : null;
      const request = explainRequest(query, now, lock.channels, clockOffsetMs);
      // The tickets that may open first (listTicketsOfDeviceForLock): beyond the cap, the decision stays the lock's.
      const rows = await listTicketsOfDeviceForLock(db, tenantId, device.id, lock.id, request, MAX_EXPLAINED_TICKETS + 1);
      const tickets = rows.slice(0, MAX_EXPLAINED_TICKETS);
      // Read only when a credential is held: with none, no key is asked about (and none is made for the tenant).
      const held = tickets.some((ticket) => ticket.credential !== null);
      const [publishedKids, keyAnnouncements] = held
        ? await Promise.all([
            credentials.keySet(tenantId).then((set) => new Set(set.keys.map((key) => key.kid))),
            listTicketKeyAnnouncements(db, tenantId),
          ])
        : [new Set<string>(), new Map<string, number>()];
      const evidence = await Promise.all(
        tickets.map(async (ticket): Promise<TicketEvidence> => {
          if (ticket.credential !== null) {
            const credential = credentials.unseal(tenantId, ticket.id, ticket.credential.sealed);
            return { ticket, held: decodeCredential(credential), onceDownloaded: null };
          }
          // A phone downloads before it goes to the door: the credential it would get then, or now if `at` is past.
          return {
            ticket,
            held: null,
            onceDownloaded: ticket.revokedAt === null ? await credentials.claimsOf(ticket, Math.max(now, request.at)) : null,
            credentialAvailableFrom: credentials.availableFrom(ticket, now),
          };
        }),
      );
      // The phone keys the held credentials are bound to: whether the lock requires binding, and which were revoked.
      const boundTo = evidence.flatMap(({ held }) => {
        const jkt = (held?.claims as { cnf?: { jkt?: unknown } } | null)?.cnf?.jkt;
        return typeof jkt === 'string' ? [jkt] : [];
      });
      const binding = await findLockBindingFacts(db, tenantId, lock.id, [...new Set(boundTo)], now);
      const view = lockView(
        {
          issuer,
          securedObjectId: lock.id,
          maxCredentialLifetime: credentials.lifetimeMs / 1000,
          channels: lock.channels,
          publishedKids,
          appliedThrough,
          keySetSeq,
          keyAnnouncements,
          holderBinding: binding.holderBinding,
          holderBindingSeq: binding.holderBindingSeq,
          keyRevocations: binding.revokedKeys,
          clockOffsetMs,
          lockState: { ...lockState, heldMode },
        },
        tickets,
      );

      const judged = evidence.map((item) => ({
        id: item.ticket.id,
        status: ticketStatus(item.ticket, now),
        ...explainTicket(item, view, request, now),
      }));
      return {
        ...summarize(judged, lockReasons(view, request)),
        tokens: judged,
        truncated: rows.length > MAX_EXPLAINED_TICKETS,
        at: request.at,
        lockTime: request.lockTime,
        command: request.command,
        channel: request.channel,
      };
    },
  };
}

export type AccessCheckService = ReturnType<typeof createAccessCheckService>;
