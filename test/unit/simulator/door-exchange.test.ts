// The exchange at the door between the reference phone and the reference lock (src/simulator/phone-simulator.ts,
// src/simulator/lock-simulator.ts, docs/lock-integration.md 4): hello, proof, decision and receipt end to end; the
// phone showing nothing to a lock that fails its hello; replays; the holder-binding policy and revoked phone keys
// learnt from trust, sync and revocation lists; every refusal logged with its reason.
import { createPublicKey, generateKeyPairSync, randomUUID, verify } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { signCompactJws, type SigningKey } from '../../../src/shared/jws.js';
import { checkHello, checkProof } from '../../../src/shared/door-exchange.js';
import { parseStrictCompactJws } from '../../../src/shared/strict-json.js';
import { LOCK_LIMITS, LockSimulator, type LockProvisioning, type SyncAnswer } from '../../../src/simulator/lock-simulator.js';
import { PhoneSimulator, type DownloadedToken } from '../../../src/simulator/phone-simulator.js';
import { es256KeyPair } from '../../../src/simulator/es256.js';

const ISSUER = 'https://locks.test/tenants/acme';
const LIFETIME = 604_800;
const NOW = Date.UTC(2026, 8, 1, 10);
const HOUR = 3_600_000;

const tenantPair = generateKeyPairSync('ed25519');
const TENANT: SigningKey = { kid: 'acme-1', alg: 'EdDSA', privateKey: tenantPair.privateKey };
const KEYS = { keys: [{ ...tenantPair.publicKey.export({ format: 'jwk' }), kid: 'acme-1', alg: 'EdDSA', use: 'sig' }] };

function credential(overrides: Record<string, unknown> = {}): Promise<string> {
  const claims: Record<string, unknown> = {
    iss: ISSUER,
    jti: randomUUID(),
    sub: 'phone-1',
    aud: 'door',
    nbf: (NOW - HOUR) / 1000,
    exp: (NOW + HOUR) / 1000,
    iat: (NOW - HOUR) / 1000,
    beginDate: NOW - HOUR,
    endDate: NOW + 24 * HOUR,
    cmd: ['open'],
    chn: ['btlespp'],
    ...overrides,
  };
  for (const [name, value] of Object.entries(claims)) if (value === undefined) delete claims[name];
  return signCompactJws(TENANT, 'ticket+jwt', claims);
}

const trust = (overrides: Partial<LockProvisioning> = {}): LockProvisioning => ({
  securedObjectId: 'door',
  issuer: ISSUER,
  keys: KEYS as LockProvisioning['keys'],
  maxCredentialLifetime: LIFETIME,
  ...overrides,
});

const sync = (overrides: Partial<SyncAnswer> = {}): SyncAnswer => ({ tokens: [], revocations: [], cursor: 'c', ...overrides });

/** A phone holding one bound credential for `lock`, with the lock's key in its download. */
async function phoneFor(lock: LockSimulator, claims: Record<string, unknown> = {}): Promise<{ phone: PhoneSimulator; token: DownloadedToken }> {
  const phone = new PhoneSimulator();
  const token: DownloadedToken = {
    id: 'ticket-1',
    securedObjectId: lock.securedObjectId,
    credential: await credential({ jti: 'ticket-1', cnf: { jkt: phone.keyThumbprint }, ...claims }),
    lockKey: lock.publicKey,
  };
  phone.store([token]);
  return { phone, token };
}

function presentation(result: ReturnType<PhoneSimulator['present']>) {
  if ('refused' in result) throw new Error(`the phone refused: ${result.refused}`);
  return result.presentation;
}

