// Ticket credentials (docs/api-reference.md 6.3, 8.1, 8.2): the compact JWS a lock checks offline, signed with the
// tenant's ticket key under the tenant's own issuer, valid at most CREDENTIAL_MAX_LIFETIME, encrypted at rest.
import type { Database } from '../db/database.js';
import type { LockRevocations } from '../db/repositories/download.repo.js';
import { findTenantById } from '../db/repositories/tenant.repo.js';
import type { TicketRecord } from '../db/repositories/ticket.repo.js';
// Explicit types (RFC 8725 3.11): a credential, a revocation list and an access token are never taken for each other.
import { CREDENTIAL_NBF_SKEW_SECONDS, CREDENTIAL_TYPE, LOCK_STATE_TYPE, REVOCATION_LIST_TYPE, type CredentialClaims } from '../shared/credential-check.js';
import { expandSchedule } from '../shared/schedule/expansion.js';
import { seal, unseal, type SecretsKey } from '../shared/crypto.js';
import { SEALED_AAD } from './keys/sealed-values.js';
import { signCompactJws } from '../shared/jws.js';
import type { TicketKeyService } from './keys/ticket-keys.service.js';
import { BoundedMap } from '../shared/bounded-map.js';

/** A public ticket key as published (RFC 7517, RFC 8037): never a private member. */
export interface PublicJwk {
  kty: string;
  kid: string;
  alg: string;
  use?: string;
  crv?: string;
  x?: string;
  y?: string;
}

/** A JWKS (RFC 7517 section 5) as locks receive it. */
export interface KeySet {
  keys: PublicJwk[];
}

/**
 * Signed revocation lists kept for reuse: a list is signed again only when its content changes (a new serial, an
 * expired revocation dropping out, a key-set change) or after REVOCATION_LIST_REUSE_MS, so a phone's repeated
 * downloads cost look-ups, not signatures. Bounded: the oldest entries go first.
 */
const REVOCATION_LIST_CACHE_SIZE = 10_000;
const REVOCATION_LIST_REUSE_MS = 60_000;

/** A credential as handed out, with what is stored beside its ciphertext. */
export interface SignedCredential {
  credential: string;
  kid: string;
  /** The signing key's algorithm (JWT_ALG when it was made). */
  alg: string;
  /** `iat` in milliseconds (a whole second). */
  issuedAt: number;
  /** `exp` in milliseconds (a whole second). */
  expiresAt: number;
}

/** The credential stored for a ticket (docs/security-cases.md G48: sealed under SECRETS_KEY). */
export interface StoredCredential {
  sealed: Buffer;
  /** Null: to be signed anew (its lock's zone changed since, download.repo.ts forgetScheduledCredentials). */
  kid: string | null;
  issuedAt: number;
  expiresAt: number;
}

export interface CredentialServiceOptions {
  db: Database;
  /** PUBLIC_URL: each tenant's issuer is `{publicUrl}/tenants/{name}` (docs/api-reference.md 8.1). */
  publicUrl: string;
  keys: TicketKeyService;
  secretsKey: SecretsKey;
  /** CREDENTIAL_MAX_LIFETIME in seconds (docs/api-reference.md 8.2). */
  maxLifetimeSeconds: number;
}

/**
 * A ticket as it is signed: with the time zone of its lock (docs/api-reference.md 9), which its schedule is read in. The
 * windows are computed when the credential is signed, so a credential signed before the lock's zone changed keeps its
 * windows until the phone downloads again (a zone change marks the stored ones to be signed anew:
 * forgetScheduledCredentials), at most CREDENTIAL_MAX_LIFETIME.
 */
export type SignableTicket = TicketRecord & {
  lockTimeZone: string;
  /** The thumbprint of the device's key (docs/api-reference.md 11.2): the credential is bound to it as `cnf.jkt`. */
  deviceKeyThumbprint?: string | null;
};

/** The `cnf.jkt` a signed credential is bound to (RFC 7800 3.1), or null when it is bound to no key. */
export function boundThumbprint(credential: string): string | null {
  const payload = credential.split('.')[1];
  if (payload === undefined) return null;
  try {
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { cnf?: { jkt?: unknown } };
    return typeof claims.cnf?.jkt === 'string' ? claims.cnf.jkt : null;
  } catch {
    return null;
  }
}

/** The tenant's credential issuer (docs/api-reference.md 8.1). Tenant names are URL-safe (tenant.service.ts). */
export const tenantIssuer = (publicUrl: string, tenantName: string) => `${publicUrl.replace(/\/+$/, '')}/tenants/${encodeURIComponent(tenantName)}`;

