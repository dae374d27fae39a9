// The tenants' ticket keys (docs/api-reference.md 8.1): a first key per tenant, announced one credential lifetime before
// a successor signs, withdrawn at once in an emergency; each change of a tenant's key set takes a change number.
import type { JWK } from 'jose';
import { nextChangeSeq } from '../../db/repositories/change-log.repo.js';
import {
  findAnnouncedKey,
  hasSigningKey,
  lastKeyWithdrawal,
  listLiveTenantKeys,
  recordTicketKeySetChange,
  retireKeysExcept,
  withdrawKeysExcept,
  type SigningKeyRecord,
} from '../../db/repositories/signing-key.repo.js';
import { ConflictError, NotFoundError, TooManyRequestsError } from '../../errors.js';
import type { Queryable } from '../../db/database.js';
import type { SigningKey } from '../../shared/jws.js';
import { recordChange } from '../audit.service.js';
import type { ActionContext } from '../context.js';
import { currentPublishedJwks, publishedJwks } from './published-keys.js';
import { createSigningKeyRing, lockKeyGeneration, type SigningKeyRingOptions } from './signing-key-ring.js';

export interface TicketKeyOptions extends Omit<SigningKeyRingOptions, 'purpose'> {
  /**
   * How long a new key is published before it signs (docs/api-reference.md 8.1: one credential lifetime, so locks that
   * are never online learn it from a visiting phone first). 0: it signs at once.
   */
  announceMs: number;
  /**
   * TICKET_KEY_EMERGENCY_ROTATION_MIN_INTERVAL in ms (docs/api-reference.md 8.1, docs/security-cases.md H50): how long
   * after a tenant's emergency rotation the next one is refused with 429. 0: no limit.
   */
  emergencyMinIntervalMs?: number;
}

/** A key's place in its lifecycle, as the Operator API lists it (docs/api-reference.md 8.1). */
export type KeyState = 'announced' | 'active' | 'retired';

export interface KeyDescription {
  kid: string;
  alg: string;
  state: KeyState;
  createdTime: number;
  activatesTime: number;
  /** Its last signature (a successor signs from then on); absent while no successor exists. */
  retiresTime?: number;
  /** When it drops out of the published set: one retention after its last signature. */
  publishedUntil?: number;
}

export interface RotateOptions {
  /**
   * A leaked key: the new key signs at once and every other key of the tenant is withdrawn (unpublished and no
   * longer verifying) at once. Locks that are never online then need a visit with the installer's tools.
   */
  emergency?: boolean;
  /** Who rotates: recorded as the audit event `key.rotated` of the tenant (docs/api-reference.md 7.5). */
  context?: ActionContext;
}

export interface Rotation {
  kid: string;
  /** When the new key signs its first credential (now, or one announcement later). */
  activatesAt: number;
  emergency: boolean;
  /** The keys it replaced: retired (normal rotation, signing until `activatesAt`) or withdrawn (emergency). */
  retired: string[];
}

/** Rolls back a first-key transaction that found a key already there, so the change number it took is not spent. */
class NothingToGenerate extends Error {}

