// Token revocation (RFC 7009) and introspection (RFC 7662, docs/api-reference.md 3.3) of access and refresh tokens.
import type { Database } from '../../db/database.js';
import { findRefreshToken } from '../../db/repositories/refresh-token.repo.js';
import type { AuthenticatedClient } from './client.service.js';
import type { Clock } from '../context.js';
import { sha256 } from '../../shared/crypto.js';
import type { RevocationService } from './revoked-access-tokens.service.js';
import { INTROSPECTION_SCOPE } from '../../shared/scopes.js';
import { looksLikeJwt, type AccessTokenClaims } from './access-token.js';
import type { AccessTokenVerifier } from './access-token-verifier.service.js';
import { revokeFamily, type RefreshFamilyDependencies } from './refresh-family.js';

export interface RevocationIntrospectionServiceOptions {
  db: Database;
  clock: Clock;
  issuer: string;
  revocations: RevocationService;
  accessTokens: Pick<AccessTokenVerifier, 'verify'>;
  accessTokenTtlSeconds: number;
}

export function createRevocationIntrospectionService(options: RevocationIntrospectionServiceOptions) {
  const { db, clock, revocations, issuer } = options;
  const verify = options.accessTokens.verify;
  const accessTokenTtlMs = options.accessTokenTtlSeconds * 1000;
  const family: RefreshFamilyDependencies = { db, clock, revocations, accessTokenTtlMs };

  return {
    /** RFC 7009: only the client's own tokens are revoked; anything else is a silent no-op. */
    async revoke(client: AuthenticatedClient, token: string): Promise<void> {
      if (looksLikeJwt(token)) {
        let claims: AccessTokenClaims;
        try {
          claims = await verify(token);
        } catch {
          return;
        }
        if (claims.clientId !== client.clientId) return;
        await db.transaction((tx) => revocations.record(tx, 'jti', claims.tokenId, claims.expiresAt));
        await revocations.refresh();
        return;
      }
      const record = await findRefreshToken(db, client.tenantId, sha256(token));
      if (!record || record.clientId !== client.clientId || record.revokedAt !== null) return;
      await revokeFamily(family, record, null, `client:${client.clientId}`);
    },

    /**
     * RFC 7662: `{active: false}` for anything expired, revoked, unknown, or that this client may not learn about.
     * docs/api-reference.md 3.3 (RFC 7662 section 4 leaves the choice to the server): a client learns about the tokens issued to
     * itself; one holding `tokens:introspect`, a resource server, about any token of its tenant. A client bound to a
     * device or lock never learns about another client's token, scope or not: its secret lives on an end user's phone
     * or in a door (docs/security-cases.md G44). Refusals look exactly like an inactive token, so nobody learns that a
     * token exists from being refused.
     */
    async introspect(client: AuthenticatedClient, token: string): Promise<Record<string, unknown>> {
      const inactive = { active: false };
      const bound = Boolean(client.mobileDeviceId || client.securedObjectId);
      const seesTenant = !bound && client.scopes.includes(INTROSPECTION_SCOPE);
      const mayLearnAbout = (issuedTo: { tenantId: string; clientId: string }) =>
        issuedTo.tenantId === client.tenantId && (issuedTo.clientId === client.clientId || seesTenant);
      if (looksLikeJwt(token)) {
        let claims: AccessTokenClaims;
        try {
          claims = await verify(token);
        } catch {
          return inactive;
        }
        if (!mayLearnAbout(claims)) return inactive;
        return {
          active: true,
          token_type: 'Bearer',
          scope: [...claims.scopes].join(' '),
          client_id: claims.clientId,
          sub: claims.subject,
          aud: claims.audience.length === 1 ? claims.audience[0] : claims.audience,
          iss: issuer,
          exp: Math.floor(claims.expiresAt / 1000),
          iat: Math.floor(claims.issuedAt / 1000),
          jti: claims.tokenId,
          tenant: claims.tenantId,
        };
      }
      const record = await findRefreshToken(db, client.tenantId, sha256(token));
      if (
        !record ||
        !mayLearnAbout(record) ||
        record.usedAt !== null ||
        record.revokedAt !== null ||
        record.expiresAt <= clock()
      ) {
        return inactive;
      }
      // No token_type: RFC 7662 2.2 means an access token type (RFC 6749 7.1), and a refresh token has none.
      return {
        active: true,
        scope: record.scopes.join(' '),
        client_id: record.clientId,
        sub: record.userId,
        iss: issuer,
        exp: Math.floor(record.expiresAt / 1000),
        iat: Math.floor(record.createdAt / 1000),
        tenant: record.tenantId,
      };
    },
  };
}

export type RevocationIntrospectionService = ReturnType<typeof createRevocationIntrospectionService>;
