// The one strict reading of the JSON a lock is shown (docs/lock-integration.md 3.1): I-JSON (RFC 7493) and more, so
// that a lock and the service can never read one signed text two ways. Pure: no I/O, no exceptions out.
//
// JSON.parse is lenient where a lock must not be: it keeps the last of two members with one name (RFC 8259 4 leaves
// that to the reader, so two readers may disagree about what was signed), reads `1.0` and `1e3` as integers, and
// accepts lone surrogates. This reader refuses all of them, and every number that is not an integer written as one.
import type { ParsedHolderJws } from './holder-keys.js';

/** How deep objects and arrays may nest: a credential needs 3 (`win`), a key set 3; more is an attack on the stack. */
export const MAX_JSON_DEPTH = 16;

export type StrictJsonReading = { value: unknown } | { error: string };

class StrictJsonError extends Error {}

/** An integer as JSON writes one: no fraction, no exponent, no leading zero, no `-0` (docs/lock-integration.md 3.1). */
const INTEGER = /^-?(?:0|[1-9][0-9]*)$/;

/**
 * Parses `text` as one JSON value under the rules of docs/lock-integration.md 3.1: RFC 8259 syntax, no byte-order mark,
 * no duplicate member names (RFC 7493 2.3), no lone surrogates (RFC 7493 2.1), every number a safe integer written
 * in integer form, nesting at most MAX_JSON_DEPTH.
 */
export function parseStrictJson(text: string): StrictJsonReading {
  let at = 0;
  const fail = (what: string): never => {
    throw new StrictJsonError(`${what} at offset ${at}`);
  };
  const skipWhitespace = () => {
    while (at < text.length && (text[at] === ' ' || text[at] === '\t' || text[at] === '\n' || text[at] === '\r')) at++;
  };
  const readString = (): string => {
    at++; // the opening quote
    let out = '';
    for (;;) {
      if (at >= text.length) fail('unterminated string');
      const ch = text.charCodeAt(at);
      if (ch === 0x22) {
        at++;
        return out;
      }
      if (ch < 0x20) fail('control character in a string');
      if (ch >= 0xd800 && ch <= 0xdfff) {
        // A well-formed pair only (the fatal UTF-8 decoder already refused invalid bytes).
        const next = text.charCodeAt(at + 1);
        if (ch > 0xdbff || !(next >= 0xdc00 && next <= 0xdfff)) fail('lone surrogate');
        out += text.slice(at, at + 2);
        at += 2;
        continue;
      }
      if (ch !== 0x5c) {
        out += text[at++];
        continue;
      }
      const escape = text[at + 1];
      at += 2;
      const simple: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
      if (escape !== undefined && escape in simple) {
        out += simple[escape];
        continue;
      }
      if (escape !== 'u') fail('bad escape');
      const unit = readHex4();
      if (unit >= 0xd800 && unit <= 0xdbff) {
        if (text[at] !== '\\' || text[at + 1] !== 'u') fail('lone surrogate');
        at += 2;
        const low = readHex4();
        if (low < 0xdc00 || low > 0xdfff) fail('lone surrogate');
        out += String.fromCharCode(unit, low);
      } else if (unit >= 0xdc00 && unit <= 0xdfff) {
        fail('lone surrogate');
      } else {
        out += String.fromCharCode(unit);
      }
    }
  };
  const readHex4 = (): number => {
    const hex = text.slice(at, at + 4);
    if (!/^[0-9A-Fa-f]{4}$/.test(hex)) fail('bad \\u escape');
    at += 4;
    return parseInt(hex, 16);
  };
  const readNumber = (): number => {
    const match = /^-?[0-9.eE+-]+/.exec(text.slice(at, at + 40));
    const literal = match?.[0] ?? '';
    if (!INTEGER.test(literal) || literal === '-0') fail('a number that is not an integer in integer form');
    const value = Number(literal);
    if (!Number.isSafeInteger(value)) fail('an integer outside ±(2^53 − 1)');
    at += literal.length;
    return value;
  };
  const readValue = (depth: number): unknown => {
    skipWhitespace();
    const ch = text[at];
    if (ch === '{') {
      if (depth >= MAX_JSON_DEPTH) fail('nested too deep');
      at++;
      const object: Record<string, unknown> = {};
      const names = new Set<string>();
      skipWhitespace();
      if (text[at] === '}') {
        at++;
        return object;
      }
      for (;;) {
        skipWhitespace();
        if (text[at] !== '"') fail('expected a member name');
        const name = readString();
        if (names.has(name)) fail(`duplicate member ${JSON.stringify(name)}`);
        names.add(name);
        skipWhitespace();
        if (text[at] !== ':') fail('expected ":"');
        at++;
        // defineProperty: a member named __proto__ is data, never the prototype.
        Object.defineProperty(object, name, { value: readValue(depth + 1), enumerable: true, writable: true, configurable: true });
        skipWhitespace();
        if (text[at] === ',') {
          at++;
          continue;
        }
        if (text[at] === '}') {
          at++;
          return object;
        }
        fail('expected "," or "}"');
      }
    }
    if (ch === '[') {
      if (depth >= MAX_JSON_DEPTH) fail('nested too deep');
      at++;
      const array: unknown[] = [];
      skipWhitespace();
      if (text[at] === ']') {
        at++;
        return array;
      }
      for (;;) {
        array.push(readValue(depth + 1));
        skipWhitespace();
        if (text[at] === ',') {
          at++;
          continue;
        }
        if (text[at] === ']') {
          at++;
          return array;
        }
        fail('expected "," or "]"');
      }
    }
    if (ch === '"') return readString();
    if (ch === '-' || (ch !== undefined && ch >= '0' && ch <= '9')) return readNumber();
    for (const [literal, value] of [
      ['true', true],
      ['false', false],
      ['null', null],
    ] as const) {
      if (text.startsWith(literal, at)) {
        at += literal.length;
        return value;
      }
    }
    return fail('unexpected character (a byte-order mark is one)');
  };
  try {
    const value = readValue(0);
    skipWhitespace();
    if (at !== text.length) fail('text after the value');
    return { value };
  } catch (error) {
    if (error instanceof StrictJsonError) return { error: error.message };
    throw error;
  }
}

