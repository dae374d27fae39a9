// A tenant's settings (docs/api-reference.md 11.2): the holder-binding policy its locks apply unless overridden.
import type { Database } from '../db/database.js';
import { nextChangeSeq } from '../db/repositories/change-log.repo.js';
import { findTenantSettings, updateTenantHolderBinding, type TenantSettings } from '../db/repositories/settings.repo.js';
import { NotFoundError } from '../errors.js';
import type { HolderBinding } from '../shared/holder-binding.js';
import { recordChange } from './audit.service.js';
import type { ActionContext, Clock } from './context.js';

export interface SettingsChanges {
  holderBinding?: HolderBinding | undefined;
}

export function createSettingsService({ db, clock }: { db: Database; clock: Clock }) {
  async function read(tenantId: string): Promise<TenantSettings> {
    const settings = await findTenantSettings(db, tenantId);
    if (!settings) throw new NotFoundError('No such tenant.');
    return settings;
  }

  return {
    read,

    /**
     * PATCH /operatorapi/settings: a new policy takes a change number (docs/api-reference.md 11.2), so every lock's
     * next sync and every revocation list signed after it carry it, to online locks and to those a phone visits.
     */
    async update(context: ActionContext, changes: SettingsChanges): Promise<TenantSettings> {
      if (changes.holderBinding === undefined) return read(context.tenantId);
      const holderBinding = changes.holderBinding;
      const updated = await db.transaction(async (tx) => {
        const seq = await nextChangeSeq(tx, context.tenantId);
        const settings = await updateTenantHolderBinding(tx, context.tenantId, holderBinding, seq);
        if (!settings) return null;
        await recordChange(tx, context, clock(), 'settings.updated', 'settings', { holderBinding });
        return settings;
      });
      if (!updated) throw new NotFoundError('No such tenant.');
      return updated;
    },
  };
}

export type SettingsService = ReturnType<typeof createSettingsService>;
