// Mobile devices (docs/api-reference.md 4.2): register, read, page, remove (which revokes their tickets).
import { randomUUID } from 'node:crypto';
import type { Database, Queryable } from '../db/database.js';
import { deleteClientsOfMobileDevice } from '../db/repositories/client.repo.js';
import {
  deleteMobileDevice,
  findMobileDevice,
  insertMobileDevice,
  listMobileDevices,
  type MobileDeviceRecord,
} from '../db/repositories/mobile-device.repo.js';
import { ConflictError, NotFoundError } from '../errors.js';
import { recordChange } from './audit.service.js';
import type { ActionContext, Clock } from './context.js';
import { decodeCursor, pageOf, type Page } from '../shared/pagination.js';
import type { DomainMetrics } from './domain-metrics.js';
import { removeInTransaction, removeWithTickets, type Removal, type TicketHolder } from './removal.js';
import type { RevocationService } from './oauth/revoked-access-tokens.service.js';

export interface MobileDevice {
  id: string;
  name?: string;
  creationTime: number;
  /** docs/api-reference.md 11.1: the RFC 7638 thumbprint of its registered key; absent while it has none. */
  keyThumbprint?: string;
  keyRegisteredTime?: number;
}

export function toMobileDevice(record: MobileDeviceRecord): MobileDevice {
  return {
    id: record.id,
    ...(record.name !== null ? { name: record.name } : {}),
    creationTime: record.createdAt,
    ...(record.keyThumbprint !== null ? { keyThumbprint: record.keyThumbprint } : {}),
    ...(record.keyRegisteredAt !== null ? { keyRegisteredTime: record.keyRegisteredAt } : {}),
  };
}

export interface MobileDeviceServiceOptions {
  db: Database;
  clock: Clock;
  revocations: RevocationService;
  /** Access-token lifetime: how long a deleted client's tokens must stay refused. */
  accessTokenTtlMs: number;
  /** Counts what the service did, after it committed (services/domain-metrics.ts). */
  metrics: DomainMetrics;
  /** Revokes the key of a device being removed, in the removal's transaction (holder-key.service.ts). */
  revokeKeyOfRemovedDevice?: (db: Queryable, tenantId: string, id: string) => Promise<void>;
}

/** How a mobile device is removed with its tickets and clients (removal.ts). */
const MOBILE_DEVICES: TicketHolder = {
  remove: deleteMobileDevice,
  ticketColumn: 'mobile_device_id',
  // docs/api-reference.md 4.2, docs/security-cases.md G42: the clients bound to the device go with it, as a client
  // deletion does (revocation `client`, audit `client.deleted`). A device later created with the same id, perhaps
  // for someone else, starts with no client: the old phone's secret never reaches the new owner's tickets.
  boundClients: { retire: deleteClientsOfMobileDevice, revocationKind: 'client', auditAction: 'client.deleted' },
  noun: 'mobile device',
  auditNoun: 'mobile_device',
  dataKey: 'mobileDeviceId',
};

export function createMobileDeviceService(options: MobileDeviceServiceOptions) {
  const { db, clock, revokeKeyOfRemovedDevice } = options;
  const holder: TicketHolder = revokeKeyOfRemovedDevice ? { ...MOBILE_DEVICES, beforeRemove: revokeKeyOfRemovedDevice } : MOBILE_DEVICES;
  return {
    async register(context: ActionContext, input: { id?: string | undefined; name?: string | undefined }): Promise<MobileDevice> {
      const record: MobileDeviceRecord = {
        tenantId: context.tenantId,
        id: input.id ?? randomUUID(),
        name: input.name ?? null,
        createdAt: clock(),
        keyThumbprint: null,
        keyRegisteredAt: null,
      };
      const created = await db.transaction(async (tx) => {
        const inserted = await insertMobileDevice(tx, record);
        if (!inserted) return null;
        await recordChange(tx, context, record.createdAt, 'mobile_device.created', `mobile_device:${record.id}`, { mobileDeviceId: record.id });
        return inserted;
      });
      if (!created) throw new ConflictError(`The mobile device id ${record.id} is in use.`);
      return toMobileDevice(created);
    },

    async get(tenantId: string, id: string): Promise<MobileDevice> {
      const record = await findMobileDevice(db, tenantId, id);
      if (!record) throw new NotFoundError(`No mobile device ${id}.`);
      return toMobileDevice(record);
    },

    async list(tenantId: string, limit: number, cursor?: string): Promise<Page<MobileDevice>> {
      const rows = await listMobileDevices(db, tenantId, decodeCursor(cursor), limit + 1);
      return pageOf(rows, limit, (row) => ({ createdAt: row.createdAt, id: row.id }), toMobileDevice);
    },

    /**
     * Removes the device and, in the same transaction, revokes every ticket issued to it and deletes every client
     * bound to it (docs/api-reference.md 4.2).
     */
    async remove(context: ActionContext, id: string): Promise<void> {
      await removeWithTickets(options, holder, context, id);
    },

    /**
     * The same removal inside the caller's transaction, which took the tenant's change number `seq` first (a claim
     * replacing a phone, docs/api-reference.md 12); null when there is no such device. The caller appends the events
     * last, counts the revoked tickets and refreshes the revocations after commit.
     */
    async removeIn(tx: Queryable, context: ActionContext, id: string, seq: number): Promise<Removal | null> {
      return removeInTransaction(tx, options, holder, context, id, seq);
    },
  };
}

export type MobileDeviceService = ReturnType<typeof createMobileDeviceService>;
