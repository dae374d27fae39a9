// Lockdowns (docs/api-reference.md 15): start or end one for the tenant or a lock group. Each takes a change number, the
// serial of the lock state its locks get, so the state reaches online locks with their next sync (a held one at once)
// and offline locks with the next phone that visits them.
import { randomUUID } from 'node:crypto';
import type { Database } from '../db/database.js';
import { assertStorableText } from '../db/errors.js';
import { nextChangeSeq } from '../db/repositories/change-log.repo.js';
import { findLockdown, insertLockdown, listLockdowns, type LockdownRecord, type LockMode } from '../db/repositories/lockdown.repo.js';
import { NotFoundError } from '../errors.js';
import { isUuid } from '../shared/identifiers.js';
import { decodeCursor, pageOf, type Page } from '../shared/pagination.js';
import { recordChange } from './audit.service.js';
import type { ActionContext, Clock } from './context.js';

export type { LockMode } from '../db/repositories/lockdown.repo.js';

/** A lockdown as the Operator API shows it. */
export interface Lockdown {
  id: string;
  scope: 'tenant' | { lockGroupId: string };
  mode: LockMode;
  reason: string;
  creationTime: number;
  /** The serial of the lock state it gave its locks (docs/lock-integration.md 11). */
  serial: number;
  /** The locks in its scope when it was made. */
  lockCount: number;
  locksReached: number;
  locksNotReached: number;
}

export interface NewLockdown {
  scope: 'tenant' | { lockGroupId: string };
  mode: LockMode;
  reason: string;
}

function toLockdown(record: LockdownRecord): Lockdown {
  return {
    id: record.id,
    scope: record.lockGroupId === null ? 'tenant' : { lockGroupId: record.lockGroupId },
    mode: record.mode,
    reason: record.reason,
    creationTime: record.createdAt,
    serial: record.changeSeq,
    lockCount: record.lockCount,
    locksReached: record.locksReached,
    locksNotReached: record.locksNotReached,
  };
}

export function createLockdownService({ db, clock }: { db: Database; clock: Clock }) {
  async function get(tenantId: string, id: string): Promise<Lockdown> {
    const record = isUuid(id) ? await findLockdown(db, tenantId, id) : null;
    if (!record) throw new NotFoundError(`No lockdown ${id}.`);
    return toLockdown(record);
  }

  return {
    get,

    /**
     * POST /operatorapi/lockdowns: one change number for the whole scope, written with the locks it reaches and its
     * event (`lockdown.started` or `lockdown.ended`) in one transaction. An unknown lock group (another tenant's
     * included) is 404 and writes nothing. The answer is made from what the transaction wrote, not read after its
     * commit: the commit wakes every held sync of the scope (docs/lock-sync.md), and a read after it would wait behind
     * their looks for a connection, so a lockdown that was made could answer 503 and be sent again. Nor read inside
     * it: no lock can have applied a change number before it commits (a lock acknowledges at most its serial, which
     * counts committed changes only, docs/api-reference.md 8.4), so none has reached it yet, and every lock of its
     * scope was just read; reading back the reach of 10,000 locks cost the request 0.75 s (docs/scaling.md).
     */
    async create(context: ActionContext, input: NewLockdown): Promise<Lockdown> {
      assertStorableText([input, context]);
      const lockGroupId = input.scope === 'tenant' ? null : input.scope.lockGroupId;
      if (lockGroupId !== null && !isUuid(lockGroupId)) throw new NotFoundError(`No lock group ${lockGroupId}.`);
      const id = randomUUID();
      const now = clock();
      const made = await db.transaction(async (tx) => {
        const seq = await nextChangeSeq(tx, context.tenantId);
        const lockdown = { id, lockGroupId, mode: input.mode, reason: input.reason, createdAt: now, actor: context.actor, changeSeq: seq };
        const written = await insertLockdown(tx, context.tenantId, lockdown);
        if (!written) throw new NotFoundError(`No lock group ${lockGroupId}.`);
        await recordChange(tx, context, now, input.mode === 'lockdown' ? 'lockdown.started' : 'lockdown.ended', `lockdown:${id}`, {
          lockdownId: id,
          ...(lockGroupId !== null ? { lockGroupId } : {}),
          mode: input.mode,
          reason: input.reason,
          serial: seq,
          lockCount: written.lockCount,
        });
        const record: LockdownRecord = { ...lockdown, lockCount: written.lockCount, locksReached: 0, locksNotReached: written.lockCount };
        return record;
      });
      return toLockdown(made);
    },

    async list(tenantId: string, limit: number, cursor?: string): Promise<Page<Lockdown>> {
      const after = decodeCursor(cursor, isUuid);
      const rows = await listLockdowns(db, tenantId, after, limit + 1);
      return pageOf(rows, limit, (row) => ({ createdAt: row.createdAt, id: row.id }), toLockdown);
    },
  };
}

export type LockdownService = ReturnType<typeof createLockdownService>;
