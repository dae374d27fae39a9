// A tenant's retention periods (docs/api-reference.md 16.1): its own choice where it made one, else the instance's.

/** Days, as the settings answer them: how long each kind of record is kept. */
export interface RetentionPeriods {
  /** Access-log entries, counted from when the server received them (docs/api-reference.md 8.5). */
  accessLogDays: number;
  /** The event feed and the webhook delivery attempts (docs/api-reference.md 10). */
  eventDays: number;
  /** The audit trail (docs/api-reference.md 7.5). */
  auditDays: number;
}

/** What a tenant chose: `null` where it follows the instance's default. */
export type RetentionChoices = { [Period in keyof RetentionPeriods]: number | null };

/** The bounds of a period a tenant may choose (migration 029 checks the same). */
export const MIN_RETENTION_DAYS = 1;
export const MAX_RETENTION_DAYS = 3650;

export const DAY_MS = 86_400_000;

export function effectiveRetention(choices: RetentionChoices, defaults: RetentionPeriods): RetentionPeriods {
  return {
    accessLogDays: choices.accessLogDays ?? defaults.accessLogDays,
    eventDays: choices.eventDays ?? defaults.eventDays,
    auditDays: choices.auditDays ?? defaults.auditDays,
  };
}

/**
 * An event and its audit entry are one record (docs/api-reference.md 16.1): it goes once neither the feed nor the
 * audit trail may still show it.
 */
export function recordRetentionDays(periods: RetentionPeriods): number {
  return Math.max(periods.eventDays, periods.auditDays);
}
