// SQL for OAuth clients. Secrets are stored only as SHA-256 digests.
import type { Queryable } from '../database.js';
import { keysetPage, type KeysetColumns, type KeysetPosition } from '../keyset.js';

export interface ClientRecord {
  clientId: string;
  tenantId: string;
  name: string;
  secretHash: Buffer;
  scopes: string[];
  mobileDeviceId: string | null;
  securedObjectId: string | null;
  createdAt: number;
  /**
   * docs/contract.md 4.1: the change number of the transaction that deleted the client's lock; null while the lock
   * stands (and for every client not bound to a lock).
   */
  decommissionedSeq: number | null;
}

interface ClientRow {
  client_id: string;
  tenant_id: string;
  name: string;
  secret_hash: Buffer | Uint8Array;
  scopes: string[];
  mobile_device_id: string | null;
  secured_object_id: string | null;
  created_at: number;
  decommissioned_seq: number | null;
}

/** What a new client is inserted with; `decommissioned_seq` starts NULL. */
const INSERT_COLUMNS = 'client_id, tenant_id, name, secret_hash, scopes, mobile_device_id, secured_object_id, created_at';
const COLUMNS = `${INSERT_COLUMNS}, decommissioned_seq`;

const KEYSET: KeysetColumns = { createdAt: 'created_at', id: 'client_id', idType: 'text' };

function toClient(row: ClientRow): ClientRecord {
  return {
    clientId: row.client_id,
    tenantId: row.tenant_id,
    name: row.name,
    secretHash: Buffer.from(row.secret_hash),
    scopes: row.scopes,
    mobileDeviceId: row.mobile_device_id,
    securedObjectId: row.secured_object_id,
    createdAt: row.created_at,
    decommissionedSeq: row.decommissioned_seq,
  };
}

export async function insertClient(db: Queryable, client: Omit<ClientRecord, 'decommissionedSeq'>): Promise<void> {
  await db.query(`INSERT INTO oauth_clients (${INSERT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, [
    client.clientId,
    client.tenantId,
    client.name,
    client.secretHash,
    client.scopes,
    client.mobileDeviceId,
    client.securedObjectId,
    client.createdAt,
  ]);
}

/** Any tenant: the token endpoint learns the tenant from the client. */
export async function findClient(db: Queryable, clientId: string): Promise<ClientRecord | null> {
  const { rows } = await db.query<ClientRow>(`SELECT ${COLUMNS} FROM oauth_clients WHERE client_id = $1`, [clientId]);
  return rows[0] ? toClient(rows[0]) : null;
}

export async function findTenantClient(db: Queryable, tenantId: string, clientId: string): Promise<ClientRecord | null> {
  const { rows } = await db.query<ClientRow>(
    `SELECT ${COLUMNS} FROM oauth_clients WHERE tenant_id = $1 AND client_id = $2`,
    [tenantId, clientId],
  );
  return rows[0] ? toClient(rows[0]) : null;
}

/** Keyset page ordered by (created_at, client_id). */
export async function listClients(
  db: Queryable,
  tenantId: string,
  after: KeysetPosition | null,
  limit: number,
): Promise<ClientRecord[]> {
  const params: unknown[] = [tenantId];
  const page = keysetPage(params, KEYSET, after, limit);
  const { rows } = await db.query<ClientRow>(
    `SELECT ${COLUMNS} FROM oauth_clients WHERE tenant_id = $1 AND ${page.condition} ${page.orderAndLimit}`,
    params,
  );
  return rows.map(toClient);
}

export async function deleteClient(db: Queryable, tenantId: string, clientId: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM oauth_clients WHERE tenant_id = $1 AND client_id = $2', [
    tenantId,
    clientId,
  ]);
  return rowCount > 0;
}

export async function updateClientSecret(
  db: Queryable,
  tenantId: string,
  clientId: string,
  secretHash: Buffer,
): Promise<ClientRecord | null> {
  const { rows } = await db.query<ClientRow>(
    `UPDATE oauth_clients SET secret_hash = $3 WHERE tenant_id = $1 AND client_id = $2 RETURNING ${COLUMNS}`,
    [tenantId, clientId, secretHash],
  );
  return rows[0] ? toClient(rows[0]) : null;
}

/**
 * Deletes every client of the tenant bound to the mobile device (docs/contract.md 4.2) and answers their ids, in
 * order. Called by the device's removal, after it deleted the device row (lock order in removal.ts).
 */
export async function deleteClientsOfMobileDevice(db: Queryable, tenantId: string, mobileDeviceId: string): Promise<string[]> {
  const { rows } = await db.query<{ client_id: string }>(
    'DELETE FROM oauth_clients WHERE tenant_id = $1 AND mobile_device_id = $2 RETURNING client_id',
    [tenantId, mobileDeviceId],
  );
  return rows.map((row) => row.client_id).sort();
}

/**
 * Marks every client of the tenant bound to the secured object as decommissioned at change number `seq`
 * (docs/contract.md 4.1) and answers their ids, in order. A client already decommissioned (by the deletion of an
 * earlier lock with this id) keeps its own, older number: its sync answers end where its own lock did.
 */
export async function decommissionClientsOfSecuredObject(
  db: Queryable,
  tenantId: string,
  securedObjectId: string,
  seq: number,
): Promise<string[]> {
  const { rows } = await db.query<{ client_id: string }>(
    `UPDATE oauth_clients SET decommissioned_seq = $3
      WHERE tenant_id = $1 AND secured_object_id = $2 AND decommissioned_seq IS NULL RETURNING client_id`,
    [tenantId, securedObjectId, seq],
  );
  return rows.map((row) => row.client_id).sort();
}
