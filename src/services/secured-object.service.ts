// Secured objects (locks, docs/api-reference.md 4.1, 9): register, read, page, change the time zone, remove (which revokes
// their tickets).
import { randomUUID } from 'node:crypto';
import type { Database } from '../db/database.js';
import { decommissionClientsOfSecuredObject } from '../db/repositories/client.repo.js';
import { forgetScheduledCredentials } from '../db/repositories/download.repo.js';
import { deleteLockTelemetry } from '../db/repositories/lock-telemetry.repo.js';
import {
  deleteSecuredObject,
  findSecuredObject,
  insertSecuredObject,
  listSecuredObjects,
  updateSecuredObject,
  type SecuredObjectChanges,
  type SecuredObjectRecord,
} from '../db/repositories/secured-object.repo.js';
import { ConflictError, NotFoundError, UnprocessableError, detailWithReasons } from '../errors.js';
import { nextChangeSeq } from '../db/repositories/change-log.repo.js';
import type { HolderBinding } from '../shared/holder-binding.js';
import { recordChange } from './audit.service.js';
import type { ActionContext, Clock } from './context.js';
import type { LockPropagationFields, LockTelemetryService } from './lock-telemetry.service.js';
import { decodeCursor, pageOf, type Page } from '../shared/pagination.js';
import type { DomainMetrics } from './domain-metrics.js';
import { removeWithTickets, type TicketHolder } from './removal.js';
import type { RevocationService } from './oauth/revoked-access-tokens.service.js';
import { checkTimeZone } from '../shared/schedule/preview.js';
import { channelErrors, type RevivedInterfaces } from '../shared/vocabulary.js';

export interface SecuredObject {
  id: string;
  channels: string[];
  urls: string[];
  creationTime: number;
  /** The IANA time zone the lock's schedules are read in (docs/api-reference.md 9). */
  timeZone: string;
  /** docs/api-reference.md 11.1: the RFC 7638 thumbprint of the lock's own key; absent while it has none. */
  keyThumbprint?: string;
  /** docs/api-reference.md 11.2: the lock's own holder-binding policy; absent while the tenant's applies. */
  holderBinding?: HolderBinding;
}

/** GET /operatorapi/securedobjects/{id}: the lock with how far the backend's truth has reached it (docs/api-reference.md 8.4). */
export type SecuredObjectWithPropagation = SecuredObject & LockPropagationFields;

export interface NewSecuredObject {
  id?: string | undefined;
  channels: string[];
  localName: string;
  uuid: string;
  /** docs/api-reference.md 9: an IANA name, any spelling the database knows; absent: `UTC`. */
  timeZone?: string | undefined;
}

/** docs/service-overview.md 2.1: one address per channel; `btlespp://<localName>/<UUID>` for Bluetooth LE. */
export function toSecuredObject(record: SecuredObjectRecord): SecuredObject {
  return {
    id: record.id,
    channels: record.channels,
    urls: record.channels.map((channel) => `${channel}://${record.localName}/${record.uuid}`),
    creationTime: record.createdAt,
    timeZone: record.timeZone,
    ...(record.keyThumbprint !== null ? { keyThumbprint: record.keyThumbprint } : {}),
    ...(record.holderBinding !== null ? { holderBinding: record.holderBinding } : {}),
  };
}

export interface SecuredObjectServiceOptions {
  db: Database;
  clock: Clock;
  revived: RevivedInterfaces;
  revocations: RevocationService;
  telemetry: LockTelemetryService;
  /** Access-token lifetime: how long a decommissioned client's older tokens must stay refused. */
  accessTokenTtlMs: number;
  /** Counts what the service did, after it committed (services/domain-metrics.ts). */
  metrics: DomainMetrics;
}

/** How a secured object is removed with its tickets, its clients decommissioned (removal.ts). */
export const SECURED_OBJECTS: TicketHolder = {
  remove: deleteSecuredObject,
  ticketColumn: 'secured_object_id',
  // docs/api-reference.md 4.1: the lock's bound clients stay, able to sync only, up to the change that deleted the lock,
  // so the door still learns every revocation its deletion caused (docs/security-cases.md G43) and never sees a
  // lock later created with the same id. The grant narrows their new tokens to `sync` (grants.service.ts).
  // Their tokens already issued that carry another scope are refused (revocation `client-decommissioned`, within
  // the revocation poll on every instance), so the client fetches a narrowed one. Refusing such a token whole,
  // rather than reading it with fewer scopes, keeps every token's claims true: introspection never reports a scope
  // the token no longer grants, and the client learns (401) that it must ask again. A token holding only `sync`
  // grants nothing the client lost and keeps working. A revocation, unlike a secret rotation's `client-secret`
  // notice, is needed: a rotation leaves issued tokens valid by design (client.service.ts).
  boundClients: {
    retire: decommissionClientsOfSecuredObject,
    revocationKind: 'client-decommissioned',
    auditAction: 'client.decommissioned',
  },
  noun: 'secured object',
  auditNoun: 'secured_object',
  dataKey: 'securedObjectId',
};

