// Helpers for the docs/security-cases.md tests: RFC 6749 error assertions, crafted JWTs, timing medians, an Access API probe.
import { KeyObject, randomUUID, sign as signWithKeyObject, webcrypto } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { LightMyRequestResponse } from 'fastify';
import { SignJWT, type JWTPayload } from 'jose';
import { expect } from 'vitest';
import type { App } from '../../src/app.js';
import type { Database } from '../../src/db/database.js';
import bearerAuth from '../../src/plugins/bearer-auth.js';

/** RFC 6749 5.2: the status, `{error, error_description}` and nothing else, JSON, never cached. */
export function expectOAuthError(response: LightMyRequestResponse, status: number, error: string, description?: string) {
  expect(response.statusCode, response.body).toBe(status);
  expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
  expect(response.headers['cache-control']).toBe('no-store');
  const body = response.json() as Record<string, unknown>;
  expect(Object.keys(body).sort()).toEqual(['error', 'error_description']);
  expect(body.error).toBe(error);
  expect(body.error_description).toEqual(description ?? expect.any(String));
  return body as { error: string; error_description: string };
}

/** Headers that legitimately differ between two otherwise identical answers. */
const VOLATILE_HEADERS = new Set(['x-request-id', 'date', 'ratelimit-remaining', 'ratelimit-reset', 'ratelimit-limit', 'content-length']);

/** The headers of an answer without the per-request ones, for "looks the same" comparisons. */
export function stableHeaders(response: LightMyRequestResponse): Record<string, unknown> {
  return Object.fromEntries(Object.entries(response.headers).filter(([name]) => !VOLATILE_HEADERS.has(name)));
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/**
 * Runs each probe `rounds` times, interleaved and in a rotating order so drift (GC, JIT, a busy neighbour) hits all
 * of them alike; returns the median duration of each in milliseconds. `probe(i)` gets the round number, so probes
 * can use fresh inputs every time.
 */
export async function interleavedMedians<K extends string>(
  probes: Record<K, (round: number) => Promise<unknown>>,
  rounds: number,
  firstRound = 0,
): Promise<Record<K, number>> {
  const names = Object.keys(probes) as K[];
  const durations = Object.fromEntries(names.map((name) => [name, [] as number[]])) as Record<K, number[]>;
  for (let round = 0; round < rounds; round++) {
    for (let offset = 0; offset < names.length; offset++) {
      const name = names[(round + offset) % names.length]!;
      const started = performance.now();
      await probes[name](firstRound + round);
      durations[name].push(performance.now() - started);
    }
  }
  return Object.fromEntries(names.map((name) => [name, median(durations[name])])) as Record<K, number>;
}

/**
 * "A similar time": the medians of interleaved runs lie within 20 % of the slowest, with an absolute floor against
 * scheduler noise. On a small, shared machine a burst of load can skew one measurement, so a measurement that misses
 * the bound is repeated (at most `attempts` times); a real difference (a skipped dummy check) misses it every time.
 */
export async function expectSimilarDurations<K extends string>(
  probes: Record<K, (round: number) => Promise<unknown>>,
  { rounds = 30, attempts = 3, floorMs = 3 }: { rounds?: number; attempts?: number; floorMs?: number } = {},
): Promise<Record<K, number>> {
  await interleavedMedians(probes, 5, 1_000_000); // warm-up: JIT, connection pool, statement caches
  let medians = {} as Record<K, number>;
  let spread = 0;
  let bound = 0;
  for (let attempt = 0; attempt < attempts; attempt++) {
    // Fresh round numbers on every attempt: probes may count failures per input.
    medians = await interleavedMedians(probes, rounds, attempt * rounds);
    const values = Object.values(medians) as number[];
    spread = Math.max(...values) - Math.min(...values);
    bound = Math.max(0.2 * Math.max(...values), floorMs);
    if (spread <= bound) break;
  }
  const shown = Object.entries(medians).map(([name, value]) => `${name} ${(value as number).toFixed(2)} ms`).join(', ');
  expect(spread, `medians ${shown} differ by more than ${bound.toFixed(2)} ms`).toBeLessThanOrEqual(bound);
  return medians;
}

export interface CraftOptions {
  /** Protected header members to add or override; `undefined` removes one (e.g. `typ`). */
  header?: Record<string, unknown>;
  /** Claims to add or override; `undefined` removes one (e.g. `exp`). */
  claims?: Record<string, unknown>;
  /** Extension header names the signer should accept in `crit`. */
  crit?: Record<string, boolean>;
}

function withoutUndefined(record: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined));
}

