// Signing keys: generated on first start, private halves encrypted at rest, rotated without breaking issued tokens;
// ticket keys announced before they sign and withdrawn at once in an emergency (docs/api-reference.md 8.1).
import { createPrivateKey, randomUUID, type JsonWebKey, type KeyObject as NodeKeyObject } from 'node:crypto';
import { exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK, type KeyObject } from 'jose';
import { nextChangeSeq } from '../../db/repositories/change-log.repo.js';
import type { Database, Queryable } from '../../db/database.js';
import {
  countUnretiredKeys,
  findAnnouncedKey,
  hasSigningKey,
  insertKey,
  lastKeyWithdrawal,
  listLiveKeys,
  listLiveTenantKeys,
  recordTicketKeySetChange,
  retireKeysExcept,
  SIGNING_KEYS_CHANNEL,
  withdrawKeysExcept,
  type KeyPurpose,
  type SigningKeyRecord,
} from '../../db/repositories/signing-key.repo.js';
import { ConflictError, NotFoundError, TooManyRequestsError } from '../../errors.js';
import { recordChange } from '../audit.service.js';
import type { ActionContext } from '../context.js';
import { seal, unseal, type SecretsKey } from '../../shared/crypto.js';
import { SEALED_AAD } from './sealed-values.js';
import type { SigningAlgorithm, SigningKey } from '../../shared/jws.js';

export type { SigningAlgorithm, SigningKey } from '../../shared/jws.js';

type Key = CryptoKey | KeyObject | Uint8Array;

interface LoadedKey {
  kid: string;
  tenantId: string | null;
  alg: SigningAlgorithm;
  publicJwk: JWK;
  publicKey: Key;
  /** Decrypted lazily: most keys only ever verify. A node:crypto key, for `signCompactJws`. */
  privateKey: NodeKeyObject | null;
  record: SigningKeyRecord;
}

export interface KeyServiceOptions {
  db: Database;
  secretsKey: SecretsKey;
  clock: () => number;
  alg: SigningAlgorithm;
  purpose: KeyPurpose;
  /** How long a retired key stays published after its last signature: the longest lifetime of anything it signed. */
  retentionMs: number;
  /**
   * How long a new key is published before it signs (docs/api-reference.md 8.1: one credential lifetime for ticket keys,
   * so locks that are never online learn it from a visiting phone first). 0, the default: it signs at once.
   */
  announceMs?: number;
  /**
   * TICKET_KEY_EMERGENCY_ROTATION_MIN_INTERVAL in ms (docs/api-reference.md 8.1, docs/security-cases.md H50): how long
   * after a tenant's emergency rotation the next one is refused with 429. 0, the default: no limit.
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

/** Any constant; keeps two instances from generating a first key each at the same time. */
const KEY_GENERATION_LOCK = 7_318_442_902;
/** How far apart the clocks of two instances may be for a key made "at once" on one to sign at once on the other. */
const CLOCK_SKEW_MS = 5_000;
/** An unknown `kid` reloads the keys at most this often, so random kids cannot hammer the database. */
const UNKNOWN_KID_RELOAD_MS = 5_000;

export function createKeyService(options: KeyServiceOptions) {
  const { db, secretsKey, clock, purpose } = options;
  const announceMs = options.announceMs ?? 0;
  /**
   * Changes of a tenant's ticket-key set take a change number of the tenant's change log (docs/api-reference.md 8.1): sync
   * answers and revocation lists compare a lock's position with it. Access-token keys belong to no tenant.
   */
  const tracksKeySetChanges = purpose === 'ticket';
  let keys = new Map<string, LoadedKey>();
  let lastReload = 0;
  let reloading: Promise<void> | null = null;
  let refreshTimer: NodeJS.Timeout | null = null;
  let unlisten: (() => Promise<void>) | null = null;

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

  async function generate(tx: Queryable, tenantId: string | null, createdAt: number, activatesAt: number): Promise<string> {
    const { publicKey, privateKey } = await generateKeyPair(options.alg, { extractable: true, crv: options.alg === 'EdDSA' ? 'Ed25519' : 'P-256' });
    const kid = randomUUID();
    const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: options.alg, use: 'sig' };
    const privateJwk = await exportJWK(privateKey);
    await insertKey(tx, {
      kid,
      tenantId,
      purpose,
      alg: options.alg,
      publicJwk,
      privateJwkEncrypted: seal(secretsKey, JSON.stringify(privateJwk), SEALED_AAD.signingKey(kid)),
      createdAt,
      activatesAt,
      retiredAt: null,
      withdrawnAt: null,
    });
    return kid;
  }

