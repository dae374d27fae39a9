// SQL for an online lock's sync (docs/api-reference.md 6.2, docs/lock-sync.md): its changes since a cursor, and whether
// it and its client's binding still stand.
import type { Queryable } from '../database.js';
import type { SyncPosition } from '../../shared/pagination.js';
import { HOLDER_BINDING_SEQ_SQL, HOLDER_BINDING_SQL, KEY_SET_SEQ_SQL, LOCK_STATE_MODE_SQL, LOCK_STATE_SEQ_SQL, REVOKED_KEYS_SEQ_SQL } from './change-log.repo.js';
import type { HolderBinding } from '../../shared/holder-binding.js';
import { CLOCK_MARGIN_SQL } from './lock-telemetry.repo.js';
import { TICKET_COLUMNS, toTicketRecord, type TicketRecord, type TicketRow } from './ticket.repo.js';

/** What a lock's sync reads besides its changes: whether it exists, its client's state, the key set's position. */
export interface LockSyncState {
  /** False once the lock was deleted. */
  lockExists: boolean;
  /** The change that deleted the lock the calling client is bound to (docs/api-reference.md 4.1); null otherwise. */
  decommissionedSeq: number | null;
  /** The change-log position of the tenant's last ticket-key-set change (docs/api-reference.md 8.1); 0: none yet. */
  keySetSeq: number;
  /** The tenant's last change number: no cursor this server issued lies beyond it. */
  lastSeq: number;
}

/** A phone key's revocation as a sync sends it (docs/api-reference.md 11.4), with its change number. */
export interface SyncedKeyRevocation {
  jkt: string;
  revocationDate: number;
  changeSeq: number;
}

export interface LockChanges extends LockSyncState {
  /**
   * Whether a revocation after the position was left out only by the lock's clock margin as last estimated (docs/api-reference.md
   * 8.5): a wider estimate later would send it, so this answer is not one to repeat from memory (docs/lock-sync.md).
   */
  clockDependent: boolean;
  changes: (TicketRecord & { changeSeq: number })[];
  /** The lock's effective holder-binding policy (docs/api-reference.md 11.2). */
  holderBinding: HolderBinding;
  /** The change number of the last change of that policy; 0: never changed. */
  holderBindingSeq: number;
  /** The change number of the tenant's last phone-key revocation; 0: none. */
  revokedKeysSeq: number;
  /** The lock's state (docs/api-reference.md 15): its mode and serial, the change number that set it; 0: never set. */
  lockStateMode: 'lockdown' | 'normal';
  lockStateSeq: number;
  /**
   * The phone keys revoked after the position's change number whose bound credentials may still be alive at the
   * lock's clock (docs/api-reference.md 11.4), in change-log order; each revocation has a change number of its own.
   */
  revokedKeys: SyncedKeyRevocation[];
}

/** A row of the lock-changes statements: the lock's and tenant's facts, repeated, and one changed ticket or none. */
type LockChangesRow = TicketRow & {
  change_seq: number;
  lock_exists: boolean;
  decommissioned_seq: number | null;
  key_set_seq: number;
  last_seq: number;
  clock_dependent: boolean;
  holder_binding: HolderBinding;
  holder_binding_seq: number;
  revoked_keys_seq: number;
  lock_state_mode: 'lockdown' | 'normal';
  lock_state_seq: number;
  revoked_keys: { jkt: string; revocationDate: number; changeSeq: number }[] | string | null;
  keys_clock_dependent: boolean;
};

/** The rows of one lock (at least one: the facts come with every row) as its LockChanges. */
function toLockChanges(rows: readonly LockChangesRow[]): LockChanges {
  const first = rows[0]!;
  return {
    lockExists: first.lock_exists,
    decommissionedSeq: first.decommissioned_seq === null ? null : Number(first.decommissioned_seq),
    keySetSeq: Number(first.key_set_seq),
    lastSeq: Number(first.last_seq),
    clockDependent: first.clock_dependent || first.keys_clock_dependent,
    holderBinding: first.holder_binding,
    holderBindingSeq: Number(first.holder_binding_seq),
    revokedKeysSeq: Number(first.revoked_keys_seq),
    lockStateMode: first.lock_state_mode,
    lockStateSeq: Number(first.lock_state_seq),
    revokedKeys: jsonArray(first.revoked_keys).map((key) => ({
      jkt: key.jkt,
      revocationDate: Number(key.revocationDate),
      changeSeq: Number(key.changeSeq),
    })),
    changes: rows.filter((row) => row.id !== null).map((row) => ({ ...toTicketRecord(row), changeSeq: row.change_seq })),
  };
}