export function createCredentialService({ db, publicUrl, keys, secretsKey, maxLifetimeSeconds }: CredentialServiceOptions) {
  const lifetimeMs = maxLifetimeSeconds * 1000;
  /** Tenants are never renamed: an id's issuer is cached for the life of the process. */
  const issuers = new Map<string, Promise<string>>();
  const signedLists = new BoundedMap<string, { content: string; signedAt: number; jws: string }>(REVOCATION_LIST_CACHE_SIZE);
  const signedStates = new BoundedMap<string, { content: string; signedAt: number; jws: string }>(REVOCATION_LIST_CACHE_SIZE);

  /** Makes the tenant's first ticket key if it has none (a key-set change of its own, docs/api-reference.md 8.1). */
  async function ensureKey(tenantId: string): Promise<void> {
    await keys.signingKey(tenantId);
  }

  /**
   * The tenant's published ticket keys as the database has them now (docs/api-reference.md 8.1), generating its first key
   * if it has none yet. Read after any change-log position it is sent with: a newer set with an older position is
   * merely sent again, an older set with a newer position would never be corrected.
   */
  async function keySet(tenantId: string): Promise<KeySet> {
    await ensureKey(tenantId);
    // The key service publishes public members only (kty, crv, x, y) with kid, alg and use.
    return { keys: (await keys.currentPublicJwks(tenantId)) as PublicJwk[] };
  }

  /**
   * Cached with the look-up itself, not only its result: a cold process signing 500 credentials at once makes one
   * query, not 500 that would queue for the pool past its connect timeout. A failed look-up is not cached.
   */
  function issuerOf(tenantId: string): Promise<string> {
    let issuer = issuers.get(tenantId);
    if (issuer === undefined) {
      issuer = findTenantById(db, tenantId).then((tenant) => {
        if (!tenant) throw new Error(`No tenant ${tenantId}`);
        return tenantIssuer(publicUrl, tenant.name);
      });
      issuers.set(tenantId, issuer);
      issuer.catch(() => issuers.delete(tenantId));
    }
    return issuer;
  }

  return {
    lifetimeMs,

    issuerOf,

    /**
     * When a ticket's credential can first be signed (docs/api-reference.md 8.2): from the first whole second at which a
     * credential signed then (exp = iat + lifetime) would open at least one second after `nbf`. Earlier, a credential
     * would be valid for no instant at all. Undefined: it can be signed now.
     */
    availableFrom(ticket: TicketRecord, now: number): number | undefined {
      const nbfMs = Math.ceil(ticket.beginDate / 1000) * 1000;
      if (nbfMs < Math.floor(now / 1000) * 1000 + lifetimeMs) return undefined;
      return nbfMs - lifetimeMs + 1000;
    },

    /**
     * Whether a download must sign anew: nothing stored, its key no longer published (an emergency rotation) or
     * unknown (its windows are of a zone its lock no longer has, docs/api-reference.md 9), or less than half its lifetime
     * left while a new one would last longer (docs/api-reference.md 8.2).
     */
    needsSigning(ticket: TicketRecord, stored: StoredCredential | null, publishedKids: ReadonlySet<string>, now: number): boolean {
      if (!stored || stored.kid === null || !publishedKids.has(stored.kid)) return true;
      // The stored credential's own exp: `expiresAt` is the latest exp ever handed out for the ticket (it bounds the
      // revocations, docs/api-reference.md 8.2) and may be later, e.g. a credential of the old form (migration 009) or one
      // stored by a concurrent download.
      const ownExpiry = Math.min(stored.expiresAt, stored.issuedAt + lifetimeMs, Math.floor(ticket.endDate / 1000) * 1000);
      const halfLife = (ownExpiry - stored.issuedAt) / 2;
      if (ownExpiry - now >= halfLife) return false;
      // Compared as the whole seconds `exp` would carry: re-signing only to reach the same second gains nothing.
      return Math.floor(expiryOf(ticket, now) / 1000) * 1000 > ownExpiry;
    },

    /** Signs one ticket: its claims (`claimsOf`) under the tenant's signing key. */
    async sign(ticket: SignableTicket, now: number): Promise<SignedCredential> {
      const signing = await keys.signingKey(ticket.tenantId);
      const claims = await claimsOf(ticket, now);
      const credential = await signCompactJws(signing, CREDENTIAL_TYPE, { ...claims });
      return { credential, kid: signing.kid, alg: signing.alg, issuedAt: claims.iat * 1000, expiresAt: claims.exp * 1000 };
    },

    claimsOf,

    keySet,

    ensureKey,

    /**
     * docs/api-reference.md 8.3: one lock's revocation list, `{iss, aud, serial, iat, revoked, keys, holderBinding,
     * revokedKeys}` signed with the
     * tenant's ticket key. The key set rides along so a phone's visit also brings key changes (docs/api-reference.md 8.1).
     */
    async revocationList(tenantId: string, lock: LockRevocations, published: KeySet, now: number): Promise<string> {
      const signing = await keys.signingKey(tenantId);
      const cacheKey = `${tenantId}:${lock.securedObjectId}`;
      const content = JSON.stringify([lock.serial, lock.revoked, lock.revokedKeys, lock.holderBinding, published.keys.map((key) => key.kid), signing.kid]);
      const cached = signedLists.get(cacheKey);
      if (cached && cached.content === content && now - cached.signedAt < REVOCATION_LIST_REUSE_MS) return cached.jws;
      const jws = await signCompactJws(signing, REVOCATION_LIST_TYPE, {
        iss: await issuerOf(tenantId),
        aud: lock.securedObjectId,
        serial: lock.serial,
        iat: Math.floor(now / 1000),
        revoked: lock.revoked,
        keys: published,
        // docs/api-reference.md 11.2, 11.4: the policy and the revoked phone keys reach locks that are never online.
        holderBinding: lock.holderBinding,
        revokedKeys: lock.revokedKeys,
      });
      signedLists.set(cacheKey, { content, signedAt: now, jws });
      return jws;
    },

    /**
     * docs/api-reference.md 15, docs/lock-integration.md 11: one lock's state, `{iss, aud, serial, mode, iat}` signed with
     * the tenant's ticket key. Cached like revocation lists: signed again when the serial, the mode or the signing
     * key changes, or after REVOCATION_LIST_REUSE_MS.
     */
    async lockState(tenantId: string, securedObjectId: string, state: { serial: number; mode: 'lockdown' | 'normal' }, now: number): Promise<string> {
      const signing = await keys.signingKey(tenantId);
      const cacheKey = `${tenantId}:${securedObjectId}`;
      const content = JSON.stringify([state.serial, state.mode, signing.kid]);
      const cached = signedStates.get(cacheKey);
      if (cached && cached.content === content && now - cached.signedAt < REVOCATION_LIST_REUSE_MS) return cached.jws;
      const jws = await signCompactJws(signing, LOCK_STATE_TYPE, {
        iss: await issuerOf(tenantId),
        aud: securedObjectId,
        serial: state.serial,
        mode: state.mode,
        iat: Math.floor(now / 1000),
      });
      signedStates.set(cacheKey, { content, signedAt: now, jws });
      return jws;
    },

    seal(tenantId: string, ticketId: string, credential: string): Buffer {
      return seal(secretsKey, credential, SEALED_AAD.credential(tenantId, ticketId));
    },

    unseal(tenantId: string, ticketId: string, sealed: Buffer): string {
      return unseal(secretsKey, sealed, SEALED_AAD.credential(tenantId, ticketId));
    },
  };

  /**
   * The claims a credential of the ticket signed at `now` carries (docs/api-reference.md 6.3), unsigned: what `sign` signs,
   * and what the explain service (docs/api-reference.md 8.6) checks for a phone that has not downloaded the ticket yet. The
   * seconds never widen `[beginDate, endDate)`: `nbf` rounds up and `exp` rounds down (RFC 7519 4.1.4: not accepted
   * on or after `exp`), and `exp` is at most `iat` + the lifetime. `nbf` is also never earlier than `iat` minus
   * CREDENTIAL_NBF_SKEW_SECONDS (docs/security-cases.md H54): a lock whose clock was reset to the past refuses it.
   *
   * With a schedule, `win` holds its windows in the lock's zone as UTC intervals (docs/api-reference.md 9), `[]` when none
   * falls in the credential's span: never omitted then, since an absent `win` means "no schedule". The span ends at
   * `exp` and starts at `nbf`, but no earlier than one lifetime before `iat`: a ticket valid since long ago would
   * otherwise carry years of windows (and exceed what one expansion covers), and a lock whose clock runs that far
   * behind its signer has no use for them.
   */
  async function claimsOf(ticket: SignableTicket, now: number): Promise<CredentialClaims> {
    const iat = Math.floor(now / 1000);
    const nbf = Math.max(Math.ceil(ticket.beginDate / 1000), iat - CREDENTIAL_NBF_SKEW_SECONDS);
    const exp = Math.floor(expiryOf(ticket, now) / 1000);
    const win =
      ticket.schedule === null
        ? undefined
        : expandSchedule(ticket.schedule, ticket.lockTimeZone, Math.max(nbf * 1000, ticket.beginDate, iat * 1000 - lifetimeMs), Math.min(exp * 1000, ticket.endDate));
    return {
      iss: await issuerOf(ticket.tenantId),
      jti: ticket.id,
      sub: ticket.mobileDeviceId,
      aud: ticket.securedObjectId,
      nbf,
      exp,
      iat,
      beginDate: ticket.beginDate,
      endDate: ticket.endDate,
      cmd: ticket.commands,
      chn: ticket.channels,
      ...(win !== undefined ? { win } : {}),
      // RFC 7800 3.1, docs/api-reference.md 11.2: only the phone holding this key's private half can prove it at the door.
      ...(ticket.deviceKeyThumbprint ? { cnf: { jkt: ticket.deviceKeyThumbprint } } : {}),
      // docs/lock-integration.md 11: the lock lets an override ticket's credential open during a lockdown.
      ...(ticket.override === true ? { ovr: true as const } : {}),
    };
  }

  /** The end of a credential signed now, in ms: one lifetime from the whole second of `iat`, never past `endDate`. */
  function expiryOf(ticket: TicketRecord, now: number): number {
    return Math.min(ticket.endDate, Math.floor(now / 1000) * 1000 + lifetimeMs);
  }
}

export type CredentialService = ReturnType<typeof createCredentialService>;