  async function load(record: SigningKeyRecord): Promise<LoadedKey> {
    const existing = keys.get(record.kid);
    if (
      existing &&
      existing.record.retiredAt === record.retiredAt &&
      existing.record.activatesAt === record.activatesAt &&
      existing.record.withdrawnAt === record.withdrawnAt
    ) {
      return existing;
    }
    const { kid: _kid, alg: _alg, use: _use, ...publicJwk } = record.publicJwk as JWK;
    return {
      kid: record.kid,
      tenantId: record.tenantId,
      alg: record.alg as SigningAlgorithm,
      publicJwk: record.publicJwk as JWK,
      publicKey: existing?.publicKey ?? ((await importJWK(publicJwk, record.alg)) as Key),
      privateKey: existing?.privateKey ?? null,
      record,
    };
  }

  async function reload(): Promise<void> {
    if (reloading) return reloading;
    reloading = (async () => {
      const records = await listLiveKeys(db, purpose, clock() - options.retentionMs);
      const next = new Map<string, LoadedKey>();
      for (const record of records) next.set(record.kid, await load(record));
      keys = next;
      lastReload = clock();
    })().finally(() => {
      reloading = null;
    });
    return reloading;
  }

  /**
   * A reload that sees a key this instance has just committed. A reload already running may have read before the
   * commit, so it is waited for and a new one read after it (joining it would leave the new key unknown here).
   */
  async function reloadAfterWrite(): Promise<void> {
    if (reloading) await reloading.catch(() => undefined);
    return reload();
  }

  function privateKeyOf(key: LoadedKey): NodeKeyObject {
    key.privateKey ??= createPrivateKey({
      key: JSON.parse(unseal(secretsKey, key.record.privateJwkEncrypted, SEALED_AAD.signingKey(key.kid))) as JsonWebKey,
      format: 'jwk',
    });
    return key.privateKey;
  }

  /** Whether the key signs at `now`: activated, not yet at its last signature, never withdrawn. */
  function signsAt(record: SigningKeyRecord, now: number): boolean {
    return record.withdrawnAt === null && record.activatesAt <= now && (record.retiredAt === null || record.retiredAt > now);
  }

  /**
   * Whether the key is published at `now` (and so verifies): announced, signing, or retired less than one retention
   * ago; never once withdrawn.
   */
  function publishedAt(record: SigningKeyRecord, now: number): boolean {
    return record.withdrawnAt === null && (record.retiredAt === null || record.retiredAt > now - options.retentionMs);
  }

  /**
   * The key the tenant signs with now (null: the server's own key): the newest activated one. When none is, a key
   * activating within CLOCK_SKEW_MS: another instance whose clock runs ahead may have made it (a first key, an
   * emergency rotation) "at once", and this instance must not be left without a key until its clock catches up.
   */
  function activeKey(tenantId: string | null): LoadedKey | undefined {
    return newestSigningAt(tenantId, clock()) ?? newestSigningAt(tenantId, clock() + CLOCK_SKEW_MS);
  }

  function newestSigningAt(tenantId: string | null, now: number): LoadedKey | undefined {
    let newest: LoadedKey | undefined;
    for (const key of keys.values()) {
      if (key.tenantId !== tenantId || !signsAt(key.record, now)) continue;
      if (
        !newest ||
        key.record.activatesAt > newest.record.activatesAt ||
        (key.record.activatesAt === newest.record.activatesAt && key.record.createdAt > newest.record.createdAt)
      ) {
        newest = key;
      }
    }
    return newest;
  }

  /** Public halves only (docs/security-cases.md 31): `d` never leaves this service. */
  function publicMembers(record: SigningKeyRecord): JWK {
    const { d: _d, ...publicJwk } = record.publicJwk as JWK & { d?: string };
    return publicJwk;
  }

