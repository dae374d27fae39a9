// Webhook subscriptions (docs/api-reference.md 10): create, read, list, change, delete, and rotate the signing secret.
import { randomUUID } from 'node:crypto';
import type { SecretsKey } from '../../shared/crypto.js';
import type { Database } from '../../db/database.js';
import {
  deleteWebhook,
  findWebhook,
  insertWebhookWithinLimit,
  listWebhooks,
  rotateWebhookSecret,
  updateWebhookSettings,
  type DisabledReason,
  type WebhookRecord,
  type WebhookSettings,
} from '../../db/repositories/webhook.repo.js';
import { BadRequestError, ConflictError, NotFoundError, UnprocessableError, type FieldError } from '../../errors.js';
import { isEventType } from '../../shared/event-types.js';
import { recordChange } from '../audit.service.js';
import type { ActionContext, Clock } from '../context.js';
import { isUuid } from '../../shared/identifiers.js';
import { decodeCursor, pageOf, type Page } from '../../shared/pagination.js';
import { newWebhookSecret, sealWebhookSecret } from './signing-secrets.js';
import type { WebhookUrlGuard } from './url-guard.js';

/** A tenant's subscriptions are few (one per receiving system); the bound keeps the delivery worker's work per event small. */
export const MAX_WEBHOOKS_PER_TENANT = 50;
export const MAX_DESCRIPTION_LENGTH = 500;
/** docs/api-reference.md 10: after a rotation the previous secret keeps signing beside the new one this long. */
export const PREVIOUS_SECRET_MS = 24 * 3600_000;

/** What the API shows of a subscription: never a secret, sealed or not (only create and rotate answer one). */
export interface Webhook {
  id: string;
  url: string;
  eventTypes: string[];
  description?: string;
  enabled: boolean;
  disabledReason?: DisabledReason;
  disabledTime?: number;
  createdTime: number;
  updatedTime: number;
  /** While the previous secret still signs beside the current one (docs/api-reference.md 10). */
  previousSecretExpiresTime?: number;
}

export type WebhookWithSecret = Webhook & { secret: string };

export interface NewWebhook {
  url: string;
  eventTypes: string[];
  description?: string | undefined;
}

export interface WebhookChanges {
  url?: string | undefined;
  eventTypes?: string[] | undefined;
  /** The empty string removes the description. */
  description?: string | undefined;
  enabled?: boolean | undefined;
}

export interface WebhookServiceOptions {
  db: Database;
  clock: Clock;
  /** Seals the signing secrets (SECRETS_KEY). */
  secretsKey: SecretsKey;
  /** Where a subscription may point (WEBHOOK_ALLOW_INSECURE and the DNS resolver are its concern). */
  urlGuard: WebhookUrlGuard;
  maxPerTenant?: number;
}

