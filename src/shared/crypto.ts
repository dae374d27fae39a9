// Small cryptographic helpers: random secrets, hashes, constant-time comparison, encryption at rest.
import { createCipheriv, createDecipheriv, hash, randomBytes, timingSafeEqual } from 'node:crypto';

/** `bytes` of CSPRNG output as base64url (32 bytes = 256 bits, docs/security-cases.md 37). */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/**
 * SHA-256 of the UTF-8 of `value`. node:crypto's one-shot `hash` (Node.js 20.12): no Hash object to make, feed and
 * finish, which cost the token endpoint's secret check several times the digest itself (docs/scaling.md, the eighth machine's runs).
 */
export function sha256(value: string): Buffer {
  return hash('sha256', value, 'buffer');
}

/** Compares two digests in constant time; digests of different length never match. */
export function digestsEqual(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

const IV_BYTES = 12;
const TAG_BYTES = 16;

/** AES-256-GCM: iv ‖ ciphertext ‖ tag. `aad` binds the ciphertext to its row (the key id). */
export function encrypt(key: Buffer, plaintext: string, aad: string): Buffer {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(aad, 'utf8'));
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, body, cipher.getAuthTag()]);
}

export function decrypt(key: Buffer, sealed: Buffer, aad: string): string {
  const iv = sealed.subarray(0, IV_BYTES);
  const tag = sealed.subarray(sealed.length - TAG_BYTES);
  const body = sealed.subarray(IV_BYTES, sealed.length - TAG_BYTES);
  const decipher = createDecipheriv('aes-256-gcm', key, iv);
  decipher.setAAD(Buffer.from(aad, 'utf8'));
  decipher.setAuthTag(tag);
  return Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8');
}

/**
 * SECRETS_KEY as the services use it: `current` seals; while the key is being rotated, `previous` holds the keys it
 * replaces, which still open what they sealed until `acs secrets-key reencrypt` has sealed it again under `current`
 * (README, "SECRETS_KEY").
 */
export interface SecretsKey {
  readonly current: Buffer;
  readonly previous: readonly Buffer[];
}

export function secretsKeyOf(current: Buffer, previous: readonly Buffer[] = []): SecretsKey {
  return { current, previous };
}

/** Seals under the current key. */
export function seal(key: SecretsKey, plaintext: string, aad: string): Buffer {
  return encrypt(key.current, plaintext, aad);
}

/**
 * Opens under the current key, else under a previous one. AES-GCM's tag tells a wrong key from the right one, so no
 * marker of the key is stored. Throws the current key's error when no key opens it.
 */
export function unseal(key: SecretsKey, sealed: Buffer, aad: string): string {
  return opened(key, sealed, aad).plaintext;
}

/**
 * For a re-encryption: null when `sealed` already opens under the current key, else the same plaintext sealed under
 * it. Throws when no key opens it (a value sealed under a key no longer given, or damaged).
 */
export function resealUnderCurrent(key: SecretsKey, sealed: Buffer, aad: string): Buffer | null {
  const { plaintext, underCurrent } = opened(key, sealed, aad);
  return underCurrent ? null : encrypt(key.current, plaintext, aad);
}

function opened(key: SecretsKey, sealed: Buffer, aad: string): { plaintext: string; underCurrent: boolean } {
  try {
    return { plaintext: decrypt(key.current, sealed, aad), underCurrent: true };
  } catch (error) {
    for (const previous of key.previous) {
      try {
        return { plaintext: decrypt(previous, sealed, aad), underCurrent: false };
      } catch {
        // Not this one either.
      }
    }
    throw error;
  }
}