/**
 * An access token signed with the server's real signing key, so a test can change one property (header, claim) and
 * know that only that property makes the server refuse it. Defaults mirror what the token endpoint issues.
 */
export async function craftAccessToken(
  app: App,
  issuer: string,
  subject: { clientId: string; tenantId: string; scope: string; aud?: string | string[] },
  options: CraftOptions = {},
): Promise<string> {
  const key = await app.services.accessTokenKeys.signingKey();
  const iat = Math.floor(app.services.clock() / 1000);
  const payload = withoutUndefined({
    iss: issuer,
    sub: subject.clientId,
    aud: subject.aud ?? 'operatorapi',
    client_id: subject.clientId,
    tenant: subject.tenantId,
    scope: subject.scope,
    iat,
    exp: iat + 3600,
    jti: randomUUID(),
    ...options.claims,
  });
  const header = withoutUndefined({ alg: key.alg, kid: key.kid, typ: 'at+jwt', ...options.header });
  const jwt = new SignJWT(payload as JWTPayload).setProtectedHeader(header as { alg: string });
  return jwt.sign(key.privateKey, options.crit ? { crit: options.crit } : undefined);
}

export const b64url = (value: string | Buffer) => Buffer.from(value).toString('base64url');

/**
 * A compact JWS over exactly the given header and payload text, signed with the server's real key: for headers
 * and payloads that jose would refuse to produce (unknown `crit`, a payload that is not JSON).
 */
export async function signRaw(app: App, header: Record<string, unknown> | string, payload: string): Promise<string> {
  const key = await app.services.accessTokenKeys.signingKey();
  const headerText = typeof header === 'string' ? header : JSON.stringify(withoutUndefined({ alg: key.alg, kid: key.kid, typ: 'at+jwt', ...header }));
  const input = Buffer.from(`${b64url(headerText)}.${b64url(payload)}`);
  let signature: Buffer;
  if (key.privateKey instanceof KeyObject) {
    signature = signWithKeyObject(key.alg === 'EdDSA' ? null : 'sha256', input, { key: key.privateKey, dsaEncoding: 'ieee-p1363' });
  } else {
    const algorithm = key.alg === 'EdDSA' ? { name: 'Ed25519' } : { name: 'ECDSA', hash: 'SHA-256' };
    signature = Buffer.from(await webcrypto.subtle.sign(algorithm, key.privateKey as webcrypto.CryptoKey, input));
  }
  return `${input.toString()}.${b64url(signature)}`;
}

/** Decoded header and payload of a compact JWS, without verifying it. */
export function decodeJwt(token: string): { header: Record<string, unknown>; payload: Record<string, unknown> } {
  const [header, payload] = token.split('.');
  return {
    header: JSON.parse(Buffer.from(header!, 'base64url').toString('utf8')) as Record<string, unknown>,
    payload: JSON.parse(Buffer.from(payload!, 'base64url').toString('utf8')) as Record<string, unknown>,
  };
}

/** The path of the Access API probe route that `registerAccessApiProbe` adds (scope `devices:read`). */
export const ACCESS_API_PROBE = '/v1/security-probe';

/**
 * The Access API has no routes yet; this adds one, behind the same bearer plugin with `aud: accessapi`, so tests can
 * check that password and refresh tokens work there, stop working when revoked, and are refused elsewhere.
 */
export async function registerAccessApiProbe(app: App): Promise<void> {
  await app.register(async (scope) => {
    await scope.register(bearerAuth, { audience: 'accessapi', tokens: app.services.tokens });
    scope.get(ACCESS_API_PROBE, { config: { scope: 'devices:read' } }, async (request) => ({
      sub: request.auth.subject,
      tenant: request.auth.tenantId,
    }));
  });
}

/** Every row of every table as text, to prove a secret is stored nowhere in the clear. */
export async function databaseText(db: Database): Promise<string> {
  const { rows: tables } = await db.query<{ table_name: string }>(
    "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'",
  );
  const parts: string[] = [];
  for (const { table_name: table } of tables) {
    const { rows } = await db.query<{ row: string }>(`SELECT x::text AS row FROM "${table}" x`);
    parts.push(...rows.map((row) => row.row));
  }
  return parts.join('\n');
}
