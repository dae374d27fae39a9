// The explain endpoint's rules (docs/api-reference.md 8.6): from facts already read (the lock as the server knows it,
// the credentials the phone holds), the decision the lock would take and why, in the API's words. Its reason codes
// (stable kebab-case, clients may branch on them) and its cap are shared with the schema. It decides through the one
// rule the lock simulator uses (shared/credential-check.ts), never a copy of it. Pure: no clock, no I/O.
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { clockDrifts } from './clock-drift.js';
import {
  CREDENTIAL_TYPE,
  checkCredential,
  isProvisioned,
  isValidInstant,
  nextWindowStart,
  parseCredentialClaims,
  type CredentialCheck,
  type CredentialClaims,
  type LockTrustState,
} from './credential-check.js';
import type { HolderBinding } from './holder-binding.js';
import { CHANNELS } from './vocabulary.js';

/** At most this many tickets of one phone for one lock are judged, the newest first. */
export const MAX_EXPLAINED_TICKETS = 50;

export const ACCESS_CHECK_CODES = [
  'valid',
  'no-token',
  'not-downloaded',
  'key-not-published',
  'key-not-known-yet',
  'binding-required',
  'binding-not-applied',
  'key-revoked',
  'key-revocation-not-applied',
  'revoked',
  'revocation-not-applied',
  'expired',
  'credential-expired',
  'not-yet-valid',
  'outside-schedule',
  'command-not-granted',
  'channel-not-granted',
  'channel-not-supported',
  'clock-drift',
  'invalid-time',
  'lock-not-provisioned',
  'lock-decommissioned',
  'malformed-credential',
  'wrong-issuer',
  'wrong-lock',
  'lifetime-exceeds-maximum',
  'lockdown',
  'lockdown-override',
  'lockdown-end-not-applied',
] as const;

export type AccessCheckCode = (typeof ACCESS_CHECK_CODES)[number];

/** The command asked about when none is given: the question is "can this phone open that door". */
export const DEFAULT_COMMAND = 'open';

export interface AccessCheckReason {
  code: AccessCheckCode;
  /** What happened and what to do about it, for people. */
  message: string;
  /** `outside-schedule`: when the credential's next schedule window opens (ms, lock time). */
  nextWindowStart?: number;
  /** `not-downloaded`: when a download first hands the credential out (docs/api-reference.md 8.2), ms. */
  credentialAvailableFrom?: number;
}

export type AccessDecision = 'allow' | 'deny';

/** What explain reads of a ticket (download.repo.ts listTicketsOfDeviceForLock). */
export interface ExplainedTicketFacts {
  id: string;
  beginDate: number;
  endDate: number;
  revokedAt: number | null;
  /** When the lock applied the ticket's revocation (ms); null while not revoked or not applied yet. */
  revocationAppliedAt: number | null;
}

