// Schemas of the lock sync (docs/api-reference.md 6.2, 8.1): what an online lock is provisioned with and what each sync answers.
import { Type } from '@sinclair/typebox';
import { defaultsOptional, named } from './common.js';
import { TICKET_EXAMPLE, TicketSchema } from './ticket.js';
import { KEY_SET_EXAMPLE, KeySetSchema } from './ticket-key.js';
import { HolderBindingSchema, LOCK_KEY_THUMBPRINT_EXAMPLE, PHONE_KEY_THUMBPRINT_EXAMPLE } from './holder-key.js';

export const SyncQuery = defaultsOptional(
  Type.Object(
    {
      cursor: Type.Optional(
        Type.String({ minLength: 1, maxLength: 200, description: 'The cursor of the previous answer: only changes after it.' }),
      ),
      limit: Type.Integer({ minimum: 1, maximum: 1000, default: 1000, description: 'Most changes in one answer, 1 to 1000.' }),
      wait: Type.Optional(
        Type.Integer({
          minimum: 0,
          maximum: 30,
          description:
            'Seconds, 0 to 30 (docs/lock-sync.md): with nothing new, the answer waits until something for the lock changes ' +
            '(answered at once, on whichever instance the change was made) or the time is up (the empty answer). Needs `cursor`: ' +
            'a full sync always has news.',
        }),
      ),
    },
    { additionalProperties: false },
  ),
);

export const TrustSchema = named(
  'LockTrust',
  Type.Object({
    issuer: Type.String({ description: 'The tenant\'s credential issuer: a lock accepts only credentials whose `iss` is exactly this.' }),
    securedObjectId: Type.String({ description: 'The lock\'s own id: a credential\'s `aud` must be exactly this.' }),
    keys: KeySetSchema,
    maxCredentialLifetime: Type.Integer({
      description: 'CREDENTIAL_MAX_LIFETIME in seconds: no credential lasts longer (`exp - iat`); a lock refuses one that claims to.',
    }),
    holderBinding: HolderBindingSchema,
    keyThumbprint: Type.Optional(
      Type.String({
        description:
          'The RFC 7638 thumbprint of the lock\'s own key as registered (`PUT /deviceapi/securedobjects/{id}/key`, ' +
          'docs/api-reference.md 11.1): the installer checks it is the lock\'s. Absent while the lock has no key.',
      }),
    ),
    serial: Type.Integer({
      minimum: 0,
      description:
        'The revocation serial the lock starts from (docs/api-reference.md 8.3): the tenant\'s change position now. A lock ' +
        'applies only revocation lists above it, so no list signed before it was provisioned is taken.',
    }),
    revoked: Type.Array(Type.String(), {
      description: 'The ids of this lock\'s revoked tickets whose credential may still be valid: the lock\'s first revoked set.',
    }),
    revokedKeys: Type.Array(Type.String(), {
      description: 'The thumbprints of the tenant\'s revoked phone keys whose bound credentials may still be valid (docs/api-reference.md 11.4).',
    }),
    lockMode: Type.Union([Type.Literal('lockdown'), Type.Literal('normal')], {
      description: 'The lock\'s current state (docs/api-reference.md 15): `normal` while no lockdown reached it.',
    }),
    lockStateSerial: Type.Integer({
      minimum: 0,
      description: 'The serial of that state: the change number of the lockdown that set it; 0 while none did.',
    }),
    lockStateApplied: Type.Boolean({
      description:
        'Whether the lock has applied that state, judged as a revocation\'s propagation (docs/api-reference.md 8.4): its sync ' +
        'or a receipt it signed reached the serial. Always true at serial 0.',
    }),
    lockState: Type.String({
      description:
        'The same state signed (`lock-state+jwt`, as in a sync answer): the installer writes it into the lock with the rest, ' +
        'so a lock provisioned during a lockdown starts in it.',
    }),
  }),
  {
    issuer: 'https://acs.example.com/tenants/demo',
    securedObjectId: 'front-door',
    keys: KEY_SET_EXAMPLE,
    maxCredentialLifetime: 604800,
    holderBinding: 'optional',
    keyThumbprint: LOCK_KEY_THUMBPRINT_EXAMPLE,
    serial: 17,
    revoked: [],
    revokedKeys: [],
    lockMode: 'normal',
    lockStateSerial: 0,
    lockStateApplied: true,
    lockState:
      'eyJhbGciOiJFZERTQSIsImtpZCI6ImsxIiwidHlwIjoibG9jay1zdGF0ZStqd3QifQ.eyJpc3MiOiJodHRwczovL2Fjcy5leGFtcGxlLmNvbS90ZW5hbnRzL2RlbW8iLCJhdWQiOiJmcm9udC1kb29yIiwic2VyaWFsIjowLCJtb2RlIjoibm9ybWFsIiwiaWF0IjoxNzY3MzEyMDAwfQ.c2lnbmF0dXJl',
  },
);

