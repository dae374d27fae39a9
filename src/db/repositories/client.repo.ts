// SQL for OAuth clients. Secrets are stored only as SHA-256 digests.
import type { Queryable } from '../database.js';
import { toStoredHolderKey, type HolderKeyRow, type StoredHolderKey } from './holder-key.repo.js';
import { keysetPage, PAGE_INDEX_CONDITION, type KeysetColumns, type KeysetPosition } from '../../shared/keyset.js';

export interface ClientRecord {
  clientId: string;
  tenantId: string;
  name: string;
  /**
   * Null for a client with no secret: one made by a claim, which authenticates with private_key_jwt only
   * (docs/api-reference.md 12), or a public client (RFC 6749 2.1), the console's (docs/api-reference.md 13).
   */
  secretHash: Buffer | null;
  scopes: string[];
  mobileDeviceId: string | null;
  securedObjectId: string | null;
  createdAt: number;
  /**
   * The one registered redirect URI (RFC 6749 3.1.2), compared exactly (RFC 9700 2.1); a value starting with `/` is
   * relative to PUBLIC_URL. Null for clients that never use the authorization endpoint.
   */
  redirectUri: string | null;
  /**
   * docs/api-reference.md 4.1: the change number of the transaction that deleted the client's lock; null while the lock
   * stands (and for every client not bound to a lock).
   */
  decommissionedSeq: number | null;
}

interface ClientRow {
  client_id: string;
  tenant_id: string;
  name: string;
  secret_hash: Buffer | Uint8Array | null;
  scopes: string[];
  mobile_device_id: string | null;
  secured_object_id: string | null;
  created_at: number;
  redirect_uri: string | null;
  decommissioned_seq: number | null;
}

/** What a new client is inserted with; `decommissioned_seq` starts NULL. */
const INSERT_COLUMNS =
  'client_id, tenant_id, name, secret_hash, scopes, mobile_device_id, secured_object_id, created_at, redirect_uri';
const COLUMNS = `${INSERT_COLUMNS}, decommissioned_seq`;

const KEYSET: KeysetColumns = { createdAt: 'created_at', id: 'client_id', idType: 'text' };

function toClient(row: ClientRow): ClientRecord {
  return {
    clientId: row.client_id,
    tenantId: row.tenant_id,
    name: row.name,
    secretHash: row.secret_hash === null ? null : Buffer.from(row.secret_hash),
    scopes: row.scopes,
    mobileDeviceId: row.mobile_device_id,
    securedObjectId: row.secured_object_id,
    createdAt: row.created_at,
    redirectUri: row.redirect_uri,
    decommissionedSeq: row.decommissioned_seq,
  };
}

/**
 * Inserts the client and its entry in `client_tenants`, the reference table that maps a client id to its tenant
 * (migration 016, docs/scaling.md): two statements, so call it in a transaction. The entry comes first: it holds the
 * rule that a client id is unique across tenants, and the client's foreign key requires it.
 */
