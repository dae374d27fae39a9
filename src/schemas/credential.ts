// Schemas of credentials (docs/api-reference.md 6.3, 8.3): the downloaded ticket carrying one, and its signed parts decoded.
import { Type } from '@sinclair/typebox';
import { ChannelSchema, CommandSchema, named } from './common.js';
import { TICKET_EXAMPLE, TicketSchema } from './ticket.js';
import { KEY_SET_EXAMPLE, KeySetSchema } from './ticket-key.js';
import { HolderBindingSchema, LOCK_KEY_EXAMPLE, PHONE_KEY_THUMBPRINT_EXAMPLE, PublicKeySchema } from './holder-key.js';

/**
 * The examples' credential: really signed (Ed25519) by the key of the examples' key sets (`kid` tk-2026-01), so a
 * reader can check a verifier against it. Its claims are the example ticket's, without a schedule.
 */
const EXAMPLE_CREDENTIAL =
  'eyJhbGciOiJFZERTQSIsImtpZCI6InRrLTIwMjYtMDEiLCJ0eXAiOiJ0aWNrZXQrand0In0.' +
  'eyJpc3MiOiJodHRwczovL2Fjcy5leGFtcGxlLmNvbS90ZW5hbnRzL2RlbW8iLCJqdGkiOiIwYjRmNWI5ZS0zZjNhLTRjNTYtOWE0MS0zYzJiMWYwZTlkOGMiLCJzdWIiOiJwaG9uZS1hbGljZS0xIiwiYXVkIjoiZnJvbnQtZG9vciIsImlhdCI6MTc2NzIyNTYwMCwibmJmIjoxNzY3MjI1NjAwLCJleHAiOjE3Njc4MzA0MDAsImJlZ2luRGF0ZSI6MTc2NzIyNTYwMDAwMCwiZW5kRGF0ZSI6MTc5ODc2MTYwMDAwMCwiY21kIjpbIm9wZW4iXSwiY2huIjpbImJ0bGVzcHAiXX0.' +
  'Z_l7FviPmWZt-LFO1fjPNPYMIWQt0OLsTCf5UNERb1XAk-JtDCmK-oQAdZEFm0QUMfaG6zXhZhQFON8hOMwNAg';

export const DownloadedTicketSchema = named(
  'DownloadedTicket',
  Type.Composite([
    TicketSchema,
    Type.Object({
      credential: Type.Optional(
        Type.String({
          description:
            'Compact JWS the lock checks offline (docs/api-reference.md 6.3): header {alg, kid, typ: "ticket+jwt"}, payload {iss, jti, ' +
            'sub, aud, nbf, exp, beginDate, endDate, cmd, chn, iat}, signed with the tenant\'s key (GET /tenants/{tenant}/jwks.json). ' +
            'Valid at most CREDENTIAL_MAX_LIFETIME; download again to renew (docs/api-reference.md 8.2). Absent while the ticket ' +
            'begins beyond that horizon.',
        }),
      ),
      lockState: Type.Optional(
        Type.String({
          description:
            'Beside `revocationList`, on the first ticket of each lock in the page: the lock\'s signed state (docs/api-reference.md ' +
            '15), `lock-state+jwt` {iss, aud, serial, mode, iat}, for the phone to hand to the lock, so a lockdown reaches a lock ' +
            'that is never online with the first phone that visits it (docs/lock-integration.md 11).',
        }),
      ),
      revocationList: Type.Optional(
        Type.String({
          description:
            'On the first ticket of each lock in the page: the signed revocation list of that lock, for the phone to hand to it ' +
            '(docs/api-reference.md 8.3; the page is a JSON array, docs/api-reference.md 7.3, so the lists travel on the tickets). A compact JWS, ' +
            'header {alg, kid, typ: "revocation-list+jwt"}, payload {iss, aud, serial, iat, revoked: [ticket ids], keys}. A lock ' +
            'applies it when its serial is above its own, so a lock that is never online learns revocations and key changes ' +
            'from any visiting phone.',
        }),
      ),
      credentialAvailableFrom: Type.Optional(
        Type.Integer({ description: 'Set when `credential` is absent: from when a download carries it, Unix milliseconds (docs/api-reference.md 8.2).' }),
      ),
      lockKey: Type.Optional(
        Type.Composite([PublicKeySchema], {
          description:
            'The lock\'s own public key (docs/api-reference.md 11.2): the phone verifies the lock\'s `hello` with it before it ' +
            'shows anything. Absent while the lock has no registered key.',
        }),
      ),
    }),
  ]),
  {
    ...TICKET_EXAMPLE,
    downloadDate: 1767229200000,
    credential: EXAMPLE_CREDENTIAL,
    lockKey: LOCK_KEY_EXAMPLE,
  },
);

