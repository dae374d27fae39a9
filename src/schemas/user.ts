// Schemas of Access API user management (docs/api-reference.md 3.7).
import { Type } from '@sinclair/typebox';
import { USERNAME_PATTERN } from '../shared/usernames.js';
import { USER_ROLES } from '../shared/scopes.js';
import { named } from './common.js';

export const UsernameParams = Type.Object({
  username: Type.String({ minLength: 1, maxLength: 128, description: 'The username (without `@TENANT`).' }),
});

const ROLE_DESCRIPTION =
  'The console role (docs/api-reference.md 13): `admin` every Operator and Access API scope, `operator` all but ' +
  '`clients:manage`, `users:manage` and `webhooks:manage`, `viewer` the read scopes. A user without one cannot sign in ' +
  'to the console.';

export const UserRoleSchema = Type.Union(
  USER_ROLES.map((role) => Type.Literal(role)),
  { description: ROLE_DESCRIPTION },
);

export const NewUserSchema = named(
  'NewUser',
  Type.Object(
    {
      username: Type.String({ pattern: USERNAME_PATTERN, description: 'Unique in the tenant; no `@`, no white space.' }),
      password: Type.String({
        minLength: 8,
        maxLength: 72,
        description: 'At least 8 characters and at most 72 bytes (bcrypt reads no more).',
      }),
      role: Type.Optional(UserRoleSchema),
    },
    { additionalProperties: false, examples: [{ username: 'alice', password: 'correct horse battery', role: 'operator' }] },
  ),
);

export const UserSchema = named(
  'User',
  Type.Object({
    id: Type.String({ description: 'The user id (the `sub` of its access tokens).' }),
    username: Type.String(),
    creationDate: Type.Integer({ description: 'Creation time, Unix milliseconds.' }),
    role: Type.Optional(UserRoleSchema),
  }),
  { id: '8e7d6c5b-4a39-4281-9f0e-1d2c3b4a5968', username: 'alice', creationDate: 1767225600000, role: 'operator' },
);

export const UserPatchSchema = named(
  'UserPatch',
  Type.Object(
    {
      role: Type.Union([UserRoleSchema, Type.Null()], {
        description: `${ROLE_DESCRIPTION} \`null\` removes the role.`,
      }),
    },
    { additionalProperties: false, examples: [{ role: 'viewer' }] },
  ),
);
