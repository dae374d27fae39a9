// The Device API (/deviceapi, docs/api-reference.md 6): its documentation, the Mobile SDK 2.x refusal, its bearer check (aud
// `deviceapi`) and its resources: phones download their tickets, online locks sync.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import apiDocs from '../../plugins/api-docs.js';
import bearerAuth from '../../plugins/bearer-auth.js';
import clientRateLimit, { addressKey, rateLimitHook } from '../../plugins/client-rate-limit.js';
import { ProblemError } from '../../errors.js';
import { DEPRECATIONS } from '../../shared/deprecations.js';
import type { Services } from '../../services/index.js';
import {
  CredentialClaimsSchema,
  CredentialHeaderSchema,
  RevocationListClaimsSchema,
  RevocationListHeaderSchema,
} from '../../schemas/credential.js';
import { removalError } from '../shared/removed.js';
import accessLogRoutes from './access-log.js';
import claimRoutes from './claims.js';
import keyRoutes from './keys.js';
import mobileDeviceRoutes from './mobile-devices.js';
import securedObjectRoutes from './secured-objects.js';

export interface DeviceApiOptions {
  services: Services;
  tokenUrl: string;
  rateLimitPerMinute: number;
  /** Look-ups and redemptions of claim codes per minute and address; 0: no limit (docs/api-reference.md 12). */
  claimRateLimitPerMinute: number;
}

/**
 * What a lock maker and an SDK author build against (docs/api-reference.md 6, 8.1–8.3): served as the document's description,
 * so it is in every copy of the OpenAPI document and in Swagger UI.
 */
const DEVICE_API_DESCRIPTION = `Used by mobile devices (their SDK) and online locks: phones download their tickets with signed credentials, online
locks sync tickets, revocations and keys. Authenticate with an access token from \`POST /oauth/token\` of a client bound
to one mobile device (scope \`tokens:download\`) or one secured object (scope \`sync\`).

## Provisioning a lock

An installer reads \`GET /deviceapi/securedobjects/{id}/trust\` with the lock's own client and writes the answer into the
lock: \`issuer\` (the tenant's credential issuer, \`{PUBLIC_URL}/tenants/{tenant}\`), \`securedObjectId\`, \`keys\` (a JWKS of
the tenant's ticket keys, also published without authentication at \`GET /tenants/{tenant}/jwks.json\`) and
\`maxCredentialLifetime\` (seconds). Locks of two tenants may share an id; the issuer and the key set keep them apart.

## The credential (a ticket's door key)

A compact JWS (RFC 7515): \`BASE64URL(header) "." BASE64URL(payload) "." BASE64URL(signature)\`, the \`credential\` of a
downloaded ticket, that the phone presents to the lock, which checks it offline. The schemas \`CredentialHeader\` and
\`CredentialClaims\` describe its two JSON parts, with an example of each.
- Protected header: \`{"alg": "EdDSA" | "ES256", "kid": "<key id>", "typ": "ticket+jwt"}\`. EdDSA signs with Ed25519
  (RFC 8037), ES256 with P-256 (the signature is the 64-byte \`R || S\`, RFC 7518 section 3.4).
- Payload: \`iss\` (the tenant's issuer), \`jti\` (the ticket id), \`sub\` (the mobile device id), \`aud\` (the secured
  object id, a string), \`iat\`, \`nbf\`, \`exp\` (seconds), \`beginDate\`, \`endDate\` (the ticket's milliseconds), \`cmd\`
  (commands: \`tokn\`, \`open\`, \`clos\`), \`chn\` (channels, e.g. \`btlespp\`), and \`win\` when the ticket has a schedule:
  \`[[startMs, endMs], …]\`, the schedule's windows as UTC millisecond intervals (end exclusive) within the credential's
  span, \`[]\` when none falls in it (docs/api-reference.md 9).
- \`nbf\` is the later of \`beginDate\` rounded up to the second and \`iat\` minus 300 seconds (a lock whose clock was
  reset to the past refuses a credential signed long ago); \`exp\` is \`endDate\` rounded down, so the seconds never widen the ticket's
  \`[beginDate, endDate)\`. \`exp\` is at most \`iat + maxCredentialLifetime\`: a credential lasts at most that long
  (default 7 days) and the phone renews it by downloading again; a download re-signs a credential with less than half
  its lifetime left. A ticket beginning beyond that horizon is listed without \`credential\`, with
  \`credentialAvailableFrom\`.

A lock opens only when every check holds, and refuses on anything missing or malformed. The checks, their one order
and the reason each logs are in docs/lock-integration.md section 3.3 (the strict reading of every signed text in 3.1,
the reasons in 3.2); in short: the lock's own state (a clock it trusts, not \`decommissioned\`); the credential's form and
header (\`typ\` exactly \`ticket+jwt\`, no \`crit\`, \`alg\` EdDSA or ES256); \`kid\` in the lock's key set and the signature; the
claims' types; \`iss\`, \`aud\`, \`exp - iat\` at most \`maxCredentialLifetime\`; the time (\`nbf*1000 <= t < exp*1000\`,
\`beginDate <= t < endDate\`, \`iat\` at most 300 s ahead, inside a window of \`win\`); the command and channel; \`jti\` not
revoked; then the holder binding (a credential without \`cnf\` only where \`holderBinding\` is \`optional\`; \`cnf.jkt\` not a
revoked phone key) and, for a bound credential, the proof of the phone's key under the nonce of the lock's hello
(docs/lock-integration.md section 4); lockdown last. The simulator (\`npm run simulate\`) implements exactly these rules
and is the reference; docs/test-vectors/door.json holds its answers for lock makers to compare.

## Revocations and keys reaching the lock

- **Online locks** call \`GET /deviceapi/securedobjects/{id}/sync\`: without a cursor, every current ticket, every revocation
  the lock still needs and \`keys\`; with the last \`cursor\`, only what changed, with \`keys\` when the key set changed (the
  lock replaces its set with them). \`serial\` is the change-log position the lock has reached. Only revocations of
  tickets whose credential may still be valid are sent, so a lock's revoked set stays bounded by one lifetime of
  revocations. A deleted lock's client keeps syncing the revocations its deletion caused, with \`decommissioned: true\`.
  A sync with a cursor by the lock's own client (bound to it) is the lock's acknowledgement: the server records that it applied everything up to that cursor
  (docs/api-reference.md 8.4), which the operator sees as \`revocationAppliedTime\` on the tickets. Sync again after applying.
- **Locks that are never online** learn through phones: the first ticket of each lock in a download page carries
  \`revocationList\`, that lock's
  compact JWS with header \`{"alg", "kid", "typ": "revocation-list+jwt"}\` and payload \`{iss, aud, serial, iat, revoked:
  [ticket ids], keys}\` (the schemas \`RevocationListHeader\` and \`RevocationListClaims\`), signed with the tenant's key. The phone hands it to the lock on every visit. The lock verifies it
  like a credential (typ, kid in its set, signature, \`iss\`, \`aud\` its own id) and applies it only when \`serial\` is above
  its own: it adds the revoked ids (never forgetting one it has), takes the serial and replaces its key set with
  \`keys\`.
- **Key rotation** announces a new key one lifetime before it signs, in the tenant's key set, sync answers and revocation
  lists, so every lock visited by any phone in that time knows it. An emergency rotation (a leaked key) signs at once and
  withdraws the old key; locks that are never online then need a visit with the installer's tools.`;

