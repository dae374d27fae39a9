// Schemas of the phone's and the lock's own keys and of the holder-binding policy (docs/api-reference.md 11.1, 11.2):
// a key-proof nonce, a key registration, the policy.
import { Type } from '@sinclair/typebox';
import { named } from './common.js';
import { HOLDER_BINDING_VALUES, type HolderBinding } from '../shared/holder-binding.js';

/** The examples' phone key and its RFC 7638 thumbprint: a real P-256 point, so a reader can check a thumbprint function. */
export const PHONE_KEY_EXAMPLE = {
  kty: 'EC' as const,
  crv: 'P-256' as const,
  x: 'Jmdwujwyqhb-z65fYLdf2h8ss9G5406VvM--KKxwPkA',
  y: 'JMVN4T62f6CvynxCJzPnDS7ojq-3SAN_5hADRFoyxLg',
};
export const PHONE_KEY_THUMBPRINT_EXAMPLE = '6GL1jI1yO8Ck-pYLnpGYuYcCwufNT3_N_3HsC4tVAIE';

/** The examples' lock key and its thumbprint. */
export const LOCK_KEY_EXAMPLE = {
  kty: 'EC' as const,
  crv: 'P-256' as const,
  x: 'Lforkh9G80iMDC2i3vhkT-t7MUajrcgJ07XD9JE1Xbg',
  y: 'D_FXZSdY-7wlGcA-YsgPmu9vs5tEArpEvDUax3kyVcM',
};
export const LOCK_KEY_THUMBPRINT_EXAMPLE = 'iosp-muNVUaRZ4BKH8C9IK3yzujgLcfxgO7LlZrB2S8';

const Coordinate = (axis: string) =>
  Type.String({ description: `The ${axis} coordinate: 32 octets, unpadded base64url (RFC 7518 section 6.2.1).` });

/** A P-256 public JWK as answered: exactly kty, crv, x and y. */
export const PublicKeySchema = named(
  'PublicKey',
  Type.Object(
    {
      kty: Type.Unsafe<'EC'>({ type: 'string', enum: ['EC'], description: 'Always `EC`.' }),
      crv: Type.Unsafe<'P-256'>({ type: 'string', enum: ['P-256'], description: 'Always `P-256` (ES256, docs/api-reference.md 11).' }),
      x: Coordinate('x'),
      y: Coordinate('y'),
    },
    { additionalProperties: false, description: 'A P-256 public key as a JWK (RFC 7517, RFC 7518 section 6.2.1): never a private member.' },
  ),
  LOCK_KEY_EXAMPLE,
);

/**
 * The key in a registration: read by shared/holder-keys.ts, which answers a private member (`d`) with a 422 that says
 * the private key left the device, and anything else it refuses with a 400. So the schema asks only for an object.
 */
const RegisteredKeySchema = Type.Object(
  {},
  {
    additionalProperties: true,
    maxProperties: 16,
    description:
      'The device\'s or lock\'s P-256 public key as a JWK: `kty` `EC`, `crv` `P-256`, `x` and `y` and nothing else. A ' +
      'private member (`d`) is a 422: the private key never leaves the device.',
  },
);

export const KeyRegistrationSchema = named(
  'KeyRegistration',
  Type.Object(
    {
      publicKey: RegisteredKeySchema,
      proof: Type.String({
        minLength: 1,
        maxLength: 4096,
        description:
          'A compact JWS signed by the key itself (docs/api-reference.md 11.1): header `{"alg": "ES256", "typ": "key-proof+jwt"}`, ' +
          'payload `{"aud": PUBLIC_URL, "nonce", "iat"}` with a nonce from `POST /deviceapi/nonces` asked by the same client ' +
          'within 5 minutes and used once, `iat` in Unix seconds within 5 minutes of the server\'s clock.',
      }),
    },
    {
      additionalProperties: false,
      examples: [
        {
          publicKey: PHONE_KEY_EXAMPLE,
          proof:
            'eyJhbGciOiJFUzI1NiIsInR5cCI6ImtleS1wcm9vZitqd3QifQ.eyJhdWQiOiJodHRwczovL2Fjcy5leGFtcGxlLmNvbSIsIm5vbmNlIjoi' +
            'VTNxNmVYa0xfbTVzZ2J0cVpqR0ZYQSIsImlhdCI6MTc2NzIyNTYwMH0.c2lnbmF0dXJl',
        },
      ],
    },
  ),
);

export const NonceSchema = named(
  'KeyProofNonce',
  Type.Object({
    nonce: Type.String({
      description:
        'At least 128 random bits, base64url: put it in the `proof` of one key registration by this client within 5 minutes. ' +
        'It works once.',
    }),
  }),
  { nonce: 'U3q6eXkL_m5sgbtqZjGFXA' },
);

/** The answer of a key registration: the key's thumbprint, which credentials carry as `cnf.jkt`. */
export const RegisteredKeyAnswerSchema = named(
  'RegisteredKey',
  Type.Object({
    keyThumbprint: Type.String({ description: 'The key\'s RFC 7638 SHA-256 thumbprint, base64url.' }),
    keyRegisteredTime: Type.Integer({ description: 'When the key was registered, Unix milliseconds.' }),
  }),
  { keyThumbprint: PHONE_KEY_THUMBPRINT_EXAMPLE, keyRegisteredTime: 1767225600000 },
);


/** docs/api-reference.md 11.2: whether a lock opens for a credential without `cnf`; `description` says whose policy. */
export const holderBindingSchema = (description: string) =>
  Type.Unsafe<HolderBinding>({ type: 'string', enum: [...HOLDER_BINDING_VALUES], description, examples: ['optional'] });

export const HolderBindingSchema = holderBindingSchema(
  'docs/api-reference.md 11.2: `optional` (a lock opens for a credential without `cnf` as before) or `required` (a lock ' +
    'refuses a credential without `cnf`, so only a phone that proves its key opens).',
);
