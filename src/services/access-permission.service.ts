// Access permissions (docs/api-reference.md 5): resident × lock group, expanded into one ticket per device × lock in one
// transaction (docs/service-overview.md section 1: a user with 2 devices and 5 locks gets 10 tickets from one call).
import { randomUUID } from 'node:crypto';
import type { Database, Queryable } from '../db/database.js';
import {
  deletePermissions,
  expandAccessPermissions,
  findAccessPermission,
  insertAccessPermissions,
  listAccessPermissions,
  listPermissionTickets,
  locksLackingChannels,
  lockGroupTimeZones,
  revokePermissionTickets,
  type AccessPermissionRecord,
} from '../db/repositories/access-permission.repo.js';
import { nextChangeSeq } from '../db/repositories/change-log.repo.js';
import { LOCK_GROUPS, RESIDENTS, lockGroups } from '../db/repositories/group.repo.js';
import { NotFoundError, UnprocessableError, detailWithReasons, type FieldError } from '../errors.js';
import type { Schedule } from '../shared/schedule/types.js';
import { auditEvent, recordChanges, ticketChunks } from './audit.service.js';
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

/** Every permission of a batch was refused: the transaction rolls back (no change number spent), the refusals stand. */
class NothingGranted extends Error {
  constructor(readonly refusals: UnprocessableError[]) {
    super('No access permission of the batch could be granted.');
    this.name = 'NothingGranted';
  }
}

