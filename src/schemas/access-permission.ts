// Schemas of access permissions (docs/api-reference.md 5): a resident's devices get tickets for a lock group's locks.
import { Type } from '@sinclair/typebox';
import { ChannelSchema, CommandSchema, defaultsOptional, named, PAGE_PARAMETERS } from './common.js';
import { ScheduleSchema } from './schedule.js';
import { NewTicketSchema } from './ticket.js';

/** The example permission of the documents: as requested, and in the answer that shows it made. */
const NEW_ACCESS_PERMISSION_EXAMPLE = {
  residentId: '2f1c3a4e-8b9d-4c0e-9f1a-2b3c4d5e6f70',
  lockGroupId: '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d',
  beginDate: 1767225600000,
  endDate: 1798761600000,
  commands: ['open'],
  channels: ['btlespp'],
};

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
      examples: [NEW_ACCESS_PERMISSION_EXAMPLE],
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
    ...NEW_ACCESS_PERMISSION_EXAMPLE,
    creationDate: 1767225600000,
    tokenCount: 4,
  },
);

export const AccessPermissionQuery = defaultsOptional(
  Type.Object(
    {
      residentId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Only this resident\'s permissions.' })),
      lockGroupId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Only this lock group\'s permissions.' })),
      ...PAGE_PARAMETERS,
    },
    { additionalProperties: false },
  ),
);
