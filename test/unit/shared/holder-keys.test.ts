import { generateKeyPairSync, sign } from 'node:crypto';
import { calculateJwkThumbprint } from 'jose';
import { describe, expect, it } from 'vitest';
import {
  holderKeyThumbprint,
  parseHolderJws,
  readHolderPublicKey,
  sha256Base64url,
  verifyHolderSignature,
  verifyHolderSignatureOffLoop,
  type HolderPublicKey,
} from '../../../src/shared/holder-keys.js';

const keyObjectOf = (jwk: HolderPublicKey) => {
  const reading = readHolderPublicKey(jwk);
  if (!('keyObject' in reading)) throw new Error(reading.error);
  return reading.keyObject;
};

const pair = () => {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwk = publicKey.export({ format: 'jwk' }) as unknown as HolderPublicKey;
  return { privateKey, jwk: { kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y } as HolderPublicKey };
};

const signEs256 = (privateKey: Parameters<typeof sign>[2], header: object, payload: object) => {
  const input = `${Buffer.from(JSON.stringify(header)).toString('base64url')}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}`;
  const signature = sign('sha256', Buffer.from(input), { key: privateKey as never, dsaEncoding: 'ieee-p1363' });
  return `${input}.${signature.toString('base64url')}`;
};

describe('holder keys', () => {
  it('reads a P-256 public JWK and computes the RFC 7638 thumbprint jose computes', async () => {
    const { jwk } = pair();
    const reading = readHolderPublicKey(jwk);
    expect('key' in reading && reading.key).toEqual(jwk);
    expect(holderKeyThumbprint(jwk)).toBe(await calculateJwkThumbprint(jwk, 'sha256'));
  });

  it('refuses a private member, extra members, another curve, short coordinates and a point off the curve, each with a reason', () => {
    const { jwk } = pair();
    const error = (value: unknown) => ('error' in readHolderPublicKey(value) ? (readHolderPublicKey(value) as { error: string }).error : null);
    expect(error({ ...jwk, d: 'AAAA' })).toMatch(/private key member/);
    expect(error({ ...jwk, kid: 'k' })).toMatch(/remove kid/);
    expect(error({ ...jwk, crv: 'P-384' })).toMatch(/P-256/);
    expect(error({ ...jwk, x: jwk.x.slice(1) })).toMatch(/32 octets/);
    expect(error({ ...jwk, y: jwk.x })).toMatch(/not a point/);
    expect(error([jwk])).toMatch(/JWK object/);
    expect(error(null)).toMatch(/JWK object/);
  });

  it('verifies an ES256 compact JWS and refuses another key, another alg and a tampered payload', () => {
    const { privateKey, jwk } = pair();
    const other = pair();
    const jws = signEs256(privateKey, { alg: 'ES256', typ: 'key-proof+jwt' }, { nonce: 'n' });
    const parsed = parseHolderJws(jws)!;
    const keyObject = keyObjectOf(jwk);
    expect(verifyHolderSignature(parsed, keyObject)).toBe(true);
    expect(verifyHolderSignature(parsed, keyObjectOf(other.jwk))).toBe(false);
    expect(verifyHolderSignature({ ...parsed, header: { ...parsed.header, alg: 'none' } }, keyObject)).toBe(false);
    const [h, , s] = jws.split('.');
    const tampered = parseHolderJws(`${h}.${Buffer.from('{"nonce":"m"}').toString('base64url')}.${s}`)!;
    expect(verifyHolderSignature(tampered, keyObject)).toBe(false);
  });

  it('answers the same off the event loop: the signature, another key, another alg, a tampered payload, a short signature', async () => {
    const { privateKey, jwk } = pair();
    const jws = signEs256(privateKey, { alg: 'ES256', typ: 'JWT' }, { iss: 'c', jti: 'j' });
    const parsed = parseHolderJws(jws)!;
    const keyObject = keyObjectOf(jwk);
    const [h, , s] = jws.split('.');
    const cases: [ReturnType<typeof parseHolderJws>, ReturnType<typeof keyObjectOf>][] = [
      [parsed, keyObject],
      [parsed, keyObjectOf(pair().jwk)],
      [{ ...parsed, header: { ...parsed.header, alg: 'none' } }, keyObject],
      [{ ...parsed, header: { ...parsed.header, alg: 'HS256' } }, keyObject],
      [parseHolderJws(`${h}.${Buffer.from('{"iss":"d","jti":"j"}').toString('base64url')}.${s}`), keyObject],
      [{ ...parsed, signature: parsed.signature.subarray(0, 63) }, keyObject],
      // R || S of zeros: the right length, never a valid ECDSA signature.
      [{ ...parsed, signature: Buffer.alloc(64) }, keyObject],
    ];
    const answers = await Promise.all(cases.map(([candidate, key]) => verifyHolderSignatureOffLoop(candidate!, key)));
    expect(answers).toEqual([true, false, false, false, false, false, false]);
    expect(answers).toEqual(cases.map(([candidate, key]) => verifyHolderSignature(candidate!, key)));
  });

  it('parses only three base64url parts of JSON objects', () => {
    expect(parseHolderJws('a.b')).toBeNull();
    expect(parseHolderJws('a.b.c.d')).toBeNull();
    expect(parseHolderJws(`${Buffer.from('[]').toString('base64url')}.${Buffer.from('{}').toString('base64url')}.`)).toBeNull();
    expect(parseHolderJws(42)).toBeNull();
    expect(parseHolderJws(`e30.e30.${'A'.repeat(20_000)}`)).toBeNull();
    expect(sha256Base64url('abc')).toBe('ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0');
  });
});