export const SyncAnswerSchema = named(
  'SyncAnswer',
  Type.Object({
    tokens: Type.Array(TicketSchema, { description: 'Tickets for this lock created (and still valid) since the cursor.' }),
    revocations: Type.Array(
      named(
        'SyncRevocation',
        Type.Object({
          tokenId: Type.String({ description: 'The revoked ticket.' }),
          revocationDate: Type.Integer({ description: 'When it was revoked, Unix milliseconds.' }),
        }),
        { tokenId: '7c6b5a49-3827-4165-9f0e-d1c2b3a49586', revocationDate: 1767312000000 },
      ),
      { description: 'Tickets for this lock revoked since the cursor that have not expired yet.' },
    ),
    cursor: Type.String({ description: 'Send it back as `cursor` to get only later changes; unchanged when nothing changed.' }),
    serial: Type.Integer({
      description:
        'The change-log position the lock has reached once it applied this answer: a revocation list (docs/api-reference.md 8.3) ' +
        'with a serial at or below it holds nothing new for the lock.',
    }),
    keys: Type.Optional(
      Type.Composite([KeySetSchema], {
        description: 'On a full sync and after the tenant\'s key set changed (docs/api-reference.md 8.1): the lock replaces its keys with these.',
      }),
    ),
    decommissioned: Type.Optional(
      Type.Literal(true, {
        description: 'The lock was deleted: this client syncs the revocations the deletion caused and nothing else (docs/api-reference.md 4.1).',
      }),
    ),
    lockState: Type.Optional(
      Type.String({
        description:
          'On a full sync and after the lock\'s state changed (docs/api-reference.md 15): a compact JWS, header {alg, kid, typ: ' +
          '"lock-state+jwt"}, payload {iss, aud (the lock id), serial, mode: "lockdown" | "normal", iat}, signed with the tenant\'s ' +
          'ticket key. The lock verifies it like a revocation list and applies it when its serial is above its own lock-state ' +
          'serial (docs/lock-integration.md 11).',
      }),
    ),
    holderBinding: HolderBindingSchema,
    revokedKeys: Type.Array(
      named(
        'SyncKeyRevocation',
        Type.Object({
          jkt: Type.String({ description: 'The revoked phone key\'s RFC 7638 thumbprint: a credential whose `cnf.jkt` is this never opens.' }),
          revocationDate: Type.Integer({ description: 'When it was revoked, Unix milliseconds.' }),
        }),
        { jkt: PHONE_KEY_THUMBPRINT_EXAMPLE, revocationDate: 1767312000000 },
      ),
      {
        description:
          'Phone keys revoked since the cursor whose bound credentials may still be valid, in change-log order ' +
          '(docs/api-reference.md 11.4): the lock adds them to its revoked keys and never forgets one it has.',
      },
    ),
  }),
  {
    tokens: [TICKET_EXAMPLE],
    revocations: [{ tokenId: '7c6b5a49-3827-4165-9f0e-d1c2b3a49586', revocationDate: 1767312000000 }],
    cursor: 'c3luYzoxNw',
    serial: 17,
    keys: KEY_SET_EXAMPLE,
    holderBinding: 'optional',
    revokedKeys: [{ jkt: PHONE_KEY_THUMBPRINT_EXAMPLE, revocationDate: 1767312000000 }],
  },
);
