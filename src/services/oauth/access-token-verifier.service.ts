// Access-token verification (docs/api-reference.md 3.4, RFC 9068 section 4) and its cache of tokens already checked.
import { errors as joseErrors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import type { Clock } from '../context.js';
import type { AccessTokenKeyService } from '../keys/access-token-keys.service.js';
import type { RevocationService } from './revoked-access-tokens.service.js';
import type { Api } from '../../shared/scopes.js';
import {
  ACCESS_TOKEN_ALGORITHMS,
  ACCESS_TOKEN_TYPE,
  InvalidAccessTokenError,
  looksLikeJwt,
  type AccessTokenRefusal,
  type AccessTokenClaims,
} from './access-token.js';
import { BoundedMap } from '../../shared/bounded-map.js';

export interface AccessTokenVerifierOptions {
  clock: Clock;
  issuer: string;
  keys: AccessTokenKeyService;
  revocations: RevocationService;
}

/** The check a `jose` verification error stands for. */
function refusalOf(error: unknown): AccessTokenRefusal {
  if (error instanceof joseErrors.JWTExpired) return 'expired';
  if (error instanceof joseErrors.JWSSignatureVerificationFailed) return 'bad_signature';
  if (error instanceof joseErrors.JWTClaimValidationFailed || error instanceof joseErrors.JOSEAlgNotAllowed) return 'invalid_claims';
  return 'malformed';
}

export function createAccessTokenVerifier(options: AccessTokenVerifierOptions) {
  const { clock, keys, revocations, issuer } = options;

  const getKey: JWTVerifyGetKey = async (header) => {
    // An unknown key is told as a bad signature: which key ids exist is none of the client's business.
    if (typeof header.kid !== 'string' || header.kid.length > 100) throw new InvalidAccessTokenError('bad_signature', 'unknown key');
    const found = await keys.verificationKey(header.kid);
    if (!found || found.alg !== header.alg) throw new InvalidAccessTokenError('bad_signature', 'unknown key');
    return found.key;
  };

  /**
   * Tokens whose signature and claims were checked already, by their exact string: an operator backend reuses one
   * token for an hour, so the signature is checked once, not on every request. Expiry, audience and revocation are
   * still checked on every use; a different string (any changed byte) is a different key.
   */
  const verified = new BoundedMap<string, AccessTokenClaims>(10_000);
  let lastToken: string | undefined;
  let lastClaims: AccessTokenClaims | undefined;

  async function verifySignatureAndClaims(token: string): Promise<AccessTokenClaims> {
    // A string in the cache passed every check below when it was put there (the format test included): looked up
    // first, so that a token in use costs one map look-up, not a scan of its ~700 characters as well.
    // The last token seen is compared first: a backend sending one token over many connections meets it here, and
    // comparing two strings costs less than hashing one of ~700 characters for the map.
    const known = token === lastToken ? lastClaims : verified.get(token);
    if (known && clock() < known.expiresAt) {
      lastToken = token;
      lastClaims = known;
      return known;
    }
    // RFC 7515 7.1: unpadded base64url only. A padded or base64 spelling of a valid token is refused, not decoded.
    if (!looksLikeJwt(token)) throw new InvalidAccessTokenError('malformed', 'not a compact JWS');
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, getKey, {
        issuer,
        algorithms: ACCESS_TOKEN_ALGORITHMS,
        typ: ACCESS_TOKEN_TYPE,
        requiredClaims: ['iss', 'sub', 'aud', 'exp', 'iat', 'jti'],
        currentDate: new Date(clock()),
      }));
    } catch (error) {
      if (error instanceof InvalidAccessTokenError) throw error;
      throw new InvalidAccessTokenError(refusalOf(error), error instanceof Error ? error.message : 'invalid token');
    }
    const claims = payload as JWTPayload & Record<string, unknown>;
    if (
      typeof claims.client_id !== 'string' ||
      typeof claims.tenant !== 'string' ||
      typeof claims.scope !== 'string' ||
      typeof claims.jti !== 'string'
    ) {
      throw new InvalidAccessTokenError('invalid_claims', 'missing claims');
    }
    const isUser = claims.sub !== claims.client_id;
    const result: AccessTokenClaims = {
      tokenId: claims.jti,
      tenantId: claims.tenant,
      subject: claims.sub!,
      clientId: claims.client_id,
      ...(isUser ? { userId: claims.sub! } : {}),
      ...(typeof claims.sid === 'string' ? { familyId: claims.sid } : {}),
      ...(typeof claims.mobile_device_id === 'string' ? { mobileDeviceId: claims.mobile_device_id } : {}),
      ...(typeof claims.secured_object_id === 'string' ? { securedObjectId: claims.secured_object_id } : {}),
      scopes: new Set(claims.scope.split(' ').filter(Boolean)),
      audience: Array.isArray(claims.aud) ? claims.aud : [claims.aud!],
      expiresAt: claims.exp! * 1000,
      issuedAt: claims.iat! * 1000,
    };
    verified.set(token, result);
    return result;
  }

  async function verify(token: string, audience?: Api): Promise<AccessTokenClaims> {
    const result = await verifySignatureAndClaims(token);
    // RFC 9068 4: a token is accepted only by the API named in its `aud`.
    if (audience && !result.audience.includes(audience)) throw new InvalidAccessTokenError('wrong_audience');
    if (
      revocations.isRevoked({
        clientId: result.clientId,
        userId: result.userId,
        familyId: result.familyId,
        jti: result.tokenId,
        scopes: result.scopes,
      })
    ) {
      throw new InvalidAccessTokenError('revoked');
    }
    return result;
  }

  return {
    /**
     * Any audience when none is named: revocation (RFC 7009) and introspection (RFC 7662) look at a token for every
     * API. Everything else the bearer check does, the cache included.
     */
    verify,

    /** The bearer check (docs/api-reference.md 3.4, RFC 9068 section 4): signature, `typ`, `iss`, `aud`, `exp`, revocation. */
    verifyAccessToken(token: string, audience: Api): Promise<AccessTokenClaims> {
      return verify(token, audience);
    },
  };
}

export type AccessTokenVerifier = ReturnType<typeof createAccessTokenVerifier>;
