// A lock simulator: what an offline lock does with a presented credential (docs/contract.md 6.3), holding only the JWKS,
// its own secured-object id and the revocations it learnt by syncing (docs/contract.md 6.2).
import { compactVerify, decodeProtectedHeader, importJWK, type JSONWebKeySet, type JWK } from 'jose';

export type LockDecision =
  | { decision: 'open'; reason: 'valid'; ticketId: string }
  | { decision: 'deny'; reason: string; ticketId?: string };

/** The part of a sync answer the lock uses. */
export interface SyncAnswer {
  tokens: { id: string }[];
  revocations: { tokenId: string; revocationDate: number }[];
  cursor: string;
}

interface CredentialClaims {
  iss?: unknown;
  jti?: unknown;
  sub?: unknown;
  aud?: unknown;
  beginDate?: unknown;
  endDate?: unknown;
  cmd?: unknown;
  chn?: unknown;
}

export class LockSimulator {
  private readonly revoked = new Set<string>();
  private keys: Map<string, JWK>;
  /** Where the next sync continues; undefined until the first one. */
  cursor: string | undefined;

  constructor(
    readonly securedObjectId: string,
    jwks: JSONWebKeySet,
    private readonly issuer?: string,
  ) {
    this.keys = new Map(jwks.keys.filter((key) => typeof key.kid === 'string').map((key) => [key.kid!, key]));
  }

  /** A lock gets new keys with its firmware or configuration; credentials under other kids are refused. */
  replaceKeys(jwks: JSONWebKeySet): void {
    this.keys = new Map(jwks.keys.filter((key) => typeof key.kid === 'string').map((key) => [key.kid!, key]));
  }

  /** Applies one sync answer: remembers the revocations and where to continue. */
  apply(answer: SyncAnswer): void {
    for (const revocation of answer.revocations) this.revoked.add(revocation.tokenId);
    // A ticket issued again after a revocation has a new id, so a revoked id never becomes valid again.
    this.cursor = answer.cursor;
  }

  /** Syncs until the server has nothing more: `fetchPage(cursor)` calls GET /deviceapi/securedobjects/{id}/sync. */
  async sync(fetchPage: (cursor: string | undefined) => Promise<{ answer: SyncAnswer; more: boolean }>): Promise<void> {
    for (let page = 0; page < 10_000; page++) {
      const { answer, more } = await fetchPage(this.cursor);
      this.apply(answer);
      if (!more) return;
    }
    throw new Error('sync did not finish');
  }

  isRevoked(ticketId: string): boolean {
    return this.revoked.has(ticketId);
  }

  /** Decides whether the presented credential lets `command` through at `atMs`, and why. */
  async decide(credential: string, command: string, atMs: number, channel = 'btlespp'): Promise<LockDecision> {
    let header;
    try {
      header = decodeProtectedHeader(credential);
    } catch {
      return { decision: 'deny', reason: 'malformed credential' };
    }
    if (header.typ !== 'ticket+jwt') return { decision: 'deny', reason: 'not a ticket credential' };
    const jwk = typeof header.kid === 'string' ? this.keys.get(header.kid) : undefined;
    if (!jwk || typeof header.alg !== 'string' || (jwk.alg !== undefined && jwk.alg !== header.alg)) {
      return { decision: 'deny', reason: 'unknown signing key' };
    }
    let claims: CredentialClaims;
    try {
      const key = await importJWK(jwk, header.alg);
      const { payload } = await compactVerify(credential, key, { algorithms: [header.alg] });
      claims = JSON.parse(new TextDecoder().decode(payload)) as CredentialClaims;
    } catch {
      return { decision: 'deny', reason: 'bad signature' };
    }
    const ticketId = typeof claims.jti === 'string' ? claims.jti : undefined;
    const deny = (reason: string): LockDecision => ({ decision: 'deny', reason, ...(ticketId ? { ticketId } : {}) });
    if (!ticketId) return deny('malformed credential');
    if (this.issuer !== undefined && claims.iss !== this.issuer) return deny('wrong issuer');
    if (claims.aud !== this.securedObjectId) return deny('wrong lock');
    if (typeof claims.beginDate !== 'number' || typeof claims.endDate !== 'number') return deny('malformed credential');
    if (atMs < claims.beginDate) return deny('not yet valid');
    if (atMs >= claims.endDate) return deny('expired');
    if (!Array.isArray(claims.cmd) || !claims.cmd.includes(command)) return deny('command not permitted');
    if (!Array.isArray(claims.chn) || !claims.chn.includes(channel)) return deny('channel not permitted');
    if (this.revoked.has(ticketId)) return deny('revoked');
    return { decision: 'open', reason: 'valid', ticketId };
  }
}