export function createTicketKeyService(options: TicketKeyOptions) {
  const { announceMs } = options;
  const ring = createSigningKeyRing({ ...options, purpose: 'ticket' });
  const { db, clock, purpose, retentionMs } = ring;

  /**
   * docs/security-cases.md H50: an emergency rotation leaves locks that are never online refusing every new credential
   * until an installer visits, so one client cannot repeat it at will. Runs after the tenant's change-number lock, so
   * two concurrent emergency rotations see each other.
   */
  async function refuseTooFrequentEmergency(tx: Queryable, tenantId: string, now: number): Promise<void> {
    const minIntervalMs = options.emergencyMinIntervalMs ?? 0;
    if (minIntervalMs <= 0) return;
    const last = await lastKeyWithdrawal(tx, purpose, tenantId);
    if (last === null || now - last >= minIntervalMs) return;
    const allowedAt = last + minIntervalMs;
    throw new TooManyRequestsError(
      `The tenant's last emergency rotation was at ${new Date(last).toISOString()}; another is allowed from ` +
        `${new Date(allowedAt).toISOString()} (TICKET_KEY_EMERGENCY_ROTATION_MIN_INTERVAL). Each one leaves locks that are ` +
        'never online refusing new credentials until an installer visits them.',
      (allowedAt - now) / 1000,
    );
  }

  function describeKey(record: SigningKeyRecord, now: number): KeyDescription {
    return {
      kid: record.kid,
      alg: record.alg,
      state: record.activatesAt > now ? 'announced' : record.retiredAt !== null && record.retiredAt <= now ? 'retired' : 'active',
      createdTime: record.createdAt,
      activatesTime: record.activatesAt,
      ...(record.retiredAt !== null ? { retiresTime: record.retiredAt, publishedUntil: record.retiredAt + retentionMs } : {}),
    };
  }

  /** One generation at a time per tenant on this instance: 500 credentials signed at once wait for one transaction. */
  const ensuring = new Map<string, Promise<void>>();

  /**
   * Makes sure the tenant has a key to sign with; generates the first one, signing at once. A tenant's first ticket
   * key is a change of its key set (docs/api-reference.md 8.1). Opens its own transaction: never call it (or
   * signingKey) inside a transaction that holds the tenant's change number.
   */
  function ensureKey(tenantId: string): Promise<void> {
    let pending = ensuring.get(tenantId);
    if (!pending) {
      pending = generateFirstKey(tenantId).finally(() => ensuring.delete(tenantId));
      ensuring.set(tenantId, pending);
    }
    return pending;
  }

  async function generateFirstKey(tenantId: string): Promise<void> {
    try {
      await db.transaction(async (tx) => {
        // First: the tenant's change number, whose row lock orders every change of the tenant (change-log.repo.ts).
        const seq = await nextChangeSeq(tx, tenantId);
        const createdAt = await ring.generateFirstKey(tx, tenantId);
        if (createdAt === null) throw new NothingToGenerate();
        await recordTicketKeySetChange(tx, tenantId, seq, createdAt);
      });
    } catch (error) {
      if (!(error instanceof NothingToGenerate)) throw error;
    }
    await ring.reloadAfterWrite();
  }

  /** The tenant's published keys as the database has them now (not this instance's copy). */
  async function listPublished(tenantId: string): Promise<{ records: SigningKeyRecord[]; now: number }> {
    const now = clock();
    return { records: await listLiveTenantKeys(db, purpose, tenantId, now - retentionMs), now };
  }

  return {
    start: ring.start,
    stop: ring.stop,
    reload: ring.reload,
    ensureKey,
    verificationKey: ring.verificationKey,

    async signingKey(tenantId: string): Promise<SigningKey> {
      let key = ring.activeKey(tenantId);
      if (!key) {
        await ensureKey(tenantId);
        key = ring.activeKey(tenantId);
      }
      return ring.signingKeyOf(key);
    },

    /** The tenant's published keys this instance holds, newest first (the tenant's JWKS). */
    publicJwks(tenantId: string): JWK[] {
      return publishedJwks(ring, tenantId);
    },

    /** The tenant's published keys as the database has them now, for what reaches a lock (published-keys.ts). */
    currentPublicJwks(tenantId: string): Promise<JWK[]> {
      return currentPublishedJwks(ring, tenantId);
    },

    /** The tenant's published keys with their lifecycle, newest first, read from the database (not this instance's copy). */
    async describe(tenantId: string): Promise<KeyDescription[]> {
      const { records, now } = await listPublished(tenantId);
      return records.map((record) => describeKey(record, now));
    },

    /** One published key of the tenant; another tenant's, a withdrawn or a no longer published one is not found. */
    async describeOne(tenantId: string, kid: string): Promise<KeyDescription> {
      const { records, now } = await listPublished(tenantId);
      const record = records.find((key) => key.kid === kid);
      if (!record) throw new NotFoundError(`No published ticket key ${kid}.`);
      return describeKey(record, now);
    },

    /**
     * A new key for the tenant. Normal rotation: the new key is published now and signs from `now + announceMs`, the
     * signing key's last signature is then, and it stays published one retention after that (docs/api-reference.md
     * 8.1); while an announced key is pending, a normal rotation is refused. With no key signing (none yet), or
     * `announceMs` 0, the new key signs at once. Emergency rotation: the new key signs at once and every other key is
     * withdrawn at once. The change of the tenant's key set takes the tenant's next change number in the same
     * transaction.
     */
    async rotate(tenantId: string, { emergency = false, context }: RotateOptions = {}): Promise<Rotation> {
      const rotated = await db.transaction(async (tx): Promise<Rotation> => {
        // First: the tenant's change number, whose row lock orders every change of the tenant (change-log.repo.ts).
        const seq = await nextChangeSeq(tx, tenantId);
        await lockKeyGeneration(tx);
        const now = clock();
        let activatesAt = now;
        if (emergency) await refuseTooFrequentEmergency(tx, tenantId, now);
        // Only announced keys can be pending (a key signing at once on an instance whose clock runs ahead is not).
        if (!emergency && announceMs > 0) {
          const pending = await findAnnouncedKey(tx, purpose, tenantId, now);
          if (pending) {
            throw new ConflictError(
              `The key ${pending.kid} is announced and signs from ${new Date(pending.activatesAt).toISOString()}; ` +
                'a second rotation must wait until then. An emergency rotation (`emergency`) replaces every key at once.',
            );
          }
          if (await hasSigningKey(tx, purpose, tenantId, now)) activatesAt = now + announceMs;
        }
        const kid = await ring.generate(tx, tenantId, now, activatesAt);
        const retired = emergency
          ? await withdrawKeysExcept(tx, purpose, tenantId, kid, now, now - retentionMs)
          : await retireKeysExcept(tx, purpose, tenantId, kid, activatesAt);
        await recordTicketKeySetChange(tx, tenantId, seq, now);
        // Last: the audit counter's lock (audit.service.ts).
        if (context) await recordChange(tx, context, now, 'key.rotated', `ticket_key:${kid}`, { kid, emergency, retired });
        return { kid, activatesAt, emergency, retired };
      });
      await ring.reloadAfterWrite();
      return rotated;
    },
  };
}

export type TicketKeyService = ReturnType<typeof createTicketKeyService>;