/** Mobile SDK 2.x was removed on 01.04.2018 (docs/service-overview.md 9): its requests are refused before anything else. */
const SDK_2 = /^\s*2(\.|\s*$)/;

/** Callback style: an async hook costs a promise on every request, and this one awaits nothing. */
function refuseSdk2(request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void): void {
  const version = request.headers['x-sdk-version'];
  if (typeof version === 'string' && SDK_2.test(version)) return done(removalError(DEPRECATIONS.mobileSdk2));
  done();
}

export default async function deviceApi(app: FastifyInstance, options: DeviceApiOptions) {
  await app.register(apiDocs, {
    title: 'Device API',
    description: DEVICE_API_DESCRIPTION,
    version: '1.0.0',
    uiPrefix: '/deviceapi/apidocs',
    tags: [
      { name: 'Mobile devices', description: 'A phone downloading its tickets.' },
      { name: 'Secured objects', description: 'An online lock syncing its tickets and revocations.' },
      { name: 'Claims', description: 'A phone enrolling itself from a claim link, without an access token (docs/api-reference.md 12).' },
      { name: 'Keys', description: 'A phone or lock registering its own public key (docs/api-reference.md 11.1).' },
    ],
    scopes: {
      'tokens:download': 'a mobile device fetching its own tickets',
      sync: 'an online lock syncing its tickets and revocations',
      'keys:register': 'a bound client registering its own mobile device\'s or secured object\'s public key',
    },
    tokenUrl: options.tokenUrl,
    // Decoded, the credential and the revocation list each have a header and claims schema, like the API's own models.
    schemas: [CredentialHeaderSchema, CredentialClaimsSchema, RevocationListHeaderSchema, RevocationListClaimsSchema],
  });
  await app.register(async (resources) => {
    const { services } = options;
    resources.addHook('onRequest', refuseSdk2);
    await resources.register(bearerAuth, { audience: 'deviceapi', tokens: services.tokens });
    await resources.register(clientRateLimit, { perMinute: options.rateLimitPerMinute });
    for (const routes of [mobileDeviceRoutes, securedObjectRoutes, keyRoutes]) {
      await resources.register(routes, { services, prefix: '/deviceapi' });
    }
    // Access logs (docs/api-reference.md 8.5).
    await resources.register(accessLogRoutes, { services, prefix: '/deviceapi' });
  });
  // Claim links (docs/api-reference.md 12): no bearer token, the code is the credential, so every address has a budget
  // of guesses, counted before the body is parsed (docs/security-cases.md H58).
  await app.register(async (claims) => {
    claims.addHook('onRequest', refuseSdk2);
    const perMinute = options.claimRateLimitPerMinute;
    if (perMinute > 0) {
      claims.addHook(
        'onRequest',
        rateLimitHook({
          perMinute,
          keyOf: addressKey,
          refusal: (_request, resetSeconds) =>
            new ProblemError(429, 'rate-limited', 'Too Many Requests', {
              detail: `This address sent more than ${perMinute} claim look-ups or redemptions in a minute. Retry after ${resetSeconds} s.`,
            }),
        }),
      );
    }
    await claims.register(claimRoutes, { services: options.services, prefix: '/deviceapi' });
  });
}
