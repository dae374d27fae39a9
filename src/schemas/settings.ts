// Schemas of a tenant's settings (docs/api-reference.md 11.2, 16.1): the holder-binding policy and the retention periods.
import { Type } from '@sinclair/typebox';
import { named } from './common.js';
import { HolderBindingSchema } from './holder-key.js';
import { MAX_RETENTION_DAYS, MIN_RETENTION_DAYS } from '../shared/retention-periods.js';

const PERIODS = {
  accessLogDays: 'Days an access-log entry is kept after the server received it (docs/api-reference.md 8.5).',
  eventDays: 'Days the event feed serves an event, and the webhook delivery attempts are kept (docs/api-reference.md 10).',
  auditDays: 'Days the audit trail keeps an entry (docs/api-reference.md 7.5).',
} as const;

const days = (description: string) => Type.Integer({ minimum: MIN_RETENTION_DAYS, maximum: MAX_RETENTION_DAYS, description });

export const RetentionSchema = Type.Object(
  {
    accessLogDays: days(`${PERIODS.accessLogDays} The tenant's own choice, else the instance's ACCESS_LOG_RETENTION_DAYS.`),
    eventDays: days(`${PERIODS.eventDays} The tenant's own choice, else the instance's EVENT_RETENTION_DAYS.`),
    auditDays: days(`${PERIODS.auditDays} The tenant's own choice, else the instance's AUDIT_RETENTION_DAYS.`),
  },
  { description: 'How long the tenant\'s records are kept; older ones are pruned in the background (docs/api-reference.md 16.1).' },
);

/** A period to set, or `null` to follow the instance's default again. */
const dayChoice = (description: string) =>
  Type.Optional(Type.Union([days(description), Type.Null()], { description: `${description} \`null\`: the instance's default.` }));

const RetentionChangesSchema = Type.Object(
  {
    accessLogDays: dayChoice(PERIODS.accessLogDays),
    eventDays: dayChoice(PERIODS.eventDays),
    auditDays: dayChoice(PERIODS.auditDays),
  },
  {
    additionalProperties: false,
    minProperties: 1,
    description: `The periods to change, each ${MIN_RETENTION_DAYS} to ${MAX_RETENTION_DAYS} days or \`null\`; the others stay as they are.`,
  },
);

export const SettingsSchema = named(
  'TenantSettings',
  Type.Object({ holderBinding: HolderBindingSchema, retention: RetentionSchema }),
  { holderBinding: 'optional', retention: { accessLogDays: 365, eventDays: 30, auditDays: 730 } },
);

export const SettingsChangesSchema = named(
  'TenantSettingsChanges',
  Type.Object(
    { holderBinding: Type.Optional(HolderBindingSchema), retention: Type.Optional(RetentionChangesSchema) },
    { additionalProperties: false, minProperties: 1 },
  ),
  { retention: { accessLogDays: 90, eventDays: null } },
);