export function createAccessPermissionService({ db, clock, revived, metrics }: AccessPermissionServiceOptions) {
  const notFound = (id: string) => new NotFoundError(`No access permission ${id}.`);
  /** docs/api-reference.md 4.3: the detail itself says why (removed channel, dates, unknown groups, a lock lacking a channel). */
  const refused = (errors: FieldError[]) => new UnprocessableError(detailWithReasons('The access permission cannot be granted', errors), errors);

  /** The record a request makes, or its refusal by the checks that need no database (dates, commands, channels, schedule). */
  function prepare(context: ActionContext, input: NewAccessPermission, now: number): AccessPermissionRecord | UnprocessableError {
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
    return errors.length > 0 ? refused(errors) : record;
  }

  /**
   * Grants `records` in the caller's transaction, set-based: each check is one statement for all of them, the
   * permissions one INSERT, their tickets and `ticket.created` events one INSERT … SELECT (expandAccessPermissions),
   * their `access_permission.created` events one append. Answers each record's ticket count, or its refusal (the one
   * create answers for it alone); a refused record writes nothing.
   */
  async function grant(tx: Queryable, context: ActionContext, now: number, records: readonly AccessPermissionRecord[]): Promise<(number | UnprocessableError)[]> {
    const { tenantId } = context;
    const seq = await nextChangeSeq(tx, tenantId);
    // FOR SHARE on the groups: membership changes (FOR UPDATE) wait for this grant, or it waits for them.
    const residents = await lockGroups(tx, RESIDENTS, tenantId, records.map((record) => record.residentId).filter(isUuid), 'SHARE');
    const groups = await lockGroups(tx, LOCK_GROUPS, tenantId, records.map((record) => record.lockGroupId).filter(isUuid), 'SHARE');
    const outcomes: (number | UnprocessableError | null)[] = records.map((record) => {
      const missing: FieldError[] = [];
      if (!isUuid(record.residentId) || !residents.has(record.residentId.toLowerCase())) {
        missing.push({ field: 'residentId', message: `no resident ${record.residentId} in this tenant` });
      }
      if (!isUuid(record.lockGroupId) || !groups.has(record.lockGroupId.toLowerCase())) {
        missing.push({ field: 'lockGroupId', message: `no lock group ${record.lockGroupId} in this tenant` });
      }
      return missing.length > 0 ? refused(missing) : null;
    });
    const pending = () => records.flatMap((record, index) => (outcomes[index] === null ? [{ record, index }] : []));

    // One look per distinct (lock group, channels).
    const channelKey = (record: AccessPermissionRecord) => JSON.stringify([record.lockGroupId.toLowerCase(), [...record.channels].sort()]);
    const asked = [...new Map(pending().map(({ record }) => [channelKey(record), record])).values()];
    const lacking = new Map((await locksLackingChannels(tx, tenantId, asked)).map((ids, index) => [channelKey(asked[index]!), ids]));
    for (const { record, index } of pending()) {
      const ids = lacking.get(channelKey(record)) ?? [];
      if (ids.length > 0) outcomes[index] = refused([{ field: 'channels', message: `not supported by the secured objects ${ids.join(', ')}` }]);
    }

    // Against each distinct zone of the group's locks (one read for every group), UTC for a group without locks yet: a
    // lock whose tickets would never open is refused as one ticket would be (docs/api-reference.md 9). Locks added later
    // are not checked: their tickets carry `win: []` until a window falls in a credential's span.
    const scheduled = pending().filter(({ record }) => record.schedule !== null);
    const zones = await lockGroupTimeZones(tx, tenantId, [...new Set(scheduled.map(({ record }) => record.lockGroupId.toLowerCase()))]);
    for (const { record, index } of scheduled) {
      const of = zones.get(record.lockGroupId.toLowerCase()) ?? [];
      const never = neverOpensError(record.schedule!, of.length > 0 ? of : ['UTC'], record, now);
      if (never) outcomes[index] = refused([never]);
    }

    const granted = pending().map(({ record }) => record);
    if (granted.length === 0) throw new NothingGranted(outcomes as UnprocessableError[]);
    await insertAccessPermissions(tx, tenantId, granted);
    // Their tickets' events (chunks of 1,000) in the statement that makes them, then their own: the event counter last.
    const issued = await expandAccessPermissions(tx, tenantId, granted.map((record) => record.id), now, seq, context);
    await recordChanges(
      tx,
      granted.map((record) =>
        auditEvent(context, now, 'access_permission.created', `access_permission:${record.id}`, {
          accessPermissionId: record.id,
          residentId: record.residentId,
          lockGroupId: record.lockGroupId,
          ticketCount: issued.get(record.id) ?? 0,
        }),
      ),
    );
    return records.map((record, index) => outcomes[index] ?? issued.get(record.id) ?? 0);
  }

  return {
    /** All or nothing: the permission and every ticket it makes commit together, or nothing does. */
    async create(context: ActionContext, input: NewAccessPermission): Promise<AccessPermission> {
      const now = clock();
      const record = prepare(context, input, now);
      if (record instanceof UnprocessableError) throw record;
      let tokenCount: number;
      try {
        tokenCount = (await db.transaction((tx) => grant(tx, context, now, [record])))[0] as number;
      } catch (error) {
        if (error instanceof NothingGranted) throw error.refusals[0]!;
        throw error;
      }
      // After the commit: a grant of 1,000 tickets counts 1,000 once, and a refused or rolled-back one counts nothing.
      metrics.ticketsCreated(tokenCount);
      return toAccessPermission({ ...record, tokenCount });
    },

    /**
     * Several creates in one transaction, set-based (a bulk job's batch, docs/api-reference.md 14): each permission
     * answered as create would answer it alone, granted or refused, the granted ones committed together.
     */
    async createMany(context: ActionContext, inputs: readonly NewAccessPermission[]): Promise<(AccessPermission | UnprocessableError)[]> {
      const now = clock();
      const prepared = inputs.map((input) => prepare(context, input, now));
      const records = prepared.filter((entry): entry is AccessPermissionRecord => !(entry instanceof UnprocessableError));
      let outcomes: (number | UnprocessableError)[] = [];
      if (records.length > 0) {
        try {
          outcomes = await db.transaction((tx) => grant(tx, context, now, records));
        } catch (error) {
          if (!(error instanceof NothingGranted)) throw error;
          outcomes = error.refusals;
        }
      }
      const byId = new Map(records.map((record, index) => [record.id, outcomes[index]!]));
      metrics.ticketsCreated([...byId.values()].reduce<number>((sum, outcome) => sum + (typeof outcome === 'number' ? outcome : 0), 0));
      return prepared.map((entry) => {
        if (entry instanceof UnprocessableError) return entry;
        const outcome = byId.get(entry.id)!;
        return typeof outcome === 'number' ? toAccessPermission({ ...entry, tokenCount: outcome }) : outcome;
      });
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
