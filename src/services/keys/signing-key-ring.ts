// The signing keys of one purpose as this instance holds them: loaded from the database and kept in step with other
// instances, each key's place in its lifecycle, new keys made with their private halves sealed at rest. The state the
// access-token keys, the ticket keys and the published key sets share (docs/api-reference.md 8.1).
import { createPrivateKey, randomUUID, type JsonWebKey, type KeyObject as NodeKeyObject } from 'node:crypto';
import { exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK, type KeyObject } from 'jose';
import type { Database, Queryable } from '../../db/database.js';
import {
  countUnretiredKeys,
  insertKey,
  listLiveKeys,
  SIGNING_KEYS_CHANNEL,
  type KeyPurpose,
  type SigningKeyRecord,
} from '../../db/repositories/signing-key.repo.js';
import { seal, unseal, type SecretsKey } from '../../shared/crypto.js';
import type { SigningAlgorithm, SigningKey } from '../../shared/jws.js';
import { SEALED_AAD } from './sealed-values.js';

export type PublicKey = CryptoKey | KeyObject | Uint8Array;

export interface LoadedKey {
  kid: string;
  tenantId: string | null;
  alg: SigningAlgorithm;
  publicJwk: JWK;
  publicKey: PublicKey;
  /** Decrypted lazily: most keys only ever verify. A node:crypto key, for `signCompactJws`. */
  privateKey: NodeKeyObject | null;
  record: SigningKeyRecord;
}

export interface SigningKeyRingOptions {
  db: Database;
  secretsKey: SecretsKey;
  clock: () => number;
  alg: SigningAlgorithm;
  purpose: KeyPurpose;
  /** How long a retired key stays published after its last signature: the longest lifetime of anything it signed. */
  retentionMs: number;
}

/** Any constant; keeps two instances from generating a first key each at the same time. */
const KEY_GENERATION_LOCK = 7_318_442_902;
/** How far apart the clocks of two instances may be for a key made "at once" on one to sign at once on the other. */
const CLOCK_SKEW_MS = 5_000;
/** An unknown `kid` reloads the keys at most this often, so random kids cannot hammer the database. */
const UNKNOWN_KID_RELOAD_MS = 5_000;

/** Serialises key generation across instances (after the tenant's change number: lock order in change-log.repo.ts). */
export async function lockKeyGeneration(tx: Queryable): Promise<void> {
  await tx.query('SELECT pg_advisory_xact_lock($1)', [KEY_GENERATION_LOCK]);
}

/** Whether the key signs at `now`: activated, not yet at its last signature, never withdrawn. */
function signsAt(record: SigningKeyRecord, now: number): boolean {
  return record.withdrawnAt === null && record.activatesAt <= now && (record.retiredAt === null || record.retiredAt > now);
}

export function createSigningKeyRing(options: SigningKeyRingOptions) {
  const { db, secretsKey, clock, purpose, retentionMs } = options;
  let keys = new Map<string, LoadedKey>();
  let lastReload = 0;
  let reloading: Promise<void> | null = null;
  let refreshTimer: NodeJS.Timeout | null = null;
  let unlisten: (() => Promise<void>) | null = null;

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
      publicKey: existing?.publicKey ?? ((await importJWK(publicJwk, record.alg)) as PublicKey),
      privateKey: existing?.privateKey ?? null,
      record,
    };
  }

  async function reload(): Promise<void> {
    if (reloading) return reloading;
    reloading = (async () => {
      const records = await listLiveKeys(db, purpose, clock() - retentionMs);
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

  /**
   * Whether the key is published at `now` (and so verifies): announced, signing, or retired less than one retention
   * ago; never once withdrawn.
   */
  function publishedAt(record: SigningKeyRecord, now: number): boolean {
    return record.withdrawnAt === null && (record.retiredAt === null || record.retiredAt > now - retentionMs);
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

  /** A new key pair of the tenant (null: the server), its private half sealed under SECRETS_KEY; returns its kid. */
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

  return {
    db,
    clock,
    purpose,
    retentionMs,

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

    reload,

    reloadAfterWrite,

    publishedAt,

    /** The keys this instance holds, published or not (a reload drops those no longer published). */
    loaded(): LoadedKey[] {
      return [...keys.values()];
    },

    /** The public key for a `kid`, reloading (rate-limited) when another instance may have rotated. */
    async verificationKey(kid: string): Promise<{ key: PublicKey; alg: SigningAlgorithm; tenantId: string | null } | null> {
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
     * The key the tenant signs with now (null: the server's own key): the newest activated one. When none is, a key
     * activating within CLOCK_SKEW_MS: another instance whose clock runs ahead may have made it (a first key, an
     * emergency rotation) "at once", and this instance must not be left without a key until its clock catches up.
     */
    activeKey(tenantId: string | null): LoadedKey | undefined {
      return newestSigningAt(tenantId, clock()) ?? newestSigningAt(tenantId, clock() + CLOCK_SKEW_MS);
    },

    /** The key to sign with, its private half opened on first use; throws when there is none. */
    signingKeyOf(key: LoadedKey | undefined): SigningKey {
      if (!key) throw new Error('No signing key is available');
      key.privateKey ??= createPrivateKey({
        key: JSON.parse(unseal(secretsKey, key.record.privateJwkEncrypted, SEALED_AAD.signingKey(key.kid))) as JsonWebKey,
        format: 'jwk',
      });
      return { kid: key.kid, alg: key.alg, privateKey: key.privateKey };
    },

    generate,

    /**
     * The tenant's (or the server's) first key, signing at once (nothing was published before, so there is nothing to
     * announce it ahead of), unless another instance made one first: under the generation lock, in the caller's
     * transaction. Returns when the key was made, or null when one was there.
     */
    async generateFirstKey(tx: Queryable, tenantId: string | null): Promise<number | null> {
      await lockKeyGeneration(tx);
      if ((await countUnretiredKeys(tx, purpose, tenantId)) > 0) return null;
      const now = clock();
      await generate(tx, tenantId, now, now);
      return now;
    },
  };
}

export type SigningKeyRing = ReturnType<typeof createSigningKeyRing>;
