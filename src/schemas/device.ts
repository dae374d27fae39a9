// Schemas of the Device API (docs/contract.md 6): downloaded tickets with credentials, and lock sync answers.
import { Type } from '@sinclair/typebox';
import { defaultsOptional } from './query.js';
import { TicketSchema } from './operator.js';

export const DownloadedTicketSchema = Type.Composite([
  TicketSchema,
  Type.Object({
    credential: Type.Optional(
      Type.String({
        description:
          'Compact JWS the lock checks offline (docs/contract.md 6.3): header {alg, kid, typ: "ticket+jwt"}, payload {iss, jti, ' +
          'sub, aud, nbf, exp, beginDate, endDate, cmd, chn, iat}, signed with the tenant\'s key (GET /tenants/{tenant}/jwks.json). ' +
          'Valid at most CREDENTIAL_MAX_LIFETIME; download again to renew (docs/contract.md 8.2). Absent while the ticket ' +
          'begins beyond that horizon.',
      }),
    ),
    revocationList: Type.Optional(
      Type.String({
        description:
          'On the first ticket of each lock in the page: the signed revocation list of that lock, for the phone to hand to it ' +
          '(docs/contract.md 8.3; the page is a JSON array, docs/contract.md 7.3, so the lists travel on the tickets). A compact JWS, ' +
          'header {alg, kid, typ: "revocation-list+jwt"}, payload {iss, aud, serial, iat, revoked: [ticket ids], keys}. A lock ' +
          'applies it when its serial is above its own, so a lock that is never online learns revocations and key changes ' +
          'from any visiting phone.',
      }),
    ),
    credentialAvailableFrom: Type.Optional(
      Type.Integer({ description: 'Set when `credential` is absent: from when a download carries it, Unix milliseconds (docs/contract.md 8.2).' }),
    ),
  }),
]);

export const SyncQuery = defaultsOptional(
  Type.Object(
    {
      cursor: Type.Optional(
        Type.String({ minLength: 1, maxLength: 200, description: 'The cursor of the previous answer: only changes after it.' }),
      ),
      limit: Type.Integer({ minimum: 1, maximum: 1000, default: 1000, description: 'Most changes in one answer, 1 to 1000.' }),
    },
    { additionalProperties: false },
  ),
);

/** A JWKS (RFC 7517 section 5): public keys only. */
export const KeySetSchema = Type.Object(
  {
    keys: Type.Array(
      Type.Object(
        {
          kty: Type.String(),
          kid: Type.String(),
          alg: Type.String(),
          use: Type.Optional(Type.String()),
          crv: Type.Optional(Type.String()),
          x: Type.Optional(Type.String()),
          y: Type.Optional(Type.String()),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { description: 'The tenant\'s published ticket keys (docs/contract.md 8.1): announced, signing, and retired ones still needed.' },
);

export const TrustSchema = Type.Object({
  issuer: Type.String({ description: 'The tenant\'s credential issuer: a lock accepts only credentials whose `iss` is exactly this.' }),
  securedObjectId: Type.String({ description: 'The lock\'s own id: a credential\'s `aud` must be exactly this.' }),
  keys: KeySetSchema,
  maxCredentialLifetime: Type.Integer({
    description: 'CREDENTIAL_MAX_LIFETIME in seconds: no credential lasts longer (`exp - iat`); a lock refuses one that claims to.',
  }),
});

export const SyncAnswerSchema = Type.Object({
  tokens: Type.Array(TicketSchema, { description: 'Tickets for this lock created (and still valid) since the cursor.' }),
  revocations: Type.Array(
    Type.Object({
      tokenId: Type.String({ description: 'The revoked ticket.' }),
      revocationDate: Type.Integer({ description: 'When it was revoked, Unix milliseconds.' }),
    }),
    { description: 'Tickets for this lock revoked since the cursor that have not expired yet.' },
  ),
  cursor: Type.String({ description: 'Send it back as `cursor` to get only later changes; unchanged when nothing changed.' }),
  serial: Type.Integer({
    description:
      'The change-log position the lock has reached once it applied this answer: a revocation list (docs/contract.md 8.3) ' +
      'with a serial at or below it holds nothing new for the lock.',
  }),
  keys: Type.Optional(
    Type.Composite([KeySetSchema], {
      description: 'On a full sync and after the tenant\'s key set changed (docs/contract.md 8.1): the lock replaces its keys with these.',
    }),
  ),
  decommissioned: Type.Optional(
    Type.Literal(true, {
      description: 'The lock was deleted: this client syncs the revocations the deletion caused and nothing else (docs/contract.md 4.1).',
    }),
  ),
});
