// The test vectors for lock makers (docs/test-vectors/door.json, docs/lock-integration.md 10), read as a lock maker's
// harness reads them: the file's exact shape, that it covers every reason and every attack the guide names, and that
// the reference lock answers every case's decision and reason. The file is checked, never regenerated here: its ES256
// proofs are randomized (scripts/door-vectors.ts wrote it once).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { LOCK_REASONS } from '../../../src/shared/credential-check.js';
import { holderKeyThumbprint, readHolderPublicKey } from '../../../src/shared/holder-keys.js';
import { LockSimulator, type LockProvisioning } from '../../../src/simulator/lock-simulator.js';
import type { DoorVectors, VectorCase } from '../../../scripts/door-vector-shape.js';

const vectors = JSON.parse(readFileSync(new URL('../../../docs/test-vectors/door.json', import.meta.url), 'utf8')) as DoorVectors;
/** Every lock of the vectors has the default maximum lifetime (docs/lock-integration.md 10). */
const MAX_CREDENTIAL_LIFETIME = 604_800;

/** The reference lock in the case's state, as a lock maker's harness would set up its own. */
function lockFor(vector: VectorCase): LockSimulator {
  const state = vector.lock;
  const lock = new LockSimulator(
    {
      securedObjectId: state.id,
      issuer: state.issuer,
      keys: state.keys as LockProvisioning['keys'],
      maxCredentialLifetime: MAX_CREDENTIAL_LIFETIME,
      holderBinding: state.holderBinding,
      serial: state.serial,
    },
    { key: vectors.keys.locks[state.id] },
  );
  lock.applySync({
    tokens: [],
    revocations: state.revoked.map((tokenId) => ({ tokenId, revocationDate: state.now })),
    revokedKeys: state.revokedKeys.map((jkt) => ({ jkt, revocationDate: state.now })),
    decommissioned: state.decommissioned,
    cursor: 'vectors',
  });
  lock.lockdown = state.lockdown === true;
  lock.lockStateSerial = state.lockStateSerial ?? 0;
  // docs/lock-integration.md 11: the state a phone hands over, applied (or refused) before the decision.
  if (state.lockState !== undefined) lock.applyLockState(state.lockState);
  lock.hello(state.now, state.nonce);
  if (state.nonceUsed) lock.endSession();
  return lock;
}

