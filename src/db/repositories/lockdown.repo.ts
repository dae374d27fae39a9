// SQL for lockdowns (docs/api-reference.md 15): start or end one for the tenant or a lock group, read it with how many
// of its locks the state has reached, page them.
import type { Queryable } from '../database.js';
import { keysetPage, type KeysetColumns, type KeysetPosition } from '../../shared/keyset.js';
import { LOCK_STATE_MODE_SQL, LOCK_STATE_SEQ_SQL } from './change-log.repo.js';
import { LOCK_COLUMN } from './secured-object.repo.js';

export type LockMode = 'lockdown' | 'normal';

export interface LockdownRecord {
  id: string;
  /** Null: every lock of the tenant. */
  lockGroupId: string | null;
  mode: LockMode;
  reason: string;
  createdAt: number;
  actor: string;
  /** The change-log position it took: the serial of the lock state it gave its locks. */
  changeSeq: number;
  /** The locks in its scope when it was made. */
  lockCount: number;
  /** Of those still registered, how many have applied this state or a later one (docs/api-reference.md 8.4). */
  locksReached: number;
  locksNotReached: number;
}

interface LockdownRow {
  id: string;
  lock_group_id: string | null;
  mode: LockMode;
  reason: string;
  created_at: number;
  actor: string;
  change_seq: number;
  lock_count: number;
  locks_reached: number;
  locks_not_reached: number;
}

const KEYSET: KeysetColumns = { createdAt: 'd.created_at', id: 'd.id', idType: 'uuid' };

function toLockdown(row: LockdownRow): LockdownRecord {
  return {
    id: row.id,
    lockGroupId: row.lock_group_id,
    mode: row.mode,
    reason: row.reason,
    createdAt: Number(row.created_at),
    actor: row.actor,
    changeSeq: Number(row.change_seq),
    lockCount: Number(row.lock_count),
    locksReached: Number(row.locks_reached),
    locksNotReached: Number(row.locks_not_reached),
  };
}

/**
 * A lockdown's columns and its reach: a lock has the state once it applied a position at or above the lockdown's
 * (lock_telemetry.applied_through, docs/api-reference.md 8.4); each of its locks took the lockdown's change number.
 * Deleted locks are left out of both counts.
 *
 * Each of the lockdown's locks is looked up by its key, in a subquery per lock (LOCK_COLUMN): a lockdown is made just
 * after its locks were written, before the tables' statistics know the tenant has them, and the planner, expecting one
 * lock, scanned the tenant's locks once per lock of the lockdown, as a join (10 s for 10,000 locks, measured) and as an
 * array of their ids (0.6 s; docs/scaling.md). The subquery of the rows (OFFSET 0: kept whole, not merged into the
 * counts) gives each lock's applied position once, NULL for a lock that is gone.
 */
const SELECT_LOCKDOWNS = `
  SELECT d.id, d.lock_group_id, d.mode, d.reason, d.created_at, d.actor, d.change_seq, d.lock_count,
         r.reached AS locks_reached, r.total - r.reached AS locks_not_reached
    FROM lockdowns d
    CROSS JOIN LATERAL (
      SELECT count(l.applied) AS total, count(*) FILTER (WHERE l.applied >= d.change_seq) AS reached
        FROM (SELECT CASE WHEN ${LOCK_COLUMN('$1', 'l.secured_object_id', 'id')} IS NOT NULL
                          THEN coalesce((SELECT t.applied_through FROM lock_telemetry t
                                          WHERE t.tenant_id = $1 AND t.secured_object_id = l.secured_object_id), 0)
                     END AS applied
                FROM lockdown_locks l WHERE l.tenant_id = $1 AND l.lockdown_id = d.id OFFSET 0) l
    ) r`;

export interface NewLockdown {
  id: string;
  lockGroupId: string | null;
  mode: LockMode;
  reason: string;
  createdAt: number;
  actor: string;
  changeSeq: number;
}

/**
 * Writes a lockdown and gives each lock in its scope (every lock of the tenant, or the lock group's members at this
 * moment) its state, in one statement; answers how many locks it reached. Null when the lock group does not exist in
 * the tenant (nothing written). The `locks` CTE writes whether or not the outer query reads it (PostgreSQL runs every
 * data-modifying CTE once).
 */
