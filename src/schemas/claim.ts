// Schemas of claims (docs/api-reference.md 12): creating one, the claim as read, and the phone's look-up and redemption.
import { Type } from '@sinclair/typebox';
import { ID_PATTERN, Millis, named, PAGE_PARAMETERS, defaultsOptional } from './common.js';
import { PHONE_KEY_EXAMPLE } from './holder-key.js';
import { CLAIM_EXPIRES_IN, CLAIM_MAX_DEVICES } from '../shared/claim-limits.js';

const CLAIM_ID_EXAMPLE = '7c1e4b9a-2f3d-4a5b-8c6d-9e0f1a2b3c4d';
const CODE_EXAMPLE = 'q3Vb9xK2mP7sT4wY1zA6cE8gH0jL5nR2uX4vB7dF9hQ';

const claimFields = {
  expiresIn: Type.Optional(
    Type.Integer({
      minimum: CLAIM_EXPIRES_IN.min,
      maximum: CLAIM_EXPIRES_IN.max,
      default: CLAIM_EXPIRES_IN.default,
      description: 'Seconds the link stays usable: 900 (15 minutes) to 2,592,000 (30 days); default 604,800 (7 days).',
    }),
  ),
  maxDevices: Type.Optional(
    Type.Integer({
      minimum: CLAIM_MAX_DEVICES.min,
      maximum: CLAIM_MAX_DEVICES.max,
      default: CLAIM_MAX_DEVICES.default,
      description: 'How many phones the link enrols, 1 to 5 (default 1); then it is `claimed`.',
    }),
  ),
  replaces: Type.Optional(
    Type.String({
      pattern: ID_PATTERN,
      description:
        'A mobile device of the same resident that the first redemption removes, in the same transaction: its tickets revoked, ' +
        'its key revoked at every lock, its clients deleted. Replacing a lost phone is this one call.',
    }),
  ),
  note: Type.Optional(Type.String({ maxLength: 500, description: 'Free text for the operator (who it was sent to, why).' })),
};

/** POST /v1/residents/{id}/claims: the resident is the path's. */
export const NewResidentClaimSchema = named(
  'NewResidentClaim',
  Type.Object(claimFields, { additionalProperties: false }),
  { expiresIn: 604800, maxDevices: 1, note: 'New phone for flat 4B' },
);

/** POST /operatorapi/claims: for a resident or for one device. */
export const NewClaimSchema = named(
  'NewClaim',
  Type.Object(
    {
      residentId: Type.Optional(Type.String({ format: 'uuid', description: 'The resident whose new phones the claim enrols.' })),
      mobileDeviceId: Type.Optional(
        Type.String({
          pattern: ID_PATTERN,
          description: 'Instead of `residentId`: the one existing mobile device the phone becomes (its key and a bound client); `maxDevices` 1.',
        }),
      ),
      ...claimFields,
    },
    { additionalProperties: false },
  ),
  { residentId: '0b8f2a6e-3c4d-4e5f-8a9b-1c2d3e4f5a6b', expiresIn: 86400 },
);

const claimProperties = {
  id: Type.String({ description: 'The claim id.' }),
  state: Type.Unsafe<'created' | 'opened' | 'claimed' | 'expired' | 'revoked'>({
    type: 'string',
    enum: ['created', 'opened', 'claimed', 'expired', 'revoked'],
    description:
      '`created`; `opened` once a phone looked it up; `claimed` once `maxDevices` phones enrolled; `expired` past `expiresAt`; `revoked`.',
  }),
  expiresAt: Millis('When the link stops working, Unix milliseconds.'),
  maxDevices: Type.Integer({ description: 'How many phones the link enrols.' }),
  devices: Type.Array(Type.String(), { description: 'The mobile device ids enrolled through it so far, in order.' }),
  residentId: Type.Optional(Type.String({ description: 'The resident it enrols phones into.' })),
  mobileDeviceId: Type.Optional(Type.String({ description: 'The one mobile device it enrols a phone as.' })),
  replaces: Type.Optional(Type.String({ description: 'The mobile device its first redemption removes.' })),
  note: Type.Optional(Type.String({ description: 'The operator\'s note.' })),
  creationDate: Millis('When it was created, Unix milliseconds.'),
  openedDate: Type.Optional(Millis('When a phone first looked it up.')),
  endedDate: Type.Optional(Millis('When it was claimed, expired or revoked.')),
};

const CLAIM_EXAMPLE = {
  id: CLAIM_ID_EXAMPLE,
  state: 'created' as const,
  expiresAt: 1767830400000,
  maxDevices: 1,
  devices: [],
  residentId: '0b8f2a6e-3c4d-4e5f-8a9b-1c2d3e4f5a6b',
  creationDate: 1767225600000,
};

