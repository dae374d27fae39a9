// Access permissions (docs/api-reference.md 5): resident × lock group, expanded into one ticket per device × lock in one
// transaction (docs/service-overview.md section 1: a user with 2 devices and 5 locks gets 10 tickets from one call).
import { randomUUID } from 'node:crypto';
import type { Database } from '../db/database.js';
import {
  deletePermissions,
  expandAccessPermission,
  findAccessPermission,
  insertAccessPermission,
  listAccessPermissions,
  listPermissionTickets,
  locksLackingChannels,
  lockGroupTimeZones,
  revokePermissionTickets,
  type AccessPermissionRecord,
} from '../db/repositories/access-permission.repo.js';
import { nextChangeSeq } from '../db/repositories/change-log.repo.js';
import { LOCK_GROUPS, RESIDENTS, lockGroup } from '../db/repositories/group.repo.js';
import { NotFoundError, UnprocessableError, detailWithReasons, type FieldError } from '../errors.js';
import type { Schedule } from '../shared/schedule/types.js';
import { auditEvent, recordChange, recordChanges, ticketChunks } from './audit.service.js';
import type { ActionContext, Clock } from './context.js';
import type { DomainMetrics } from './domain-metrics.js';
import { isUuid } from '../shared/identifiers.js';
import { neverOpensError } from '../shared/schedule/ticket-checks.js';
import { decodeCursor, pageOf, type Page } from '../shared/pagination.js';
import { toTicket, validityErrors, type Ticket } from './ticket.service.js';
import type { RevivedInterfaces } from '../shared/vocabulary.js';

export interface AccessPermission {
  id: string;
  residentId: string;
  lockGroupId: string;
  beginDate: number;
  endDate: number;
  commands: string[];
  channels: string[];
  creationDate: number;
  /** docs/api-reference.md 9: the schedule every ticket it makes carries; absent: none. */
  schedule?: Schedule;
  /** The live (unrevoked) tickets it holds. */
  tokenCount: number;
}

export type NewAccessPermission = Omit<AccessPermission, 'id' | 'creationDate' | 'tokenCount' | 'schedule'> & {
  /** As the request sent it: validityErrors checks it (validateSchedule) before it is stored. */
  schedule?: unknown;
};

const toAccessPermission = (record: AccessPermissionRecord & { tokenCount: number }): AccessPermission => ({
  id: record.id,
  residentId: record.residentId,
  lockGroupId: record.lockGroupId,
  beginDate: record.beginDate,
  endDate: record.endDate,
  commands: record.commands,
  channels: record.channels,
  creationDate: record.createdAt,
  ...(record.schedule !== null ? { schedule: record.schedule } : {}),
  tokenCount: record.tokenCount,
});

export interface AccessPermissionServiceOptions {
  db: Database;
  clock: Clock;
  revived: RevivedInterfaces;
  /** Counts what the service did, after it committed (services/domain-metrics.ts). */
  metrics: DomainMetrics;
}

