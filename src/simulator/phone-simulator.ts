// A phone simulator: the reference for the phone's side of the exchange at the door (docs/lock-integration.md 4). It
// holds its P-256 key pair and its download (docs/api-reference.md 6.1), checks a lock's hello with the `lockKey` of
// the matching ticket before it shows anything, answers with the credential and a proof of its key, and carries the
// lock's receipts to the service.
import { randomUUID } from 'node:crypto';
import { checkHello, PROOF_TYPE, type HelloCheck } from '../shared/door-exchange.js';
import { sha256Base64url, type HolderPublicKey } from '../shared/holder-keys.js';
import { es256KeyPair, privateJwk, signEs256, type Es256KeyPair } from './es256.js';

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

/**
 * One HTTP exchange with the service, as the phone's network stack makes it: a test passes `app.inject`, a real phone
 * `fetch`. `body` is a JSON value or, for the token endpoint, a form-encoded string.
 */
export type PhoneHttp = (request: {
  method: 'GET' | 'POST';
  url: string;
  headers?: Record<string, string>;
  body?: string;
}) => Promise<{ status: number; body: unknown }>;

/** What redeeming a claim gave the phone (docs/api-reference.md 12). */
export interface Enrolment {
  mobileDeviceId: string;
  clientId: string;
  tokenEndpoint: string;
  issuer: string;
}

/** A failed exchange during enrolment: the status and the problem the service answered. */
export class PhoneEnrolmentError extends Error {
  constructor(
    readonly step: string,
    readonly status: number,
    readonly body: unknown,
  ) {
    super(`${step} answered ${status}: ${JSON.stringify(body)}`);
    this.name = 'PhoneEnrolmentError';
  }
}

