// The model and its oracle: what the test knows was committed (and from when), and what each reference lock and phone
// really holds. A time recorded for a commit is the moment its definite answer came back (the commit was before), and a
// time recorded for a sync or a download is the moment its first request left (what it reads is after): comparing the
// two errs only towards fewer obligations, never towards a false alarm.
import type { LockSimulator } from '../../../src/simulator/lock-simulator.js';
import type { DownloadedToken, PhoneSimulator } from '../../../src/simulator/phone-simulator.js';
import type { Es256KeyPair } from '../../../src/simulator/es256.js';

/** Ways to break a guarantee on purpose, in the model's own locks, phones and receiver (never in the service). */
export type Breakage =
  /** The lock takes a sync answer's cursor and serial but drops its revocations: a sync that skips the watermark. */
  | 'sync-skips-revocations'
  /** The lock ignores every revocation list a phone hands it. */
  | 'lock-ignores-phone-list'
  /** The lock never applies a lock state, from a sync or a phone. */
  | 'lock-ignores-lock-state'
  /** A relay carries a receipt that claims a serial the lock never applied: trusted as the lock's word. */
  | 'receipt-overclaims'
  /** The webhook receiver answers 200 but loses every third request. */
  | 'receiver-drops'
  /** A committed event is removed from the database behind the service's back: a lost write. */
  | 'lose-committed-event';

export const BREAKAGES: readonly Breakage[] = [
  'sync-skips-revocations',
  'lock-ignores-phone-list',
  'lock-ignores-lock-state',
  'receipt-overclaims',
  'receiver-drops',
  'lose-committed-event',
];

export interface ModelLock {
  id: string;
  sim: LockSimulator;
  key: Es256KeyPair;
  /** Online locks sync through the Device API; offline ones learn only from phones. */
  online: boolean;
  /** The lock's clock minus the true time (ms). */
  skewMs: number;
  syncClient: { clientId: string; clientSecret: string };
  syncToken?: string;
  /** When the first request of the lock's last completed sync left; -Infinity before one. */
  lastSyncStart: number;
  /** The download time of the newest phone download whose list and state this lock was handed. */
  lastVisitDownload: number;
}

export interface ModelPhone {
  /** The device it was enrolled as. */
  deviceId: string;
  sim: PhoneSimulator;
  key: Es256KeyPair;
  client: { clientId: string; clientSecret: string };
  token?: string;
  /** The download it holds (the simulator keeps its own copy, which it presents from). */
  held: DownloadedToken[];
  /** When the request of the download it holds left; undefined before one. */
  downloadedAt: number | undefined;
  /** Its device was deleted or its key replaced: it keeps its old download and can still be shown at a door. */
  retired: boolean;
  /** It keeps its download: downloads are skipped until this step. */
  offlineUntilStep: number;
}

export interface ModelTicket {
  id: string;
  lockId: string;
  deviceId: string;
  override: boolean;
  /** When the revocation's definite answer came back (ticket revoked, device or lock deleted). */
  revokedAt?: number;
  /** A phone downloaded it: its revocation is one a lock needs (docs/api-reference.md 8.4). */
  downloaded: boolean;
}

export interface ModelLockdown {
  mode: 'lockdown' | 'normal';
  serial: number;
  /** When its first request left: a `normal` may be in force from then. */
  sentAt: number;
  /** When its definite answer came back: a `lockdown` is surely in force from then. */
  committedAt: number;
}

export interface World {
  seed: number;
  breakage: Breakage | undefined;
  tenantId: string;
  tenantName: string;
  operator: string;
  manager: string;
  locks: ModelLock[];
  phones: ModelPhone[];
  tickets: Map<string, ModelTicket>;
  /** Phone key thumbprint -> when its revocation's definite answer came back. */
  keyRevokedAt: Map<string, number>;
  lockdowns: ModelLockdown[];
  /** Counters the step checks read: what never goes back. */
  eventHighWater: { count: number; maxSeq: number };
  /** The Access API caller (docs/api-reference.md 5): its client and user, and their token once granted. */
  access: { client: { clientId: string; clientSecret: string }; login: string; password: string; token?: string };
  /** The resident and the lock group the grants join, with the members the model has put in (the service is the truth). */
  resident: { id: string; deviceIds: Set<string> };
  lockGroup: { id: string; lockIds: Set<string> };
  /** What the run did, for the report. */
  counts: Record<string, number>;
  nextDevice: number;
  nextLock: number;
}

export const count = (world: World, what: string) => {
  world.counts[what] = (world.counts[what] ?? 0) + 1;
};

/** The newest moment the lock surely learnt everything committed before: its last completed sync, its newest visitor's download. */
export const horizonOf = (lock: ModelLock) => Math.max(lock.lastSyncStart, lock.lastVisitDownload);

/** Whether the lock must refuse ticket `ticketId` bound to `jkt`: its or its key's revocation was committed before the horizon. */
export function mustRefuse(world: World, lock: ModelLock, ticketId: string, jkt: string | undefined): string | undefined {
  const horizon = horizonOf(lock);
  const ticket = world.tickets.get(ticketId);
  if (ticket?.revokedAt !== undefined && ticket.revokedAt < horizon) return `ticket ${ticketId} revoked at ${ticket.revokedAt}, lock horizon ${horizon}`;
  const keyRevoked = jkt === undefined ? undefined : world.keyRevokedAt.get(jkt);
  if (keyRevoked !== undefined && keyRevoked < horizon) return `phone key ${jkt} revoked at ${keyRevoked}, lock horizon ${horizon}`;
  return undefined;
}

/**
 * The lockdown the lock must be in at its horizon: the last `lockdown` surely committed before it, unless a later
 * `normal` may have been committed before it too. Undefined when the lock may be in normal mode.
 */
export function mustBeInLockdown(world: World, lock: ModelLock): ModelLockdown | undefined {
  const horizon = horizonOf(lock);
  let inForce: ModelLockdown | undefined;
  for (const change of world.lockdowns) {
    if (change.mode === 'lockdown' && change.committedAt < horizon) inForce = change;
    if (change.mode === 'normal' && change.sentAt < horizon) inForce = undefined;
  }
  return inForce;
}
