// SQL for webhook subscriptions (docs/api-reference.md 10, migration 013). Their secrets are sealed (webhook-secrets.ts).
import type { Queryable } from '../database.js';
import { keysetPage, type KeysetColumns, type KeysetPosition } from '../../shared/keyset.js';

export type DisabledReason = 'operator' | 'gone' | 'failing';

export interface WebhookRecord {
  tenantId: string;
  id: string;
  url: string;
  eventTypes: string[];
  description: string | null;
  enabled: boolean;
  disabledReason: DisabledReason | null;
  disabledAt: number | null;
  secretSealed: Buffer;
  previousSecretSealed: Buffer | null;
  previousSecretUntil: number | null;
  dispatchedThrough: number;
  failingSince: number | null;
  createdAt: number;
  updatedAt: number;
}

interface WebhookRow {
  tenant_id: string;
  id: string;
  url: string;
  event_types: string[];
  description: string | null;
  enabled: boolean;
  disabled_reason: DisabledReason | null;
  disabled_at: number | null;
  secret_sealed: Buffer | Uint8Array;
  previous_secret_sealed: Buffer | Uint8Array | null;
  previous_secret_until: number | null;
  dispatched_through: number;
  failing_since: number | null;
  created_at: number;
  updated_at: number;
}

const COLUMNS =
  'tenant_id, id, url, event_types, description, enabled, disabled_reason, disabled_at, secret_sealed, ' +
  'previous_secret_sealed, previous_secret_until, dispatched_through, failing_since, created_at, updated_at';

const KEYSET: KeysetColumns = { createdAt: 'created_at', id: 'id', idType: 'uuid' };

/** Serialises the creations of one tenant's subscriptions, so two at once cannot both pass the limit. */
const CREATE_LOCK_CLASS = 0x7768_6b01;

