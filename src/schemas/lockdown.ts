// Schemas of lockdowns (docs/api-reference.md 15): as requested and as answered.
import { Type } from '@sinclair/typebox';
import { named } from './common.js';

const LockModeSchema = Type.Union([Type.Literal('lockdown'), Type.Literal('normal')], {
  description: '`lockdown`: the locks refuse every credential but an override ticket\'s; `normal`: they open as before.',
});

const LockdownScopeSchema = Type.Union(
  [
    Type.Literal('tenant', { description: 'Every lock of the tenant.' }),
    Type.Object(
      { lockGroupId: Type.String({ minLength: 1, maxLength: 128, description: 'The lock group (Access API) whose locks it reaches.' }) },
      { additionalProperties: false, description: 'The locks of one lock group, as its members are now.' },
    ),
  ],
  { description: '`"tenant"`, or `{"lockGroupId": …}`: the locks in scope at this moment get the new state.' },
);

export const NewLockdownSchema = named(
  'NewLockdown',
  Type.Object(
    {
      scope: LockdownScopeSchema,
      mode: LockModeSchema,
      reason: Type.String({ minLength: 1, maxLength: 500, description: 'Why, for the audit trail and the events.' }),
    },
    { additionalProperties: false },
  ),
  { scope: 'tenant', mode: 'lockdown', reason: 'Police request: threat on site' },
);

export const LockdownSchema = named(
  'Lockdown',
  Type.Object({
    id: Type.String({ description: 'The lockdown id.' }),
    scope: LockdownScopeSchema,
    mode: LockModeSchema,
    reason: Type.String(),
    creationTime: Type.Integer({ description: 'When it was made, Unix milliseconds.' }),
    serial: Type.Integer({ description: 'The serial of the signed lock state it gave its locks (docs/lock-integration.md 11).' }),
    lockCount: Type.Integer({ description: 'The locks in its scope when it was made.' }),
    locksReached: Type.Integer({
      description: 'Of those still registered, how many have applied this state or a later one (their sync or a signed receipt, docs/api-reference.md 8.4).',
    }),
    locksNotReached: Type.Integer({ description: 'Of those still registered, how many have not yet.' }),
  }),
  {
    id: '5d0c7d1e-8d0a-4b8e-9f5c-0e6a2b1c3d4e',
    scope: 'tenant',
    mode: 'lockdown',
    reason: 'Police request: threat on site',
    creationTime: 1767225600000,
    serial: 4711,
    lockCount: 120,
    locksReached: 87,
    locksNotReached: 33,
  },
);
