// Signing keys: generated on first start, private halves encrypted at rest, rotated without breaking issued tokens.
import { createPrivateKey, randomUUID, type JsonWebKey, type KeyObject as NodeKeyObject } from 'node:crypto';
import { exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK, type KeyObject } from 'jose';
import type { Database, Queryable } from '../db/database.js';
import {
  countActiveKeys,
  insertKey,
  listLiveKeys,
  retireKeysExcept,
  SIGNING_KEYS_CHANNEL,
  type KeyPurpose,
  type SigningKeyRecord,
} from '../db/repositories/signing-key.repo.js';
import { decrypt, encrypt } from './crypto.js';
import type { SigningAlgorithm, SigningKey } from './jws.js';

export type { SigningAlgorithm, SigningKey } from './jws.js';

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
  retiredAt: number | null;
}

export interface KeyServiceOptions {
  db: Database;
  secretsKey: Buffer;
  clock: () => number;
  alg: SigningAlgorithm;
  purpose: KeyPurpose;
  /** How long a retired key stays published: the longest lifetime of anything it signed. */
  retentionMs: number;
}

/** Any constant; keeps two instances from generating a first key each at the same time. */
const KEY_GENERATION_LOCK = 7_318_442_902;
/** An unknown `kid` reloads the keys at most this often, so random kids cannot hammer the database. */
const UNKNOWN_KID_RELOAD_MS = 5_000;

export function createKeyService(options: KeyServiceOptions) {
  const { db, secretsKey, clock, purpose } = options;
  let keys = new Map<string, LoadedKey>();
  let lastReload = 0;
  let reloading: Promise<void> | null = null;
  let refreshTimer: NodeJS.Timeout | null = null;
  let unlisten: (() => Promise<void>) | null = null;

  const aadOf = (kid: string) => `signing-key:${kid}`;

  async function generate(tx: Queryable, tenantId: string | null): Promise<string> {
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
      privateJwkEncrypted: encrypt(secretsKey, JSON.stringify(privateJwk), aadOf(kid)),
      createdAt: clock(),
      retiredAt: null,
    });
    return kid;
  }

  async function load(record: SigningKeyRecord): Promise<LoadedKey> {
    const existing = keys.get(record.kid);
    if (existing && existing.retiredAt === record.retiredAt) return existing;
    const { kid: _kid, alg: _alg, use: _use, ...publicJwk } = record.publicJwk as JWK;
    return {
      kid: record.kid,
      tenantId: record.tenantId,
      alg: record.alg as SigningAlgorithm,
      publicJwk: record.publicJwk as JWK,
      publicKey: existing?.publicKey ?? ((await importJWK(publicJwk, record.alg)) as Key),
      privateKey: existing?.privateKey ?? null,
      record,
      retiredAt: record.retiredAt,
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
      key: JSON.parse(decrypt(secretsKey, key.record.privateJwkEncrypted, aadOf(key.kid))) as JsonWebKey,
      format: 'jwk',
    });
    return key.privateKey;
  }

  /** The newest unretired key of the tenant (null: the server's own key). */
  function activeKey(tenantId: string | null): LoadedKey | undefined {
    let newest: LoadedKey | undefined;
    for (const key of keys.values()) {
      if (key.tenantId !== tenantId || key.retiredAt !== null) continue;
      if (!newest || key.record.createdAt > newest.record.createdAt) newest = key;
    }
    return newest;
  }

  /** Makes sure the tenant (or the server) has a key to sign with; generates the first one. */
  async function ensureKey(tenantId: string | null): Promise<void> {
    await db.transaction(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock($1)', [KEY_GENERATION_LOCK]);
      if ((await countActiveKeys(tx, purpose, tenantId)) === 0) await generate(tx, tenantId);
    });
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
      if (!key) return null;
      if (key.retiredAt !== null && key.retiredAt <= clock() - options.retentionMs) return null;
      return { key: key.publicKey, alg: key.alg, tenantId: key.tenantId };
    },

    /** Public keys only (docs/security-checklist.md 31): `d` never leaves this service. */
    publicJwks(tenantId?: string | null): JWK[] {
      const now = clock();
      return [...keys.values()]
        .filter((key) => tenantId === undefined || key.tenantId === tenantId)
        .filter((key) => key.retiredAt === null || key.retiredAt > now - options.retentionMs)
        .map((key) => {
          const { d: _d, ...publicJwk } = key.publicJwk as JWK & { d?: string };
          return publicJwk;
        });
    },

    /** A new key signs from now on; the old ones stay published until what they signed has expired. */
    async rotate(tenantId: string | null = null): Promise<{ kid: string; retired: string[] }> {
      const rotated = await db.transaction(async (tx) => {
        await tx.query('SELECT pg_advisory_xact_lock($1)', [KEY_GENERATION_LOCK]);
        const kid = await generate(tx, tenantId);
        return { kid, retired: await retireKeysExcept(tx, purpose, tenantId, kid, clock()) };
      });
      await reloadAfterWrite();
      return rotated;
    },
  };
}

export type KeyService = ReturnType<typeof createKeyService>;
