// The access token (docs/api-reference.md 3.4, RFC 9068): its claims, its issuing and signing, and the error a bad one raises.
import { randomUUID } from 'node:crypto';
import type { AuthenticatedClient } from './client.service.js';
import type { Clock } from '../context.js';
import { signCompactJwsJson } from '../../shared/jws.js';
import type { AccessTokenKeyService } from '../keys/access-token-keys.service.js';
import type { Api } from '../../shared/scopes.js';

/** The verified claims of an access token (docs/api-reference.md 3.4), as the APIs use them. */
export interface AccessTokenClaims {
  tokenId: string;
  tenantId: string;
  subject: string;
  clientId: string;
  userId?: string;
  familyId?: string;
  mobileDeviceId?: string;
  securedObjectId?: string;
  scopes: Set<string>;
  audience: string[];
  expiresAt: number;
  issuedAt: number;
}

/**
 * Which check refused a token, as the `error_description` of RFC 6750 section 3 may tell the client: enough to know
 * what to do (get a new token, use the right API), nothing about the server's keys or the token's contents.
 */
export type AccessTokenRefusal = 'malformed' | 'bad_signature' | 'expired' | 'wrong_audience' | 'revoked' | 'invalid_claims';

export const ACCESS_TOKEN_REFUSALS: Record<AccessTokenRefusal, string> = {
  malformed: 'the access token is not a well-formed JWT',
  bad_signature: 'the access token signature does not verify',
  expired: 'the access token has expired',
  wrong_audience: 'the access token is for another API',
  revoked: 'the access token has been revoked',
  invalid_claims: 'the access token was not issued by this server for this use',
};

export class InvalidAccessTokenError extends Error {
  constructor(
    readonly reason: AccessTokenRefusal,
    detail?: string,
  ) {
    super(detail ?? ACCESS_TOKEN_REFUSALS[reason]);
    this.name = 'InvalidAccessTokenError';
  }
}

export const ACCESS_TOKEN_ALGORITHMS = ['EdDSA', 'ES256'];
export const ACCESS_TOKEN_TYPE = 'at+jwt';

export const looksLikeJwt = (token: string) => /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(token);

export interface IssueInput {
  client: AuthenticatedClient;
  subject: string;
  audience: Api[];
  scopes: string[];
  userId?: string;
  familyId?: string;
}

export interface AccessTokenIssuerOptions {
  clock: Clock;
  issuer: string;
  keys: AccessTokenKeyService;
  accessTokenTtlSeconds: number;
}

/**
 * Signs access tokens with the current signing key; the claims are the ones the verifier checks (docs/api-reference.md 3.4).
 * The payload is written as JSON text directly, in a fixed member order, every string through JSON.stringify: the same
 * claims an object would give, without building the object and walking it again (the token endpoint's hot path).
 */
export function createAccessTokenIssuer(options: AccessTokenIssuerOptions) {
  const { clock, keys } = options;
  const issuerMember = `{"iss":${JSON.stringify(options.issuer)}`;
  const ttl = options.accessTokenTtlSeconds;

  return async function issue(input: IssueInput): Promise<{ token: string }> {
    const iat = Math.floor(clock() / 1000);
    const { client } = input;
    const audience = input.audience.length === 1 ? input.audience[0] : input.audience;
    let payload =
      `${issuerMember},"sub":${JSON.stringify(input.subject)},"aud":${JSON.stringify(audience)}` +
      `,"client_id":${JSON.stringify(client.clientId)},"tenant":${JSON.stringify(client.tenantId)}` +
      `,"scope":${JSON.stringify(input.scopes.join(' '))},"iat":${iat},"exp":${iat + ttl},"jti":"${randomUUID()}"`;
    if (input.familyId) payload += `,"sid":${JSON.stringify(input.familyId)}`;
    if (client.mobileDeviceId) payload += `,"mobile_device_id":${JSON.stringify(client.mobileDeviceId)}`;
    if (client.securedObjectId) payload += `,"secured_object_id":${JSON.stringify(client.securedObjectId)}`;
    const signing = await keys.signingKey();
    return { token: await signCompactJwsJson(signing, ACCESS_TOKEN_TYPE, `${payload}}`) };
  };
}