describe('the exchange at the door', () => {
  it('opens for the phone that holds the key of its bound credential, once per hello, and signs a receipt of it', async () => {
    const lock = new LockSimulator(trust({ holderBinding: 'required' }));
    const { phone } = await phoneFor(lock);
    const shown = presentation(phone.present('door', lock.hello(NOW), 'open', NOW + 200));
    expect(shown.proof).not.toBeNull();
    expect(await lock.decide(shown.credential, 'open', NOW + 500, 'btlespp', shown.proof)).toEqual({ decision: 'open', reason: 'ok', ticketId: 'ticket-1' });
    // The same credential and proof again, without a new hello: one proof per hello.
    expect(await lock.decide(shown.credential, 'open', NOW + 600, 'btlespp', shown.proof)).toMatchObject({ decision: 'deny', reason: 'nonce-used' });
    // Replayed at the next session: the lock's new hello carries a new nonce.
    lock.hello(NOW + 1000);
    expect(await lock.decide(shown.credential, 'open', NOW + 1100, 'btlespp', shown.proof)).toMatchObject({ decision: 'deny', reason: 'wrong-nonce' });

    const receipt = lock.receipt(NOW + 2000);
    const parsed = parseStrictCompactJws(receipt, 100_000)!;
    expect(parsed.header).toEqual({ alg: 'ES256', typ: 'lock-receipt+jwt' });
    const lockKey = createPublicKey({ key: { ...lock.publicKey }, format: 'jwk' });
    const data = Buffer.from(parsed.signingInput);
    expect(verify('sha256', data, { key: lockKey, dsaEncoding: 'ieee-p1363' }, parsed.signature)).toBe(true);
    // Signed by this lock's key: another lock's key does not verify it.
    const otherLockKey = createPublicKey({ key: { ...new LockSimulator(trust()).publicKey }, format: 'jwk' });
    expect(verify('sha256', data, { key: otherLockKey, dsaEncoding: 'ieee-p1363' }, parsed.signature)).toBe(false);
    expect(parsed.payload).toEqual({
      sub: 'door',
      appliedSerial: 0,
      lockTime: NOW + 2000,
      entries: [
        { entryNo: 1, lockTime: NOW + 500, tokenId: 'ticket-1', command: 'open', channel: 'btlespp', result: 'granted', reason: 'ok' },
        { entryNo: 2, lockTime: NOW + 600, tokenId: 'ticket-1', command: 'open', channel: 'btlespp', result: 'denied', reason: 'nonce-used' },
        { entryNo: 3, lockTime: NOW + 1100, tokenId: 'ticket-1', command: 'open', channel: 'btlespp', result: 'denied', reason: 'wrong-nonce' },
      ],
    });
    // The next receipt carries only what came after; the phone relays both, per lock.
    await lock.decide('garbage', 'open', NOW + 3000);
    const next = lock.receipt(NOW + 4000);
    expect(parseStrictCompactJws(next, 100_000)!.payload.entries).toEqual([
      { entryNo: 4, lockTime: NOW + 3000, command: 'open', channel: 'btlespp', result: 'denied', reason: 'malformed' },
    ]);
    phone.takeReceipt('door', receipt);
    phone.takeReceipt('door', next);
    expect(phone.receiptUploads()).toEqual([{ securedObjectId: 'door', receipts: [receipt, next] }]);
    phone.acknowledgeReceipts('door');
    expect(phone.receiptUploads()).toEqual([]);
  });

  it('a copied credential opens nothing without the phone key, and a proof opens only its own credential and command', async () => {
    const lock = new LockSimulator(trust());
    const { phone, token } = await phoneFor(lock);
    const thief = new PhoneSimulator();
    thief.store([token]);
    const stolen = presentation(thief.present('door', lock.hello(NOW), 'open', NOW));
    expect(await lock.decide(stolen.credential, 'open', NOW, 'btlespp', stolen.proof)).toMatchObject({ decision: 'deny', reason: 'key-mismatch' });
    // Shown without a proof at a lock whose policy is optional: a bound credential always needs its proof.
    lock.hello(NOW);
    expect(await lock.decide(token.credential!, 'open', NOW)).toMatchObject({ decision: 'deny', reason: 'bad-proof' });
    // The owner's proof for another of its credentials.
    const other = await credential({ cnf: { jkt: phone.keyThumbprint } });
    const shown = presentation(phone.present('door', lock.hello(NOW), 'open', NOW));
    expect(await lock.decide(other, 'open', NOW, 'btlespp', shown.proof)).toMatchObject({ decision: 'deny', reason: 'credential-mismatch' });
  });

  it('a proof made for another lock fails there, even under the nonce that lock issued', async () => {
    const door = new LockSimulator(trust());
    const garage = new LockSimulator(trust({ securedObjectId: 'garage' }));
    const { phone } = await phoneFor(door);
    const nonce = 'n'.repeat(43);
    const shown = presentation(phone.present('door', door.hello(NOW, nonce), 'open', NOW));
    garage.hello(NOW, nonce);
    expect(await garage.decide(shown.credential, 'open', NOW, 'btlespp', shown.proof)).toMatchObject({ decision: 'deny', reason: 'wrong-lock' });
  });

  it('the phone shows nothing to a lock whose hello fails: another key, another lock id, another issuer, a stale or future iat', async () => {
    const door = new LockSimulator(trust());
    const impostor = new LockSimulator(trust());
    const garage = new LockSimulator(trust({ securedObjectId: 'garage' }));
    const foreign = new LockSimulator(trust({ issuer: 'https://locks.test/tenants/globex' }));
    const { phone } = await phoneFor(door);
    expect(phone.present('door', impostor.hello(NOW), 'open', NOW)).toEqual({ refused: 'bad-signature' });
    expect(phone.present('door', 'not a hello', 'open', NOW)).toEqual({ refused: 'malformed' });
    expect(phone.present('garage', garage.hello(NOW), 'open', NOW)).toEqual({ refused: 'no-token' });
    const fooled = new PhoneSimulator();
    fooled.store([{ id: 't', securedObjectId: 'door', credential: await credential(), lockKey: garage.publicKey }]);
    expect(fooled.present('door', garage.hello(NOW), 'open', NOW)).toEqual({ refused: 'wrong-lock' });
    fooled.store([{ id: 't', securedObjectId: 'door', credential: await credential(), lockKey: foreign.publicKey }]);
    expect(fooled.present('door', foreign.hello(NOW), 'open', NOW)).toEqual({ refused: 'wrong-issuer' });
    fooled.store([{ id: 't', securedObjectId: 'door', credential: await credential() }]);
    expect(fooled.present('door', door.hello(NOW), 'open', NOW)).toEqual({ refused: 'no-lock-key' });
    expect(phone.present('door', door.hello(NOW - 61_000), 'open', NOW)).toEqual({ refused: 'stale' });
    expect(phone.present('door', door.hello(NOW + 61_000), 'open', NOW)).toEqual({ refused: 'stale' });
    expect(phone.present('door', door.hello(NOW - 59_000), 'open', NOW)).toHaveProperty('presentation');
    // An unbound credential is shown without a proof, and opens a lock whose policy is optional.
    fooled.store([{ id: 't', securedObjectId: 'door', credential: await credential({ jti: 't' }), lockKey: door.publicKey }]);
    const bearer = presentation(fooled.present('door', door.hello(NOW), 'open', NOW));
    expect(bearer.proof).toBeNull();
    expect(await door.decide(bearer.credential, 'open', NOW, 'btlespp', bearer.proof)).toEqual({ decision: 'open', reason: 'ok', ticketId: 't' });
  });

  it('learns the holder-binding policy and revoked phone keys from trust, sync and revocation lists', async () => {
    const lock = new LockSimulator(trust({ serial: 7 }));
    const { phone } = await phoneFor(lock);
    const bearer = await credential();
    expect(await lock.decide(bearer, 'open', NOW)).toMatchObject({ decision: 'open' });
    lock.applySync(sync({ holderBinding: 'required', revokedKeys: [{ jkt: phone.keyThumbprint, revocationDate: NOW }] }));
    expect([lock.holderBinding, lock.isKeyRevoked(phone.keyThumbprint)]).toEqual(['required', true]);
    expect(await lock.decide(bearer, 'open', NOW)).toMatchObject({ decision: 'deny', reason: 'binding-required' });
    const shown = presentation(phone.present('door', lock.hello(NOW), 'open', NOW));
    expect(await lock.decide(shown.credential, 'open', NOW, 'btlespp', shown.proof)).toMatchObject({ decision: 'deny', reason: 'key-revoked' });

    // A list at or below the trust answer's serial is stale; above it, it is applied whole.
    const list = (serial: number, extra: Record<string, unknown>) =>
      signCompactJws(TENANT, 'revocation-list+jwt', { iss: ISSUER, aud: 'door', serial, iat: NOW / 1000, revoked: [], keys: KEYS, ...extra });
    const fresh = new LockSimulator(trust({ serial: 7 }));
    expect(await fresh.applyRevocationList(await list(7, { holderBinding: 'required' }))).toEqual({ applied: false, reason: 'stale' });
    expect(await fresh.applyRevocationList(await list(8, { holderBinding: 'required', revokedKeys: ['x'] }))).toEqual({ applied: false, reason: 'malformed' });
    expect(await fresh.applyRevocationList(await list(8, { holderBinding: 'sometimes' }))).toEqual({ applied: false, reason: 'malformed' });
    expect([fresh.holderBinding, fresh.serial]).toEqual(['optional', 7]);
    expect(await fresh.applyRevocationList(await list(8, { holderBinding: 'required', revokedKeys: [phone.keyThumbprint] }))).toMatchObject({ applied: true, serial: 8 });
    expect([fresh.holderBinding, fresh.isKeyRevoked(phone.keyThumbprint)]).toEqual(['required', true]);

    // A sync answer with any malformed part is refused whole.
    const other = new LockSimulator(trust());
    for (const bad of [{ holderBinding: 'REQUIRED' }, { revokedKeys: [{ jkt: 'short', revocationDate: NOW }] }, { revokedKeys: 'all' }]) {
      expect(() => other.applySync(sync({ ...bad, revocations: [{ tokenId: 'x', revocationDate: NOW }] } as unknown as SyncAnswer))).toThrow(/malformed sync answer/);
    }
    expect([other.holderBinding, other.isRevoked('x'), other.cursor]).toEqual(['optional', false, undefined]);
  });

  it('refuses a list or a sync answer beyond the documented limits whole (docs/lock-integration.md 3.1)', async () => {
    const lock = new LockSimulator(trust());
    const ids = (count: number) => Array.from({ length: count }, (_, index) => `t-${index}`);
    const list = (revoked: string[], keys: unknown = KEYS) =>
      signCompactJws(TENANT, 'revocation-list+jwt', { iss: ISSUER, aud: 'door', serial: 1, iat: NOW / 1000, revoked, keys });
    const seventeen = { keys: Array.from({ length: 17 }, (_, index) => ({ ...KEYS.keys[0], kid: `k-${index}` })) };
    expect(await lock.applyRevocationList(await list(ids(LOCK_LIMITS.revocations + 1)))).toEqual({ applied: false, reason: 'malformed' });
    expect(await lock.applyRevocationList(await list(['x'], seventeen))).toEqual({ applied: false, reason: 'malformed' });
    expect(() => lock.applySync(sync({ revocations: ids(LOCK_LIMITS.revocations + 1).map((tokenId) => ({ tokenId, revocationDate: NOW })) }))).toThrow(/malformed/);
    expect([lock.isRevoked('t-0'), lock.isRevoked('x'), lock.serial]).toEqual([false, false, 0]);
    expect(await lock.applyRevocationList(await list(ids(LOCK_LIMITS.revocations)))).toMatchObject({ applied: true, newlyRevoked: LOCK_LIMITS.revocations });
  });

  it('takes its own key when given, and refuses a trust answer naming another key as its own', () => {
    const pair = es256KeyPair();
    const key = pair.privateKey.export({ format: 'jwk' });
    expect(new LockSimulator(trust({ keyThumbprint: pair.thumbprint }), { key }).keyThumbprint).toBe(pair.thumbprint);
    expect(() => new LockSimulator(trust({ keyThumbprint: es256KeyPair().thumbprint }), { key })).toThrow(/keyThumbprint/);
    expect(() => new LockSimulator(trust({ holderBinding: 'always' as never }))).toThrow(/holderBinding/);
    expect(() => new LockSimulator(trust({ serial: -1 }))).toThrow(/serial/);
  });

  it('checkProof and checkHello refuse what is not theirs to read', () => {
    const context = { lockId: 'door', nonce: 'n'.repeat(22), nonceUsed: false, credential: 'c', jkt: 'j'.repeat(43), command: 'open', at: NOW };
    for (const proof of [null, undefined, '', 'a.b.c', 42]) expect(checkProof(proof, context)).toBe('bad-proof');
    expect(checkHello('a.b.c', { kty: 'EC' }, { issuer: ISSUER, lockId: 'door', at: NOW })).toEqual({ refused: 'malformed' });
  });
});
