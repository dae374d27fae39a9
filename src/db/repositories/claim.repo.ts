// SQL for claims (docs/api-reference.md 12): the claim links that put a phone in service, found by id within the tenant
// or, by the phone, by the SHA-256 of their code alone.
import type { Queryable } from '../database.js';
import { keysetPage, type KeysetColumns, type KeysetPosition } from '../../shared/keyset.js';

export type ClaimState = 'created' | 'opened' | 'claimed' | 'expired' | 'revoked';

export interface ClaimRecord {
  tenantId: string;
  id: string;
  codeHash: Buffer;
  residentId: string | null;
  mobileDeviceId: string | null;
  replaces: string | null;
  note: string | null;
  maxDevices: number;
  /** As last written: a claim still `created` or `opened` past `expiresAt` is expired all the same (claim.service.ts). */
  state: ClaimState;
  deviceIds: string[];
  createdAt: number;
  expiresAt: number;
  openedAt: number | null;
  endedAt: number | null;
}

interface ClaimRow {
  tenant_id: string;
  id: string;
  code_hash: Buffer | Uint8Array;
  resident_id: string | null;
  mobile_device_id: string | null;
  replaces: string | null;
  note: string | null;
  max_devices: number;
  state: ClaimState;
  device_ids: string[];
  created_at: number | string;
  expires_at: number | string;
  opened_at: number | string | null;
  ended_at: number | string | null;
}

const COLUMNS =
  'tenant_id, id, code_hash, resident_id, mobile_device_id, replaces, note, max_devices, state, device_ids, created_at, expires_at, opened_at, ended_at';

const KEYSET: KeysetColumns = { createdAt: 'created_at', id: 'id', idType: 'uuid' };

const millis = (value: number | string | null): number | null => (value === null ? null : Number(value));

function toClaim(row: ClaimRow): ClaimRecord {
  return {
    tenantId: row.tenant_id,
    id: row.id,
    codeHash: Buffer.from(row.code_hash),
    residentId: row.resident_id,
    mobileDeviceId: row.mobile_device_id,
    replaces: row.replaces,
    note: row.note,
    maxDevices: row.max_devices,
    state: row.state,
    deviceIds: row.device_ids,
    createdAt: Number(row.created_at),
    expiresAt: Number(row.expires_at),
    openedAt: millis(row.opened_at),
    endedAt: millis(row.ended_at),
  };
}

/**
 * Inserts the claim and its code's entry in `claim_codes` (the reference table that maps a code to its tenant): two
 * statements, so call it in a transaction; the entry first, as the claim's foreign key requires it.
 */
export async function insertClaim(db: Queryable, claim: ClaimRecord): Promise<void> {
  await db.query('INSERT INTO claim_codes (code_hash, tenant_id, claim_id) VALUES ($1, $2, $3)', [claim.codeHash, claim.tenantId, claim.id]);
  await db.query(
    `INSERT INTO claims (tenant_id, id, code_hash, resident_id, mobile_device_id, replaces, note, max_devices, state, created_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
    [
      claim.tenantId,
      claim.id,
      claim.codeHash,
      claim.residentId,
      claim.mobileDeviceId,
      claim.replaces,
      claim.note,
      claim.maxDevices,
      claim.state,
      claim.createdAt,
      claim.expiresAt,
    ],
  );
}

export async function findClaim(db: Queryable, tenantId: string, id: string): Promise<ClaimRecord | null> {
  const { rows } = await db.query<ClaimRow>(`SELECT ${COLUMNS} FROM claims WHERE tenant_id = $1 AND id = $2`, [tenantId, id]);
  return rows[0] ? toClaim(rows[0]) : null;
}

/** The claim, its row locked until commit: redemptions and revocations of one claim take turns. */
export async function holdClaim(db: Queryable, tenantId: string, id: string): Promise<ClaimRecord | null> {
  const { rows } = await db.query<ClaimRow>(`SELECT ${COLUMNS} FROM claims WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, [tenantId, id]);
  return rows[0] ? toClaim(rows[0]) : null;
}

/** What the phone's look-up needs besides the claim: the tenant's name and the resident's. */
export interface ClaimForPhone {
  claim: ClaimRecord;
  tenantName: string;
  residentName: string | null;
}

/** The nil UUID (RFC 9562 5.9): never a tenant's id. */
const NO_TENANT = '00000000-0000-0000-0000-000000000000';

/**
 * Any tenant, by the SHA-256 of the code: the reference table gives the tenant and the claim id, then the claim is read
 * by its key within that tenant (on Citus, on the one node that holds the tenant). An unknown code pays the second read
 * too, in a tenant that cannot exist, so it answers in the time a known one does (docs/security-cases.md H58).
 */