export function createWebhookService({ db, clock, secretsKey, urlGuard, maxPerTenant = MAX_WEBHOOKS_PER_TENANT }: WebhookServiceOptions) {
  const notFound = (id: string) => new NotFoundError(`No webhook subscription ${id}.`);
  const target = (id: string) => `webhook:${id}`;

  function toWebhook(record: WebhookRecord): Webhook {
    const previousLive = record.previousSecretUntil !== null && record.previousSecretUntil > clock();
    return {
      id: record.id,
      url: record.url,
      eventTypes: record.eventTypes,
      ...(record.description !== null ? { description: record.description } : {}),
      enabled: record.enabled,
      ...(record.disabledReason !== null ? { disabledReason: record.disabledReason } : {}),
      ...(record.disabledAt !== null ? { disabledTime: record.disabledAt } : {}),
      createdTime: record.createdAt,
      updatedTime: record.updatedAt,
      ...(previousLive ? { previousSecretExpiresTime: record.previousSecretUntil! } : {}),
    };
  }

  /**
   * The checks the schema also makes (routes answer 400 before this runs), so the service is safe on its own: a
   * non-empty list of known event types without repeats, a description within bounds.
   */
  function checkFields(input: { eventTypes?: string[] | undefined; description?: string | undefined }): void {
    const errors: FieldError[] = [];
    if (input.eventTypes !== undefined) {
      const unknown = input.eventTypes.filter((type) => !isEventType(type));
      if (input.eventTypes.length === 0) errors.push({ field: 'eventTypes', message: 'must list at least one event type' });
      if (unknown.length > 0) errors.push({ field: 'eventTypes', message: `unknown event type ${unknown.join(', ')}` });
      if (new Set(input.eventTypes).size !== input.eventTypes.length) errors.push({ field: 'eventTypes', message: 'must not repeat a type' });
    }
    if (input.description !== undefined && input.description.length > MAX_DESCRIPTION_LENGTH) {
      errors.push({ field: 'description', message: `must be at most ${MAX_DESCRIPTION_LENGTH} characters` });
    }
    if (errors.length > 0) throw new BadRequestError(errors.map((e) => `${e.field}: ${e.message}`).join('; '), errors);
  }

  /** docs/api-reference.md 10: https, and never an address this service must not reach; the guard's reason is the message. */
  async function checkUrl(url: string): Promise<void> {
    const refusal = await urlGuard.refusal(url);
    if (refusal !== null) throw new UnprocessableError(`The webhook URL is refused: it ${refusal}.`, [{ field: 'url', message: refusal }]);
  }

  async function current(tenantId: string, id: string): Promise<WebhookRecord> {
    const record = isUuid(id) ? await findWebhook(db, tenantId, id) : null;
    if (!record) throw notFound(id);
    return record;
  }

  return {
    /** Subscribes; the secret is in this answer only (and in a rotation's). */
    async create(context: ActionContext, input: NewWebhook): Promise<WebhookWithSecret> {
      checkFields(input);
      await checkUrl(input.url);
      const id = randomUUID();
      const secret = newWebhookSecret();
      const now = clock();
      const record = await db.transaction(async (tx) => {
        const inserted = await insertWebhookWithinLimit(
          tx,
          {
            tenantId: context.tenantId,
            id,
            url: input.url,
            eventTypes: input.eventTypes,
            description: input.description ?? null,
            secretSealed: sealWebhookSecret(secretsKey, context.tenantId, id, secret),
            createdAt: now,
          },
          maxPerTenant,
        );
        if (!inserted) {
          throw new ConflictError(`A tenant has at most ${maxPerTenant} webhook subscriptions; delete one before adding another.`);
        }
        await recordChange(tx, context, now, 'webhook.created', target(id), { webhookId: id, eventTypes: input.eventTypes });
        return inserted;
      });
      return { ...toWebhook(record), secret };
    },

    async get(tenantId: string, id: string): Promise<Webhook> {
      return toWebhook(await current(tenantId, id));
    },

    async list(tenantId: string, limit: number, cursor?: string): Promise<Page<Webhook>> {
      const rows = await listWebhooks(db, tenantId, decodeCursor(cursor, isUuid), limit + 1);
      return pageOf(rows, limit, (row) => ({ createdAt: row.createdAt, id: row.id }), toWebhook);
    },

    /**
     * Changes the given settings. A new URL is checked first, outside the transaction (it may ask the DNS), and only
     * after the subscription is found, so another tenant's id is a 404 whatever the body. A change that changes
     * nothing writes nothing and records no event, and answers the subscription as it is.
     */
    async update(context: ActionContext, id: string, changes: WebhookChanges): Promise<Webhook> {
      checkFields(changes);
      const before = await current(context.tenantId, id);
      if (changes.url !== undefined && changes.url !== before.url) await checkUrl(changes.url);
      const record = await db.transaction(async (tx) => {
        const locked = await findWebhook(tx, context.tenantId, id, true);
        if (!locked) throw notFound(id);
        const settings: WebhookSettings = {
          url: changes.url ?? locked.url,
          eventTypes: changes.eventTypes ?? locked.eventTypes,
          description: changes.description === undefined ? locked.description : changes.description === '' ? null : changes.description,
          enabled: changes.enabled ?? locked.enabled,
        };
        const unchanged =
          settings.url === locked.url &&
          settings.eventTypes.join('\n') === locked.eventTypes.join('\n') &&
          settings.description === locked.description &&
          settings.enabled === locked.enabled;
        if (unchanged) return locked;
        // The URL checked above is the one written: a concurrent change of it is overwritten by a checked value.
        const updated = await updateWebhookSettings(tx, context.tenantId, id, settings, clock());
        if (!updated) throw notFound(id);
        await recordChange(tx, context, updated.updatedAt, 'webhook.updated', target(id), { webhookId: id, enabled: updated.enabled });
        return updated;
      });
      return toWebhook(record);
    },

    /** Unsubscribes; the deliveries and attempts of the subscription are deleted with it. */
    async delete(context: ActionContext, id: string): Promise<void> {
      if (!isUuid(id)) throw notFound(id);
      await db.transaction(async (tx) => {
        if (!(await deleteWebhook(tx, context.tenantId, id))) throw notFound(id);
        await recordChange(tx, context, clock(), 'webhook.deleted', target(id), { webhookId: id });
      });
    },

    /**
     * A new secret, shown in this answer only. The replaced one keeps signing beside it for 24 h, so receivers can
     * switch without missing a delivery (docs/api-reference.md 10); a secret replaced before that stops at once.
     */
    async rotateSecret(context: ActionContext, id: string): Promise<WebhookWithSecret> {
      if (!isUuid(id)) throw notFound(id);
      const secret = newWebhookSecret();
      const sealed = sealWebhookSecret(secretsKey, context.tenantId, id, secret);
      const now = clock();
      const record = await db.transaction(async (tx) => {
        const rotated = await rotateWebhookSecret(tx, context.tenantId, id, sealed, now + PREVIOUS_SECRET_MS, now);
        if (!rotated) throw notFound(id);
        await recordChange(tx, context, now, 'webhook.secret_rotated', target(id), { webhookId: id });
        return rotated;
      });
      return { ...toWebhook(record), secret };
    },
  };
}

export type WebhookService = ReturnType<typeof createWebhookService>;