export const ClaimSchema = named('Claim', Type.Object(claimProperties), CLAIM_EXAMPLE);

export const CreatedClaimSchema = named(
  'CreatedClaim',
  Type.Object({
    ...claimProperties,
    code: Type.String({
      description: 'The secret (256 random bits, base64url) the phone redeems. Shown only in this answer; the service keeps its hash.',
    }),
    url: Type.String({
      description: '`{PUBLIC_URL}/claim#{code}`: the link the app sends (mail, SMS). The code is in the fragment, which browsers never send.',
    }),
  }),
  { ...CLAIM_EXAMPLE, code: CODE_EXAMPLE, url: `https://acs.example.com/claim#${CODE_EXAMPLE}` },
);

export const ClaimIdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 256, description: 'The claim id.' }) });

export const ClaimListQuery = defaultsOptional(
  Type.Object(
    {
      residentId: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'Only the claims for this resident.' })),
      mobileDeviceId: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'Only the claims for this mobile device.' })),
      ...PAGE_PARAMETERS,
    },
    { additionalProperties: false },
  ),
);

export const ClaimCodeParams = Type.Object({
  code: Type.String({ minLength: 1, maxLength: 256, description: 'The code: the fragment of the claim link.' }),
});

export const ClaimLookupSchema = named(
  'ClaimLookup',
  Type.Object({
    tenant: Type.String({ description: 'The tenant (operator) the phone enrols with.' }),
    residentName: Type.Optional(Type.String({ description: 'The resident\'s name, for a claim for a resident.' })),
    expiresAt: Millis('When the link stops working.'),
    nonce: Type.String({
      description: 'Put it in the `proof` of the redemption within 5 minutes; it works once. Each look-up gives a new one.',
    }),
  }),
  { tenant: 'acme', residentName: 'Ada Lovelace', expiresAt: 1767830400000, nonce: 'U3q6eXkL_m5sgbtqZjGFXA' },
);

export const ClaimRedemptionSchema = named(
  'ClaimRedemption',
  Type.Object(
    {
      publicKey: Type.Object(
        {},
        {
          additionalProperties: true,
          maxProperties: 16,
          description: 'The phone\'s P-256 public key as a JWK (`kty`, `crv`, `x`, `y`); a private member (`d`) is a 422.',
        },
      ),
      proof: Type.String({
        minLength: 1,
        maxLength: 4096,
        description:
          'A compact JWS signed by that key (docs/api-reference.md 11.1): header `{"alg": "ES256", "typ": "key-proof+jwt"}`, payload ' +
          '`{"aud": PUBLIC_URL, "nonce", "iat"}` with the nonce of this claim\'s look-up.',
      }),
      name: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'A name for the phone, e.g. its model.' })),
    },
    {
      additionalProperties: false,
      examples: [
        {
          publicKey: PHONE_KEY_EXAMPLE,
          proof:
            'eyJhbGciOiJFUzI1NiIsInR5cCI6ImtleS1wcm9vZitqd3QifQ.eyJhdWQiOiJodHRwczovL2Fjcy5leGFtcGxlLmNvbSIsIm5vbmNlIjoi' +
            'VTNxNmVYa0xfbTVzZ2J0cVpqR0ZYQSIsImlhdCI6MTc2NzIyNTYwMH0.c2lnbmF0dXJl',
          name: 'Pixel 9',
        },
      ],
    },
  ),
);

export const RedeemedClaimSchema = named(
  'RedeemedClaim',
  Type.Object({
    mobileDeviceId: Type.String({ description: 'The phone\'s mobile device.' }),
    clientId: Type.String({
      description:
        'Its OAuth client, bound to the device, with `tokens:download` and `keys:register`. It has no secret: it authenticates ' +
        'with `private_key_jwt` signed by the phone\'s key (docs/api-reference.md 11.1).',
    }),
    tokenEndpoint: Type.String({ description: 'Where it gets access tokens: `{PUBLIC_URL}/oauth/token`.' }),
    issuer: Type.String({ description: 'The authorization server (PUBLIC_URL): an `aud` its client assertions may name.' }),
  }),
  {
    mobileDeviceId: '5a6b7c8d-9e0f-4a1b-8c2d-3e4f5a6b7c8d',
    clientId: 'Yk3n9Q2vR7sT1wX4zA8cEg',
    tokenEndpoint: 'https://acs.example.com/oauth/token',
    issuer: 'https://acs.example.com',
  },
);