/**
 * A lock's tickets changed after `position` (created or revoked), skipping what the lock no longer needs: expired
 * tickets, and revocations of tickets with no credential still alive (docs/api-reference.md 8.2) at the lock's clock: a lock
 * whose clock runs behind still accepts a credential the server thinks expired, so its revocations stay that much
 * longer (CLOCK_MARGIN_SQL, docs/api-reference.md 8.5). A client whose lock was
 * deleted sees nothing after the deleting change (docs/api-reference.md 4.1): a lock re-created with the same id is
 * another lock. One round trip: primary-key look-ups and an index range scan on (tenant, lock, change_seq, id), so
 * nothing new costs next to nothing.
 */
export async function listLockChanges(
  db: Queryable,
  tenantId: string,
  securedObjectId: string,
  clientId: string,
  position: SyncPosition,
  now: number,
  limit: number,
  maxClockMarginMs: number,
): Promise<LockChanges> {
  const { rows } = await db.query<LockChangesRow>(
    `WITH state AS (
       SELECT EXISTS (SELECT 1 FROM secured_objects WHERE tenant_id = $1 AND id = $2) AS lock_exists,
              (SELECT decommissioned_seq FROM oauth_clients
                WHERE client_id = $7 AND tenant_id = $1 AND secured_object_id = $2) AS decommissioned_seq,
              ${KEY_SET_SEQ_SQL('$1')} AS key_set_seq,
              coalesce((SELECT last_seq FROM tenant_change_counters WHERE tenant_id = $1), 0) AS last_seq,
              ${CLOCK_MARGIN_SQL('$1', '$2', '$8')} AS clock_margin,
              -- A revocation left out below only because the lock's clock is not known to run further behind: a later
              -- estimate (an access-log upload, which takes no change number) brings it back into the answer.
              EXISTS (SELECT 1 FROM tickets
                       WHERE tenant_id = $1 AND secured_object_id = $2
                         AND (change_seq, id) > ($3::bigint, $4::uuid)
                         AND revoked_at IS NOT NULL
                         AND credential_expires_at > $5::bigint - $8::bigint
                         AND credential_expires_at <= $5::bigint + ${CLOCK_MARGIN_SQL('$1', '$2', '$8')}) AS clock_dependent,
              ${HOLDER_BINDING_SQL('$1', '$2')} AS holder_binding,
              ${HOLDER_BINDING_SEQ_SQL('$1', '$2')} AS holder_binding_seq,
              ${REVOKED_KEYS_SEQ_SQL('$1')} AS revoked_keys_seq,
              ${LOCK_STATE_MODE_SQL('$1', '$2')} AS lock_state_mode,
              ${LOCK_STATE_SEQ_SQL('$1', '$2')} AS lock_state_seq
     ), revoked_keys AS (
       -- docs/api-reference.md 11.4: every lock of the tenant learns every revoked phone key while a credential bound to
       -- it may be alive at its clock, as with a ticket's revocation above; an index range on (tenant, change_seq).
       SELECT (SELECT json_agg(json_build_object('jkt', k.key_thumbprint, 'revocationDate', k.revoked_at, 'changeSeq', k.change_seq)
                               ORDER BY k.change_seq)
                 FROM revoked_device_keys k
                WHERE k.tenant_id = $1 AND k.change_seq > $3::bigint
                  AND k.bound_until > $5::bigint + state.clock_margin
                  AND (state.decommissioned_seq IS NULL OR k.change_seq <= state.decommissioned_seq)) AS revoked_keys,
              EXISTS (SELECT 1 FROM revoked_device_keys k
                       WHERE k.tenant_id = $1 AND k.change_seq > $3::bigint
                         AND k.bound_until > $5::bigint - $8::bigint AND k.bound_until <= $5::bigint + state.clock_margin) AS keys_clock_dependent
         FROM state
     )
     SELECT state.*, revoked_keys.*, t.* FROM state CROSS JOIN revoked_keys
       LEFT JOIN LATERAL (
         SELECT ${TICKET_COLUMNS}, change_seq FROM tickets
          WHERE tenant_id = $1 AND secured_object_id = $2
            AND (change_seq, id) > ($3::bigint, $4::uuid)
            -- A revoked ticket's credential never outlives its end (credential_expires_at <= end_date), so its own
            -- check covers the end, at the lock's clock.
            AND (revoked_at IS NULL AND end_date > $5 OR credential_expires_at > $5 + state.clock_margin)
            AND (state.decommissioned_seq IS NULL OR change_seq <= state.decommissioned_seq)
          ORDER BY change_seq, id LIMIT $6
       ) t ON true`,
    [tenantId, securedObjectId, position.seq, position.id, now, limit, clientId, maxClockMarginMs],
  );
  return toLockChanges(rows);
}

