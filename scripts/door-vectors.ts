// Writes docs/test-vectors/door.json, the test vectors for lock makers (docs/lock-integration.md 10): fixed keys derived
// from fixed seeds, fixed times, and for each case the lock's state, what the phone shows and the decision and reason
// the lock must answer. Run once with `npx tsx scripts/door-vectors.ts`; ES256 signatures are randomized, so running
// it again writes other proofs (the same cases). test/unit/simulator/door-vectors.test.ts checks the FILE.
import { createECDH, createHash, createPrivateKey, createPublicKey, sign, type KeyObject } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { holderKeyThumbprint, sha256Base64url, type HolderPublicKey } from '../src/shared/holder-keys.js';
import type { DoorVectors, VectorCase as Case, VectorLock as LockState } from './door-vector-shape.js';

const seed = (name: string) => createHash('sha256').update(`door-vectors:${name}`).digest();
const b64 = (bytes: Buffer | string) => Buffer.from(bytes).toString('base64url');

/** An Ed25519 key from a 32-octet seed (RFC 8032 5.1.5), as PKCS #8. */
function ed25519(name: string): KeyObject {
  return createPrivateKey({ key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed(name)]), format: 'der', type: 'pkcs8' });
}

interface P256 {
  privateKey: KeyObject;
  jwk: { kty: 'EC'; crv: 'P-256'; x: string; y: string; d: string };
  publicKey: HolderPublicKey;
  jkt: string;
}

/** A P-256 key whose private scalar is a fixed seed (below the group order for these seeds). */
function p256(name: string): P256 {
  const ecdh = createECDH('prime256v1');
  const d = seed(name);
  ecdh.setPrivateKey(d);
  const point = ecdh.getPublicKey();
  const jwk = { kty: 'EC' as const, crv: 'P-256' as const, x: b64(point.subarray(1, 33)), y: b64(point.subarray(33, 65)), d: b64(d) };
  const publicKey: HolderPublicKey = { kty: 'EC', crv: 'P-256', x: jwk.x, y: jwk.y };
  return { privateKey: createPrivateKey({ key: jwk, format: 'jwk' }), jwk, publicKey, jkt: holderKeyThumbprint(publicKey) };
}

const ISSUER = 'https://acs.example/tenants/acme';
const TENANT_KID = 'acme-2026-01';
const tenant = ed25519('tenant');
const tenantPublic = { ...createPublicKey(tenant).export({ format: 'jwk' }), kid: TENANT_KID, alg: 'EdDSA', use: 'sig' };
const tenantPrivate = { ...tenant.export({ format: 'jwk' }), kid: TENANT_KID, alg: 'EdDSA', use: 'sig' };
const stranger = ed25519('stranger');
const tenantEc = p256('tenant-ec');
const phones = { alice: p256('phone-alice'), mallory: p256('phone-mallory') };
const locks = { 'front-door': p256('lock-front-door'), 'back-door': p256('lock-back-door') };

/** 2026-01-05 10:00 UTC, a Monday: the lock's clock in every case but those that move it. */
const NOW = Date.UTC(2026, 0, 5, 10);
const NOW_S = NOW / 1000;
const IAT = NOW_S - 3600;
const NONCE = b64(seed('nonce'));
const OTHER_NONCE = b64(seed('other-nonce'));

const json = (value: unknown) => JSON.stringify(value);

/** A compact JWS over exact texts, so a case can sign what no server would (duplicates, number forms, a BOM). */
function signTexts(headerText: string, payloadText: string, key: KeyObject, alg: 'EdDSA' | 'ES256'): string {
  const input = `${b64(headerText)}.${b64(payloadText)}`;
  const signature = alg === 'EdDSA' ? sign(null, Buffer.from(input), key) : sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' });
  return `${input}.${b64(signature)}`;
}

const baseClaims = (jti: string, overrides: Record<string, unknown> = {}): Record<string, unknown> => {
  const claims: Record<string, unknown> = {
    iss: ISSUER,
    jti,
    sub: 'phone-alice',
    aud: 'front-door',
    nbf: IAT - 300,
    exp: IAT + 86_400,
    iat: IAT,
    beginDate: Date.UTC(2026, 0, 1),
    endDate: Date.UTC(2026, 1, 1),
    cmd: ['open', 'clos'],
    chn: ['btlespp'],
    cnf: { jkt: phones.alice.jkt },
    ...overrides,
  };
  for (const [name, value] of Object.entries(claims)) if (value === undefined) delete claims[name];
  return claims;
};

