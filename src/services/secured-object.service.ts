// Secured objects (locks, docs/contract.md 4.1): register, read, page, remove (which revokes their tickets).
import { randomUUID } from 'node:crypto';
import type { Database } from '../db/database.js';
import {
  deleteSecuredObject,
  findSecuredObject,
  insertSecuredObject,
  listSecuredObjects,
  type SecuredObjectRecord,
} from '../db/repositories/secured-object.repo.js';
import { ConflictError, NotFoundError, UnprocessableError, detailWithReasons } from '../errors.js';
import { recordChange } from './audit.service.js';
import type { ActionContext, Clock } from './context.js';
import { decodeCursor, pageOf, type Page } from './pagination.js';
import { removeWithTickets, type TicketHolder } from './removal.js';
import { channelErrors, type RevivedInterfaces } from './vocabulary.js';

export interface SecuredObject {
  id: string;
  channels: string[];
  urls: string[];
  creationTime: number;
}

export interface NewSecuredObject {
  id?: string | undefined;
  channels: string[];
  localName: string;
  uuid: string;
}

/** docs/seed.md 2.1: one address per channel; `btlespp://<localName>/<UUID>` for Bluetooth LE. */
export function toSecuredObject(record: SecuredObjectRecord): SecuredObject {
  return {
    id: record.id,
    channels: record.channels,
    urls: record.channels.map((channel) => `${channel}://${record.localName}/${record.uuid}`),
    creationTime: record.createdAt,
  };
}

export interface SecuredObjectServiceOptions {
  db: Database;
  clock: Clock;
  revived: RevivedInterfaces;
}

/** How a secured object is removed with its tickets (removal.ts). */
const SECURED_OBJECTS: TicketHolder = {
  remove: deleteSecuredObject,
  ticketColumn: 'secured_object_id',
  noun: 'secured object',
  auditNoun: 'secured_object',
};

export function createSecuredObjectService({ db, clock, revived }: SecuredObjectServiceOptions) {
  return {
    async register(context: ActionContext, input: NewSecuredObject): Promise<SecuredObject> {
      const errors = channelErrors('channels', input.channels, revived);
      if (errors.length > 0) throw new UnprocessableError(detailWithReasons('The secured object cannot be registered', errors), errors);
      const record: SecuredObjectRecord = {
        tenantId: context.tenantId,
        id: input.id ?? randomUUID(),
        channels: [...new Set(input.channels)],
        localName: input.localName,
        uuid: input.uuid.toLowerCase(),
        createdAt: clock(),
      };
      const created = await db.transaction(async (tx) => {
        const inserted = await insertSecuredObject(tx, record);
        if (!inserted) return null;
        await recordChange(tx, context, record.createdAt, 'secured_object.created', `secured_object:${record.id}`);
        return inserted;
      });
      if (!created) throw new ConflictError(`The secured object id ${record.id} is in use.`);
      return toSecuredObject(created);
    },

    async get(tenantId: string, id: string): Promise<SecuredObject> {
      const record = await findSecuredObject(db, tenantId, id);
      if (!record) throw new NotFoundError(`No secured object ${id}.`);
      return toSecuredObject(record);
    },

    async list(tenantId: string, limit: number, cursor?: string): Promise<Page<SecuredObject>> {
      const rows = await listSecuredObjects(db, tenantId, decodeCursor(cursor), limit + 1);
      return pageOf(rows, limit, (row) => ({ createdAt: row.createdAt, id: row.id }), toSecuredObject);
    },

    /** Removes the lock and, in the same transaction, revokes every ticket for it (docs/contract.md 4.1). */
    async remove(context: ActionContext, id: string): Promise<void> {
      await removeWithTickets(db, clock, SECURED_OBJECTS, context, id);
    },
  };
}

export type SecuredObjectService = ReturnType<typeof createSecuredObjectService>;
