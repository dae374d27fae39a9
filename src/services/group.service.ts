// Residents and lock groups (docs/contract.md 5): one service for both kinds of group. Membership changes keep the tickets
// of every access permission true, in the same transaction (docs/contract.md 5, "membership stays true").
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
import { auditEvent, recordChange, recordChanges } from './audit.service.js';
import type { ActionContext, Clock } from './context.js';
import { isUuid } from './identifiers.js';
import { decodeCursor, pageOf, type Page } from './pagination.js';

/** Names used in messages, audit actions and answers, per kind. */
interface GroupVocabulary {
  noun: string;
  auditPrefix: string;
  memberNoun: string;
  memberField: string;
  permissionColumn: 'resident_id' | 'lock_group_id';
}

const VOCABULARY: Record<GroupKind['table'], GroupVocabulary> = {
  residents: {
    noun: 'resident',
    auditPrefix: 'resident',
    memberNoun: 'mobile device',
    memberField: 'mobileDeviceIds',
    permissionColumn: 'resident_id',
  },
  lock_groups: {
    noun: 'lock group',
    auditPrefix: 'lock_group',
    memberNoun: 'secured object',
    memberField: 'securedObjectIds',
    permissionColumn: 'lock_group_id',
  },
};

export interface GroupServiceOptions {
  db: Database;
  clock: Clock;
  kind: GroupKind;
}

export function createGroupService({ db, clock, kind }: GroupServiceOptions) {
  const words = VOCABULARY[kind.table];
  const notFound = (id: string) => new NotFoundError(`No ${words.noun} ${id}.`);
  const self = (id: string) => `${words.auditPrefix}:${id}`;
  const membership = (id: string, memberId: string) => `${self(id)}/${kind.memberTable.slice(0, -1)}:${memberId}`;

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
        await recordChange(tx, context, clock(), `${words.auditPrefix}.created`, self(id));
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
        await recordChange(tx, context, clock(), `${words.auditPrefix}.renamed`, self(id));
        return true;
      });
      if (!renamed) throw notFound(id);
      return current(context.tenantId, id);
    },

    /** Deletes the group and its permissions; every ticket they made becomes REVOKED (docs/contract.md 5). */
    async delete(context: ActionContext, id: string): Promise<void> {
      if (!isUuid(id)) throw notFound(id);
      await db.transaction(async (tx) => {
        const seq = await nextChangeSeq(tx, context.tenantId);
        if (!(await lockGroup(tx, kind, context.tenantId, id, 'UPDATE'))) throw notFound(id);
        await revokePermissionTickets(tx, context.tenantId, words.permissionColumn, id, clock(), seq);
        const permissionIds = await deletePermissions(tx, context.tenantId, words.permissionColumn, id);
        await deleteGroup(tx, kind, context.tenantId, id);
        // The audit counter last, after every row lock (audit.repo.ts): one append for the whole change.
        await recordChanges(tx, [
          ...permissionIds.map((permissionId) => auditEvent(context, clock(), 'access_permission.deleted', `access_permission:${permissionId}`)),
          auditEvent(context, clock(), `${words.auditPrefix}.deleted`, self(id)),
        ]);
      });
    },

    /** PUT member: joins the group and gets the tickets of every permission reaching it (idempotent). */
    async addMember(context: ActionContext, id: string, memberId: string): Promise<GroupRecord> {
      if (!isUuid(id)) throw notFound(id);
      await db.transaction(async (tx) => {
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
        if (added.length === 0) return;
        await issueForNewMembers(tx, kind, context.tenantId, id, added, clock(), seq);
        await recordChange(tx, context, clock(), `${words.auditPrefix}.member_added`, membership(id, memberId));
      });
      return current(context.tenantId, id);
    },

    /** DELETE member: leaves the group; the tickets its permissions gave that member become REVOKED. */
    async removeMember(context: ActionContext, id: string, memberId: string): Promise<GroupRecord> {
      if (!isUuid(id)) throw notFound(id);
      await db.transaction(async (tx) => {
        const seq = await nextChangeSeq(tx, context.tenantId);
        if (!(await lockGroup(tx, kind, context.tenantId, id, 'UPDATE'))) throw notFound(id);
        if (!(await removeMember(tx, kind, context.tenantId, id, memberId))) {
          throw new NotFoundError(`The ${words.memberNoun} ${memberId} is not a member of ${words.noun} ${id}.`);
        }
        await revokeForLeavingMember(tx, kind, context.tenantId, id, memberId, clock(), seq);
        await recordChange(tx, context, clock(), `${words.auditPrefix}.member_removed`, membership(id, memberId));
      });
      return current(context.tenantId, id);
    },
  };
}

export type GroupService = ReturnType<typeof createGroupService>;