function toWebhook(row: WebhookRow): WebhookRecord {
  return {
    tenantId: row.tenant_id,
    id: row.id,
    url: row.url,
    eventTypes: row.event_types,
    description: row.description,
    enabled: row.enabled,
    disabledReason: row.disabled_reason,
    disabledAt: row.disabled_at,
    secretSealed: Buffer.from(row.secret_sealed),
    previousSecretSealed: row.previous_secret_sealed === null ? null : Buffer.from(row.previous_secret_sealed),
    previousSecretUntil: row.previous_secret_until,
    dispatchedThrough: row.dispatched_through,
    failingSince: row.failing_since,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export interface NewWebhookRow {
  tenantId: string;
  id: string;
  url: string;
  eventTypes: string[];
  description: string | null;
  secretSealed: Buffer;
  createdAt: number;
}

/**
 * Inserts the subscription unless the tenant already has `maxPerTenant`; null then. It starts at the tenant's last
 * committed event (`dispatched_through`, migration 013): it receives the events committed after it. Reading the
 * counter without locking it is enough: an event numbered at or below the committed counter is committed, and one
 * numbered above it (a transaction still running) is delivered. A per-tenant advisory lock, taken first, makes the
 * count exact under concurrent creations; the audit counter is still taken last (lock order in audit.repo.ts).
 */
export async function insertWebhookWithinLimit(db: Queryable, webhook: NewWebhookRow, maxPerTenant: number): Promise<WebhookRecord | null> {
  await db.query('SELECT pg_advisory_xact_lock($1::int, hashtext($2::text))', [CREATE_LOCK_CLASS, webhook.tenantId]);
  const { rows } = await db.query<WebhookRow>(
    `INSERT INTO webhooks (tenant_id, id, url, event_types, description, enabled, secret_sealed, dispatched_through, created_at, updated_at)
     SELECT $1, $2, $3, $4::text[], $5, true, $6,
            coalesce((SELECT last_seq FROM tenant_audit_counters WHERE tenant_id = $1), 0), $7, $7
      WHERE (SELECT count(*) FROM webhooks WHERE tenant_id = $1) < $8
     RETURNING ${COLUMNS}`,
    [webhook.tenantId, webhook.id, webhook.url, webhook.eventTypes, webhook.description, webhook.secretSealed, webhook.createdAt, maxPerTenant],
  );
  return rows[0] ? toWebhook(rows[0]) : null;
}

/** One subscription of the tenant; `forUpdate` locks its row until commit (before the audit counter). */
export async function findWebhook(db: Queryable, tenantId: string, id: string, forUpdate = false): Promise<WebhookRecord | null> {
  const { rows } = await db.query<WebhookRow>(
    `SELECT ${COLUMNS} FROM webhooks WHERE tenant_id = $1 AND id = $2${forUpdate ? ' FOR UPDATE' : ''}`,
    [tenantId, id],
  );
  return rows[0] ? toWebhook(rows[0]) : null;
}

/** Keyset page ordered by (created_at, id) (index webhooks_tenant_page_idx). */
export async function listWebhooks(db: Queryable, tenantId: string, after: KeysetPosition | null, limit: number): Promise<WebhookRecord[]> {
  const params: unknown[] = [tenantId];
  const page = keysetPage(params, KEYSET, after, limit);
  const { rows } = await db.query<WebhookRow>(
    `SELECT ${COLUMNS} FROM webhooks WHERE tenant_id = $1 AND ${page.condition} ${page.orderAndLimit}`,
    params,
  );
  return rows.map(toWebhook);
}

export interface WebhookSettings {
  url: string;
  eventTypes: string[];
  description: string | null;
  enabled: boolean;
}

/**
 * Writes the operator's settings of a subscription whose row the caller locked. Disabling records the operator as the
 * reason; enabling a disabled one (whatever disabled it) clears the reason and the failure streak: it resumes from
 * `dispatched_through`, so nothing committed meanwhile is lost. A new URL starts a new failure streak too. The
 * delivery worker's columns (the cursor and its lease, migration 018) are otherwise left alone.
 */
export async function updateWebhookSettings(
  db: Queryable,
  tenantId: string,
  id: string,
  settings: WebhookSettings,
  now: number,
): Promise<WebhookRecord | null> {
  const { rows } = await db.query<WebhookRow>(
    `UPDATE webhooks
        SET disabled_reason = CASE WHEN $6::boolean THEN NULL WHEN enabled THEN 'operator' ELSE disabled_reason END,
            disabled_at = CASE WHEN $6::boolean THEN NULL WHEN enabled THEN $7::bigint ELSE disabled_at END,
            failing_since = CASE WHEN ($6::boolean AND NOT enabled) OR url <> $3::text THEN NULL ELSE failing_since END,
            url = $3::text, event_types = $4::text[], description = $5::text, enabled = $6::boolean, updated_at = $7::bigint
      WHERE tenant_id = $1 AND id = $2
      RETURNING ${COLUMNS}`,
    [tenantId, id, settings.url, settings.eventTypes, settings.description, settings.enabled, now],
  );
  return rows[0] ? toWebhook(rows[0]) : null;
}

/**
 * Replaces the secret; the one it replaces keeps signing beside it until `previousUntil` (docs/api-reference.md 10). The
 * sealed value moves as it is: both are bound to the same subscription. A secret replaced earlier stops at once.
 */
export async function rotateWebhookSecret(
  db: Queryable,
  tenantId: string,
  id: string,
  secretSealed: Buffer,
  previousUntil: number,
  now: number,
): Promise<WebhookRecord | null> {
  const { rows } = await db.query<WebhookRow>(
    `UPDATE webhooks
        SET previous_secret_sealed = secret_sealed, previous_secret_until = $4, secret_sealed = $3, updated_at = $5
      WHERE tenant_id = $1 AND id = $2
      RETURNING ${COLUMNS}`,
    [tenantId, id, secretSealed, previousUntil, now],
  );
  return rows[0] ? toWebhook(rows[0]) : null;
}

/** Deletes the subscription; its deliveries and attempts go with it (ON DELETE CASCADE, migration 013). */
export async function deleteWebhook(db: Queryable, tenantId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM webhooks WHERE tenant_id = $1 AND id = $2', [tenantId, id]);
  return rowCount > 0;
}