/** The lock as far as the server knows it: its trust (docs/api-reference.md 8.1), channels, revocations applied, clock. */
export interface LockView {
  issuer: string;
  securedObjectId: string;
  /** Seconds (docs/api-reference.md 8.2). */
  maxCredentialLifetime: number;
  channels: readonly string[];
  /** Ids of the tickets whose revocation the lock has applied (docs/api-reference.md 8.4). */
  revoked: ReadonlySet<string>;
  /** The tenant's published ticket kids (docs/api-reference.md 8.1): a credential under another key is refused. */
  publishedKids: ReadonlySet<string>;
  /**
   * The lock has not acknowledged the tenant's last key-set change (docs/api-reference.md 8.4: its applied position is below
   * it, or it was never seen): it may still hold a key withdrawn since, and accept a credential under it.
   */
  keySetPending: boolean;
  /**
   * Published kids announced after the change-log position the lock has applied (docs/api-reference.md 8.6): the lock
   * has not learnt them, and refuses a credential signed with one as a key it does not know.
   */
  unknownKids: ReadonlySet<string>;
  /** The lock's holder-binding policy (docs/api-reference.md 11.2). */
  holderBinding: HolderBinding;
  /** The policy changed after the position the lock acknowledged: it may still hold the one before. */
  holderBindingPending: boolean;
  /** Revoked phone keys (docs/api-reference.md 11.4) the lock has applied: it refuses every credential bound to one. */
  revokedKeys: ReadonlySet<string>;
  /** Revoked phone keys the lock has not applied yet: a credential bound to one may still open. */
  pendingRevokedKeys: ReadonlySet<string>;
  /** The lock's clock minus the server's (ms); null: never estimated. */
  clockOffsetMs: number | null;
  /** The lock's state (docs/api-reference.md 15): in lockdown it refuses every credential but an override ticket's. */
  lockMode: 'lockdown' | 'normal';
  /** The lock has acknowledged the state's serial (docs/api-reference.md 8.4). */
  lockStateApplied: boolean;
  /** The lockdown has ended, but the lock acknowledged a position where it was in force: it may still refuse. */
  lockdownEndPending: boolean;
}

/** What is asked: `at` in server time, `lockTime` the same instant on the lock's clock. */
export interface ExplainRequest {
  command: string;
  channel: string;
  at: number;
  lockTime: number;
}

/** One ticket and what the phone holds for it. */
export interface TicketEvidence {
  ticket: ExplainedTicketFacts;
  /** The decoded protected header and claims of the credential the phone holds; null: it holds none. */
  held: { header: unknown; claims: unknown } | null;
  /** With nothing held: the claims a download would carry (docs/api-reference.md 6.3); null when none will be handed out. */
  onceDownloaded: CredentialClaims | null;
  /** With nothing held: when a download first hands the credential out (docs/api-reference.md 8.2). */
  credentialAvailableFrom?: number | undefined;
}

/**
 * What is asked, as the lock judges it: `at` defaults to `now`, the command to DEFAULT_COMMAND, the channel to the
 * lock's first (the one a phone would use when nothing else is said); the lock judges `at` on its own clock, offset by
 * its estimate (docs/api-reference.md 8.5), or as the server's while none was made.
 */
export function explainRequest(
  asked: { at?: number | undefined; command?: string | undefined; channel?: string | undefined },
  now: number,
  lockChannels: readonly string[],
  clockOffsetMs: number | null,
): ExplainRequest {
  const at = asked.at ?? now;
  return {
    command: asked.command ?? DEFAULT_COMMAND,
    channel: asked.channel ?? lockChannels[0] ?? CHANNELS[0],
    at,
    lockTime: at + (clockOffsetMs ?? 0),
  };
}

/** What the server has read of the lock: LockView's facts before anything is concluded from them. */
export interface LockFacts {
  issuer: string;
  securedObjectId: string;
  /** Seconds (docs/api-reference.md 8.2). */
  maxCredentialLifetime: number;
  channels: readonly string[];
  /** The tenant's published ticket kids (docs/api-reference.md 8.1). */
  publishedKids: ReadonlySet<string>;
  /** The change-log position the lock has applied everything up to (docs/api-reference.md 8.4); null: never seen. */
  appliedThrough: number | null;
  /** The change-log position of the tenant's last ticket-key-set change (docs/api-reference.md 8.1); 0: none yet. */
  keySetSeq: number;
  /** Each published kid and the change-log position that announced it (0: before positions were kept). */
  keyAnnouncements: ReadonlyMap<string, number>;
  /** The lock's holder-binding policy (docs/api-reference.md 11.2). */
  holderBinding: HolderBinding;
  /** The change-log position of the policy's last change (0: never changed). */
  holderBindingSeq: number;
  /** Revoked phone keys among those the judged credentials are bound to, each with the position that revoked it. */
  keyRevocations: ReadonlyMap<string, number>;
  /** The lock's clock minus the server's (ms); null: never estimated. */
  clockOffsetMs: number | null;
  /**
   * The lock's state (docs/api-reference.md 15); `normal` and serial 0 while no lockdown reached it. `heldMode`: the
   * mode of the newest state the lock had by the position it acknowledged, when it has not acknowledged this one
   * (null: it has, or it never acknowledged a position).
   */
  lockState: { mode: 'lockdown' | 'normal'; serial: number; heldMode?: 'lockdown' | 'normal' | null };
}

