// private_key_jwt (RFC 7523 2.2 and 3, OpenID Connect Core 9; docs/api-reference.md 3.1): a client bound to a
// mobile device that has a key authenticates with a JWT signed by that key instead of a secret.
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import type { Logger } from 'pino';
import type { Database } from '../../db/database.js';
import { pruneClientAssertionIds, useClientAssertionId } from '../../db/repositories/client-assertion.repo.js';
import { findClientWithDeviceKey } from '../../db/repositories/client.repo.js';
import { parseHolderJws, readHolderPublicKey, verifyHolderSignatureOffLoop } from '../../shared/holder-keys.js';
import type { Clock } from '../context.js';
import { pruneEachTenant, sweepPeriodically } from '../retention.js';
import { toAuthenticatedClient, type AuthenticatedClient } from './client.service.js';
import { BoundedMap } from '../../shared/bounded-map.js';

/** RFC 7523 2.2: the one `client_assertion_type` this server takes. */
export const JWT_BEARER_ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

/** docs/api-reference.md 3.1: an assertion's `exp` is at most this far ahead of the server's clock. */
export const MAX_ASSERTION_LIFETIME_MS = 5 * 60_000;
/** How far a phone's clock may run ahead of the server's for `iat`, `nbf` and the `exp` bound (RFC 7519 4.1.4: "some small leeway"). */
export const ASSERTION_CLOCK_SKEW_MS = 30_000;
/** An assertion is a few hundred bytes; anything far longer is not one, and is refused before it is parsed. */
const MAX_ASSERTION_LENGTH = 8_192;
/** Longest `jti` kept: a random id is far shorter, and a bound keeps the table's rows small. */
export const MAX_ASSERTION_ID_LENGTH = 256;
/** Explicit typing (RFC 8725 3.11): a JWS the device signed for another purpose (a key proof, a door proof) is no assertion. */
const ASSERTION_TYPES = new Set(['JWT', 'client-authentication+jwt']);
/** Keys read from their JWK, by RFC 7638 thumbprint: a phone authenticating again verifies without reading its key anew. */
const KEY_CACHE_MAX_ENTRIES = 10_000;

/** Verified against when the client or its key is unknown, so that every refusal does the same work (docs/security-cases.md 2). */
const DUMMY_KEY = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey;

export interface ClientAssertionServiceOptions {
  db: Database;
  clock: Clock;
  log: Logger;
  /** The identities an assertion's `aud` may name (RFC 7523 3, item 3): the token endpoints and the issuer. */
  audiences: readonly string[];
}

interface AssertionClaims {
  clientId: string;
  jti: string;
  expiresAt: number;
}

const isNumericDate = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value);
const isIdentifier = (value: unknown, max: number): value is string =>
  typeof value === 'string' && value.length > 0 && value.length <= max && !value.includes('\u0000');

/** The claims RFC 7523 3 requires, checked against the server's clock; null when any is missing or wrong. */
function readClaims(payload: Record<string, unknown>, now: number, audiences: readonly string[]): AssertionClaims | null {
  const { iss, sub, aud, exp, iat, nbf, jti } = payload;
  // Item 1 and 2, OpenID Connect Core 9: issuer and subject are both the client's id.
  if (!isIdentifier(iss, 256) || sub !== iss) return null;
  // Item 3: the server's own identity among the audiences, as a string or in an array of strings.
  const named = typeof aud === 'string' ? [aud] : Array.isArray(aud) && aud.every((item) => typeof item === 'string') ? (aud as string[]) : [];
  if (!named.some((item) => audiences.includes(item))) return null;
  // Item 4: not expired, and not valid for longer than an assertion needs (docs/api-reference.md 3.1).
  if (!isNumericDate(exp) || exp * 1000 <= now || exp * 1000 > now + MAX_ASSERTION_LIFETIME_MS + ASSERTION_CLOCK_SKEW_MS) return null;
  // Items 5 and 6: honoured when present.
  if (nbf !== undefined && (!isNumericDate(nbf) || nbf * 1000 > now + ASSERTION_CLOCK_SKEW_MS)) return null;
  if (iat !== undefined && (!isNumericDate(iat) || iat * 1000 > now + ASSERTION_CLOCK_SKEW_MS)) return null;
  // Item 7: an id to use once.
  if (!isIdentifier(jti, MAX_ASSERTION_ID_LENGTH)) return null;
  return { clientId: iss, jti, expiresAt: Math.ceil(exp * 1000) };
}

export function createClientAssertionService({ db, clock, log, audiences }: ClientAssertionServiceOptions) {
  const keys = new BoundedMap<string, KeyObject>(KEY_CACHE_MAX_ENTRIES);
  let stopSweeping: (() => void) | null = null;

  function keyOf(thumbprint: string, publicKey: unknown): KeyObject | null {
    const cached = keys.get(thumbprint);
    if (cached) return cached;
    const reading = readHolderPublicKey(publicKey);
    if ('error' in reading) return null;
    // Map order is insertion order: the first key is the one read longest ago.
    keys.set(thumbprint, reading.keyObject);
    return reading.keyObject;
  }

  return {
    /**
     * The client the assertion authenticates, or null. Null whatever failed (a claim, the signature, the client or its
     * key, a used `jti`), so that a caller learns nothing of which check it was (RFC 6749 5.2 `invalid_client`). The
     * `jti` is spent only once the signature verified: no one without the key can use up a phone's ids.
     */
    async authenticate(assertion: string): Promise<AuthenticatedClient | null> {
      const parsed = parseHolderJws(assertion, MAX_ASSERTION_LENGTH);
      if (!parsed) return null;
      const typ = parsed.header['typ'];
      if ((typ !== undefined && !(typeof typ === 'string' && ASSERTION_TYPES.has(typ))) || parsed.header['crit'] !== undefined) return null;
      const now = clock();
      const claims = readClaims(parsed.payload, now, audiences);
      if (!claims) return null;
      const found = await findClientWithDeviceKey(db, claims.clientId);
      const record = found?.record ?? null;
      const key = found?.deviceKey ? keyOf(found.deviceKey.thumbprint, found.deviceKey.publicKey) : null;
      // RFC 8725 3.1: ES256 and nothing else (the check refuses `none`, HS256 and every other alg).
      const verified = await verifyHolderSignatureOffLoop(parsed, key ?? DUMMY_KEY);
      if (!record || !key || !verified) {
        log.debug({ clientId: claims.clientId }, 'client assertion refused');
        return null;
      }
      if (!(await useClientAssertionId(db, record.tenantId, record.clientId, claims.jti, claims.expiresAt))) {
        log.info({ clientId: record.clientId }, 'client assertion refused: its jti was used before');
        return null;
      }
      return toAuthenticatedClient(record);
    },

    /** Deletes the used ids whose assertion has expired, tenant by tenant in bounded batches; answers how many went. */
    async prune(): Promise<number> {
      const now = clock();
      return pruneEachTenant(db, (tenantId, limit) => pruneClientAssertionIds(db, tenantId, now, limit));
    },

    start(): void {
      stopSweeping = sweepPeriodically(() => this.prune(), log, 'client assertion id');
    },

    stop(): void {
      stopSweeping?.();
      stopSweeping = null;
    },
  };
}

export type ClientAssertionService = ReturnType<typeof createClientAssertionService>;
