// A phone simulator: the reference for the phone's side of the exchange at the door (docs/lock-integration.md 4). It
// holds its P-256 key pair and its download (docs/api-reference.md 6.1), checks a lock's hello with the `lockKey` of
// the matching ticket before it shows anything, answers with the credential and a proof of its key, and carries the
// lock's receipts to the service.
import { checkHello, PROOF_TYPE, type HelloCheck } from '../shared/door-exchange.js';
import { sha256Base64url, type HolderPublicKey } from '../shared/holder-keys.js';
import { es256KeyPair, signEs256, type Es256KeyPair } from './es256.js';

/** One token of a phone download, with what the exchange needs of it. */
export interface DownloadedToken {
  id: string;
  securedObjectId: string;
  /** The compact credential; absent while the token has none yet (docs/api-reference.md 8.2). */
  credential?: string;
  /** The lock's public key; absent while the lock has none. */
  lockKey?: HolderPublicKey;
  /** The lock's revocation list, on the first token of each lock (docs/api-reference.md 8.3). */
  revocationList?: string;
  /** The lock's signed state, beside it (docs/api-reference.md 15). */
  lockState?: string;
}

/** What the phone shows a lock that greeted it properly: the credential and its proof (null for an unbound one). */
export interface Presentation {
  tokenId: string;
  credential: string;
  proof: string | null;
  /** The lock's revocation list the phone carries, to hand over too. */
  revocationList?: string;
  /** The lock's state the phone carries, to hand over before the decision (docs/lock-integration.md 11). */
  lockState?: string;
}

export type PresentationResult = { presentation: Presentation } | { refused: 'no-token' | 'no-lock-key' | Extract<HelloCheck, { refused: string }>['refused'] };

/** The payload of a credential, read without verifying (the phone trusts its own download, over TLS). */
function credentialClaims(credential: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(Buffer.from(credential.split('.')[1] ?? '', 'base64url').toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

export class PhoneSimulator {
  private readonly key: Es256KeyPair;
  private tokens: DownloadedToken[] = [];
  private readonly receipts: { securedObjectId: string; receipt: string }[] = [];

  /** `key`: a private P-256 JWK; without it the phone makes a new key pair, as at enrolment. */
  constructor(options: { key?: unknown } = {}) {
    this.key = es256KeyPair(options.key);
  }

  /** The phone's public key, as it registers it. */
  get publicKey(): HolderPublicKey {
    return { ...this.key.publicKey };
  }

  /** The RFC 7638 thumbprint of its key: the `cnf.jkt` of its bound credentials. */
  get keyThumbprint(): string {
    return this.key.thumbprint;
  }

  /** Takes a download (docs/api-reference.md 6.1), replacing the one it held. */
  store(tokens: readonly DownloadedToken[]): void {
    this.tokens = tokens.map((token) => ({ ...token }));
  }

  /**
   * Answers a lock's hello (docs/lock-integration.md 4.2): picks its token for `lockId` with a credential, checks the
   * hello with that token's `lockKey` (signature, issuer, lock id, a fresh `iat` on the phone's clock `atMs`) and only
   * then shows the credential, with a proof over the hello's nonce for a bound one. A lock that fails gets nothing.
   */
  present(lockId: string, hello: string, command: string, atMs: number): PresentationResult {
    const token = this.tokens.find((candidate) => candidate.securedObjectId === lockId && candidate.credential !== undefined);
    if (!token?.credential) return { refused: 'no-token' };
    // Without the lock's key the phone cannot tell this lock from another: it shows nothing (docs/lock-integration.md 4.2).
    if (token.lockKey === undefined) return { refused: 'no-lock-key' };
    const claims = credentialClaims(token.credential);
    const issuer = typeof claims?.iss === 'string' ? claims.iss : '';
    const checked = checkHello(hello, token.lockKey, { issuer, lockId, at: atMs });
    if ('refused' in checked) return { refused: checked.refused };
    const bound = typeof claims?.cnf === 'object' && claims.cnf !== null;
    const proof = bound
      ? signEs256(
          this.key.privateKey,
          { typ: PROOF_TYPE, jwk: this.key.publicKey },
          { aud: lockId, nonce: checked.hello.nonce, ath: sha256Base64url(token.credential), cmd: command, iat: Math.floor(atMs / 1000) },
        )
      : null;
    // The lists and states ride on the first token of each lock (docs/api-reference.md 8.3, 15), not always this one.
    const carried = this.tokens.find((candidate) => candidate.securedObjectId === lockId && (candidate.revocationList !== undefined || candidate.lockState !== undefined));
    const revocationList = token.revocationList ?? carried?.revocationList;
    const lockState = token.lockState ?? carried?.lockState;
    return {
      presentation: {
        tokenId: token.id,
        credential: token.credential,
        proof,
        ...(revocationList !== undefined ? { revocationList } : {}),
        ...(lockState !== undefined ? { lockState } : {}),
      },
    };
  }

  /** Keeps a lock's receipt for the next relay (docs/lock-integration.md 4.4). */
  takeReceipt(securedObjectId: string, receipt: string): void {
    this.receipts.push({ securedObjectId, receipt });
  }

  /**
   * The bodies of `POST /deviceapi/mobiledevices/{id}/accesslog` that relay the receipts it holds, one per lock, in
   * the order received; the phone drops them once the service acknowledged (`acknowledgeReceipts`).
   */
  receiptUploads(): { securedObjectId: string; receipts: string[] }[] {
    const byLock = new Map<string, string[]>();
    for (const { securedObjectId, receipt } of this.receipts) byLock.set(securedObjectId, [...(byLock.get(securedObjectId) ?? []), receipt]);
    return [...byLock].map(([securedObjectId, receipts]) => ({ securedObjectId, receipts }));
  }

  /** Drops the receipts of a lock once their upload was answered 2xx. */
  acknowledgeReceipts(securedObjectId: string): void {
    for (let i = this.receipts.length - 1; i >= 0; i--) if (this.receipts[i]!.securedObjectId === securedObjectId) this.receipts.splice(i, 1);
  }
}