/** `{PUBLIC_URL}/claim#{code}` split into the service's public URL and the code (docs/api-reference.md 12). */
export function readClaimUrl(claimUrl: string): { publicUrl: string; code: string } {
  const hash = claimUrl.indexOf('#');
  const page = hash < 0 ? claimUrl : claimUrl.slice(0, hash);
  const code = hash < 0 ? '' : claimUrl.slice(hash + 1);
  if (!page.endsWith('/claim') || code === '') throw new Error('not a claim link: expected {PUBLIC_URL}/claim#{code}');
  return { publicUrl: page.slice(0, -'/claim'.length), code };
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

/**
 * What a phone keeps between runs of the command line (`--phone FILE`): its private key, its enrolment and its last
 * download. A real phone keeps its key in secure hardware and never exports it; the file stands in for that storage.
 */
export interface SavedPhone {
  version: 1;
  key: Record<string, string>;
  enrolment: Enrolment | null;
  tokens: DownloadedToken[];
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
  private enrolled: Enrolment | null = null;

  /** `key`: a private P-256 JWK; without it the phone makes a new key pair, as at enrolment. */
  constructor(options: { key?: unknown } = {}) {
    this.key = es256KeyPair(options.key);
  }

  /** A phone as `saved()` left it; throws on anything that is not such a record, naming what is wrong. */
  static restore(saved: unknown): PhoneSimulator {
    const record = saved as Partial<SavedPhone> | null;
    if (typeof record !== 'object' || record === null || record.version !== 1) throw new TypeError('not a saved phone (version 1)');
    if (typeof record.key !== 'object' || record.key === null) throw new TypeError('a saved phone holds its private key');
    if (!Array.isArray(record.tokens)) throw new TypeError('a saved phone holds a list of tokens');
    const phone = new PhoneSimulator({ key: record.key });
    const enrolment = record.enrolment;
    if (enrolment !== null && enrolment !== undefined) {
      const fields = [enrolment.mobileDeviceId, enrolment.clientId, enrolment.tokenEndpoint, enrolment.issuer];
      if (!fields.every((field) => typeof field === 'string' && field !== '')) throw new TypeError('a saved enrolment names its device, client, token endpoint and issuer');
      phone.enrolled = { mobileDeviceId: enrolment.mobileDeviceId, clientId: enrolment.clientId, tokenEndpoint: enrolment.tokenEndpoint, issuer: enrolment.issuer };
    }
    phone.store(record.tokens);
    return phone;
  }

  /** Everything `restore` needs, its private key included. */
  saved(): SavedPhone {
    return { version: 1, key: privateJwk(this.key), enrolment: this.enrolled ? { ...this.enrolled } : null, tokens: this.tokens.map((token) => ({ ...token })) };
  }

  /** The phone's public key, as it registers it. */
  get publicKey(): HolderPublicKey {
    return { ...this.key.publicKey };
  }

  /** The RFC 7638 thumbprint of its key: the `cnf.jkt` of its bound credentials. */
  get keyThumbprint(): string {
    return this.key.thumbprint;
  }

  /** What its enrolment gave it; null before it redeemed a claim. */
  get enrolment(): Enrolment | null {
    return this.enrolled ? { ...this.enrolled } : null;
  }

  /**
   * Enrols from a claim link (docs/api-reference.md 12): looks the claim up for a nonce, proves its key over it
   * (11.1: `key-proof+jwt`, `aud` the service's public URL) and redeems it, keeping its device and client. The code
   * leaves the phone only on those two requests. `atMs` is the phone's clock.
   */
  async enrol(claimUrl: string, http: PhoneHttp, options: { name?: string; atMs?: number } = {}): Promise<Enrolment> {
    const { publicUrl, code } = readClaimUrl(claimUrl);
    const url = `${publicUrl}/deviceapi/claims/${encodeURIComponent(code)}`;
    const lookup = await http({ method: 'GET', url });
    if (lookup.status !== 200) throw new PhoneEnrolmentError('claim look-up', lookup.status, lookup.body);
    const { nonce } = lookup.body as { nonce: string };
    const proof = signEs256(
      this.key.privateKey,
      { typ: 'key-proof+jwt' },
      { aud: publicUrl, nonce, iat: Math.floor((options.atMs ?? Date.now()) / 1000) },
    );
    const redeemed = await http({
      method: 'POST',
      url,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ publicKey: this.key.publicKey, proof, ...(options.name ? { name: options.name } : {}) }),
    });
    if (redeemed.status !== 201) throw new PhoneEnrolmentError('claim redemption', redeemed.status, redeemed.body);
    this.enrolled = redeemed.body as Enrolment;
    return { ...this.enrolled };
  }

  /**
   * An access token by `private_key_jwt` (RFC 7523 2.2, docs/api-reference.md 11.1): the phone's client has no secret,
   * so it signs an assertion with its key, `aud` the token endpoint, valid one minute, its `jti` used once.
   */
  async accessToken(http: PhoneHttp, atMs = Date.now()): Promise<string> {
    const enrolment = this.requireEnrolment();
    const seconds = Math.floor(atMs / 1000);
    const assertion = signEs256(
      this.key.privateKey,
      { typ: 'JWT' },
      { iss: enrolment.clientId, sub: enrolment.clientId, aud: enrolment.tokenEndpoint, iat: seconds, exp: seconds + 60, jti: randomUUID() },
    );
    const answer = await http({
      method: 'POST',
      url: enrolment.tokenEndpoint,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
        client_assertion: assertion,
      }).toString(),
    });
    if (answer.status !== 200) throw new PhoneEnrolmentError('token request', answer.status, answer.body);
    return (answer.body as { access_token: string }).access_token;
  }

  /** Downloads its tickets (docs/api-reference.md 6.1) with a fresh token and keeps them; answers them. */
  async download(http: PhoneHttp, atMs = Date.now()): Promise<DownloadedToken[]> {
    const enrolment = this.requireEnrolment();
    const token = await this.accessToken(http, atMs);
    const answer = await http({
      method: 'GET',
      url: `${enrolment.issuer.replace(/\/+$/, '')}/deviceapi/mobiledevices/${encodeURIComponent(enrolment.mobileDeviceId)}/tickets`,
      headers: { authorization: `Bearer ${token}` },
    });
    if (answer.status !== 200) throw new PhoneEnrolmentError('ticket download', answer.status, answer.body);
    this.store(answer.body as DownloadedToken[]);
    return answer.body as DownloadedToken[];
  }

  private requireEnrolment(): Enrolment {
    if (!this.enrolled) throw new Error('the phone is not enrolled: redeem a claim link first (enrol)');
    return this.enrolled;
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
