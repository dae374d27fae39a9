// Schemas of the Access API (docs/api-reference.md 5): residents, lock groups, access permissions.
import { Type } from '@sinclair/typebox';
import { defaultsOptional } from './query.js';
import { ChannelSchema, CommandSchema, NewTicketSchema } from './operator.js';
import { ScheduleSchema } from './schedule.js';
import { named } from './named.js';

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

export const NewAccessPermissionSchema = named(
  'NewAccessPermission',
  Type.Object(
    {
      residentId: Type.String({ minLength: 1, maxLength: 64, description: 'Whose devices get tickets.' }),
      lockGroupId: Type.String({ minLength: 1, maxLength: 64, description: 'Which locks they open.' }),
      beginDate: NewTicketSchema.properties.beginDate,
      endDate: NewTicketSchema.properties.endDate,
      commands: NewTicketSchema.properties.commands,
      channels: NewTicketSchema.properties.channels,
      schedule: NewTicketSchema.properties.schedule,
    },
    {
      additionalProperties: false,
      examples: [
        {
          residentId: '2f1c3a4e-8b9d-4c0e-9f1a-2b3c4d5e6f70',
          lockGroupId: '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d',
          beginDate: 1767225600000,
          endDate: 1798761600000,
          commands: ['open'],
          channels: ['btlespp'],
        },
      ],
    },
  ),
);

export const AccessPermissionSchema = named(
  'AccessPermission',
  Type.Object({
    id: Type.String({ description: 'The access permission id.' }),
    residentId: Type.String(),
    lockGroupId: Type.String(),
    beginDate: Type.Integer(),
    endDate: Type.Integer(),
    commands: Type.Array(CommandSchema, { description: 'Permitted commands of its tickets.' }),
    channels: Type.Array(ChannelSchema, { description: 'Channels of its tickets.' }),
    creationDate: Type.Integer({ description: 'Creation time, Unix milliseconds.' }),
    schedule: Type.Optional(ScheduleSchema),
    tokenCount: Type.Integer({ description: 'The live (unrevoked) tickets it holds: one per device × lock.' }),
  }),
  {
    id: '6c5d4e3f-2a1b-4c0d-9e8f-7a6b5c4d3e2f',
    residentId: '2f1c3a4e-8b9d-4c0e-9f1a-2b3c4d5e6f70',
    lockGroupId: '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d',
    beginDate: 1767225600000,
    endDate: 1798761600000,
    commands: ['open'],
    channels: ['btlespp'],
    creationDate: 1767225600000,
    tokenCount: 4,
  },
);

export const AccessPermissionQuery = defaultsOptional(
  Type.Object(
    {
      residentId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Only this resident\'s permissions.' })),
      lockGroupId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Only this lock group\'s permissions.' })),
      limit: Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'Page size, 1 to 1000.' }),
      cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'Opaque cursor from `Link: rel="next"`.' })),
    },
    { additionalProperties: false },
  ),
);
