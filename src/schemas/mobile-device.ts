// Schemas of mobile devices, the phones tickets are issued to (docs/api-reference.md 4.2).
import { Type } from '@sinclair/typebox';
import { ID_PATTERN, named } from './common.js';
import { PHONE_KEY_THUMBPRINT_EXAMPLE } from './holder-key.js';

export const NewMobileDeviceSchema = named(
  'NewMobileDevice',
  Type.Object(
    {
      id: Type.Optional(Type.String({ pattern: ID_PATTERN, description: 'Your id for the device; the server makes one when absent.' })),
      name: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'A name for people.' })),
    },
    { additionalProperties: false, examples: [{ id: 'phone-alice-1', name: "Alice's phone" }] },
  ),
);

export const MobileDeviceSchema = named(
  'MobileDevice',
  Type.Object({
    id: Type.String({ description: 'The mobile device id.' }),
    name: Type.Optional(Type.String()),
    creationTime: Type.Integer({ description: 'Creation time, Unix milliseconds.' }),
    keyThumbprint: Type.Optional(
      Type.String({
        description:
          'The RFC 7638 thumbprint of the phone\'s registered key (docs/api-reference.md 11.1): its credentials carry it as ' +
          '`cnf.jkt`. Absent while it has none.',
      }),
    ),
    keyRegisteredTime: Type.Optional(Type.Integer({ description: 'When the key was registered, Unix milliseconds; absent while none.' })),
  }),
  {
    id: 'phone-alice-1',
    name: "Alice's phone",
    creationTime: 1767225600000,
    keyThumbprint: PHONE_KEY_THUMBPRINT_EXAMPLE,
    keyRegisteredTime: 1767225900000,
  },
);