// What the Device API hands out signed, decoded: a lock maker's and an SDK author's reference (docs/api-reference.md 6.3,
// 8.3, 9). No route carries these; the Device API document lists them as components (routes/device/index.ts).

const EXAMPLE_ISSUER = 'https://acs.example.com/tenants/demo';
const Seconds = (description: string) => Type.Integer({ minimum: 0, description });
const Algorithm = Type.Unsafe<'EdDSA' | 'ES256'>({
  type: 'string',
  enum: ['EdDSA', 'ES256'],
  description: 'The tenant\'s ticket key\'s algorithm; a lock refuses one that does not match the key `kid` names.',
});

/**
 * The protected header (RFC 7515 section 4) of what the Device API signs with a ticket key, the first base64url part of
 * the compact JWS. Credentials and revocation lists share the key and the header's shape: only `typ` tells them apart
 * (RFC 8725 section 3.11), so a lock never takes one for the other.
 */
function signedHeaderSchema<Typ extends string>(title: string, typ: Typ, descriptions: { header: string; kid: string; typ: string }) {
  return named(
    title,
    Type.Object(
      {
        alg: Algorithm,
        kid: Type.String({ description: descriptions.kid }),
        typ: Type.Unsafe<Typ>({ type: 'string', enum: [typ], description: descriptions.typ }),
      },
      { additionalProperties: false, description: descriptions.header },
    ),
    { alg: 'EdDSA', kid: 'tk-2026-01', typ },
  );
}

export const CredentialHeaderSchema = signedHeaderSchema('CredentialHeader', 'ticket+jwt', {
  header: 'The protected header of a credential (RFC 7515 section 4), the first base64url part of the compact JWS.',
  kid: 'The signing key: one of the tenant\'s ticket keys (GET /tenants/{tenant}/jwks.json).',
  typ: 'Exactly `ticket+jwt` (RFC 8725 section 3.11): never an access token or a revocation list.',
});