/**
 * The lock as the rules judge it: the revocations it has applied among the tickets judged, and whether it may still
 * hold a key withdrawn since (its applied position is below the last key-set change, or it was never seen).
 */
export function lockView(facts: LockFacts, tickets: readonly ExplainedTicketFacts[]): LockView {
  return {
    issuer: facts.issuer,
    securedObjectId: facts.securedObjectId,
    maxCredentialLifetime: facts.maxCredentialLifetime,
    channels: facts.channels,
    revoked: new Set(tickets.filter((ticket) => ticket.revocationAppliedAt !== null).map((ticket) => ticket.id)),
    publishedKids: facts.publishedKids,
    keySetPending: (facts.appliedThrough ?? 0) < facts.keySetSeq,
    // A lock that never acknowledged a position (never seen, or seen before its first acknowledgement) holds the key set
    // of its trust answer or first sync, which the server cannot date: it is judged to know every published key. Once it
    // acknowledged a position, a key announced after it is one it has not learnt.
    unknownKids: new Set(
      facts.appliedThrough === null || facts.appliedThrough === 0
        ? []
        : [...facts.keyAnnouncements].filter(([kid, seq]) => facts.publishedKids.has(kid) && seq > facts.appliedThrough!).map(([kid]) => kid),
    ),
    holderBinding: facts.holderBinding,
    holderBindingPending: facts.holderBindingSeq > (facts.appliedThrough ?? 0),
    revokedKeys: new Set([...facts.keyRevocations].filter(([, seq]) => seq <= (facts.appliedThrough ?? 0)).map(([jkt]) => jkt)),
    pendingRevokedKeys: new Set([...facts.keyRevocations].filter(([, seq]) => seq > (facts.appliedThrough ?? 0)).map(([jkt]) => jkt)),
    clockOffsetMs: facts.clockOffsetMs,
    lockMode: facts.lockState.mode,
    lockStateApplied: facts.lockState.serial > 0 && (facts.appliedThrough ?? 0) >= facts.lockState.serial,
    lockdownEndPending: facts.lockState.mode === 'normal' && facts.lockState.heldMode === 'lockdown',
  };
}

/** An ISO 8601 time for a message; an instant outside what a Date holds is given in milliseconds. */
function iso(ms: number): string {
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? `${ms} ms` : date.toISOString();
}

/** ISO and milliseconds, for a message that a client may want to parse or a person to read. */
const isoAndMs = (ms: number) => `${iso(ms)} (${ms} ms)`;

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The last instant the credential is accepted before: its `exp` or the ticket's end, whichever comes first. */
function credentialEnd(claims: CredentialClaims | null, ticket: TicketEvidence['ticket']): number {
  return claims ? Math.min(claims.exp * 1000, claims.endDate) : ticket.endDate;
}

/**
 * The reason a lock's check answers, in the API's words: every CredentialCheckReason is mapped here, deliberately,
 * and a reason added to the rule fails to compile until it is (the `never` below).
 */
