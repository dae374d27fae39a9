// The key proof (docs/api-reference.md 11.1), read and checked without a database: what each refusal says.
import { generateKeyPairSync, sign } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { readHolderPublicKey, type HolderPublicKey } from '../../../src/shared/holder-keys.js';
import { KEY_PROOF_MAX_AGE_MS, KEY_PROOF_TYPE, keyProofError, readKeyProof } from '../../../src/shared/key-proof.js';

const AUDIENCE = 'https://acs.example.com';
const NOW = Date.UTC(2026, 0, 1, 12, 0, 0);

function keyPair() {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const { x, y } = publicKey.export({ format: 'jwk' });
  const reading = readHolderPublicKey({ kty: 'EC', crv: 'P-256', x, y } satisfies Partial<HolderPublicKey>);
  if (!('keyObject' in reading)) throw new Error(reading.error);
  return { privateKey, keyObject: reading.keyObject };
}

const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');

function proof(privateKey: ReturnType<typeof keyPair>['privateKey'], header: object, payload: object): string {
  const input = `${part(header)}.${part(payload)}`;
  return `${input}.${sign('sha256', Buffer.from(input), { key: privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
}

const good = { aud: AUDIENCE, nonce: 'n-1', iat: Math.floor(NOW / 1000) };
const header = { alg: 'ES256', typ: KEY_PROOF_TYPE };

function check(jws: string, key = keyPair().keyObject) {
  const read = readKeyProof(jws);
  if ('error' in read) return read.error;
  return keyProofError(read.proof, key, AUDIENCE, NOW);
}

describe('key proofs', () => {
  const pair = keyPair();

  it('accepts a proof signed by the key for this audience now, and reads its nonce first', () => {
    const jws = proof(pair.privateKey, header, good);
    expect(readKeyProof(jws)).toMatchObject({ nonce: 'n-1' });
    expect(check(jws, pair.keyObject)).toBeNull();
    // iat up to five minutes old, or a minute ahead, is fine.
    expect(check(proof(pair.privateKey, header, { ...good, iat: good.iat - KEY_PROOF_MAX_AGE_MS / 1000 }), pair.keyObject)).toBeNull();
    expect(check(proof(pair.privateKey, header, { ...good, iat: good.iat + 60 }), pair.keyObject)).toBeNull();
  });

  it.each([
    ['another audience', proof(pair.privateKey, header, { ...good, aud: 'https://evil.example' }), /aud must be exactly/],
    ['an audience list', proof(pair.privateKey, header, { ...good, aud: [AUDIENCE] }), /aud must be exactly/],
    ['a stale iat', proof(pair.privateKey, header, { ...good, iat: good.iat - 301 }), /more than 5 minutes/],
    ['an iat ahead', proof(pair.privateKey, header, { ...good, iat: good.iat + 61 }), /more than 5 minutes/],
    ['an iat in milliseconds as text', proof(pair.privateKey, header, { ...good, iat: String(NOW) }), /Unix seconds/],
    ['another typ', proof(pair.privateKey, { alg: 'ES256', typ: 'JWT' }, good), /typ "key-proof\+jwt"/],
    ['no typ', proof(pair.privateKey, { alg: 'ES256' }, good), /typ "key-proof\+jwt"/],
    ['alg none', `${part({ alg: 'none', typ: KEY_PROOF_TYPE })}.${part(good)}.`, /signed with ES256/],
    ['alg HS256', proof(pair.privateKey, { alg: 'HS256', typ: KEY_PROOF_TYPE }, good), /signed with ES256/],
    ['another key', proof(keyPair().privateKey, header, good), /signature does not verify/],
    ['no nonce', proof(pair.privateKey, header, { aud: AUDIENCE, iat: good.iat }), /no nonce/],
    ['an empty nonce', proof(pair.privateKey, header, { ...good, nonce: '' }), /no nonce/],
    ['two parts', 'eyJhbGciOiJFUzI1NiJ9.e30', /not a compact JWS/],
    ['a payload that is not an object', `${part(header)}.${Buffer.from('[1]').toString('base64url')}.AA`, /not a compact JWS/],
  ])('refuses %s, saying why', (_name, jws, reason) => {
    expect(check(jws, pair.keyObject)).toMatch(reason);
  });
});
