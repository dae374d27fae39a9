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
});