export function createAccessPermissionService({ db, clock, revived, metrics }: AccessPermissionServiceOptions) {
  const notFound = (id: string) => new NotFoundError(`No access permission ${id}.`);
  /** docs/api-reference.md 4.3: the detail itself says why (removed channel, dates, unknown groups, a lock lacking a channel). */
  const refused = (errors: FieldError[]) => new UnprocessableError(detailWithReasons('The access permission cannot be granted', errors), errors);

  return {
    /** All or nothing: the permission and every ticket it makes commit together, or nothing does. */
    async create(context: ActionContext, input: NewAccessPermission): Promise<AccessPermission> {
      const now = clock();
      const { schedule, ...fields } = input;
      const record: AccessPermissionRecord = {
        ...fields,
        schedule: schedule === undefined ? null : (schedule as Schedule),
        commands: [...new Set(input.commands)],
        channels: [...new Set(input.channels)],
        tenantId: context.tenantId,
        id: randomUUID(),
        createdAt: now,
      };
      const errors: FieldError[] = validityErrors({ ...record, schedule }, now, revived);
      if (errors.length > 0) throw refused(errors);

      const tokenCount = await db.transaction(async (tx) => {
        const seq = await nextChangeSeq(tx, context.tenantId);
        // FOR SHARE on both groups: membership changes (FOR UPDATE) wait for this grant, or it waits for them.
        const missing: FieldError[] = [];
        if (!isUuid(input.residentId) || !(await lockGroup(tx, RESIDENTS, context.tenantId, input.residentId, 'SHARE'))) {
          missing.push({ field: 'residentId', message: `no resident ${input.residentId} in this tenant` });
        }
        if (!isUuid(input.lockGroupId) || !(await lockGroup(tx, LOCK_GROUPS, context.tenantId, input.lockGroupId, 'SHARE'))) {
          missing.push({ field: 'lockGroupId', message: `no lock group ${input.lockGroupId} in this tenant` });
        }
        if (missing.length > 0) throw refused(missing);
        const lacking = await locksLackingChannels(tx, context.tenantId, input.lockGroupId, record.channels);
        if (lacking.length > 0) {
          throw refused([{ field: 'channels', message: `not supported by the secured objects ${lacking.join(', ')}` }]);
        }
        if (record.schedule !== null) {
          // Against each distinct zone of the group's locks (one read), UTC for a group without locks yet: a lock whose
          // tickets would never open is refused as one ticket would be (docs/api-reference.md 9). Locks added later are not
          // checked: their tickets carry `win: []` until a window falls in a credential's span.
          const zones = await lockGroupTimeZones(tx, context.tenantId, input.lockGroupId);
          const never = neverOpensError(record.schedule, zones.length > 0 ? zones : ['UTC'], record, now);
          if (never) throw refused([never]);
        }
        await insertAccessPermission(tx, record);
        // Its tickets' events (chunks of 1,000) in the statement that makes them, then its own: the event counter last.
        const issued = await expandAccessPermission(tx, record, now, seq, context);
        await recordChange(tx, context, now, 'access_permission.created', `access_permission:${record.id}`, {
          accessPermissionId: record.id,
          residentId: record.residentId,
          lockGroupId: record.lockGroupId,
          ticketCount: issued,
        });
        return issued;
      });
      // After the commit: a grant of 1,000 tickets counts 1,000 once, and a refused or rolled-back one counts nothing.
      metrics.ticketsCreated(tokenCount);
      return toAccessPermission({ ...record, tokenCount });
    },

    async get(tenantId: string, id: string): Promise<AccessPermission> {
      const record = isUuid(id) ? await findAccessPermission(db, tenantId, id) : null;
      if (!record) throw notFound(id);
      return toAccessPermission(record);
    },

    async list(
      tenantId: string,
      filter: { residentId?: string | undefined; lockGroupId?: string | undefined },
      limit: number,
      cursor?: string,
    ): Promise<Page<AccessPermission>> {
      const after = decodeCursor(cursor, isUuid);
      // A filter id that is not a UUID matches nothing.
      if ((filter.residentId && !isUuid(filter.residentId)) || (filter.lockGroupId && !isUuid(filter.lockGroupId))) {
        return { items: [], nextCursor: null };
      }
      const rows = await listAccessPermissions(db, tenantId, filter, after, limit + 1);
      return pageOf(rows, limit, (row) => ({ createdAt: row.createdAt, id: row.id }), toAccessPermission);
    },

    async tokens(tenantId: string, id: string, limit: number, cursor?: string): Promise<Page<Ticket>> {
      await this.get(tenantId, id);
      const after = decodeCursor(cursor, isUuid);
      const now = clock();
      const rows = await listPermissionTickets(db, tenantId, id, after, limit + 1);
      return pageOf(rows, limit, (row) => ({ createdAt: row.createdAt, id: row.id }), (row) => toTicket(row, now));
    },

    /** Every ticket the permission made becomes REVOKED, and the permission is gone (docs/api-reference.md 5). */
    async delete(context: ActionContext, id: string): Promise<void> {
      if (!isUuid(id)) throw notFound(id);
      const revokedCount = await db.transaction(async (tx) => {
        const seq = await nextChangeSeq(tx, context.tenantId);
        const now = clock();
        const revoked = await revokePermissionTickets(tx, context.tenantId, 'id', id, now, seq);
        if ((await deletePermissions(tx, context.tenantId, 'id', id)).length === 0) throw notFound(id);
        const target = `access_permission:${id}`;
        await recordChanges(tx, [
          ...ticketChunks(revoked).map((ticketIds) => auditEvent(context, now, 'ticket.revoked', target, { accessPermissionId: id, ticketIds })),
          auditEvent(context, now, 'access_permission.deleted', target, { accessPermissionId: id }),
        ]);
        return revoked.length;
      });
      metrics.ticketsRevoked(revokedCount);
    },
  };
}

export type AccessPermissionService = ReturnType<typeof createAccessPermissionService>;