const HEADER = { alg: 'EdDSA', kid: TENANT_KID, typ: 'ticket+jwt' };

/** A credential signed by the tenant key (or `key`), its claims and header as given. */
function credential(jti: string, overrides: Record<string, unknown> = {}, header: Record<string, unknown> = HEADER, key: KeyObject = tenant): string {
  return signTexts(json(header), json(baseClaims(jti, overrides)), key, header.alg === 'ES256' ? 'ES256' : 'EdDSA');
}

/** A proof by `phone` (its public key in the header unless `jwk` says otherwise) for `shown`. */
function proof(shown: string, options: { phone?: P256; jwk?: unknown; header?: Record<string, unknown>; claims?: Record<string, unknown>; raw?: string } = {}): string {
  const phone = options.phone ?? phones.alice;
  const header = { alg: 'ES256', typ: 'ticket-proof+jwt', jwk: options.jwk ?? phone.publicKey, ...options.header };
  const claims = { aud: 'front-door', nonce: NONCE, ath: sha256Base64url(shown), cmd: 'open', iat: NOW_S, ...options.claims };
  return signTexts(json(header), options.raw ?? json(claims), phone.privateKey, 'ES256');
}


const lock = (overrides: Partial<LockState> = {}): LockState => ({
  id: 'front-door',
  issuer: ISSUER,
  keys: { keys: [tenantPublic] },
  holderBinding: 'required',
  revoked: [],
  revokedKeys: [],
  serial: 42,
  now: NOW,
  nonce: NONCE,
  nonceUsed: false,
  decommissioned: false,
  ...overrides,
});


const cases: Case[] = [];
const open = { decision: 'open', reason: 'ok' } as const;
const deny = (reason: string) => ({ decision: 'deny' as const, reason });
function add(name: string, shown: string, shownProof: string | null | 'own', expected: Case['expect'], state: Partial<LockState> = {}, request: { command?: string; channel?: string } = {}) {
  cases.push({
    name,
    lock: lock(state),
    credential: shown,
    proof: shownProof === 'own' ? proof(shown) : shownProof,
    command: request.command ?? 'open',
    channel: request.channel ?? 'btlespp',
    expect: expected,
  });
}

/** A lock state (docs/lock-integration.md 11) signed by the tenant key (or `key`), its claims as given. */
function lockState(claims: Record<string, unknown>, header: Record<string, unknown> = { ...HEADER, typ: 'lock-state+jwt' }, key: KeyObject = tenant): string {
  return signTexts(json(header), json({ iss: ISSUER, aud: 'front-door', serial: 43, mode: 'lockdown', iat: NOW_S - 5, ...claims }), key, 'EdDSA');
}

const ticket = (n: number) => `7c1e0d52-0000-4000-8000-${String(n).padStart(12, '0')}`;
const bound = credential(ticket(1));
const unbound = credential(ticket(2), { cnf: undefined });
const sibling = credential(ticket(3));

