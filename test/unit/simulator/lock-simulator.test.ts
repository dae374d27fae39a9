// The reference lock (src/simulator/lock-simulator.ts, docs/api-reference.md 6.2, 6.3, 8.1–8.3) with keys and credentials
// made here: every refusal of a credential, sync and revocation lists, key rotation, and the cross-tenant attack of
// docs/security-cases.md G39 (two issuers, two key sets, the same lock id).
import { randomUUID } from 'node:crypto';
import { CompactSign, exportJWK, generateKeyPair, type CryptoKey, type JSONWebKeySet, type JWK } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { LockSimulator, parseKeySet, type LockProvisioning, type SyncAnswer } from '../../../src/simulator/lock-simulator.js';

const ACME = 'https://locks.test/tenants/acme';
const GLOBEX = 'https://locks.test/tenants/globex';
const LIFETIME = 604_800;
const HOUR = 3_600_000;
const BEGIN = Date.UTC(2026, 8, 1);
const END = BEGIN + 24 * HOUR;
const AT = BEGIN + HOUR;

interface SigningKey {
  kid: string;
  alg: 'EdDSA' | 'ES256';
  privateKey: CryptoKey;
  publicJwk: JWK;
}

async function makeKey(kid: string, alg: 'EdDSA' | 'ES256' = 'EdDSA'): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { kid, alg, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

const keySet = (...keys: SigningKey[]): JSONWebKeySet => ({ keys: keys.map((key) => key.publicJwk) });
const encode = (json: unknown) => new TextEncoder().encode(JSON.stringify(json));

/** A compact JWS over any payload and header, so the test can sign what the server never would. */
function sign(payload: unknown, key: SigningKey, header: Record<string, unknown> = {}): Promise<string> {
  const protectedHeader = { alg: key.alg, kid: key.kid, typ: 'ticket+jwt', ...header };
  for (const [name, value] of Object.entries(protectedHeader)) if (value === undefined) delete protectedHeader[name as keyof typeof protectedHeader];
  return new CompactSign(encode(payload)).setProtectedHeader(protectedHeader as { alg: string }).sign(key.privateKey);
}

describe('LockSimulator', () => {
  let acme: SigningKey;
  let acmeEc: SigningKey;
  let acmeNext: SigningKey;
  let globex: SigningKey;
  const ticketId = randomUUID();

  const claims = (overrides: Record<string, unknown> = {}): Record<string, unknown> => {
    const result: Record<string, unknown> = {
      iss: ACME,
      jti: ticketId,
      sub: 'phone',
      aud: 'door',
      nbf: BEGIN / 1000,
      exp: END / 1000,
      iat: BEGIN / 1000,
      beginDate: BEGIN,
      endDate: END,
      cmd: ['open', 'clos'],
      chn: ['btlespp'],
      ...overrides,
    };
    for (const [name, value] of Object.entries(result)) if (value === undefined) delete result[name];
    return result;
  };
  const credential = (overrides: Record<string, unknown> = {}, key: SigningKey = acme, header: Record<string, unknown> = {}) => sign(claims(overrides), key, header);

  /** A revocation list as a phone carries it (docs/api-reference.md 8.3). */
  const revocationList = (serial: number, revoked: string[], overrides: Record<string, unknown> = {}, key: SigningKey = acme, header: Record<string, unknown> = {}) =>
    sign({ iss: ACME, aud: 'door', serial, iat: AT / 1000, revoked, keys: keySet(acme, acmeEc), ...overrides }, key, { typ: 'revocation-list+jwt', ...header });

  const provisioning = (overrides: Partial<LockProvisioning> = {}): LockProvisioning => ({
    securedObjectId: 'door',
    issuer: ACME,
    keys: keySet(acme, acmeEc),
    maxCredentialLifetime: LIFETIME,
    ...overrides,
  });
  const door = (overrides: Partial<LockProvisioning> = {}) => new LockSimulator(provisioning(overrides));
  const answer = (overrides: Partial<SyncAnswer> = {}): SyncAnswer => ({ tokens: [], revocations: [], cursor: 'c1', ...overrides });

  beforeAll(async () => {
    [acme, acmeEc, acmeNext, globex] = await Promise.all([makeKey('acme-1'), makeKey('acme-ec', 'ES256'), makeKey('acme-2'), makeKey('globex-1')]);
  });

  describe('decide', () => {
    it('starts with the revocations of its trust answer, and refuses a malformed list of them (docs/lock-integration.md 1)', async () => {
      const provisioned = door({ revoked: [ticketId], revokedKeys: ['some-thumbprint'] });
      expect(await provisioned.decide(await credential(), 'open', AT)).toEqual({ decision: 'deny', reason: 'revoked', ticketId });
      expect(provisioned.isKeyRevoked('some-thumbprint')).toBe(true);
      expect(() => door({ revoked: [''] })).toThrow(/revoked must be a list/);
      expect(() => door({ revokedKeys: 'x' as never })).toThrow(/revokedKeys must be a list/);
    });

    it('opens for a valid credential, signed with EdDSA or ES256', async () => {
      expect(await door().decide(await credential(), 'open', AT)).toEqual({ decision: 'open', reason: 'ok', ticketId });
      expect(await door().decide(await credential({}, acmeEc), 'clos', AT)).toEqual({ decision: 'open', reason: 'ok', ticketId });
      expect(await door().decide(await credential(), 'open', BEGIN)).toMatchObject({ decision: 'open' });
      expect(await door().decide(await credential(), 'open', END - 1)).toMatchObject({ decision: 'open' });
    });

    it.each([
      ['NaN', NaN],
      ['Infinity', Infinity],
      ['-Infinity', -Infinity],
      ['a fraction', AT + 0.5],
      ['a string', String(AT)],
      ['"now"', 'now'],
    ])('denies at a time that is %s (no comparison may fail open)', async (_name, at) => {
      expect(await door().decide(await credential(), 'open', at as number)).toEqual({ decision: 'deny', reason: 'malformed' });
    });

    it('denies what is not a compact JWS', async () => {
      const valid = await credential();
      for (const garbage of ['', 'not-a-jws', 'a.b', 'a.b.c', `${valid}.x`, `${valid} `, `${Buffer.from('{').toString('base64url')}.e30.sig`, 42, null]) {
        expect(await door().decide(garbage as string, 'open', AT)).toEqual({ decision: 'deny', reason: 'malformed' });
      }
      // Signed, but the payload is not JSON.
      const notJson = await new CompactSign(new TextEncoder().encode('not json')).setProtectedHeader({ alg: 'EdDSA', kid: 'acme-1', typ: 'ticket+jwt' }).sign(acme.privateKey);
      expect(await door().decide(notJson, 'open', AT)).toEqual({ decision: 'deny', reason: 'malformed' });
      // A number JSON parses to Infinity: not an integer, so not a time a lock compares with.
      const text = JSON.stringify(claims()).replace(/"exp":\d+/, '"exp":1e400');
      const infinite = await new CompactSign(new TextEncoder().encode(text)).setProtectedHeader({ alg: 'EdDSA', kid: 'acme-1', typ: 'ticket+jwt' }).sign(acme.privateKey);
      // docs/lock-integration.md 3.1: the strict reading refuses it before any claim is read, so no ticket id is logged.
      expect(await door().decide(infinite, 'open', AT)).toEqual({ decision: 'deny', reason: 'malformed' });
    });

    it('denies a header whose typ is not exactly ticket+jwt', async () => {
      for (const typ of ['at+jwt', 'JWT', 'revocation-list+jwt', 'TICKET+JWT', 'application/ticket+jwt', undefined]) {
        expect(await door().decide(await credential({}, acme, { typ }), 'open', AT)).toEqual({ decision: 'deny', reason: 'malformed' });
      }
    });

    it('denies alg none and HS256, whatever the kid', async () => {
      const [, payload] = (await credential()).split('.');
      const none = `${Buffer.from(JSON.stringify({ alg: 'none', kid: 'acme-1', typ: 'ticket+jwt' })).toString('base64url')}.${payload}.`;
      expect(await door().decide(none, 'open', AT)).toEqual({ decision: 'deny', reason: 'malformed' });
      const noneSigned = `${Buffer.from(JSON.stringify({ alg: 'none', kid: 'acme-1', typ: 'ticket+jwt' })).toString('base64url')}.${payload}.AAAA`;
      expect(await door().decide(noneSigned, 'open', AT)).toEqual({ decision: 'deny', reason: 'malformed' });
      // HS256 keyed with the public key's bytes: the classic confusion attack.
      const secret = new TextEncoder().encode(JSON.stringify(acme.publicJwk));
      const hmac = await new CompactSign(encode(claims())).setProtectedHeader({ alg: 'HS256', kid: 'acme-1', typ: 'ticket+jwt' }).sign(secret);
      expect(await door().decide(hmac, 'open', AT)).toEqual({ decision: 'deny', reason: 'malformed' });
    });

    it('denies an unknown kid and an algorithm the key is not for (unknown-key), and a missing kid (malformed)', async () => {
      expect(await door().decide(await credential({}, await makeKey('stranger')), 'open', AT)).toEqual({ decision: 'deny', reason: 'unknown-key' });
      expect(await door().decide(await credential({}, acme, { kid: undefined }), 'open', AT)).toEqual({ decision: 'deny', reason: 'malformed' });
      // An ES256 signature under the EdDSA key's kid.
      expect(await door().decide(await credential({}, acmeEc, { kid: 'acme-1' }), 'open', AT)).toEqual({ decision: 'deny', reason: 'unknown-key' });
    });

    it('denies a bad signature: tampered payload, flipped signature, another key under a known kid', async () => {
      const valid = await credential();
      const [header, payload, signature] = valid.split('.');
      const flipped = `${header}.${payload}.${signature!.startsWith('A') ? 'B' : 'A'}${signature!.slice(1)}`;
      const widened = Buffer.from(JSON.stringify(claims({ endDate: END + 365 * 24 * HOUR }))).toString('base64url');
      const impostor = await credential({}, { ...(await makeKey('acme-1')) });
      for (const forged of [flipped, `${header}.${widened}.${signature}`, impostor]) {
        expect(await door().decide(forged, 'open', AT)).toEqual({ decision: 'deny', reason: 'bad-signature' });
      }
    });

    it.each(['iss', 'jti', 'sub', 'aud', 'nbf', 'exp', 'iat', 'beginDate', 'endDate', 'cmd', 'chn'])('denies a signed credential without %s', async (claim) => {
      expect(await door().decide(await credential({ [claim]: undefined }), 'open', AT)).toMatchObject({ decision: 'deny', reason: 'malformed' });
    });

    it.each([
      ['iss', 1],
      ['aud', ['door']],
      ['nbf', String(BEGIN / 1000)],
      ['exp', END / 1000 - 0.5],
      ['iat', BEGIN / 1000 + 0.5],
      ['beginDate', String(BEGIN)],
      ['endDate', null],
      ['cmd', 'open'],
      ['chn', [1]],
    ])('denies a signed credential whose %s is %j', async (claim, value) => {
      // A fraction is refused by the strict reading itself (docs/lock-integration.md 3.1), the rest by the claims' types.
      expect(await door().decide(await credential({ [claim]: value }), 'open', AT)).toMatchObject({ decision: 'deny', reason: 'malformed' });
    });

    it('denies a credential of another tenant for a lock with the same id (docs/security-cases.md G39)', async () => {
      // Two tenants, two issuers, two key sets, one lock id: each lock opens for its own tenant's credential only.
      const acmeDoor = door();
      const globexDoor = door({ issuer: GLOBEX, keys: keySet(globex) });
      const acmeCredential = await credential();
      const globexCredential = await credential({ iss: GLOBEX }, globex);
      expect(await acmeDoor.decide(acmeCredential, 'open', AT)).toMatchObject({ decision: 'open' });
      expect(await globexDoor.decide(globexCredential, 'open', AT)).toMatchObject({ decision: 'open' });
      expect(await acmeDoor.decide(globexCredential, 'open', AT)).toEqual({ decision: 'deny', reason: 'unknown-key' });
      expect(await globexDoor.decide(acmeCredential, 'open', AT)).toEqual({ decision: 'deny', reason: 'unknown-key' });
      // Even a key both sets held would not help: the issuer is checked too.
      const shared = door({ keys: keySet(acme, globex) });
      expect(await shared.decide(globexCredential, 'open', AT)).toEqual({ decision: 'deny', reason: 'wrong-issuer', ticketId });
      expect(await door().decide(await credential({ iss: GLOBEX }), 'open', AT)).toEqual({ decision: 'deny', reason: 'wrong-issuer', ticketId });
    });

    it('denies a credential for another lock', async () => {
      expect(await door().decide(await credential({ aud: 'garage' }), 'open', AT)).toEqual({ decision: 'deny', reason: 'wrong-lock', ticketId });
    });

    it('is valid on [nbf, exp) and [beginDate, endDate) to the millisecond', async () => {
      // nbf rounded up and exp rounded down from dates that are not whole seconds, as the server signs them.
      const begin = BEGIN + 250;
      const end = END - 250;
      const rounded = await credential({ nbf: Math.ceil(begin / 1000), exp: Math.floor(end / 1000), beginDate: begin, endDate: end });
      const decide = async (at: number) => (await door().decide(rounded, 'open', at)).reason;
      expect(await decide(begin)).toBe('not-yet-valid');
      expect(await decide(BEGIN + 999)).toBe('not-yet-valid');
      expect(await decide(BEGIN + 1000)).toBe('ok');
      expect(await decide(END - 1001)).toBe('ok');
      expect(await decide(END - 1000)).toBe('expired');
      expect(await decide(end)).toBe('expired');
      // And the ticket's own dates hold inside a wider [nbf, exp).
      const wide = await credential({ nbf: BEGIN / 1000 - 10, exp: END / 1000 + 10, beginDate: BEGIN, endDate: END });
      expect((await door().decide(wide, 'open', BEGIN - 1)).reason).toBe('not-yet-valid');
      expect((await door().decide(wide, 'open', BEGIN)).reason).toBe('ok');
      expect((await door().decide(wide, 'open', END - 1)).reason).toBe('ok');
      expect((await door().decide(wide, 'open', END)).reason).toBe('expired');
    });

    it("denies a credential that lives longer than the lock's maximum", async () => {
      const iat = BEGIN / 1000;
      const long = { iat, exp: iat + LIFETIME + 1, endDate: BEGIN + 30 * 24 * HOUR };
      expect(await door().decide(await credential(long), 'open', AT)).toEqual({ decision: 'deny', reason: 'lifetime-exceeded', ticketId });
      expect(await door().decide(await credential({ ...long, exp: iat + LIFETIME }), 'open', AT)).toMatchObject({ decision: 'open' });
      expect(await door({ maxCredentialLifetime: 3600 }).decide(await credential(), 'open', AT)).toMatchObject({ reason: 'lifetime-exceeded' });
    });

    it('denies a command or a channel the credential does not permit', async () => {
      const openOnly = await credential({ cmd: ['open'] });
      expect(await door().decide(openOnly, 'clos', AT)).toEqual({ decision: 'deny', reason: 'command-not-granted', ticketId });
      expect(await door().decide(openOnly, 'open', AT, 'nfccard')).toEqual({ decision: 'deny', reason: 'channel-not-granted', ticketId });
    });
  });

  describe('provisioning', () => {
    it('refuses to be provisioned with something it could not decide with', () => {
      for (const bad of [
        { securedObjectId: '' },
        { issuer: '' },
        { maxCredentialLifetime: 0 },
        { maxCredentialLifetime: NaN },
        { maxCredentialLifetime: 1.5 },
        { keys: { keys: [] } },
        { keys: {} as JSONWebKeySet },
      ] as Partial<LockProvisioning>[]) {
        expect(() => door(bad), JSON.stringify(bad)).toThrow(TypeError);
      }
    });

    it('takes a key set only whole: no private key, no duplicate or missing kid, no other algorithm', () => {
      expect(parseKeySet(keySet(acme, acmeEc))?.size).toBe(2);
      const [jwk] = keySet(acme).keys as JWK[];
      for (const bad of [
        null,
        [jwk],
        { keys: [] },
        { keys: [jwk, jwk] },
        { keys: [{ ...jwk, kid: undefined }] },
        { keys: [{ ...jwk, kid: '' }] },
        { keys: [{ ...jwk, d: 'private' }] },
        { keys: [{ ...jwk, alg: 'HS256' }] },
        { keys: [{ ...jwk, alg: undefined }] },
        { keys: [{ ...jwk, alg: 'ES256' }] },
        { keys: [{ ...jwk, use: 'enc' }] },
        { keys: [{ kty: 'oct', k: 'c2VjcmV0', kid: 'hmac', alg: 'HS256' }] },
        { keys: [jwk, 'a key'] },
      ]) {
        expect(parseKeySet(bad), JSON.stringify(bad)).toBeNull();
      }
    });
  });

  describe('sync', () => {
    it('denies a ticket once a sync answer revokes it, never unrevokes it, and remembers cursor and serial', async () => {
      const lock = door();
      const valid = await credential();
      expect(lock.applySync(answer({ tokens: [{ id: ticketId }], cursor: 'c1', serial: 10 }))).toEqual({ newlyRevoked: 0, keys: 'unchanged' });
      expect(await lock.decide(valid, 'open', AT)).toMatchObject({ decision: 'open' });
      expect(lock.applySync(answer({ revocations: [{ tokenId: ticketId, revocationDate: AT }], cursor: 'c2', serial: 11 }))).toEqual({ newlyRevoked: 1, keys: 'unchanged' });
      expect([lock.cursor, lock.serial, lock.isRevoked(ticketId)]).toEqual(['c2', 11, true]);
      expect(await lock.decide(valid, 'open', AT)).toEqual({ decision: 'deny', reason: 'revoked', ticketId });
      // A later answer that lists the ticket again does not unrevoke it; an old server's answer keeps the serial.
      lock.applySync(answer({ tokens: [{ id: ticketId }], cursor: 'c3' }));
      expect([lock.cursor, lock.serial]).toEqual(['c3', 11]);
      expect(await lock.decide(valid, 'open', AT)).toEqual({ decision: 'deny', reason: 'revoked', ticketId });
    });

    it('replaces its key set when an answer carries keys: the old kid refused after, the new one accepted', async () => {
      const lock = door();
      const old = await credential();
      const next = await credential({}, acmeNext);
      expect(await lock.decide(next, 'open', AT)).toMatchObject({ reason: 'unknown-key' });
      expect(lock.applySync(answer({ keys: keySet(acmeNext) }))).toEqual({ newlyRevoked: 0, keys: 'replaced' });
      expect(lock.kids).toEqual(['acme-2']);
      expect(await lock.decide(next, 'open', AT)).toMatchObject({ decision: 'open' });
      expect(await lock.decide(old, 'open', AT)).toEqual({ decision: 'deny', reason: 'unknown-key' });
    });

    it('refuses a whole answer whose key set is malformed, keeps its old keys and applies nothing of it (docs/lock-integration.md 3.1)', async () => {
      const lock = door();
      const valid = await credential();
      for (const keys of [{ keys: [] }, { keys: [{ kty: 'oct', k: 'c2VjcmV0', kid: 'acme-1', alg: 'HS256' }] }, { nothing: true }, 'keys']) {
        expect(() => lock.applySync(answer({ keys: keys as JSONWebKeySet, revocations: [{ tokenId: 'other', revocationDate: AT }], serial: 5 }))).toThrow(/keys/);
        expect(lock.kids).toEqual(['acme-1', 'acme-ec']);
        expect(await lock.decide(valid, 'open', AT)).toMatchObject({ decision: 'open' });
      }
      // Nothing else of the answer was applied either.
      expect([lock.isRevoked('other'), lock.serial, lock.cursor]).toEqual([false, 0, undefined]);
    });

    it('refuses a malformed answer whole: nothing revoked, the cursor kept', () => {
      const lock = door();
      lock.applySync(answer({ cursor: 'c1' }));
      for (const bad of [
        null,
        { revocations: [], tokens: [] },
        { revocations: 'all', cursor: 'c2' },
        { revocations: [{ tokenId: 'x' }, { tokenId: 7 }], cursor: 'c2' },
        { revocations: [{ tokenId: 'x' }], cursor: 'c2', serial: '12' },
        { revocations: [{ tokenId: 'x' }], cursor: 'c2', decommissioned: 'yes' },
      ]) {
        expect(() => lock.applySync(bad as unknown as SyncAnswer), JSON.stringify(bad)).toThrow(/malformed sync answer/);
      }
      expect([lock.cursor, lock.isRevoked('x')]).toEqual(['c1', false]);
    });

    it('opens for nobody once an answer says the lock was decommissioned, and stays so', async () => {
      const lock = door();
      lock.applySync(answer({ decommissioned: true }));
      lock.applySync(answer({ decommissioned: false }));
      expect(lock.decommissioned).toBe(true);
      // Step 0 of docs/lock-integration.md 3.3: the lock's own state comes before it reads the credential.
      expect(await lock.decide(await credential(), 'open', AT)).toEqual({ decision: 'deny', reason: 'decommissioned' });
    });

    it('syncs page after page from its cursor until the server has nothing more', async () => {
      const lock = door();
      const pages: SyncAnswer[] = [
        answer({ tokens: [{ id: 'a' }], cursor: 'p1' }),
        answer({ revocations: [{ tokenId: 'a', revocationDate: AT }], cursor: 'p2', serial: 3 }),
        answer({ tokens: [{ id: 'b' }], revocations: [{ tokenId: 'c', revocationDate: AT }], cursor: 'p3', serial: 4, keys: keySet(acmeNext) }),
      ];
      const asked: (string | undefined)[] = [];
      await lock.sync(async (cursor) => {
        asked.push(cursor);
        return { answer: pages[asked.length - 1]!, more: asked.length < pages.length };
      });
      expect(asked).toEqual([undefined, 'p1', 'p2']);
      expect([lock.cursor, lock.serial, lock.kids]).toEqual(['p3', 4, ['acme-2']]);
      expect(['a', 'b', 'c'].map((id) => lock.isRevoked(id))).toEqual([true, false, true]);
    });
  });

  describe('applyRevocationList', () => {
    it('adds the revoked ids, takes the serial and replaces the key set', async () => {
      const lock = door();
      const valid = await credential();
      expect(await lock.applyRevocationList(await revocationList(7, [ticketId, 'other'], { keys: keySet(acme, acmeNext) }))).toEqual({
        applied: true,
        serial: 7,
        newlyRevoked: 2,
        keys: 'replaced',
      });
      expect(lock.serial).toBe(7);
      expect(await lock.decide(valid, 'open', AT)).toEqual({ decision: 'deny', reason: 'revoked', ticketId });
      expect(lock.kids).toEqual(['acme-1', 'acme-2']);
      // The ES256 key left the set: its credentials are refused now; the announced key's are accepted.
      expect(await lock.decide(await credential({ jti: 'x' }, acmeEc), 'open', AT)).toMatchObject({ reason: 'unknown-key' });
      expect(await lock.decide(await credential({ jti: 'y' }, acmeNext), 'open', AT)).toMatchObject({ decision: 'open' });
    });

    it('never forgets a revocation: a newer list without the id keeps it revoked', async () => {
      const lock = door();
      await lock.applyRevocationList(await revocationList(7, [ticketId]));
      expect(await lock.applyRevocationList(await revocationList(8, []))).toMatchObject({ applied: true, serial: 8, newlyRevoked: 0 });
      expect(lock.isRevoked(ticketId)).toBe(true);
    });

    it('ignores a stale list: a serial at or below its own, from a list or a sync', async () => {
      const lock = door();
      await lock.applyRevocationList(await revocationList(7, []));
      expect(await lock.applyRevocationList(await revocationList(7, [ticketId]))).toEqual({ applied: false, reason: 'stale' });
      expect(await lock.applyRevocationList(await revocationList(6, [ticketId], { keys: keySet(globex) }))).toEqual({ applied: false, reason: 'stale' });
      expect([lock.isRevoked(ticketId), lock.serial, lock.kids]).toEqual([false, 7, ['acme-1', 'acme-ec']]);
      lock.applySync(answer({ serial: 20 }));
      expect(await lock.applyRevocationList(await revocationList(19, [ticketId]))).toEqual({ applied: false, reason: 'stale' });
    });

    it('ignores a foreign list: another issuer, another lock, another tenant key, or not a revocation list', async () => {
      const lock = door();
      const foreign = [
        [await revocationList(9, [ticketId], { iss: GLOBEX }), 'wrong-issuer'],
        [await revocationList(9, [ticketId], { aud: 'garage' }), 'wrong-lock'],
        [await revocationList(9, [ticketId], { iss: GLOBEX }, globex), 'unknown-key'],
        [await revocationList(9, [ticketId], {}, acme, { typ: 'ticket+jwt' }), 'malformed'],
        [await revocationList(9, [ticketId], {}, acme, { typ: undefined }), 'malformed'],
        [await revocationList(9, [ticketId], {}, { ...(await makeKey('acme-1')) }), 'bad-signature'],
      ] as const;
      for (const [list, reason] of foreign) {
        expect(await lock.applyRevocationList(list)).toEqual({ applied: false, reason });
      }
      expect([lock.isRevoked(ticketId), lock.serial]).toEqual([false, 0]);
    });

    it('ignores a malformed list', async () => {
      const lock = door();
      for (const overrides of [{ serial: '9' }, { serial: 9.5 }, { serial: undefined }, { revoked: ticketId }, { revoked: [ticketId, 1] }, { iat: undefined }, { aud: ['door'] }]) {
        expect(await lock.applyRevocationList(await revocationList(9, [ticketId], overrides)), JSON.stringify(overrides)).toEqual({ applied: false, reason: 'malformed' });
      }
      expect(await lock.applyRevocationList('not.a.list')).toEqual({ applied: false, reason: 'malformed' });
      expect([lock.isRevoked(ticketId), lock.serial]).toEqual([false, 0]);
    });

    it('refuses a whole list whose key set is malformed, and keeps its old keys and revocations (docs/lock-integration.md 3.1)', async () => {
      const lock = door();
      expect(await lock.applyRevocationList(await revocationList(9, [ticketId], { keys: { keys: [] } }))).toEqual({ applied: false, reason: 'malformed' });
      expect([lock.kids, lock.isRevoked(ticketId), lock.serial]).toEqual([['acme-1', 'acme-ec'], false, 0]);
      expect(await lock.decide(await credential(), 'open', AT)).toMatchObject({ decision: 'open' });
    });
  });
});