export async function insertLockdown(db: Queryable, tenantId: string, lockdown: NewLockdown): Promise<{ lockCount: number } | null> {
  const { rows } = await db.query<{ group_exists: boolean; lock_count: number | null }>(
    `WITH scope AS (
       SELECT $2::uuid IS NULL OR EXISTS (SELECT 1 FROM lock_groups WHERE tenant_id = $1 AND id = $2::uuid) AS group_exists
     ), targets AS (
       SELECT so.id FROM secured_objects so, scope
        WHERE so.tenant_id = $1 AND scope.group_exists
          AND ($2::uuid IS NULL OR so.id IN (SELECT secured_object_id FROM lock_group_objects
                                               WHERE tenant_id = $1 AND lock_group_id = $2::uuid))
     ), lockdown AS (
       INSERT INTO lockdowns (tenant_id, id, lock_group_id, mode, reason, created_at, actor, change_seq, lock_count)
       SELECT $1, $3, $2::uuid, $4, $5, $6, $7, $8, (SELECT count(*) FROM targets) FROM scope WHERE scope.group_exists
       RETURNING lock_count
     ), locks AS (
       INSERT INTO lockdown_locks (tenant_id, lockdown_id, secured_object_id, mode, change_seq)
       SELECT $1, $3, targets.id, $4, $8 FROM targets
     )
     SELECT scope.group_exists, (SELECT lock_count FROM lockdown) AS lock_count FROM scope`,
    [tenantId, lockdown.lockGroupId, lockdown.id, lockdown.mode, lockdown.reason, lockdown.createdAt, lockdown.actor, lockdown.changeSeq],
  );
  const row = rows[0]!;
  if (!row.group_exists) return null;
  return { lockCount: Number(row.lock_count ?? 0) };
}

export async function findLockdown(db: Queryable, tenantId: string, id: string): Promise<LockdownRecord | null> {
  const { rows } = await db.query<LockdownRow>(`${SELECT_LOCKDOWNS} WHERE d.tenant_id = $1 AND d.id = $2`, [tenantId, id]);
  return rows[0] ? toLockdown(rows[0]) : null;
}

export async function listLockdowns(db: Queryable, tenantId: string, after: KeysetPosition | null, limit: number): Promise<LockdownRecord[]> {
  const params: unknown[] = [tenantId];
  const page = keysetPage(params, KEYSET, after, limit);
  const { rows } = await db.query<LockdownRow>(`${SELECT_LOCKDOWNS} WHERE d.tenant_id = $1 AND ${page.condition} ${page.orderAndLimit}`, params);
  return rows.map(toLockdown);
}

/** A lock's state (docs/api-reference.md 15): its mode and serial; `normal` and 0 while no lockdown reached it. */
export async function findLockState(db: Queryable, tenantId: string, securedObjectId: string): Promise<{ mode: LockMode; serial: number }> {
  const { rows } = await db.query<{ mode: LockMode; serial: number | string }>(
    `SELECT ${LOCK_STATE_MODE_SQL('$1', '$2')} AS mode, ${LOCK_STATE_SEQ_SQL('$1', '$2')} AS serial`,
    [tenantId, securedObjectId],
  );
  const row = rows[0]!;
  return { mode: row.mode, serial: Number(row.serial) };
}

/**
 * The mode of the newest state a lock was given at or before change-log position `throughSeq`: what a lock that
 * acknowledged that position holds (docs/api-reference.md 8.4, 15); `normal` when no lockdown had reached it by then.
 */
export async function findLockModeThrough(db: Queryable, tenantId: string, securedObjectId: string, throughSeq: number): Promise<LockMode> {
  const { rows } = await db.query<{ mode: LockMode }>(
    `SELECT mode FROM lockdown_locks WHERE tenant_id = $1 AND secured_object_id = $2 AND change_seq <= $3
      ORDER BY change_seq DESC LIMIT 1`,
    [tenantId, securedObjectId, throughSeq],
  );
  return rows[0]?.mode ?? 'normal';
}