  function describeKey(record: SigningKeyRecord, now: number): KeyDescription {
    return {
      kid: record.kid,
      alg: record.alg,
      state: record.activatesAt > now ? 'announced' : record.retiredAt !== null && record.retiredAt <= now ? 'retired' : 'active',
      createdTime: record.createdAt,
      activatesTime: record.activatesAt,
      ...(record.retiredAt !== null ? { retiresTime: record.retiredAt, publishedUntil: record.retiredAt + options.retentionMs } : {}),
    };
  }

  /** Serialises key generation across instances (after the tenant's change number: lock order in change-log.repo.ts). */
  async function lockKeyGeneration(tx: Queryable): Promise<void> {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [KEY_GENERATION_LOCK]);
  }

  /** One generation at a time per tenant on this instance: 500 credentials signed at once wait for one transaction. */
  const ensuring = new Map<string | null, Promise<void>>();

  /**
   * Makes sure the tenant (or the server) has a key to sign with; generates the first one, signing at once (nothing
   * was published before, so there is nothing to announce it ahead of). A tenant's first ticket key is a change of its
   * key set (docs/api-reference.md 8.1). Opens its own transaction: never call it (or signingKey) inside a transaction
   * that holds the tenant's change number.
   */
  function ensureKey(tenantId: string | null): Promise<void> {
    let pending = ensuring.get(tenantId);
    if (!pending) {
      pending = generateFirstKey(tenantId).finally(() => ensuring.delete(tenantId));
      ensuring.set(tenantId, pending);
    }
    return pending;
  }

  async function generateFirstKey(tenantId: string | null): Promise<void> {
    try {
      await db.transaction(async (tx) => {
        const seq = tracksKeySetChanges && tenantId !== null ? await nextChangeSeq(tx, tenantId) : null;
        await lockKeyGeneration(tx);
        if ((await countUnretiredKeys(tx, purpose, tenantId)) > 0) {
          if (seq !== null) throw new NothingToGenerate();
          return;
        }
        const now = clock();
        await generate(tx, tenantId, now, now);
        if (seq !== null) await recordTicketKeySetChange(tx, tenantId!, seq, now);
      });
    } catch (error) {
      if (!(error instanceof NothingToGenerate)) throw error;
    }
    await reloadAfterWrite();
  }

  return {
    /**
     * Loads the keys and follows keys made elsewhere (another instance, the CLI): at once on their NOTIFY, and by a
     * re-read every `refreshMs` in case a notification was lost (a dropped listening connection).
     */
    async start(refreshMs: number): Promise<void> {
      await reload();
      unlisten = await db.listen(SIGNING_KEYS_CHANNEL, (notified) => {
        if (notified === purpose) void reloadAfterWrite().catch(() => undefined);
      });
      refreshTimer = setInterval(() => void reload().catch(() => undefined), refreshMs);
      refreshTimer.unref();
    },

    async stop(): Promise<void> {
      if (refreshTimer) clearInterval(refreshTimer);
      refreshTimer = null;
      await unlisten?.().catch(() => undefined);
      unlisten = null;
    },

    ensureKey,

    reload,

    async signingKey(tenantId: string | null = null): Promise<SigningKey> {
      let key = activeKey(tenantId);
      if (!key) {
        await ensureKey(tenantId);
        key = activeKey(tenantId);
      }
      if (!key) throw new Error('No signing key is available');
      return { kid: key.kid, alg: key.alg, privateKey: privateKeyOf(key) };
    },

    /** The public key for a `kid`, reloading (rate-limited) when another instance may have rotated. */
    async verificationKey(kid: string): Promise<{ key: Key; alg: SigningAlgorithm; tenantId: string | null } | null> {
      let key = keys.get(kid);
      if (!key && clock() - lastReload >= UNKNOWN_KID_RELOAD_MS) {
        await reload();
        key = keys.get(kid);
      }
      // The same rule as publication: a key a lock may no longer hold (withdrawn, or retired too long ago) never verifies.
      if (!key || !publishedAt(key.record, clock())) return null;
      return { key: key.publicKey, alg: key.alg, tenantId: key.tenantId };
    },

    /**
     * The published keys (of one tenant, or of all when `tenantId` is undefined): announced, signing, and retired
     * within one retention; never withdrawn ones. Public halves only (docs/security-cases.md 31): `d` never
     * leaves this service. A retired key dropping out here changes no change number: a lock still holding it holds
     * a key whose credentials have all expired, which admits nothing.
     */
    publicJwks(tenantId?: string | null): JWK[] {
      const now = clock();
      return [...keys.values()]
        .filter((key) => (tenantId === undefined || key.tenantId === tenantId) && publishedAt(key.record, now))
        .sort((a, b) => b.record.activatesAt - a.record.activatesAt || b.record.createdAt - a.record.createdAt)
        .map((key) => publicMembers(key.record));
    },

    /**
     * The tenant's published keys as the database has them now, for what reaches a lock (docs/api-reference.md 8.1: sync
     * answers, revocation lists, the trust endpoint). This instance's copy follows other instances and the CLI only
     * through NOTIFY and a periodic re-read; a sync that moved a lock's cursor past a key change while answering an older
     * set would leave the lock without the new keys (or holding a withdrawn one) until the next change. When the copy
     * disagrees, it is reloaded at once, so this instance also stops signing with a withdrawn key.
     */
    async currentPublicJwks(tenantId: string): Promise<JWK[]> {
      const now = clock();
      const records = (await listLiveTenantKeys(db, purpose, tenantId, now - options.retentionMs)).filter((record) => publishedAt(record, now));
      const inMemory = new Set(this.publicJwks(tenantId).map((key) => key.kid));
      if (records.length !== inMemory.size || records.some((record) => !inMemory.has(record.kid))) await reloadAfterWrite();
      return records.map(publicMembers);
    },

    /** The tenant's published keys with their lifecycle, newest first, read from the database (not this instance's copy). */
    async describe(tenantId: string): Promise<KeyDescription[]> {
      const now = clock();
      const records = await listLiveTenantKeys(db, purpose, tenantId, now - options.retentionMs);
      return records.map((record) => describeKey(record, now));
    },

    /** One published key of the tenant; another tenant's, a withdrawn or a no longer published one is not found. */
    async describeOne(tenantId: string, kid: string): Promise<KeyDescription> {
      const now = clock();
      const record = (await listLiveTenantKeys(db, purpose, tenantId, now - options.retentionMs)).find((key) => key.kid === kid);
      if (!record) throw new NotFoundError(`No published ticket key ${kid}.`);
      return describeKey(record, now);
    },

    /**
     * A new key for the tenant (null: the server's own key). Normal rotation: the new key is published now and signs
     * from `now + announceMs`, the signing key's last signature is then, and it stays published one retention after
     * that (docs/api-reference.md 8.1); while an announced key is pending, a normal rotation is refused. With no key
     * signing (none yet), or `announceMs` 0 (access-token keys), the new key signs at once. Emergency rotation: the
     * new key signs at once and every other key is withdrawn at once. For ticket keys, the change of the tenant's
     * key set takes the tenant's next change number in the same transaction.
     */
    async rotate(tenantId: string | null = null, { emergency = false, context }: RotateOptions = {}): Promise<Rotation> {
      const rotated = await db.transaction(async (tx): Promise<Rotation> => {
        // First: the tenant's change number, whose row lock orders every change of the tenant (change-log.repo.ts).
        const seq = tracksKeySetChanges && tenantId !== null ? await nextChangeSeq(tx, tenantId) : null;
        await lockKeyGeneration(tx);
        const now = clock();
        let activatesAt = now;
        if (emergency && tenantId !== null) await refuseTooFrequentEmergency(tx, tenantId, now);
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
        const kid = await generate(tx, tenantId, now, activatesAt);
        const retired = emergency
          ? await withdrawKeysExcept(tx, purpose, tenantId, kid, now, now - options.retentionMs)
          : await retireKeysExcept(tx, purpose, tenantId, kid, activatesAt);
        if (seq !== null) await recordTicketKeySetChange(tx, tenantId!, seq, now);
        // Last: the audit counter's lock (audit.service.ts). Only tenant keys (ticket keys) have a tenant's trail.
        if (context && tenantId !== null) await recordChange(tx, context, now, 'key.rotated', `ticket_key:${kid}`, { kid, emergency, retired });
        return { kid, activatesAt, emergency, retired };
      });
      await reloadAfterWrite();
      return rotated;
    },
  };
}

export type KeyService = ReturnType<typeof createKeyService>;