export const CredentialClaimsSchema = named(
  'CredentialClaims',
  Type.Object(
    {
      iss: Type.String({ description: 'The tenant\'s credential issuer, `{PUBLIC_URL}/tenants/{tenant}`: the lock\'s provisioned `issuer`.' }),
      jti: Type.String({ description: 'The ticket id: what revocation lists and sync answers name.' }),
      sub: Type.String({ description: 'The mobile device id the ticket is issued to.' }),
      aud: Type.String({ description: 'The secured object id (a string, not an array): the lock\'s own id.' }),
      iat: Seconds('When it was signed, Unix seconds.'),
      nbf: Seconds(
        'The later of `beginDate` rounded up to the second and `iat` minus 300 seconds (docs/api-reference.md 6.4): the ' +
          'lock refuses it before `nbf * 1000`, so a lock whose clock was reset refuses credentials signed long ago.',
      ),
      exp: Seconds(
        'Unix seconds: the lock refuses it from `exp * 1000` on (RFC 7519 section 4.1.4). At most `endDate` rounded down and ' +
          'at most `iat + maxCredentialLifetime` (docs/api-reference.md 8.2): the phone downloads again to renew.',
      ),
      beginDate: Type.Integer({ description: 'The ticket\'s start, Unix milliseconds (inclusive).' }),
      endDate: Type.Integer({ description: 'The ticket\'s end, Unix milliseconds (exclusive).' }),
      cmd: Type.Array(CommandSchema, { description: 'The permitted commands: the lock refuses any other.' }),
      chn: Type.Array(ChannelSchema, { description: 'The permitted channels: the lock refuses a request over any other.' }),
      win: Type.Optional(
        Type.Array(
          Type.Unsafe<[number, number]>({
            type: 'array',
            items: { type: 'integer' },
            minItems: 2,
            maxItems: 2,
            description: '`[startMs, endMs]`: Unix milliseconds, UTC, start inclusive and end exclusive.',
          }),
          {
            description:
              'Only when the ticket has a schedule (docs/api-reference.md 9): its windows as UTC intervals within the credential\'s ' +
              'span, computed in the lock\'s time zone so the lock needs no time-zone rules. The lock opens only inside one. ' +
              '`[]` when no window falls in the span; absent means no schedule.',
          },
        ),
      ),
      cnf: Type.Optional(
        Type.Object(
          { jkt: Type.String({ description: 'The RFC 7638 SHA-256 thumbprint of the phone\'s key, base64url.' }) },
          {
            additionalProperties: false,
            description:
              'RFC 7800: present when the device has a registered key (docs/api-reference.md 11.2). The lock opens only for ' +
              'a phone that proves it holds that key; a lock whose policy is `required` refuses a credential without it.',
          },
        ),
      ),
    },
    {
      additionalProperties: false,
      description:
        'The payload of a credential (docs/api-reference.md 6.3), the second base64url part of the compact JWS: a `DownloadedTicket`\'s ' +
        '`credential`, decoded. Signed with the tenant\'s ticket key; the lock checks it offline with the rules of this ' +
        'document\'s description.',
    },
  ),
  {
    iss: EXAMPLE_ISSUER,
    jti: '0b4f5b9e-3f3a-4c56-9a41-3c2b1f0e9d8c',
    sub: 'phone-alice-1',
    aud: 'front-door',
    iat: 1767225600,
    nbf: 1767225600,
    exp: 1767830400,
    beginDate: 1767225600000,
    endDate: 1798761600000,
    cmd: ['open'],
    chn: ['btlespp'],
    win: [
      [1767254400000, 1767297600000],
      [1767340800000, 1767384000000],
    ],
  },
);

export const RevocationListHeaderSchema = signedHeaderSchema('RevocationListHeader', 'revocation-list+jwt', {
  header: 'The protected header of a revocation list.',
  kid: 'The signing key: one of the tenant\'s ticket keys.',
  typ: 'Exactly `revocation-list+jwt`: never mistaken for a credential.',
});

export const RevocationListClaimsSchema = named(
  'RevocationListClaims',
  Type.Object(
    {
      iss: Type.String({ description: 'The tenant\'s credential issuer: the lock\'s provisioned `issuer`.' }),
      aud: Type.String({ description: 'The secured object id the list is for: the lock\'s own id.' }),
      serial: Type.Integer({
        minimum: 0,
        description:
          'The change-log position the list reflects (docs/api-reference.md 8.3): a lock applies the list only when it is above ' +
          'its own serial, then takes it. Sync answers carry the same positions.',
      }),
      iat: Seconds('When it was signed, Unix seconds.'),
      revoked: Type.Array(Type.String(), {
        description:
          'The `jti` of every revoked ticket of this lock whose credential may still be valid: the lock adds them to its ' +
          'revoked set and never forgets one it has.',
      }),
      keys: KeySetSchema,
      holderBinding: HolderBindingSchema,
      revokedKeys: Type.Array(Type.String(), {
        description:
          'The thumbprints of the tenant\'s revoked phone keys whose bound credentials may still be valid (docs/api-reference.md ' +
          '11.4): the lock refuses every credential whose `cnf.jkt` is one of them, and never forgets one it has.',
      }),
    },
    {
      additionalProperties: false,
      description:
        'The payload of a revocation list (docs/api-reference.md 8.3): a `DownloadedTicket`\'s `revocationList`, decoded. The lock ' +
        'verifies it as a credential (typ, kid in its set, signature, `iss`, `aud`) and, when `serial` is above its own, ' +
        'adds `revoked`, takes `serial` and replaces its key set with `keys`.',
    },
  ),
  {
    iss: EXAMPLE_ISSUER,
    aud: 'front-door',
    serial: 17,
    iat: 1767312000,
    revoked: ['7c6b5a49-3827-4165-9f0e-d1c2b3a49586'],
    keys: KEY_SET_EXAMPLE,
    holderBinding: 'optional',
    revokedKeys: [PHONE_KEY_THUMBPRINT_EXAMPLE],
  },
);