export async function insertClient(db: Queryable, client: Omit<ClientRecord, 'decommissionedSeq'>): Promise<void> {
  await db.query('INSERT INTO client_tenants (client_id, tenant_id) VALUES ($1, $2)', [client.clientId, client.tenantId]);
  await db.query(`INSERT INTO oauth_clients (${INSERT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, [
    client.clientId,
    client.tenantId,
    client.name,
    client.secretHash,
    client.scopes,
    client.mobileDeviceId,
    client.securedObjectId,
    client.createdAt,
    client.redirectUri,
  ]);
}

/**
 * Any tenant: the token endpoint learns the tenant from the client. The id is resolved to its tenant in the reference
 * table first, and the client is then read by its key within that tenant: on Citus the second read goes to the one
 * node that holds the tenant (docs/scaling.md). Two primary-key reads, found or not.
 */
export async function findClient(db: Queryable, clientId: string): Promise<ClientRecord | null> {
  return findTenantClient(db, await tenantOfClient(db, clientId), clientId);
}

/**
 * The client's tenant from the reference table. An unknown id is answered a tenant that cannot exist (tenant ids are
 * random UUIDs), so that it pays the second read too and answers in the time a known id does (docs/security-cases.md 2).
 */
async function tenantOfClient(db: Queryable, clientId: string): Promise<string> {
  const { rows } = await db.query<{ tenant_id: string }>('SELECT tenant_id FROM client_tenants WHERE client_id = $1', [clientId]);
  return rows[0]?.tenant_id ?? NO_TENANT;
}

const JOINED_COLUMNS = COLUMNS.split(', ').map((column) => `c.${column}`).join(', ');

/**
 * The client and the registered key of the mobile device it is bound to (private_key_jwt, docs/api-reference.md 3.1),
 * as findClient finds it: the tenant from the reference table, then one read of the client joined to its device within
 * that tenant. `deviceKey` is null when the client is bound to no device or its device has no key.
 */
export async function findClientWithDeviceKey(
  db: Queryable,
  clientId: string,
): Promise<{ record: ClientRecord; deviceKey: StoredHolderKey | null } | null> {
  const tenantId = await tenantOfClient(db, clientId);
  const { rows } = await db.query<ClientRow & HolderKeyRow>(
    `SELECT ${JOINED_COLUMNS}, md.public_key, md.key_thumbprint
       FROM oauth_clients c
       LEFT JOIN mobile_devices md ON md.tenant_id = $1 AND md.id = c.mobile_device_id
      WHERE c.tenant_id = $1 AND c.client_id = $2`,
    [tenantId, clientId],
  );
  const row = rows[0];
  return row ? { record: toClient(row), deviceKey: toStoredHolderKey(row) } : null;
}

/** The nil UUID (RFC 9562 5.9): never a tenant's id. */
const NO_TENANT = '00000000-0000-0000-0000-000000000000';

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

/** Deletes the client, then its `client_tenants` entry (which its foreign key needs until then): call it in a transaction. */
export async function deleteClient(db: Queryable, tenantId: string, clientId: string): Promise<boolean> {
  const { rows } = await db.query<{ client_id: string }>(
    'DELETE FROM oauth_clients WHERE tenant_id = $1 AND client_id = $2 RETURNING client_id',
    [tenantId, clientId],
  );
  await forgetClientTenants(db, tenantId, rows.map((row) => row.client_id));
  return rows.length > 0;
}

/** Drops the reference entries of clients just deleted in the same transaction. */
async function forgetClientTenants(db: Queryable, tenantId: string, clientIds: string[]): Promise<void> {
  if (clientIds.length === 0) return;
  await db.query('DELETE FROM client_tenants WHERE tenant_id = $1 AND client_id = ANY ($2::text[])', [tenantId, clientIds]);
}

/** Sets the secret of a client that has one; null when the tenant has no such client, or it has no secret (made by a claim). */
export async function updateClientSecret(
  db: Queryable,
  tenantId: string,
  clientId: string,
  secretHash: Buffer,
): Promise<ClientRecord | null> {
  const { rows } = await db.query<ClientRow>(
    `UPDATE oauth_clients SET secret_hash = $3 WHERE tenant_id = $1 AND client_id = $2 AND secret_hash IS NOT NULL RETURNING ${COLUMNS}`,
    [tenantId, clientId, secretHash],
  );
  return rows[0] ? toClient(rows[0]) : null;
}

/**
 * Deletes every client of the tenant bound to the mobile device (docs/api-reference.md 4.2) and answers their ids, in
 * order, with their `client_tenants` entries. Called by the device's removal, in its transaction, after it deleted the
 * device row (lock order in removal.ts).
 */
export async function deleteClientsOfMobileDevice(db: Queryable, tenantId: string, mobileDeviceId: string): Promise<string[]> {
  const { rows } = await db.query<{ client_id: string }>(
    'DELETE FROM oauth_clients WHERE tenant_id = $1 AND mobile_device_id = $2 RETURNING client_id',
    [tenantId, mobileDeviceId],
  );
  const clientIds = rows.map((row) => row.client_id).sort();
  await forgetClientTenants(db, tenantId, clientIds);
  return clientIds;
}

/**
 * Marks every client of the tenant bound to the secured object as decommissioned at change number `seq`
 * (docs/api-reference.md 4.1) and answers their ids, in order. A client already decommissioned (by the deletion of an
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

/** The tenant's console client (docs/console.md): its public client registered with the redirect path `redirectPath`. */
export async function findConsoleClientId(db: Queryable, tenantId: string, redirectPath: string): Promise<string | null> {
  const { rows } = await db.query<{ client_id: string }>(
    `SELECT client_id FROM oauth_clients
      WHERE tenant_id = $1 AND redirect_uri = $2 AND secret_hash IS NULL AND ${PAGE_INDEX_CONDITION('created_at')}
      ORDER BY created_at, client_id LIMIT 1`,
    [tenantId, redirectPath],
  );
  return rows[0]?.client_id ?? null;
}
