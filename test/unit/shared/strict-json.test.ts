// The strict reading of what a lock is shown (src/shared/strict-json.ts, docs/lock-integration.md 3.1): what JSON.parse
// lets through and a lock must refuse, and that ordinary JSON still reads as JSON.parse reads it.
import { describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH, parseStrictCompactJws, parseStrictJson } from '../../../src/shared/strict-json.js';

const value = (text: string) => {
  const reading = parseStrictJson(text);
  if ('error' in reading) throw new Error(reading.error);
  return reading.value;
};
const refused = (text: string) => 'error' in parseStrictJson(text);

describe('parseStrictJson', () => {
  it('reads what JSON.parse reads, for JSON within the rules', () => {
    for (const text of [
      '{}',
      '[]',
      ' {"a": [1, -2, 0, 9007199254740991, -9007199254740991], "b": {"c": null, "d": true, "e": false}} ',
      '{"s": "\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00 é 😀"}',
      '"text"',
      '0',
    ]) {
      expect(value(text), text).toEqual(JSON.parse(text));
    }
  });

  it('refuses duplicate member names, even spelled with escapes (RFC 7493 2.3)', () => {
    expect(JSON.parse('{"exp":1,"exp":2}')).toEqual({ exp: 2 });
    expect(refused('{"exp":1,"exp":2}')).toBe(true);
    expect(refused('{"exp":1,"\\u0065xp":2}')).toBe(true);
    expect(refused('{"a":{"x":1,"x":1}}')).toBe(true);
    expect(value('{"a":{"x":1},"b":{"x":1}}')).toEqual({ a: { x: 1 }, b: { x: 1 } });
  });

  it('refuses every number that is not a safe integer written as one', () => {
    for (const text of ['1.0', '0.0', '1e3', '1E3', '10e-1', '-0', '01', '+1', '.5', '9007199254740992', '-9007199254740992', '1e400', 'NaN', 'Infinity', '-']) {
      expect(refused(text), text).toBe(true);
      expect(refused(`{"n":${text}}`), text).toBe(true);
    }
  });

  it('refuses a byte-order mark, lone surrogates, control characters and anything outside RFC 8259', () => {
    for (const text of [
      '\ufeff{}',
      '{"a":"\\ud800"}',
      '{"a":"\\udc00"}',
      '{"a":"\\ud800\\u0041"}',
      '{"a":"\ud800"}',
      '{"a":"\u0001"}',
      "{'a':1}",
      '{"a":1,}',
      '[1,]',
      '{"a" 1}',
      '{a:1}',
      '{"a":"\\x41"}',
      '{} {}',
      '',
      'tru',
      '{"a":"unterminated}',
    ]) {
      expect(refused(text), JSON.stringify(text)).toBe(true);
    }
  });

  it('keeps a member named __proto__ as data, never as the prototype', () => {
    const parsed = value('{"__proto__":{"polluted":1}}') as Record<string, unknown>;
    expect(Object.getPrototypeOf(parsed)).toBe(Object.prototype);
    expect(Object.keys(parsed)).toEqual(['__proto__']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it(`nests at most ${MAX_JSON_DEPTH} deep`, () => {
    expect(refused('['.repeat(MAX_JSON_DEPTH) + ']'.repeat(MAX_JSON_DEPTH))).toBe(false);
    expect(refused('['.repeat(MAX_JSON_DEPTH + 1) + ']'.repeat(MAX_JSON_DEPTH + 1))).toBe(true);
    expect(refused('['.repeat(100_000))).toBe(true);
  });
});

describe('parseStrictCompactJws', () => {
  const part = (text: string) => Buffer.from(text, 'utf8').toString('base64url');
  const jws = (header: string, payload: string, signature = 'c2ln') => `${part(header)}.${part(payload)}.${signature}`;

  it('splits a compact JWS whose parts are strict JSON objects', () => {
    const parsed = parseStrictCompactJws(jws('{"alg":"ES256"}', '{"a":1}'), 1000);
    expect(parsed).toMatchObject({ header: { alg: 'ES256' }, payload: { a: 1 }, signature: Buffer.from('sig') });
    expect(parsed!.signingInput).toBe(`${part('{"alg":"ES256"}')}.${part('{"a":1}')}`);
  });

  it('refuses padding, non-canonical base64url, a byte-order mark, invalid UTF-8, a part that is no object, and too long a text', () => {
    const good = jws('{"alg":"ES256"}', '{"a":1}');
    expect(parseStrictCompactJws(good, good.length)).not.toBeNull();
    expect(parseStrictCompactJws(good, good.length - 1)).toBeNull();
    const [header, payload] = good.split('.') as [string, string];
    for (const bad of [
      `${header}.${payload}`,
      `${header}.${payload}.c2ln.x`,
      `${header}=.${payload}.c2ln`,
      `${header}.${payload}.AB`, // one octet 0x00 with non-zero unused bits: canonical is AA
      `${header}.${payload}.`,
      `${header}.${Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"a":1}')]).toString('base64url')}.c2ln`,
      `${header}.${Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]).toString('base64url')}.c2ln`,
      jws('{"alg":"ES256"}', '[1]'),
      jws('"ES256"', '{}'),
      jws('{"alg":"ES256"}', '{"a":1,"a":1}'),
      42,
      null,
    ]) {
      expect(parseStrictCompactJws(bad, 1000), String(bad)).toBeNull();
    }
  });
});