export function describeCheck(
  check: CredentialCheck,
  claims: CredentialClaims | null,
  ticket: TicketEvidence['ticket'],
  lock: LockView,
  request: ExplainRequest,
): AccessCheckReason {
  if (check.decision === 'open') {
    return {
      code: 'valid',
      message: `The lock opens: the credential permits ${request.command} over ${request.channel} until ${iso(credentialEnd(claims, ticket))}.`,
    };
  }
  const { reason } = check;
  switch (reason) {
    case 'malformed':
      // The lock's one word for "cannot read what it is shown" (docs/lock-integration.md 3.3 step 0); the API tells
      // apart whose fault it is, its codes being the API's own (docs/api-reference.md 8.6).
      if (!isValidInstant(request.lockTime)) {
        return { code: 'invalid-time', message: 'The lock has no clock reading it can judge with: it opens nothing until its clock is set.' };
      }
      if (!isProvisioned(lock)) {
        return {
          code: 'lock-not-provisioned',
          message: 'The lock holds no issuer or key set: write GET /deviceapi/securedobjects/{id}/trust into it (docs/api-reference.md 8.1).',
        };
      }
      return {
        code: 'malformed-credential',
        message: 'The credential the phone holds is not one the lock can read: the phone must download its tickets again.',
      };
    case 'decommissioned':
      return { code: 'lock-decommissioned', message: 'The lock was deleted: it opens for nobody any more.' };
    case 'wrong-issuer':
      return {
        code: 'wrong-issuer',
        message:
          `The credential names the issuer ${claims?.iss ?? '(none)'}, but the lock accepts only ${lock.issuer} (the server's ` +
          'public address changed since it was signed): the phone must download its tickets again.',
      };
    case 'wrong-lock':
      return {
        code: 'wrong-lock',
        message: `The credential is for the lock ${claims?.aud ?? '(none)'}, not ${lock.securedObjectId}: the phone must download its tickets again.`,
      };
    case 'lifetime-exceeded':
      return {
        code: 'lifetime-exceeds-maximum',
        message:
          `The credential was signed to last longer than the lock's maximum of ${lock.maxCredentialLifetime} s ` +
          '(CREDENTIAL_MAX_LIFETIME was lowered since): the phone must download its tickets again.',
      };
    case 'not-yet-valid': {
      const from = claims ? Math.max(claims.nbf * 1000, claims.beginDate) : ticket.beginDate;
      return { code: 'not-yet-valid', message: `Not valid yet: the ticket opens from ${iso(from)} on the lock's clock.` };
    }
    case 'expired': {
      const end = credentialEnd(claims, ticket);
      // The ticket still runs but this credential does not: docs/api-reference.md 8.2's bounded offline validity.
      if (ticket.revokedAt === null && request.lockTime < ticket.endDate) {
        return {
          code: 'credential-expired',
          message:
            `The credential the phone holds ran out at ${iso(end)}, though the ticket is valid until ${iso(ticket.endDate)}: ` +
            'the phone renews it on its next download.',
        };
      }
      return { code: 'expired', message: `Expired at ${iso(end)}: issue a new ticket to give access again.` };
    }
    case 'outside-schedule': {
      const next = claims?.win ? nextWindowStart(claims.win, request.lockTime) : null;
      return next === null
        ? {
            code: 'outside-schedule',
            message: 'Outside the ticket\'s schedule, and the credential holds no later window: a download renews it with the next ones.',
          }
        : { code: 'outside-schedule', message: `Outside the ticket's schedule: the next window opens at ${isoAndMs(next)} on the lock's clock.`, nextWindowStart: next };
    }
    case 'command-not-granted':
      return {
        code: 'command-not-granted',
        message: `The ticket does not grant ${request.command} (it grants ${(claims?.cmd ?? []).join(', ') || 'nothing'}): issue a ticket that does.`,
      };
    case 'channel-not-granted':
      return {
        code: 'channel-not-granted',
        message: `The ticket does not grant the channel ${request.channel} (it grants ${(claims?.chn ?? []).join(', ') || 'none'}): issue a ticket that does.`,
      };
    case 'revoked':
      return {
        code: 'revoked',
        message:
          `The ticket was revoked${ticket.revokedAt !== null ? ` at ${iso(ticket.revokedAt)}` : ''} and the lock has applied the revocation` +
          `${ticket.revocationAppliedAt !== null ? ` (at ${iso(ticket.revocationAppliedAt)})` : ''}: issue a new ticket to give access again.`,
      };
    default: {
      const unmapped: never = reason;
      throw new Error(`Unmapped credential check reason ${String(unmapped)}`);
    }
  }
}

