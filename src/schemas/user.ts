// Schemas of Access API user management (docs/api-reference.md 3.7).
import { Type } from '@sinclair/typebox';
import { USERNAME_PATTERN } from '../shared/usernames.js';
import { named } from './common.js';

export const UsernameParams = Type.Object({
  username: Type.String({ minLength: 1, maxLength: 128, description: 'The username (without `@TENANT`).' }),
});

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
    },
    { additionalProperties: false, examples: [{ username: 'alice', password: 'correct horse battery' }] },
  ),
);

export const UserSchema = named(
  'User',
  Type.Object({
    id: Type.String({ description: 'The user id (the `sub` of its access tokens).' }),
    username: Type.String(),
    creationDate: Type.Integer({ description: 'Creation time, Unix milliseconds.' }),
  }),
  { id: '8e7d6c5b-4a39-4281-9f0e-1d2c3b4a5968', username: 'alice', creationDate: 1767225600000 },
);