describe('docs/test-vectors/door.json', () => {
  it('has exactly the documented shape', () => {
    expect(Object.keys(vectors).sort()).toEqual(['cases', 'keys']);
    expect(Object.keys(vectors.keys).sort()).toEqual(['locks', 'phones', 'tenant']);
    // Private keys, for tests only: each has its private member, and the public part a lock or phone would publish.
    expect(vectors.keys.tenant).toMatchObject({ kty: 'OKP', crv: 'Ed25519', d: expect.any(String), kid: expect.any(String), alg: 'EdDSA' });
    for (const jwk of [...Object.values(vectors.keys.phones), ...Object.values(vectors.keys.locks)]) {
      expect(Object.keys(jwk).sort()).toEqual(['crv', 'd', 'kty', 'x', 'y']);
      expect(readHolderPublicKey({ kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y })).toHaveProperty('keyObject');
    }
    expect(vectors.cases.length).toBeGreaterThanOrEqual(30);
    const lockFields = ['decommissioned', 'holderBinding', 'id', 'issuer', 'keys', 'nonce', 'nonceUsed', 'now', 'revoked', 'revokedKeys', 'serial'];
    for (const vector of vectors.cases) {
      expect(Object.keys(vector).sort(), vector.name).toEqual(['channel', 'command', 'credential', 'expect', 'lock', 'name', 'proof']);
      const optional = new Set(['lockdown', 'lockStateSerial', 'lockState']);
      expect(Object.keys(vector.lock).filter((field) => !optional.has(field)).sort(), vector.name).toEqual(lockFields);
      expect(vector.lock.lockdown === undefined || typeof vector.lock.lockdown === 'boolean').toBe(true);
      expect(vector.lock.lockStateSerial === undefined || Number.isSafeInteger(vector.lock.lockStateSerial)).toBe(true);
      expect(vector.lock.lockState === undefined || typeof vector.lock.lockState === 'string').toBe(true);
      expect(vector.lock.keys.keys.every((key) => !('d' in (key as object))), `${vector.name}: a lock's key set is public`).toBe(true);
      expect(vector.proof === null || typeof vector.proof === 'string').toBe(true);
      expect(Object.keys(vector.expect).sort()).toEqual(['decision', 'reason']);
      expect(LOCK_REASONS).toContain(vector.expect.reason);
      expect(vector.expect.decision === 'open').toBe(vector.expect.reason === 'ok');
      expect(vectors.keys.locks[vector.lock.id], `${vector.name}: the lock's key is in keys.locks`).toBeDefined();
    }
    expect(new Set(vectors.cases.map((vector) => vector.name)).size).toBe(vectors.cases.length);
  });

  it('covers every reason of the vocabulary', () => {
    expect([...new Set(vectors.cases.map((vector) => vector.expect.reason))].sort()).toEqual([...LOCK_REASONS].sort());
  });

  it('covers the attacks and rules the guide names, each by a case of that name', () => {
    const byName = new Map(vectors.cases.map((vector) => [vector.name, vector.expect.reason]));
    const alice = vectors.keys.phones['alice']!;
    const aliceJkt = holderKeyThumbprint({ kty: 'EC', crv: 'P-256', x: alice.x!, y: alice.y! });
    const covered: [string, string][] = [
      ['a good bound credential with the proof of its phone, at a lock that requires binding', 'ok'],
      ['a copied credential: the proof is made by another phone with its own key', 'key-mismatch'],
      ['a replayed proof: the lock already decided under this nonce', 'nonce-used'],
      ['a proof made for another lock', 'wrong-lock'],
      ['a proof made for another credential of the same phone', 'credential-mismatch'],
      ['a proof under a nonce this lock did not send in its hello', 'wrong-nonce'],
      ['a credential bound to a revoked phone key', 'key-revoked'],
      ['no cnf at a lock that requires binding', 'binding-required'],
      ['a bound credential without a proof, at a lock whose binding is optional', 'bad-proof'],
      ['a credential of another issuer', 'wrong-issuer'],
      ['a credential for another lock', 'wrong-lock'],
      ["nbf after the lock's clock", 'not-yet-valid'],
      ["exp before the lock's clock", 'expired'],
      ["a lifetime one second above the lock's maximum (604800 s)", 'lifetime-exceeded'],
      ['a command the credential does not grant', 'command-not-granted'],
      ['a channel the credential does not grant', 'channel-not-granted'],
      ['a revoked ticket', 'revoked'],
      ['outside every window of its schedule', 'outside-schedule'],
      ['a kid the lock does not know', 'unknown-key'],
      ['a signature with one bit flipped', 'bad-signature'],
      ['not three parts', 'malformed'],
      ['a decommissioned lock', 'decommissioned'],
      ['a duplicate exp member (JSON.parse would keep the last)', 'malformed'],
      ['exp written as a fraction (1.0 form)', 'malformed'],
      ['a byte-order mark before the claims', 'malformed'],
      ['an empty jti', 'malformed'],
      ['a crit header (RFC 7515 4.1.11)', 'malformed'],
    ];
    for (const [name, reason] of covered) expect(byName.get(name), name).toBe(reason);
    // The revoked-key cases name alice's key by its RFC 7638 thumbprint, as a sync answer would.
    expect(vectors.cases.find((vector) => vector.expect.reason === 'key-revoked')!.lock.revokedKeys).toEqual([aliceJkt]);
  });

  it.each(vectors.cases.map((vector) => [vector.name, vector] as const))('the reference lock answers as the case expects: %s', async (_name, vector) => {
    const lock = lockFor(vector);
    const decision = await lock.decide(vector.credential, vector.command, vector.lock.now, vector.channel, vector.proof);
    expect({ decision: decision.decision, reason: decision.reason }).toEqual(vector.expect);
    // Every decision, a refusal included, is an access-log entry with its reason.
    expect(lock.accessLog.at(-1)).toMatchObject({ result: vector.expect.decision === 'open' ? 'granted' : 'denied', reason: vector.expect.reason });
  });
});