// The exchange (docs/lock-integration.md 4).
add('a good bound credential with the proof of its phone, at a lock that requires binding', bound, 'own', open);
add('a good bound credential with its proof, at a lock whose binding is optional', bound, 'own', open, { holderBinding: 'optional' });
add('an unbound credential without a proof, at a lock whose binding is optional', unbound, null, open, { holderBinding: 'optional' });
add('an unbound credential at an optional lock: a proof shown with it is ignored', unbound, proof(unbound), open, { holderBinding: 'optional' });
add('a copied credential: the proof is made by another phone with its own key', bound, proof(bound, { phone: phones.mallory }), deny('key-mismatch'));
add('a copied credential: the owner\'s public key in the proof header, signed by another key', bound, proof(bound, { phone: phones.mallory, jwk: phones.alice.publicKey }), deny('bad-proof'));
add('a replayed proof: the lock already decided under this nonce', bound, 'own', deny('nonce-used'), { nonceUsed: true });
add('a proof under a nonce this lock did not send in its hello', bound, proof(bound, { claims: { nonce: OTHER_NONCE } }), deny('wrong-nonce'));
add('a proof made for another lock', bound, proof(bound, { claims: { aud: 'back-door' } }), deny('wrong-lock'));
add('a proof made for another credential of the same phone', bound, proof(sibling), deny('credential-mismatch'));
add('a credential bound to a revoked phone key', bound, 'own', deny('key-revoked'), { revokedKeys: [phones.alice.jkt] });
add('a revoked phone key at a lock whose binding is optional', bound, 'own', deny('key-revoked'), { holderBinding: 'optional', revokedKeys: [phones.alice.jkt] });
add('no cnf at a lock that requires binding', unbound, null, deny('binding-required'));
add('no cnf at a lock that requires binding, even with a proof', unbound, proof(unbound), deny('binding-required'));
add('a bound credential without a proof, at a lock whose binding is optional', bound, null, deny('bad-proof'), { holderBinding: 'optional' });
add('a proof for another command than the one asked', bound, proof(bound, { claims: { cmd: 'clos' } }), deny('bad-proof'));
add('a proof signed 301 s before the lock\'s clock', bound, proof(bound, { claims: { iat: NOW_S - 301 } }), deny('bad-proof'));
add('a proof signed 301 s after the lock\'s clock', bound, proof(bound, { claims: { iat: NOW_S + 301 } }), deny('bad-proof'));
add('a proof signed exactly 300 s before the lock\'s clock', bound, proof(bound, { claims: { iat: NOW_S - 300 } }), open);
add('a proof whose typ is not ticket-proof+jwt', bound, proof(bound, { header: { typ: 'dpop+jwt' } }), deny('bad-proof'));
add('a proof whose alg is not ES256', bound, proof(bound, { header: { alg: 'ES384' } }), deny('bad-proof'));
add('a proof whose header jwk holds the private key', bound, proof(bound, { jwk: phones.alice.jwk }), deny('bad-proof'));
add('a proof with a crit header', bound, proof(bound, { header: { crit: ['exp'], exp: 1 } }), deny('bad-proof'));
add(
  'a proof with a duplicate nonce member',
  bound,
  proof(bound, { raw: `{"aud":"front-door","nonce":"${OTHER_NONCE}","nonce":"${NONCE}","ath":"${sha256Base64url(bound)}","cmd":"open","iat":${NOW_S}}` }),
  deny('bad-proof'),
);
add('a proof without ath', bound, proof(bound, { claims: { ath: undefined } }), deny('bad-proof'));
add('a cnf with a confirmation method the lock does not know', credential(ticket(4), { cnf: { jkt: phones.alice.jkt, jwk: phones.alice.publicKey } }), 'own', deny('malformed'));
add('a cnf whose jkt is not a SHA-256 thumbprint', credential(ticket(5), { cnf: { jkt: 'alice' } }), 'own', deny('malformed'));
add('a good bound credential at a lock in lockdown', bound, 'own', deny('lockdown'), { lockdown: true });
add('lockdown is checked last: an expired credential at a lock in lockdown', credential(ticket(6), { exp: NOW_S - 1 }), 'own', deny('expired'), { lockdown: true });

// Lockdown and the lock state (docs/lock-integration.md 11).
const override = credential(ticket(7), { ovr: true });
add('an override credential (ovr: true) at a lock in lockdown', override, proof(override), open, { lockdown: true });
add('ovr other than true is malformed, never read as no override', credential(ticket(8), { ovr: 'yes' }), proof(credential(ticket(8), { ovr: 'yes' })), deny('malformed'), { lockdown: true });
add('a lock state "lockdown" above the lock\'s serial, handed over by the phone', bound, 'own', deny('lockdown'), { lockState: lockState({}) });
add('an override credential after a lock state "lockdown"', override, proof(override), open, { lockState: lockState({}) });
add('a lock state "normal" above the lock\'s serial ends a lockdown', bound, 'own', open, { lockdown: true, lockStateSerial: 40, lockState: lockState({ mode: 'normal' }) });
add('a stale lock state "normal" (serial at the lock\'s own) is ignored', bound, 'own', deny('lockdown'), { lockdown: true, lockStateSerial: 43, lockState: lockState({ mode: 'normal' }) });
const forgedNormal = (() => {
  const [h, p, s] = lockState({ mode: 'normal' }).split('.') as [string, string, string];
  const signature = Buffer.from(s, 'base64url');
  signature[0]! ^= 0x01;
  return `${h}.${p}.${b64(signature)}`;
})();
add('a badly signed lock state "normal": the lock stays in lockdown', bound, 'own', deny('lockdown'), { lockdown: true, lockState: forgedNormal });
add('a lock state "normal" signed by a key the lock does not know', bound, 'own', deny('lockdown'), {
  lockdown: true,
  lockState: lockState({ mode: 'normal' }, { alg: 'EdDSA', kid: 'stranger-1', typ: 'lock-state+jwt' }, stranger),
});
add('a lock state with an unknown mode: the lock keeps its lockdown', bound, 'own', deny('lockdown'), { lockdown: true, lockState: lockState({ mode: 'off' }) });
add('a lock state typed as a revocation list is not a lock state', bound, 'own', deny('lockdown'), { lockdown: true, lockState: lockState({ mode: 'normal' }, { ...HEADER, typ: 'revocation-list+jwt' }) });
add('a lock state "lockdown" for another lock does not lock this one', bound, 'own', open, { lockState: lockState({ aud: 'back-door' }) });
add('a lock state "lockdown" of another issuer does not lock this one', bound, 'own', open, { lockState: lockState({ iss: 'https://acs.example/tenants/globex' }) });

