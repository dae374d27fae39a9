// The event types of the tenant's event log (docs/api-reference.md 10, 7.5): one list for the schemas that document them,
// the services that write them and the webhook subscriptions that select them.

/**
 * Every type the event log holds. The list of docs/api-reference.md 10 plus the changes the audit trail recorded
 * before the event log existed (users, logins, group renames, secret rotations), since the two are one record.
 */
export const EVENT_TYPES = [
  'ticket.created',
  'ticket.revoked',
  'ticket.downloaded',
  'ticket.revocation_applied',
  'access_permission.created',
  'access_permission.deleted',
  'resident.created',
  'resident.renamed',
  'resident.deleted',
  'resident.device_added',
  'resident.device_removed',
  'lock_group.created',
  'lock_group.renamed',
  'lock_group.deleted',
  'lock_group.lock_added',
  'lock_group.lock_removed',
  'secured_object.created',
  'secured_object.updated',
  'secured_object.deleted',
  'secured_object.clock_drift',
  'secured_object.key_registered',
  'secured_object.key_removed',
  'mobile_device.created',
  'mobile_device.deleted',
  'mobile_device.key_registered',
  'mobile_device.key_revoked',
  'access_log.denied',
  'access_log.granted',
  'key.rotated',
  'client.created',
  'client.deleted',
  'client.decommissioned',
  'client.secret_rotated',
  'user.created',
  'user.updated',
  'user.deleted',
  'login.locked',
  'token.refresh_reuse',
  'token.code_reuse',
  'webhook.created',
  'webhook.updated',
  'webhook.deleted',
  'webhook.secret_rotated',
  'webhook.disabled',
  'job.finished',
  'settings.updated',
  'claim.created',
  'claim.opened',
  'claim.claimed',
  'claim.expired',
  'claim.revoked',
  'erasure.requested',
  'erasure.finished',
  'lockdown.started',
  'lockdown.ended',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

const known = new Set<string>(EVENT_TYPES);
export const isEventType = (value: string): value is EventType => known.has(value);