/** What concerns the lock rather than a ticket: a channel it does not have, a clock that is off (docs/api-reference.md 8.5). */
export function lockReasons(lock: LockView, request: ExplainRequest): AccessCheckReason[] {
  const reasons: AccessCheckReason[] = [];
  if (!lock.channels.includes(request.channel)) {
    reasons.push({
      code: 'channel-not-supported',
      message: `The lock does not support the channel ${request.channel} (it supports ${lock.channels.join(', ') || 'none'}): the phone cannot reach it that way.`,
    });
  }
  const offset = lock.clockOffsetMs;
  if (offset !== null && clockDrifts(offset)) {
    reasons.push({
      code: 'clock-drift',
      message:
        `The lock's clock runs ${Math.round(Math.abs(offset) / 1000)} s ${offset > 0 ? 'ahead of' : 'behind'} the server's: it judges ` +
        `${iso(request.at)} as ${iso(request.lockTime)}. Set the lock's clock.`,
    });
  }
  return reasons;
}

function notDownloaded(evidence: TicketEvidence, now: number): AccessCheckReason {
  const { ticket, credentialAvailableFrom } = evidence;
  const none = 'The phone holds no credential for this ticket';
  if (ticket.revokedAt !== null) {
    return { code: 'not-downloaded', message: `${none}, and none will be handed out: the ticket was revoked at ${iso(ticket.revokedAt)}.` };
  }
  if (ticket.endDate <= now) {
    return { code: 'not-downloaded', message: `${none}, and none will be handed out: the ticket ended at ${iso(ticket.endDate)}.` };
  }
  if (credentialAvailableFrom !== undefined) {
    return {
      code: 'not-downloaded',
      message: `${none}: it begins beyond one credential lifetime, so a download hands the credential out from ${isoAndMs(credentialAvailableFrom)}.`,
      credentialAvailableFrom,
    };
  }
  return { code: 'not-downloaded', message: `${none} yet: it gets one on its next download (GET /deviceapi/mobiledevices/{id}/tickets).` };
}

function keyNotPublished(kid: unknown): AccessCheckReason {
  return {
    code: 'key-not-published',
    message:
      `The credential the phone holds is signed with the key ${typeof kid === 'string' ? kid : '(none)'}, which is no longer in the ` +
      "tenant's published key set (an emergency rotation withdrew it): a lock with the current key set refuses it. The phone " +
      'must download its tickets again to get a credential signed with the current key.',
  };
}

function keyNotKnownYet(kid: string): AccessCheckReason {
  return {
    code: 'key-not-known-yet',
    message:
      `The credential the phone holds is signed with the key ${kid}, which the tenant announced after the last change the ` +
      'lock has applied (its last sync or a receipt a phone relayed): the lock does not know the key and refuses the ' +
      'credential until it syncs, or a phone with a recent download brings it the key set (docs/api-reference.md 8.1).',
  };
}

const BINDING_REQUIRED: AccessCheckReason = {
  code: 'binding-required',
  message:
    'The lock requires credentials bound to a phone key (holderBinding "required", docs/api-reference.md 11.2) and this ' +
    'one is bound to none: the phone must register its key (PUT /deviceapi/mobiledevices/{id}/key) and download again.',
};

const BINDING_NOT_APPLIED: AccessCheckReason = {
  code: 'binding-not-applied',
  message:
    'The lock\'s policy now requires credentials bound to a phone key (holderBinding "required", docs/api-reference.md ' +
    '11.2), and this one is bound to none, but the lock has not applied the change yet: the door MAY STILL OPEN for it ' +
    'until the lock syncs or a phone brings it a newer revocation list.',
};

