// Residents and lock groups (docs/api-reference.md 5): one service for both kinds of group. Membership changes keep the tickets
// of every access permission true, in the same transaction (docs/api-reference.md 5, "membership stays true").
import { randomUUID } from 'node:crypto';
import type { Database } from '../db/database.js';
import {
  deletePermissions,
  issueForNewMembers,
  permissionsUnsupportedBy,
  revokeForLeavingMember,
  revokePermissionTickets,
} from '../db/repositories/access-permission.repo.js';
import { nextChangeSeq } from '../db/repositories/change-log.repo.js';
import {
  addMembers,
  deleteGroup,
  findGroup,
  insertGroup,
  listGroups,
  lockGroup,
  missingMembers,
  removeMember,
  renameGroup,
  RESIDENTS,
  type GroupKind,
  type GroupRecord,
} from '../db/repositories/group.repo.js';
import { NotFoundError, UnprocessableError } from '../errors.js';
import type { EventType } from '../shared/event-types.js';
import { auditEvent, recordChange, recordChanges, ticketChunks } from './audit.service.js';
import type { ActionContext, Clock } from './context.js';
import type { DomainMetrics } from './domain-metrics.js';
import { isUuid } from '../shared/identifiers.js';
import { decodeCursor, pageOf, type Page } from '../shared/pagination.js';

/** Names used in messages, event types and answers, per kind. */
interface GroupVocabulary {
  noun: string;
  auditPrefix: string;
  memberNoun: string;
  memberField: string;
  permissionColumn: 'resident_id' | 'lock_group_id';
  /** The event types of the group's changes (docs/api-reference.md 10). */
  events: Record<'created' | 'renamed' | 'deleted' | 'memberAdded' | 'memberRemoved', EventType>;
  /** The keys naming the group and a member in an event's `data`. */
  idKey: 'residentId' | 'lockGroupId';
  memberKey: 'mobileDeviceId' | 'securedObjectId';
}

const VOCABULARY: Record<GroupKind['table'], GroupVocabulary> = {
  residents: {
    noun: 'resident',
    auditPrefix: 'resident',
    memberNoun: 'mobile device',
    memberField: 'mobileDeviceIds',
    permissionColumn: 'resident_id',
    events: {
      created: 'resident.created',
      renamed: 'resident.renamed',
      deleted: 'resident.deleted',
      memberAdded: 'resident.device_added',
      memberRemoved: 'resident.device_removed',
    },
    idKey: 'residentId',
    memberKey: 'mobileDeviceId',
  },
  lock_groups: {
    noun: 'lock group',
    auditPrefix: 'lock_group',
    memberNoun: 'secured object',
    memberField: 'securedObjectIds',
    permissionColumn: 'lock_group_id',
    events: {
      created: 'lock_group.created',
      renamed: 'lock_group.renamed',
      deleted: 'lock_group.deleted',
      memberAdded: 'lock_group.lock_added',
      memberRemoved: 'lock_group.lock_removed',
    },
    idKey: 'lockGroupId',
    memberKey: 'securedObjectId',
  },
};

export interface GroupServiceOptions {
  db: Database;
  clock: Clock;
  kind: GroupKind;
  /** Counts what the service did, after it committed (services/domain-metrics.ts). */
  metrics: DomainMetrics;
}

