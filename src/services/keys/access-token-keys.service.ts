// The server's keys for access tokens (docs/api-reference.md 3.4): generated on first start, rotated from the command
// line without breaking tokens already issued (a retired key verifies until the last token it signed has expired).
import type { JWK } from 'jose';
import { retireKeysExcept } from '../../db/repositories/signing-key.repo.js';
import type { SigningKey } from '../../shared/jws.js';
import { publishedJwks } from './published-keys.js';
import { createSigningKeyRing, lockKeyGeneration, type SigningKeyRingOptions } from './signing-key-ring.js';

/** The access-token keys' ring options: their purpose is fixed, and `retentionMs` is one access-token lifetime. */
export type AccessTokenKeyOptions = Omit<SigningKeyRingOptions, 'purpose'>;

export function createAccessTokenKeyService(options: AccessTokenKeyOptions) {
  const ring = createSigningKeyRing({ ...options, purpose: 'access_token' });
  const { db, clock } = ring;

  /** One generation at a time on this instance: requests signed at once wait for one transaction. */
  let ensuring: Promise<void> | null = null;

  /** Makes sure the server has a key to sign with; generates the first one. Opens its own transaction. */
  function ensureKey(): Promise<void> {
    ensuring ??= (async () => {
      await db.transaction((tx) => ring.generateFirstKey(tx, null));
      await ring.reloadAfterWrite();
    })().finally(() => {
      ensuring = null;
    });
    return ensuring;
  }

  return {
    start: ring.start,
    stop: ring.stop,
    ensureKey,

    async signingKey(): Promise<SigningKey> {
      let key = ring.activeKey(null);
      if (!key) {
        await ensureKey();
        key = ring.activeKey(null);
      }
      return ring.signingKeyOf(key);
    },

    verificationKey: ring.verificationKey,

    /** The server's published keys, newest first (the JWKS of the OAuth routes). */
    publicJwks(): JWK[] {
      return publishedJwks(ring);
    },

    /**
     * A new key that signs at once; the keys it replaces sign no more and stay published one access-token lifetime,
     * so the tokens they signed verify until they expire.
     */
    async rotate(): Promise<{ kid: string; retired: string[] }> {
      const rotated = await db.transaction(async (tx) => {
        await lockKeyGeneration(tx);
        const now = clock();
        const kid = await ring.generate(tx, null, now, now);
        return { kid, retired: await retireKeysExcept(tx, ring.purpose, null, kid, now) };
      });
      await ring.reloadAfterWrite();
      return rotated;
    },
  };
}

export type AccessTokenKeyService = ReturnType<typeof createAccessTokenKeyService>;