function keyRevoked(jkt: string, applied: boolean): AccessCheckReason {
  return applied
    ? {
        code: 'key-revoked',
        message:
          `The credential is bound to the phone key ${jkt}, which was revoked, and the lock has applied it: it refuses every ` +
          'credential bound to that key (docs/api-reference.md 11.4). The phone must download again with its current key.',
      }
    : {
        code: 'key-revocation-not-applied',
        message:
          `The credential is bound to the phone key ${jkt}, which was revoked, but the lock has not applied it yet: the door MAY ` +
          'STILL OPEN for whoever holds that key until the lock syncs or a phone brings it the revocation list.',
      };
}

/**
 * The lock's binding checks after the credential's own (docs/lock-integration.md 3.3): a lock requiring binding refuses
 * an unbound credential; a credential bound to a key the lock knows is revoked is refused. Explain takes the proof as
 * the phone holding its key makes it: what a copy without the key meets is the lock's, not the server's, to judge.
 */
function bindingReasons(claims: CredentialClaims | null, lock: LockView): { deny: boolean; reason: AccessCheckReason } | null {
  if (claims === null) return null;
  const jkt = claims.cnf?.jkt;
  // A policy the lock has not applied yet: it still decides with the one before, which for an opening is the other.
  if (jkt === undefined && lock.holderBinding === 'required') {
    return lock.holderBindingPending ? { deny: false, reason: BINDING_NOT_APPLIED } : { deny: true, reason: BINDING_REQUIRED };
  }
  if (jkt === undefined) return null;
  if (lock.revokedKeys.has(jkt)) return { deny: true, reason: keyRevoked(jkt, true) };
  if (lock.pendingRevokedKeys.has(jkt)) return { deny: false, reason: keyRevoked(jkt, false) };
  return null;
}

function keyWithdrawalNotApplied(kid: unknown, opens: boolean): AccessCheckReason {
  const withdrawn =
    `The credential the phone holds is signed with the key ${typeof kid === 'string' ? kid : '(none)'}, which is no longer in the ` +
    "tenant's published key set, but the lock has not applied the key-set change yet";
  return {
    code: 'key-not-published',
    message: opens
      ? `${withdrawn}: the door MAY STILL OPEN for this credential until the lock syncs or a phone brings it the new key set ` +
        '(docs/api-reference.md 8.1). The phone must download its tickets again to get a credential signed with the current key.'
      : `${withdrawn}; it refuses this credential anyway (see the other reasons).`,
  };
}

function revocationNotApplied(ticket: TicketEvidence['ticket'], opens: boolean, claims: CredentialClaims | null): AccessCheckReason {
  const revoked = `The ticket was revoked at ${iso(ticket.revokedAt!)}, but the lock has not applied the revocation yet`;
  return {
    code: 'revocation-not-applied',
    message: opens
      ? `${revoked}: the door MAY STILL OPEN for this phone until the lock syncs or a phone brings it the revocation list ` +
        `(or the credential runs out at ${iso(credentialEnd(claims, ticket))}).`
      : `${revoked}; it refuses this credential anyway (see the other reasons).`,
  };
}

/**
 * docs/api-reference.md 15: a lock in lockdown refuses every credential that would otherwise open but an override
 * ticket's (the reference lock's reason `lockdown`, docs/lock-integration.md 3.3 step 9). The server judges with the
 * state it holds: a lock that has not acknowledged it yet learns it at its next sync or from any phone that downloaded
 * since (every download carries it), so the refusal is what the lock does once the state reached it.
 */
function lockdownReason(lock: LockView): AccessCheckReason {
  return {
    code: 'lockdown',
    message: lock.lockStateApplied
      ? 'The lock is in lockdown and has applied it: it refuses every credential but an override ticket\'s until the lockdown ends.'
      : 'The lock is in lockdown: it refuses every credential but an override ticket\'s once the state reaches it, at its next ' +
        'sync or from any phone that downloaded since. Until then, a lock that has not learnt it may still open.',
  };
}