export async function findClaimByCode(db: Queryable, codeHash: Buffer): Promise<ClaimForPhone | null> {
  const { rows: directory } = await db.query<{ tenant_id: string; claim_id: string }>(
    'SELECT tenant_id, claim_id FROM claim_codes WHERE code_hash = $1',
    [codeHash],
  );
  const entry = directory[0];
  const { rows } = await db.query<ClaimRow & { tenant_name: string; resident_name: string | null }>(
    `SELECT ${COLUMNS.split(', ').map((column) => `c.${column}`).join(', ')}, t.name AS tenant_name, r.name AS resident_name
       FROM claims c
       JOIN tenants t ON t.id = $1
       LEFT JOIN residents r ON r.tenant_id = $1 AND r.id = c.resident_id
      WHERE c.tenant_id = $1 AND c.id = $2 AND c.code_hash = $3`,
    [entry?.tenant_id ?? NO_TENANT, entry?.claim_id ?? NO_TENANT, codeHash],
  );
  const row = rows[0];
  return row ? { claim: toClaim(row), tenantName: row.tenant_name, residentName: row.resident_name } : null;
}

export interface ClaimFilter {
  residentId?: string | undefined;
  mobileDeviceId?: string | undefined;
}

/** Keyset page ordered by (created_at, id), filtered by resident and device. */
export async function listClaims(db: Queryable, tenantId: string, filter: ClaimFilter, after: KeysetPosition | null, limit: number): Promise<ClaimRecord[]> {
  const params: unknown[] = [tenantId];
  const conditions = ['tenant_id = $1'];
  if (filter.residentId !== undefined) {
    params.push(filter.residentId);
    conditions.push(`resident_id = $${params.length}::uuid`);
  }
  if (filter.mobileDeviceId !== undefined) {
    params.push(filter.mobileDeviceId);
    conditions.push(`mobile_device_id = $${params.length}`);
  }
  const page = keysetPage(params, KEYSET, after, limit);
  const { rows } = await db.query<ClaimRow>(
    `SELECT ${COLUMNS} FROM claims WHERE ${conditions.join(' AND ')} AND ${page.condition} ${page.orderAndLimit}`,
    params,
  );
  return rows.map(toClaim);
}

/** `created` → `opened`, the first time the phone looks the claim up while it is live; whether it changed. */
export async function markClaimOpened(db: Queryable, tenantId: string, id: string, now: number): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE claims SET state = 'opened', opened_at = $3 WHERE tenant_id = $1 AND id = $2 AND state = 'created' AND expires_at > $3::bigint`,
    [tenantId, id, now],
  );
  return rowCount > 0;
}

/** Ends the claim in `state` (`revoked`, `expired`) at `now`. */
export async function endClaim(db: Queryable, tenantId: string, id: string, state: 'revoked' | 'expired', now: number): Promise<void> {
  await db.query('UPDATE claims SET state = $3, ended_at = $4 WHERE tenant_id = $1 AND id = $2', [tenantId, id, state, now]);
}

/** Adds a device the claim put in service; `claimed` ends the claim (maxDevices reached). */
export async function recordClaimedDevice(db: Queryable, tenantId: string, id: string, mobileDeviceId: string, claimed: boolean, now: number): Promise<void> {
  await db.query(
    `UPDATE claims SET device_ids = array_append(device_ids, $3::text),
            state = CASE WHEN $4::boolean THEN 'claimed' ELSE state END,
            ended_at = CASE WHEN $4::boolean THEN $5::bigint ELSE ended_at END
      WHERE tenant_id = $1 AND id = $2`,
    [tenantId, id, mobileDeviceId, claimed, now],
  );
}

/**
 * Marks up to `limit` of the tenant's claims that ran out while `created` or `opened` as `expired` at `now`; answers their
 * ids, for their `claim.expired` events in the same transaction.
 */
export async function expireClaims(db: Queryable, tenantId: string, now: number, limit: number): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `UPDATE claims SET state = 'expired', ended_at = expires_at
      WHERE tenant_id = $1 AND state IN ('created', 'opened') AND id IN (
        SELECT id FROM claims WHERE tenant_id = $1 AND state IN ('created', 'opened') AND expires_at <= $2::bigint
         ORDER BY expires_at LIMIT $3)
      RETURNING id`,
    [tenantId, now, limit],
  );
  return rows.map((row) => row.id).sort();
}

/** Whether the mobile device is a member of the resident (a claim's `replaces`). */
export async function isResidentDevice(db: Queryable, tenantId: string, residentId: string, mobileDeviceId: string): Promise<boolean> {
  const { rows } = await db.query(
    'SELECT 1 FROM resident_devices WHERE tenant_id = $1 AND resident_id = $2 AND mobile_device_id = $3',
    [tenantId, residentId, mobileDeviceId],
  );
  return rows.length > 0;
}