/** One lock of a batched look (listLockChangesOfLocks): the lock, the syncing client, its position and page size. */
export interface LockChangesRequest {
  securedObjectId: string;
  clientId: string;
  position: SyncPosition;
  limit: number;
}

/**
 * listLockChanges for many locks of one tenant in one statement (docs/lock-sync.md: the held syncs a change wakes are
 * asked together): the same reads per lock, joined laterally to the requests, the tenant's own facts read once.
 * Answers one LockChanges per request, in their order.
 */
export async function listLockChangesOfLocks(
  db: Queryable,
  tenantId: string,
  requests: readonly LockChangesRequest[],
  now: number,
  maxClockMarginMs: number,
): Promise<LockChanges[]> {
  if (requests.length === 0) return [];
  const { rows } = await db.query<LockChangesRow & { ord: number | string }>(
    `WITH requests AS (
       SELECT r.lock_id, r.client_id, r.pos_seq, r.pos_id, r.page, r.ord
         FROM unnest($2::text[], $3::text[], $4::bigint[], $5::uuid[], $6::int[]) WITH ORDINALITY
              AS r(lock_id, client_id, pos_seq, pos_id, page, ord)
     ), tenant_state AS (
       SELECT ${KEY_SET_SEQ_SQL('$1')} AS key_set_seq,
              coalesce((SELECT last_seq FROM tenant_change_counters WHERE tenant_id = $1), 0) AS last_seq,
              ${REVOKED_KEYS_SEQ_SQL('$1')} AS revoked_keys_seq
     ), state AS (
       SELECT r.ord, r.lock_id, r.pos_seq, r.pos_id, r.page,
              EXISTS (SELECT 1 FROM secured_objects WHERE tenant_id = $1 AND id = r.lock_id) AS lock_exists,
              (SELECT decommissioned_seq FROM oauth_clients
                WHERE client_id = r.client_id AND tenant_id = $1 AND secured_object_id = r.lock_id) AS decommissioned_seq,
              ${CLOCK_MARGIN_SQL('$1', 'r.lock_id', '$8')} AS clock_margin,
              EXISTS (SELECT 1 FROM tickets
                       WHERE tenant_id = $1 AND secured_object_id = r.lock_id
                         AND (change_seq, id) > (r.pos_seq, r.pos_id)
                         AND revoked_at IS NOT NULL
                         AND credential_expires_at > $7::bigint - $8::bigint
                         AND credential_expires_at <= $7::bigint + ${CLOCK_MARGIN_SQL('$1', 'r.lock_id', '$8')}) AS clock_dependent,
              ${HOLDER_BINDING_SQL('$1', 'r.lock_id')} AS holder_binding,
              ${HOLDER_BINDING_SEQ_SQL('$1', 'r.lock_id')} AS holder_binding_seq,
              ${LOCK_STATE_MODE_SQL('$1', 'r.lock_id')} AS lock_state_mode,
              ${LOCK_STATE_SEQ_SQL('$1', 'r.lock_id')} AS lock_state_seq
         FROM requests r
     )
     SELECT state.ord, state.lock_exists, state.decommissioned_seq, state.clock_dependent, state.holder_binding,
            state.holder_binding_seq, state.lock_state_mode, state.lock_state_seq,
            tenant_state.key_set_seq, tenant_state.last_seq, tenant_state.revoked_keys_seq,
            k.revoked_keys, k.keys_clock_dependent, t.*
       FROM state CROSS JOIN tenant_state
       CROSS JOIN LATERAL (
         SELECT (SELECT json_agg(json_build_object('jkt', d.key_thumbprint, 'revocationDate', d.revoked_at, 'changeSeq', d.change_seq)
                                 ORDER BY d.change_seq)
                   FROM revoked_device_keys d
                  WHERE d.tenant_id = $1 AND d.change_seq > state.pos_seq
                    AND d.bound_until > $7::bigint + state.clock_margin
                    AND (state.decommissioned_seq IS NULL OR d.change_seq <= state.decommissioned_seq)) AS revoked_keys,
                EXISTS (SELECT 1 FROM revoked_device_keys d
                         WHERE d.tenant_id = $1 AND d.change_seq > state.pos_seq
                           AND d.bound_until > $7::bigint - $8::bigint AND d.bound_until <= $7::bigint + state.clock_margin) AS keys_clock_dependent
       ) k
       LEFT JOIN LATERAL (
         SELECT ${TICKET_COLUMNS}, change_seq FROM tickets
          WHERE tenant_id = $1 AND secured_object_id = state.lock_id
            AND (change_seq, id) > (state.pos_seq, state.pos_id)
            AND (revoked_at IS NULL AND end_date > $7 OR credential_expires_at > $7 + state.clock_margin)
            AND (state.decommissioned_seq IS NULL OR change_seq <= state.decommissioned_seq)
          ORDER BY change_seq, id LIMIT state.page
       ) t ON true
      ORDER BY state.ord, t.change_seq, t.id`,
    [
      tenantId,
      requests.map((r) => r.securedObjectId),
      requests.map((r) => r.clientId),
      requests.map((r) => r.position.seq),
      requests.map((r) => r.position.id),
      requests.map((r) => r.limit),
      now,
      maxClockMarginMs,
    ],
  );
  const byRequest: (typeof rows)[] = requests.map(() => []);
  for (const row of rows) byRequest[Number(row.ord) - 1]!.push(row);
  return byRequest.map(toLockChanges);
}