/**
 * docs/api-reference.md 8.6, 15: the lockdown has ended, but the lock acknowledged only a position at which it was in
 * force. Judged by the state the service holds (as a lockdown not yet learnt is), with what the lock may do meanwhile.
 */
const LOCKDOWN_END_NOT_APPLIED: AccessCheckReason = {
  code: 'lockdown-end-not-applied',
  message:
    'The lockdown has ended, but the lock has not learnt it yet: until its next sync, or a visit of a phone that ' +
    'downloaded since the end (this one, if it downloads again first), it refuses every credential but an override ticket\'s.',
};

const LOCKDOWN_OVERRIDE: AccessCheckReason = {
  code: 'lockdown-override',
  message: 'The lock is in lockdown, and this is an override ticket: its credential opens all the same (docs/api-reference.md 15).',
};

/**
 * The decision the lock takes for one ticket with what it has, and why: the credential the phone holds, checked with
 * the one rule (checkCredential) at the lock's own time, after the key check a lock's signature verification makes.
 * With no credential held, the lock refuses; the reasons then also say what a downloaded credential would meet.
 */
export function explainTicket(evidence: TicketEvidence, lock: LockView, request: ExplainRequest, now: number): { decision: AccessDecision; reasons: AccessCheckReason[] } {
  const forLock = lockReasons(lock, request);
  // The phone cannot even reach the lock over a channel it does not have: no credential is presented.
  if (!lock.channels.includes(request.channel)) return { decision: 'deny', reasons: forLock };
  const { ticket } = evidence;
  const state: LockTrustState = {
    issuer: lock.issuer,
    securedObjectId: lock.securedObjectId,
    maxCredentialLifetime: lock.maxCredentialLifetime,
    revoked: lock.revoked,
  };
  const access = { command: request.command, channel: request.channel, at: request.lockTime };

  if (evidence.held === null) {
    const reasons = [notDownloaded(evidence, now)];
    if (evidence.onceDownloaded !== null) {
      const check = checkCredential({ typ: CREDENTIAL_TYPE }, evidence.onceDownloaded, state, access);
      if (check.decision === 'deny') {
        const reason = describeCheck(check, evidence.onceDownloaded, ticket, lock, request);
        reasons.push({ ...reason, message: `Once downloaded: ${reason.message}` });
      } else if (lock.lockMode === 'lockdown' && evidence.onceDownloaded.ovr !== true) {
        const reason = lockdownReason(lock);
        reasons.push({ ...reason, message: `Once downloaded: ${reason.message}` });
      }
    }
    return { decision: 'deny', reasons: [...reasons, ...forLock] };
  }

  const { header, claims } = evidence.held;
  const parsed = parseCredentialClaims(claims);
  let decision: AccessDecision;
  let reasons: AccessCheckReason[];
  // The lock verifies the signature with a key of its set before it reads the claims, after the header's type
  // (src/simulator/lock-simulator.ts): a credential of another type is refused as such, by the rule below.
  if (isObject(header) && header.typ === CREDENTIAL_TYPE && typeof header.kid === 'string' && lock.unknownKids.has(header.kid)) {
    // The lock looks the key up before anything else of the credential (src/simulator/lock-simulator.ts).
    decision = 'deny';
    reasons = [keyNotKnownYet(header.kid)];
  } else if (isObject(header) && header.typ === CREDENTIAL_TYPE && !(typeof header.kid === 'string' && lock.publishedKids.has(header.kid))) {
    if (lock.keySetPending) {
      // The lock may still hold the key (an emergency rotation it has not learnt): judged as if it did, as it would.
      const check = checkCredential(header, claims, state, access);
      decision = check.decision === 'open' ? 'allow' : 'deny';
      reasons = [keyWithdrawalNotApplied(header.kid, check.decision === 'open')];
      if (check.decision === 'deny') reasons.unshift(describeCheck(check, parsed, ticket, lock, request));
    } else {
      decision = 'deny';
      reasons = [keyNotPublished(header.kid)];
    }
  } else {
    const check = checkCredential(header, claims, state, access);
    decision = check.decision === 'open' ? 'allow' : 'deny';
    reasons = [describeCheck(check, parsed, ticket, lock, request)];
  }
  if (decision === 'allow') {
    const binding = bindingReasons(parsed, lock);
    if (binding?.deny) {
      decision = 'deny';
      reasons = [binding.reason];
    } else if (binding) {
      reasons = [...reasons.filter((reason) => reason.code !== 'valid'), binding.reason];
    }
  }
  if (decision === 'allow' && lock.lockdownEndPending && parsed?.ovr !== true) {
    reasons = [...reasons.filter((reason) => reason.code !== 'valid'), LOCKDOWN_END_NOT_APPLIED];
  }
  if (decision === 'allow' && lock.lockMode === 'lockdown') {
    // The lock's last step (docs/lock-integration.md 3.3 step 9): only an override ticket's credential opens.
    if (parsed?.ovr === true) reasons = [...reasons, LOCKDOWN_OVERRIDE];
    else {
      decision = 'deny';
      reasons = [lockdownReason(lock)];
    }
  }
  if (ticket.revokedAt !== null) {
    // docs/api-reference.md 8.4: revoked on the server, but not at the door until the lock applies it.
    if (decision === 'allow') reasons = [...reasons.filter((reason) => reason.code !== 'valid'), revocationNotApplied(ticket, true, parsed)];
    else if (reasons[0]!.code !== 'revoked') {
      reasons.push(
        ticket.revocationAppliedAt !== null
          ? describeCheck({ decision: 'deny', reason: 'revoked' }, parsed, ticket, lock, request)
          : revocationNotApplied(ticket, false, parsed),
      );
    }
  }
  return { decision, reasons: [...reasons, ...forLock] };
}

