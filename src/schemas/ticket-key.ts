// Schemas of ticket keys (docs/api-reference.md 8.1): the tenant's keys its locks verify credentials with, their rotation.
import { Type } from '@sinclair/typebox';
import { named } from './common.js';
import { PublicJwkSchema } from './oauth.js';

export const TicketKeySchema = named(
  'TicketKey',
  Type.Object({
    kid: Type.String({ description: 'The key id, as in the credentials\' `kid` and the tenant\'s key set.' }),
    alg: Type.Unsafe<string>({ type: 'string', enum: ['EdDSA', 'ES256'], description: 'The signing algorithm: `EdDSA` or `ES256`.' }),
    state: Type.Union([Type.Literal('announced'), Type.Literal('active'), Type.Literal('retired')], {
      description:
        '`announced`: published, signs from `activatesTime`; `active`: signs now (until `retiresTime` when a successor is ' +
        'announced); `retired`: signs no more, published until `publishedUntil`. Withdrawn keys (an emergency rotation) ' +
        'are not listed: they are no longer published.',
    }),
    createdTime: Type.Integer({ description: 'When it was made (and first published), Unix milliseconds.' }),
    activatesTime: Type.Integer({ description: 'When it signs its first credential, Unix milliseconds.' }),
    retiresTime: Type.Optional(
      Type.Integer({ description: 'Its last signature: a newer key signs from then on, Unix milliseconds. Absent while none is.' }),
    ),
    publishedUntil: Type.Optional(
      Type.Integer({
        description: 'When it drops out of the key set: one CREDENTIAL_MAX_LIFETIME after its last signature, Unix milliseconds.',
      }),
    ),
  }),
  { kid: 'tk-2026-01', alg: 'EdDSA', state: 'active', createdTime: 1767225600000, activatesTime: 1767225600000 },
);

export const TicketKeyParams = Type.Object({
  kid: Type.String({ minLength: 1, maxLength: 128, description: 'The key id.' }),
});

export const NewTicketKeyRotationSchema = named(
  'NewTicketKeyRotation',
  Type.Object(
    {
      emergency: Type.Optional(
        Type.Boolean({
          default: false,
          description:
            'A leaked key: the new key signs at once and every other key is withdrawn from the key set at once. Locks that ' +
            'are never online keep the old keys until an installer visits them. Default false: the new key is announced ' +
            'and signs one CREDENTIAL_MAX_LIFETIME from now.',
        }),
      ),
    },
    { additionalProperties: false, examples: [{ emergency: false }] },
  ),
);

export const TicketKeyRotationSchema = named(
  'TicketKeyRotation',
  Type.Object({
    kid: Type.String({ description: 'The new key\'s id.' }),
    activatesTime: Type.Integer({ description: 'When the new key signs its first credential, Unix milliseconds.' }),
    emergency: Type.Boolean({ description: 'Whether the other keys were withdrawn at once.' }),
    retired: Type.Array(Type.String(), {
      description: 'The keys it replaces: retired at `activatesTime` (normal rotation) or withdrawn now (emergency).',
    }),
  }),
  { kid: 'tk-2026-02', activatesTime: 1767830400000, emergency: false, retired: ['tk-2026-01'] },
);

/** The examples' key set: the key that really signed the examples' credential (credential.ts). */
export const KEY_SET_EXAMPLE = {
  keys: [{ kty: 'OKP', crv: 'Ed25519', kid: 'tk-2026-01', alg: 'EdDSA', use: 'sig', x: 'i-L6qlN8xAkZHVVbJW3osXToVyKx1-2CLNwvRcbYW-E' }],
};

/** A JWKS (RFC 7517 section 5): public keys only. */
export const KeySetSchema = named(
  'KeySet',
  Type.Object(
    {
      keys: Type.Array(PublicJwkSchema),
    },
    { description: 'The tenant\'s published ticket keys (docs/api-reference.md 8.1): announced, signing, and retired ones still needed.' },
  ),
  KEY_SET_EXAMPLE,
);
