// The access token (docs/contract.md 3.4, RFC 9068): its claims, its issuing and signing, and the error a bad one raises.
import { randomUUID } from 'node:crypto';
import type { JWTPayload } from 'jose';
import type { AuthenticatedClient } from '../client.service.js';
import type { Clock } from '../context.js';
import { signCompactJws } from '../jws.js';
import type { KeyService } from '../key.service.js';
import type { Api } from '../scopes.js';

/** The verified claims of an access token (docs/contract.md 3.4), as the APIs use them. */
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
  keys: KeyService;
  accessTokenTtlSeconds: number;
}

/** Signs access tokens with the current signing key; the claims are the ones the verifier checks (docs/contract.md 3.4). */
export function createAccessTokenIssuer(options: AccessTokenIssuerOptions) {
  const { clock, keys, issuer } = options;

  return async function issue(input: IssueInput): Promise<{ token: string; claims: JWTPayload }> {
    const now = clock();
    const iat = Math.floor(now / 1000);
    const claims: JWTPayload & Record<string, unknown> = {
      iss: issuer,
      sub: input.subject,
      aud: input.audience.length === 1 ? input.audience[0] : input.audience,
      client_id: input.client.clientId,
      tenant: input.client.tenantId,
      scope: input.scopes.join(' '),
      iat,
      exp: iat + options.accessTokenTtlSeconds,
      jti: randomUUID(),
      ...(input.familyId ? { sid: input.familyId } : {}),
      ...(input.client.mobileDeviceId ? { mobile_device_id: input.client.mobileDeviceId } : {}),
      ...(input.client.securedObjectId ? { secured_object_id: input.client.securedObjectId } : {}),
    };
    const signing = await keys.signingKey();
    const token = await signCompactJws(signing, ACCESS_TOKEN_TYPE, claims);
    return { token, claims };
  };
}