/** Reasons with the same code said once, the first (the newest ticket's) kept. */
function distinct(reasons: AccessCheckReason[]): AccessCheckReason[] {
  const seen = new Set<string>();
  return reasons.filter((reason) => !seen.has(reason.code) && seen.add(reason.code));
}

/**
 * The lock opens when any ticket's credential opens it (its reasons say why, e.g. a revocation not applied yet);
 * otherwise it refuses, for the reasons of every ticket, or because the phone has none for it.
 */
export function summarize(tickets: { decision: AccessDecision; reasons: AccessCheckReason[] }[], forLock: AccessCheckReason[]): { decision: AccessDecision; reasons: AccessCheckReason[] } {
  const opening = tickets.filter((ticket) => ticket.decision === 'allow');
  if (opening.length > 0) return { decision: 'allow', reasons: distinct(opening.flatMap((ticket) => ticket.reasons)) };
  if (tickets.length === 0) {
    const noToken: AccessCheckReason = {
      code: 'no-token',
      message: 'The phone has no ticket for this lock: issue one (POST /operatorapi/tickets) or grant an access permission.',
    };
    return { decision: 'deny', reasons: [noToken, ...forLock] };
  }
  return { decision: 'deny', reasons: distinct(tickets.flatMap((ticket) => ticket.reasons)) };
}

/** The protected header and claims of a stored credential, undecodable parts as null (the rule then refuses). */
export function decodeCredential(credential: string): { header: unknown; claims: unknown } {
  const attempt = <T>(decode: () => T): T | null => {
    try {
      return decode();
    } catch {
      return null;
    }
  };
  return { header: attempt(() => decodeProtectedHeader(credential)), claims: attempt(() => decodeJwt(credential)) };
}
