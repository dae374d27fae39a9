// Schemas of OAuth client management (docs/api-reference.md 3.7).
import { Type } from '@sinclair/typebox';
import { DOCUMENTED_ENUM } from '../shared/documented-enum.js';
import { ALL_SCOPES } from '../shared/scopes.js';
import { named } from './common.js';

// The client service checks a requested scope (a 400 naming the known ones, docs/api-reference.md 3.7); the documents list them.
export const ScopeSchema = Type.String({
  minLength: 1,
  maxLength: 64,
  description: `One of: ${ALL_SCOPES.join(', ')}.`,
  [DOCUMENTED_ENUM]: [...ALL_SCOPES],
});

/** A scope in an answer: only scopes of ALL_SCOPES are ever granted. */
const GrantedScopeSchema = Type.Unsafe<string>({ type: 'string', enum: [...ALL_SCOPES], description: 'A scope the client may request.' });

export const ClientIdParams = Type.Object({
  clientId: Type.String({ minLength: 1, maxLength: 128, description: 'The client id.' }),
});

export const NewClientSchema = named(
  'NewClient',
  Type.Object(
    {
      name: Type.String({ minLength: 1, maxLength: 200, description: 'A name for people.' }),
      scopes: Type.Array(ScopeSchema, { minItems: 1, maxItems: 32, description: 'The scopes the client may request.' }),
      mobileDeviceId: Type.Optional(
        Type.String({ minLength: 1, maxLength: 128, description: 'Binds the client to this mobile device (Device API).' }),
      ),
      securedObjectId: Type.Optional(
        Type.String({ minLength: 1, maxLength: 128, description: 'Binds the client to this secured object (Device API).' }),
      ),
    },
    {
      additionalProperties: false,
      examples: [{ name: 'Front desk backend', scopes: ['tokens:create', 'tokens:read', 'devices:read'] }],
    },
  ),
);

export const ClientSchema = named(
  'Client',
  Type.Object({
    clientId: Type.String({ description: 'The client id (the Basic user name at the token endpoint).' }),
    name: Type.String(),
    scopes: Type.Array(GrantedScopeSchema, { description: 'The scopes the client may request.' }),
    mobileDeviceId: Type.Optional(Type.String({ description: 'The mobile device the client is bound to.' })),
    securedObjectId: Type.Optional(Type.String({ description: 'The secured object the client is bound to.' })),
    creationDate: Type.Integer({ description: 'Creation time, Unix milliseconds.' }),
    decommissioned: Type.Optional(
      Type.Literal(true, {
        description:
          'Present (true) when the secured object the client is bound to was deleted: the client may then only sync ' +
          '(docs/api-reference.md 4.1). Absent otherwise.',
      }),
    ),
  }),
  {
    clientId: '3f2a9c4e-1b7d-4e8f-9a0b-1c2d3e4f5a6b',
    name: 'Front desk backend',
    scopes: ['tokens:create', 'tokens:read', 'devices:read'],
    creationDate: 1767225600000,
  },
);

/** docs/api-reference.md 3.7: a create's answer; on an Idempotency-Key replay the secret is withheld (docs/security-cases.md H57). */
export const CreatedClientSchema = named(
  'CreatedClient',
  Type.Composite([
    ClientSchema,
    Type.Object({
      clientSecret: Type.Optional(
        Type.String({ description: 'The secret: shown in this answer only. Store it safely. Absent on an `Idempotency-Key` replay.' }),
      ),
      secretWithheld: Type.Optional(
        Type.Literal(true, {
          description: 'Only on an `Idempotency-Key` replay: the secret was shown once, in the first answer, and is not shown again.',
        }),
      ),
    }),
  ]),
  {
    clientId: '3f2a9c4e-1b7d-4e8f-9a0b-1c2d3e4f5a6b',
    name: 'Front desk backend',
    scopes: ['tokens:create', 'tokens:read', 'devices:read'],
    creationDate: 1767225600000,
    clientSecret: 'Vq3k8Zx1Rt6Yw0Pm4Ns7Lb2Hc9Jd5Fg',
  },
);

export const ClientWithSecretSchema = named(
  'ClientWithSecret',
  Type.Composite([
    ClientSchema,
    Type.Object({ clientSecret: Type.String({ description: 'The secret: shown in this answer only. Store it safely.' }) }),
  ]),
  {
    clientId: '3f2a9c4e-1b7d-4e8f-9a0b-1c2d3e4f5a6b',
    name: 'Front desk backend',
    scopes: ['tokens:create', 'tokens:read', 'devices:read'],
    creationDate: 1767225600000,
    clientSecret: 'Vq3k8Zx1Rt6Yw0Pm4Ns7Lb2Hc9Jd5Fg',
  },
);