const PART = /^[A-Za-z0-9_-]+$/;

/** One base64url part (RFC 7515 2: no padding) in its one canonical spelling, or null. */
function decodePart(part: string): Buffer | null {
  if (!PART.test(part)) return null;
  const bytes = Buffer.from(part, 'base64url');
  // Canonical only: unused trailing bits must be zero, so that no two texts carry one signature's bytes.
  return bytes.toString('base64url') === part ? bytes : null;
}

/** A JSON object from UTF-8 bytes under parseStrictJson's rules, or null. */
function strictObject(bytes: Buffer): Record<string, unknown> | null {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return null;
  }
  const reading = parseStrictJson(text);
  if ('error' in reading) return null;
  const { value } = reading;
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
}

/**
 * Splits a compact JWS (RFC 7515 7.1) of at most `maxLength` characters whose header and payload are strict JSON
 * objects (docs/lock-integration.md 3.1), without verifying it; null for anything else. The same shape as
 * parseHolderJws, so verifyHolderSignature takes it.
 */
export function parseStrictCompactJws(jws: unknown, maxLength: number): ParsedHolderJws | null {
  if (typeof jws !== 'string' || jws.length > maxLength) return null;
  const parts = jws.split('.');
  if (parts.length !== 3) return null;
  const [headerPart, payloadPart, signaturePart] = parts as [string, string, string];
  const headerBytes = decodePart(headerPart);
  const payloadBytes = decodePart(payloadPart);
  const signature = decodePart(signaturePart);
  if (!headerBytes || !payloadBytes || !signature) return null;
  const header = strictObject(headerBytes);
  const payload = strictObject(payloadBytes);
  if (!header || !payload) return null;
  return { header, payload, signingInput: `${headerPart}.${payloadPart}`, signature };
}