/** json_agg comes back parsed from pg and PGlite alike, but a driver set to leave JSON as text is read too. */
function jsonArray<T>(value: T[] | string | null): T[] {
  if (value === null) return [];
  return typeof value === 'string' ? (JSON.parse(value) as T[]) : value;
}

/** What an installer writes into a lock besides the tenant's issuer and keys (docs/api-reference.md 8.1, 11.2). */
export interface LockTrustFacts {
  holderBinding: HolderBinding;
  /** The lock's own key's thumbprint; null while it has none. */
  keyThumbprint: string | null;
  /** The tenant's last change number: the revocation serial the lock starts from (docs/api-reference.md 8.3). */
  lastSeq: number;
}

/** The lock's policy, key and starting serial; one round trip of primary-key reads. */
export async function findLockTrustFacts(db: Queryable, tenantId: string, securedObjectId: string): Promise<LockTrustFacts> {
  const { rows } = await db.query<{ holder_binding: HolderBinding; key_thumbprint: string | null; last_seq: number }>(
    `SELECT ${HOLDER_BINDING_SQL('$1', '$2')} AS holder_binding,
            (SELECT key_thumbprint FROM secured_objects WHERE tenant_id = $1 AND id = $2) AS key_thumbprint,
            coalesce((SELECT last_seq FROM tenant_change_counters WHERE tenant_id = $1), 0) AS last_seq`,
    [tenantId, securedObjectId],
  );
  const row = rows[0]!;
  return { holderBinding: row.holder_binding, keyThumbprint: row.key_thumbprint, lastSeq: Number(row.last_seq) };
}

/** Whether the lock exists, and the calling client's decommission (docs/api-reference.md 4.1, 8.1's trust endpoint). */
export async function findLockForClient(
  db: Queryable,
  tenantId: string,
  securedObjectId: string,
  clientId: string,
): Promise<Omit<LockSyncState, 'keySetSeq' | 'lastSeq'>> {
  const { rows } = await db.query<{ lock_exists: boolean; decommissioned_seq: number | null }>(
    `SELECT EXISTS (SELECT 1 FROM secured_objects WHERE tenant_id = $1 AND id = $2) AS lock_exists,
            (SELECT decommissioned_seq FROM oauth_clients
              WHERE client_id = $3 AND tenant_id = $1 AND secured_object_id = $2) AS decommissioned_seq`,
    [tenantId, securedObjectId, clientId],
  );
  const row = rows[0]!;
  return { lockExists: row.lock_exists, decommissionedSeq: row.decommissioned_seq === null ? null : Number(row.decommissioned_seq) };
}
