// Schemas of the Access API's groups (docs/api-reference.md 5): residents (of mobile devices) and lock groups (of secured objects).
import { Type } from '@sinclair/typebox';
import { named } from './common.js';

export const GroupIdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64, description: 'The group id.' }) });
const Name = Type.String({ minLength: 1, maxLength: 200, description: 'A name for people.' });
/** docs/api-reference.md 7 / issue limits: at most this many member ids in one call. */
export const MAX_MEMBERS_PER_CALL = 1000;
const MemberIds = (description: string) =>
  Type.Array(Type.String({ minLength: 1, maxLength: 128 }), { maxItems: MAX_MEMBERS_PER_CALL, description });

export const NewResidentSchema = named(
  'NewResident',
  Type.Object(
    { name: Name, mobileDeviceIds: Type.Optional(MemberIds('The resident\'s mobile devices (registered through the Operator API).')) },
    { additionalProperties: false, examples: [{ name: 'Alice Example', mobileDeviceIds: ['phone-alice-1', 'card-alice'] }] },
  ),
);

export const NewLockGroupSchema = named(
  'NewLockGroup',
  Type.Object(
    { name: Name, securedObjectIds: Type.Optional(MemberIds('The secured objects in the group.')) },
    { additionalProperties: false, examples: [{ name: 'Building A', securedObjectIds: ['front-door', 'garage'] }] },
  ),
);

export const RenameSchema = named(
  'Rename',
  Type.Object({ name: Name }, { additionalProperties: false, examples: [{ name: 'New name' }] }),
);

export const ResidentSchema = named(
  'Resident',
  Type.Object({
    id: Type.String({ description: 'The resident id.' }),
    name: Type.String(),
    mobileDeviceIds: Type.Array(Type.String(), { description: 'Its mobile devices.' }),
    creationDate: Type.Integer({ description: 'Creation time, Unix milliseconds.' }),
  }),
  {
    id: '2f1c3a4e-8b9d-4c0e-9f1a-2b3c4d5e6f70',
    name: 'Alice Example',
    mobileDeviceIds: ['phone-alice-1', 'card-alice'],
    creationDate: 1767225600000,
  },
);

export const LockGroupSchema = named(
  'LockGroup',
  Type.Object({
    id: Type.String({ description: 'The lock group id.' }),
    name: Type.String(),
    securedObjectIds: Type.Array(Type.String(), { description: 'Its secured objects.' }),
    creationDate: Type.Integer({ description: 'Creation time, Unix milliseconds.' }),
  }),
  {
    id: '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d',
    name: 'Building A',
    securedObjectIds: ['front-door', 'garage'],
    creationDate: 1767225600000,
  },
);