export function createSecuredObjectService(options: SecuredObjectServiceOptions) {
  const { db, clock, revived, telemetry } = options;
  return {
    async register(context: ActionContext, input: NewSecuredObject): Promise<SecuredObject> {
      const zone = checkTimeZone('timeZone', input.timeZone ?? 'UTC');
      const errors = [...channelErrors('channels', input.channels, revived), ...zone.errors];
      if (errors.length > 0 || zone.zone === null) {
        throw new UnprocessableError(detailWithReasons('The secured object cannot be registered', errors), errors);
      }
      const record: SecuredObjectRecord = {
        tenantId: context.tenantId,
        id: input.id ?? randomUUID(),
        channels: [...new Set(input.channels)],
        localName: input.localName,
        uuid: input.uuid.toLowerCase(),
        createdAt: clock(),
        // Stored in canonical spelling ("europe/berlin" → "Europe/Berlin"), so reads and comparisons need no rules.
        timeZone: zone.zone,
        keyThumbprint: null,
        holderBinding: null,
      };
      const created = await db.transaction(async (tx) => {
        const inserted = await insertSecuredObject(tx, record);
        if (!inserted) return null;
        // A deleted lock's id registered again names another lock: its telemetry starts anew (docs/api-reference.md 8.4).
        await deleteLockTelemetry(tx, context.tenantId, record.id);
        await recordChange(tx, context, record.createdAt, 'secured_object.created', `secured_object:${record.id}`, { securedObjectId: record.id });
        return inserted;
      });
      if (!created) throw new ConflictError(`The secured object id ${record.id} is in use.`);
      telemetry.forget(context.tenantId, record.id);
      return toSecuredObject(created);
    },

    /** One lock with its telemetry (docs/api-reference.md 8.4, 8.5), in one statement. */
    async read(tenantId: string, id: string): Promise<SecuredObjectWithPropagation> {
      const found = await telemetry.lockWithPropagation(tenantId, id);
      if (!found) throw new NotFoundError(`No secured object ${id}.`);
      return { ...toSecuredObject(found.record), ...found.fields };
    },

    async get(tenantId: string, id: string): Promise<SecuredObject> {
      const record = await findSecuredObject(db, tenantId, id);
      if (!record) throw new NotFoundError(`No secured object ${id}.`);
      return toSecuredObject(record);
    },

    /** A page of the tenant's locks; with `search`, those whose id or local name contains it (docs/api-reference.md 4.1). */
    async list(tenantId: string, limit: number, cursor?: string, search?: string): Promise<Page<SecuredObject>> {
      const rows = await listSecuredObjects(db, tenantId, decodeCursor(cursor), limit + 1, search);
      return pageOf(rows, limit, (row) => ({ createdAt: row.createdAt, id: row.id }), toSecuredObject);
    },

    /**
     * PATCH /operatorapi/securedobjects/{id} (docs/api-reference.md 9): changes the lock's time zone, audited in the same
     * transaction, and answers the lock as GET one does. Credentials already signed keep the `win` they were signed
     * with until a download re-signs them (docs/api-reference.md 8.2).
     */
    async update(context: ActionContext, id: string, changes: SecuredObjectChanges): Promise<SecuredObjectWithPropagation> {
      const stored: SecuredObjectChanges = {};
      if (changes.timeZone !== undefined) {
        const zone = checkTimeZone('timeZone', changes.timeZone);
        if (zone.zone === null) throw new UnprocessableError(detailWithReasons('The secured object cannot be changed', zone.errors), zone.errors);
        stored.timeZone = zone.zone;
      }
      if (changes.holderBinding !== undefined) stored.holderBinding = changes.holderBinding;
      if (Object.keys(stored).length === 0) {
        const errors = [{ field: 'timeZone', message: 'is missing; send a field to change (timeZone, holderBinding)' }];
        throw new UnprocessableError(detailWithReasons('The secured object cannot be changed', errors), errors);
      }
      await db.transaction(async (tx) => {
        // docs/api-reference.md 11.2: a policy change takes a change number, so the lock's next sync and the next
        // revocation list for it carry the policy. LOCK ORDER: the tenant's change counter before the lock's row.
        const seq = stored.holderBinding !== undefined ? await nextChangeSeq(tx, context.tenantId) : null;
        // Thrown inside, so that the change number taken for a missing lock is rolled back with the rest.
        if (!(await updateSecuredObject(tx, context.tenantId, id, stored, seq))) throw new NotFoundError(`No secured object ${id}.`);
        // docs/api-reference.md 9: windows are computed when a credential is signed, so a new zone re-signs the lock's
        // scheduled credentials on their phones' next download instead of at their half-lifetime renewal.
        if (stored.timeZone !== undefined) await forgetScheduledCredentials(tx, context.tenantId, id);
        await recordChange(tx, context, clock(), 'secured_object.updated', `secured_object:${id}`, { securedObjectId: id });
      });
      return this.read(context.tenantId, id);
    },

    /**
     * Removes the lock and, in the same transaction, revokes every ticket for it and decommissions every client
     * bound to it (docs/api-reference.md 4.1).
     */
    async remove(context: ActionContext, id: string): Promise<void> {
      await removeWithTickets(options, SECURED_OBJECTS, context, id);
    },
  };
}

export type SecuredObjectService = ReturnType<typeof createSecuredObjectService>;
