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
}

const COLUMNS = 'client_id, tenant_id, name, secret_hash, scopes, mobile_device_id, secured_object_id, created_at';

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
  };
}

export async function insertClient(db: Queryable, client: ClientRecord): Promise<void> {
  await db.query(`INSERT INTO oauth_clients (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, [
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
