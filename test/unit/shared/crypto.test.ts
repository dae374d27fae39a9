// Random secrets, digests and encryption at rest (docs/security-cases.md 37), without an app.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { decrypt, digestsEqual, encrypt, randomToken, resealUnderCurrent, seal, secretsKeyOf, sha256, unseal } from '../../../src/shared/crypto.js';

describe('randomToken', () => {
  it('gives 256 bits as unpadded base64url by default, and never the same twice', () => {
    const tokens = Array.from({ length: 100 }, () => randomToken());
    for (const token of tokens) expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(new Set(tokens).size).toBe(tokens.length);
    expect(Buffer.from(randomToken(16), 'base64url')).toHaveLength(16);
  });
});

describe('digestsEqual', () => {
  it('matches equal digests only; different lengths never match (and do not throw)', () => {
    expect(digestsEqual(sha256('a'), sha256('a'))).toBe(true);
    expect(digestsEqual(sha256('a'), sha256('b'))).toBe(false);
    expect(digestsEqual(sha256('a'), sha256('a').subarray(0, 16))).toBe(false);
  });
});

describe('encrypt and decrypt (AES-256-GCM)', () => {
  const key = randomBytes(32);

  it('round-trips, with a fresh IV each time', () => {
    const first = encrypt(key, 'a private key', 'key-1');
    const second = encrypt(key, 'a private key', 'key-1');
    expect(first.equals(second)).toBe(false);
    expect(decrypt(key, first, 'key-1')).toBe('a private key');
  });

  it('refuses another row (AAD), another key and a flipped bit', () => {
    const sealed = encrypt(key, 'a private key', 'key-1');
    expect(() => decrypt(key, sealed, 'key-2')).toThrow();
    expect(() => decrypt(randomBytes(32), sealed, 'key-1')).toThrow();
    const flipped = Buffer.from(sealed);
    flipped[14] = flipped[14]! ^ 1;
    expect(() => decrypt(key, flipped, 'key-1')).toThrow();
  });
});

describe('a SECRETS_KEY being changed (seal, unseal, resealUnderCurrent)', () => {
  const oldKey = randomBytes(32);
  const newKey = randomBytes(32);
  const rotating = secretsKeyOf(newKey, [oldKey]);

  it('seals under the current key and opens under the current or a previous one', () => {
    const sealedNew = seal(rotating, 'secret', 'row-1');
    expect(decrypt(newKey, sealedNew, 'row-1')).toBe('secret');
    expect(() => decrypt(oldKey, sealedNew, 'row-1')).toThrow();
    expect(unseal(rotating, encrypt(oldKey, 'old secret', 'row-1'), 'row-1')).toBe('old secret');
    // Without the previous key, what it sealed no longer opens.
    expect(() => unseal(secretsKeyOf(newKey), encrypt(oldKey, 'old secret', 'row-1'), 'row-1')).toThrow();
  });

  it('reseals only what a previous key sealed, and refuses what no key opens', () => {
    expect(resealUnderCurrent(rotating, encrypt(newKey, 'current', 'row-1'), 'row-1')).toBeNull();
    const resealed = resealUnderCurrent(rotating, encrypt(oldKey, 'old', 'row-1'), 'row-1')!;
    expect(decrypt(newKey, resealed, 'row-1')).toBe('old');
    expect(() => resealUnderCurrent(rotating, encrypt(randomBytes(32), 'stranger', 'row-1'), 'row-1')).toThrow();
    // The additional data still binds: a previous key does not open another row's value.
    expect(() => unseal(rotating, encrypt(oldKey, 'old', 'row-1'), 'row-2')).toThrow();
  });
});
