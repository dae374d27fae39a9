// A tenant's settings (docs/api-reference.md 11.2, 16.1): the holder-binding policy its locks apply unless overridden,
// and how long its personal data is kept.
import type { Database } from '../db/database.js';
import { nextChangeSeq } from '../db/repositories/change-log.repo.js';
import { findTenantSettings, updateTenantHolderBinding, updateTenantRetention } from '../db/repositories/settings.repo.js';
import { NotFoundError } from '../errors.js';
import type { HolderBinding } from '../shared/holder-binding.js';
import { effectiveRetention, type RetentionChoices, type RetentionPeriods } from '../shared/retention-periods.js';
import { recordChange } from './audit.service.js';
import type { ActionContext, Clock } from './context.js';

export interface TenantSettings {
  holderBinding: HolderBinding;
  /** The periods in force: the tenant's choice, else the instance's default. */
  retention: RetentionPeriods;
}

export interface SettingsChanges {
  holderBinding?: HolderBinding | undefined;
  /** A period to set, or `null` to follow the instance's default again. */
  retention?: Partial<RetentionChoices> | undefined;
}

export interface SettingsServiceOptions {
  db: Database;
  clock: Clock;
  /** The instance's periods (ACCESS_LOG_RETENTION_DAYS, EVENT_RETENTION_DAYS, AUDIT_RETENTION_DAYS). */
  retentionDefaults: RetentionPeriods;
}

export function createSettingsService({ db, clock, retentionDefaults }: SettingsServiceOptions) {
  async function read(tenantId: string): Promise<TenantSettings> {
    const settings = await findTenantSettings(db, tenantId);
    if (!settings) throw new NotFoundError('No such tenant.');
    return { holderBinding: settings.holderBinding, retention: effectiveRetention(settings.retention, retentionDefaults) };
  }

  return {
    read,

    /**
     * PATCH /operatorapi/settings: a new policy takes a change number (docs/api-reference.md 11.2), so every lock's
     * next sync and every revocation list signed after it carry it, to online locks and to those a phone visits.
     * Retention periods reach no lock: the next prune applies them (docs/api-reference.md 16.1).
     */
    async update(context: ActionContext, changes: SettingsChanges): Promise<TenantSettings> {
      const retention = changes.retention ?? {};
      const changesRetention = Object.keys(retention).length > 0;
      if (changes.holderBinding === undefined && !changesRetention) return read(context.tenantId);
      await db.transaction(async (tx) => {
        // Thrown inside, so a tenant removed meanwhile rolls back the change number too.
        if (changes.holderBinding !== undefined) {
          const seq = await nextChangeSeq(tx, context.tenantId);
          if (!(await updateTenantHolderBinding(tx, context.tenantId, changes.holderBinding, seq))) throw new NotFoundError('No such tenant.');
        }
        if (changesRetention && !(await updateTenantRetention(tx, context.tenantId, retention))) throw new NotFoundError('No such tenant.');
        await recordChange(tx, context, clock(), 'settings.updated', 'settings', {
          ...(changes.holderBinding !== undefined ? { holderBinding: changes.holderBinding } : {}),
          ...(changesRetention ? { retention } : {}),
        });
      });
      return read(context.tenantId);
    },
  };
}

export type SettingsService = ReturnType<typeof createSettingsService>;