// The credential's own rules (docs/lock-integration.md 3.3 steps 0–6).
add('a credential of another issuer', credential(ticket(10), { iss: 'https://acs.example/tenants/globex' }), 'own', deny('wrong-issuer'));
add('a credential for another lock', credential(ticket(11), { aud: 'back-door' }), 'own', deny('wrong-lock'));
add('nbf after the lock\'s clock', credential(ticket(12), { nbf: NOW_S + 1 }), 'own', deny('not-yet-valid'));
add('exactly at nbf: the start is inclusive', credential(ticket(13), { nbf: NOW_S }), 'own', open);
add('beginDate after the lock\'s clock', credential(ticket(14), { beginDate: NOW + 1 }), 'own', deny('not-yet-valid'));
add('iat more than 300 s after the lock\'s clock, though nbf has passed', credential(ticket(15), { iat: NOW_S + 301, nbf: NOW_S - 10, exp: NOW_S + 3600 }), 'own', deny('not-yet-valid'));
add('exp before the lock\'s clock', credential(ticket(16), { exp: NOW_S - 1 }), 'own', deny('expired'));
add('exactly at exp: the end is exclusive', credential(ticket(17), { exp: NOW_S }), 'own', deny('expired'));
add('endDate at the lock\'s clock', credential(ticket(18), { endDate: NOW }), 'own', deny('expired'));
add('a lifetime one second above the lock\'s maximum (604800 s)', credential(ticket(19), { exp: IAT + 604_801 }), 'own', deny('lifetime-exceeded'));
add('exactly the lock\'s maximum lifetime', credential(ticket(20), { exp: IAT + 604_800 }), 'own', open);
add('a command the credential does not grant', credential(ticket(21), { cmd: ['clos'] }), proof(credential(ticket(21), { cmd: ['clos'] })), deny('command-not-granted'));
add('a channel the credential does not grant', bound, 'own', deny('channel-not-granted'), {}, { channel: 'nfc' });
add('a revoked ticket', bound, 'own', deny('revoked'), { revoked: [ticket(1)] });
add('revocation comes before the proof: a revoked ticket with a bad proof', bound, 'garbage', deny('revoked'), { revoked: [ticket(1)] });
const week = [NOW + 3_600_000, NOW + 7_200_000];
add('outside every window of its schedule', credential(ticket(22), { win: [week] }), proof(credential(ticket(22), { win: [week] })), deny('outside-schedule'));
add('inside a window of its schedule (start inclusive)', credential(ticket(23), { win: [[NOW - 1000, NOW], [NOW, NOW + 1]] }), proof(credential(ticket(23), { win: [[NOW - 1000, NOW], [NOW, NOW + 1]] })), open);
add('an empty schedule: no window in the credential\'s span', credential(ticket(24), { win: [] }), proof(credential(ticket(24), { win: [] })), deny('outside-schedule'));
add('a kid the lock does not know', credential(ticket(25), {}, { ...HEADER, kid: 'stranger-1' }, stranger), 'own', deny('unknown-key'));
add('an ES256 signature under the EdDSA key\'s kid', credential(ticket(26), {}, { ...HEADER, alg: 'ES256' }, tenantEc.privateKey), 'own', deny('unknown-key'));
const flipped = (() => {
  const [h, p, s] = credential(ticket(27)).split('.') as [string, string, string];
  const signature = Buffer.from(s, 'base64url');
  signature[0]! ^= 0x01;
  return `${h}.${p}.${b64(signature)}`;
})();
add('a signature with one bit flipped', flipped, 'own', deny('bad-signature'));
add('claims changed after signing', (() => {
  const [h, , s] = credential(ticket(28)).split('.') as [string, string, string];
  return `${h}.${b64(json(baseClaims(ticket(28), { endDate: Date.UTC(2027, 0, 1) })))}.${s}`;
})(), 'own', deny('bad-signature'));
add('not three parts', credential(ticket(29)).split('.').slice(0, 2).join('.'), null, deny('malformed'));
add('typ at+jwt: an access token is never a credential', credential(ticket(30), {}, { ...HEADER, typ: 'at+jwt' }), 'own', deny('malformed'));
add('alg none', `${b64(json({ alg: 'none', kid: TENANT_KID, typ: 'ticket+jwt' }))}.${b64(json(baseClaims(ticket(31))))}.`, null, deny('malformed'));
add('a crit header (RFC 7515 4.1.11)', credential(ticket(32), {}, { ...HEADER, crit: ['win2'], win2: true }), 'own', deny('malformed'));
add('an unknown header member is ignored', credential(ticket(33), {}, { ...HEADER, x5u: 'https://attacker.example/key' }), 'own', open);
add('an unknown claim is ignored', credential(ticket(34), { note: 'front desk' }), 'own', open);
add('an unknown command value is ignored', credential(ticket(35), { cmd: ['open', 'fly'] }), 'own', open);
const claimsText = (jti: string) => json(baseClaims(jti));
add(
  'a duplicate exp member (JSON.parse would keep the last)',
  signTexts(json(HEADER), claimsText(ticket(36)).replace(/^\{/, `{"exp":${NOW_S + 86_400 * 365},`), tenant, 'EdDSA'),
  'own',
  deny('malformed'),
);
add('exp written as a fraction (1.0 form)', signTexts(json(HEADER), claimsText(ticket(37)).replace(`"exp":${IAT + 86_400}`, `"exp":${IAT + 86_400}.0`), tenant, 'EdDSA'), 'own', deny('malformed'));
add('exp written with an exponent', signTexts(json(HEADER), claimsText(ticket(38)).replace(`"exp":${IAT + 86_400}`, `"exp":${(IAT + 86_400) / 100}e2`), tenant, 'EdDSA'), 'own', deny('malformed'));
add('endDate above 2^53 − 1', credential(ticket(39), { endDate: 2 ** 53 }), 'own', deny('malformed'));
add('a byte-order mark before the claims', signTexts(json(HEADER), `\ufeff${claimsText(ticket(40))}`, tenant, 'EdDSA'), 'own', deny('malformed'));
add('an empty jti', credential('', {}), 'own', deny('malformed'));
add('a base64url part with padding', `${credential(ticket(41))}=`, 'own', deny('malformed'));
add('a credential longer than 32768 characters', credential(ticket(42), { note: 'x'.repeat(25_000) }), 'own', deny('malformed'));
add('a decommissioned lock', bound, 'own', deny('decommissioned'), { decommissioned: true });
add('the lock\'s state comes first: a malformed credential at a decommissioned lock', 'not-a-credential', null, deny('decommissioned'), { decommissioned: true });

// The shape a lock maker's harness reads (docs/lock-integration.md 10): keys and cases, nothing else. Every lock has
// maxCredentialLifetime 604800 s; the keys are for tests only.
const file: DoorVectors = {
  keys: { tenant: tenantPrivate, phones: { alice: phones.alice.jwk, mallory: phones.mallory.jwk }, locks: { 'front-door': locks['front-door'].jwk, 'back-door': locks['back-door'].jwk } },
  cases,
};

const target = join(dirname(fileURLToPath(import.meta.url)), '..', 'docs', 'test-vectors', 'door.json');
mkdirSync(dirname(target), { recursive: true });
writeFileSync(target, `${JSON.stringify(file, null, 2)}\n`);
process.stdout.write(`${cases.length} cases written to ${target}\n`);