export function createGroupService({ db, clock, kind, metrics }: GroupServiceOptions) {
  const words = VOCABULARY[kind.table];
  const notFound = (id: string) => new NotFoundError(`No ${words.noun} ${id}.`);
  const self = (id: string) => `${words.auditPrefix}:${id}`;
  const membership = (id: string, memberId: string) => `${self(id)}/${kind.memberTable.slice(0, -1)}:${memberId}`;
  const ids = (id: string) => ({ [words.idKey]: id });
  const memberIds = (id: string, memberId: string) => ({ [words.idKey]: id, [words.memberKey]: memberId });

  async function current(tenantId: string, id: string): Promise<GroupRecord> {
    const group = isUuid(id) ? await findGroup(db, kind, tenantId, id) : null;
    if (!group) throw notFound(id);
    return group;
  }

  return {
    kind,

    async create(context: ActionContext, name: string, memberIds: string[] = []): Promise<GroupRecord> {
      const members = [...new Set(memberIds)];
      const id = randomUUID();
      await db.transaction(async (tx) => {
        const missing = await missingMembers(tx, kind, context.tenantId, members);
        if (missing.length > 0) {
          throw new UnprocessableError(`Unknown ${words.memberNoun}s in this tenant: ${missing.join(', ')}.`, [
            { field: words.memberField, message: `no ${words.memberNoun} ${missing.join(', ')}` },
          ]);
        }
        await insertGroup(tx, kind, { tenantId: context.tenantId, id, name, createdAt: clock() });
        await addMembers(tx, kind, context.tenantId, id, members);
        await recordChange(tx, context, clock(), words.events.created, self(id), { ...ids(id), [`${words.memberKey}s`]: members });
      });
      return current(context.tenantId, id);
    },

    get: current,

    async list(tenantId: string, limit: number, cursor?: string): Promise<Page<GroupRecord>> {
      const after = decodeCursor(cursor, isUuid);
      const rows = await listGroups(db, kind, tenantId, after, limit + 1);
      return pageOf(rows, limit, (row) => ({ createdAt: row.createdAt, id: row.id }), (row) => row);
    },

    async rename(context: ActionContext, id: string, name: string): Promise<GroupRecord> {
      if (!isUuid(id)) throw notFound(id);
      const renamed = await db.transaction(async (tx) => {
        if (!(await renameGroup(tx, kind, context.tenantId, id, name))) return false;
        await recordChange(tx, context, clock(), words.events.renamed, self(id), ids(id));
        return true;
      });
      if (!renamed) throw notFound(id);
      return current(context.tenantId, id);
    },

    /** Deletes the group and its permissions; every ticket they made becomes REVOKED (docs/api-reference.md 5). */
    async delete(context: ActionContext, id: string): Promise<void> {
      if (!isUuid(id)) throw notFound(id);
      const revokedCount = await db.transaction(async (tx) => {
        const seq = await nextChangeSeq(tx, context.tenantId);
        if (!(await lockGroup(tx, kind, context.tenantId, id, 'UPDATE'))) throw notFound(id);
        const revoked = await revokePermissionTickets(tx, context.tenantId, words.permissionColumn, id, clock(), seq);
        const permissionIds = await deletePermissions(tx, context.tenantId, words.permissionColumn, id);
        await deleteGroup(tx, kind, context.tenantId, id);
        // The event counter last, after every row lock (audit.repo.ts): one append for the whole change, the revoked
        // tickets in chunks (docs/api-reference.md 10).
        await recordChanges(tx, [
          ...ticketChunks(revoked).map((ticketIds) => auditEvent(context, clock(), 'ticket.revoked', self(id), { ...ids(id), ticketIds })),
          ...permissionIds.map((permissionId) =>
            auditEvent(context, clock(), 'access_permission.deleted', `access_permission:${permissionId}`, { accessPermissionId: permissionId }),
          ),
          auditEvent(context, clock(), words.events.deleted, self(id), ids(id)),
        ]);
        return revoked.length;
      });
      metrics.ticketsRevoked(revokedCount);
    },

    /** PUT member: joins the group and gets the tickets of every permission reaching it (idempotent). */
    async addMember(context: ActionContext, id: string, memberId: string): Promise<GroupRecord> {
      if (!isUuid(id)) throw notFound(id);
      const issued = await db.transaction(async (tx) => {
        const seq = await nextChangeSeq(tx, context.tenantId);
        if (!(await lockGroup(tx, kind, context.tenantId, id, 'UPDATE'))) throw notFound(id);
        if ((await missingMembers(tx, kind, context.tenantId, [memberId])).length > 0) {
          throw new NotFoundError(`No ${words.memberNoun} ${memberId}.`);
        }
        if (kind !== RESIDENTS) {
          const unsupported = await permissionsUnsupportedBy(tx, context.tenantId, id, [memberId]);
          if (unsupported.length > 0) {
            throw new UnprocessableError(
              `The secured object ${memberId} does not support the channels of access permission ${unsupported[0]!.permissionId}.`,
            );
          }
        }
        const added = await addMembers(tx, kind, context.tenantId, id, [memberId]);
        if (added.length === 0) return 0;
        // The tickets' events in chunks, in the statement that makes them, then the membership's: the event counter
        // is taken by the first and held to commit, so nothing locks a row after it (audit.repo.ts).
        const count = await issueForNewMembers(tx, kind, context.tenantId, id, added, clock(), seq, {
          ...context,
          target: membership(id, memberId),
          data: memberIds(id, memberId),
        });
        await recordChange(tx, context, clock(), words.events.memberAdded, membership(id, memberId), memberIds(id, memberId));
        return count;
      });
      metrics.ticketsCreated(issued);
      return current(context.tenantId, id);
    },

    /** DELETE member: leaves the group; the tickets its permissions gave that member become REVOKED. */
    async removeMember(context: ActionContext, id: string, memberId: string): Promise<GroupRecord> {
      if (!isUuid(id)) throw notFound(id);
      const revoked = await db.transaction(async (tx) => {
        const seq = await nextChangeSeq(tx, context.tenantId);
        if (!(await lockGroup(tx, kind, context.tenantId, id, 'UPDATE'))) throw notFound(id);
        if (!(await removeMember(tx, kind, context.tenantId, id, memberId))) {
          throw new NotFoundError(`The ${words.memberNoun} ${memberId} is not a member of ${words.noun} ${id}.`);
        }
        const revokedIds = await revokeForLeavingMember(tx, kind, context.tenantId, id, memberId, clock(), seq);
        // The event counter last (audit.repo.ts): the revoked tickets in chunks under the membership, then the change.
        const target = membership(id, memberId);
        await recordChanges(tx, [
          ...ticketChunks(revokedIds).map((ticketIds) => auditEvent(context, clock(), 'ticket.revoked', target, { ...memberIds(id, memberId), ticketIds })),
          auditEvent(context, clock(), words.events.memberRemoved, target, memberIds(id, memberId)),
        ]);
        return revokedIds.length;
      });
      metrics.ticketsRevoked(revoked);
      return current(context.tenantId, id);
    },
  };
}

export type GroupService = ReturnType<typeof createGroupService>;

/** A resident or lock group as the service hands it out; the routes shape their answers from it. */
export type { GroupRecord };
