// The tenant's event log and its audit view (docs/api-reference.md 10, 7.5): how a service records its change, the feed,
// the audit pages and retention.
import type { Logger } from 'pino';
import type { Database, Queryable } from '../db/database.js';
import {
  appendAuditEvents,
  countEventsWritten,
  EVENT_CHUNK_SIZE,
  listAuditEvents,
  listWireEvents,
  pruneEvents,
  type AuditEvent,
  type AuditEventInput,
  type AuditFilter,
  type WireEvent,
} from '../db/repositories/audit.repo.js';
import { BadRequestError } from '../errors.js';
import { isEventType, type EventType } from '../shared/event-types.js';
import type { ActionContext, Clock } from './context.js';
import { cutPage, numberCursor, type Page } from '../shared/pagination.js';
import { DAY_MS, recordRetentionDays, type RetentionPeriods } from '../shared/retention-periods.js';
import { pruneEachTenantByPeriods, sweepPeriodically } from './retention.js';

/**
 * The event of a change made by `context` (docs/api-reference.md 10, 7.5); `action` is its type (EVENT_TYPES, e.g.
 * `resident.created`), `data` the ids the change touched.
 */
export function auditEvent(
  context: ActionContext,
  time: number,
  action: EventType,
  target: string,
  data: Record<string, unknown> = {},
): AuditEventInput {
  return { tenantId: context.tenantId, time, actor: context.actor, action, target, requestId: context.requestId, data };
}

/** Ticket ids in the chunks one event carries (EVENT_CHUNK_SIZE, docs/api-reference.md 10); none for none. */
export function ticketChunks(ticketIds: readonly string[]): string[][] {
  const chunks: string[][] = [];
  for (let start = 0; start < ticketIds.length; start += EVENT_CHUNK_SIZE) chunks.push(ticketIds.slice(start, start + EVENT_CHUNK_SIZE));
  return chunks;
}

/**
 * Appends the audit events of one change in the change's own transaction, in one statement. Call it LAST in the
 * transaction: it locks the tenant's audit counter until commit (lock order in audit.repo.ts).
 */
export async function recordChanges(tx: Queryable, events: AuditEventInput[]): Promise<void> {
  await appendAuditEvents(tx, events);
}

/** Appends the one audit event of a change (see recordChanges: last in the transaction). */
export async function recordChange(
  tx: Queryable,
  context: ActionContext,
  time: number,
  action: EventType,
  target: string,
  data: Record<string, unknown> = {},
): Promise<void> {
  await recordChanges(tx, [auditEvent(context, time, action, target, data)]);
}

/**
 * A cursor is opaque (docs/api-reference.md 7.3): the tenant's sequence number of the last event shown, behind a version tag, so
 * a cursor of the earlier global numbering is refused (400) instead of silently starting elsewhere.
 */
const auditCursor = numberCursor('a1:');

/** A page of the feed and the `after` of the next one; null: this page reached the end. */
export interface EventPage {
  items: WireEvent[];
  nextAfter: number | null;
}

/** `types` as the feed takes it (comma-separated); 400 naming the unknown ones. Absent or empty: every type. */
function parseTypes(types: string | undefined): string[] | null {
  if (types === undefined) return null;
  const wanted = [...new Set(types.split(',').map((type) => type.trim()).filter((type) => type !== ''))];
  const unknown = wanted.filter((type) => !isEventType(type));
  if (unknown.length > 0) {
    throw new BadRequestError(`Unknown event types: ${unknown.join(', ')}.`, [{ field: 'types', message: `unknown: ${unknown.join(', ')}` }]);
  }
  return wanted.length > 0 ? wanted : null;
}

export interface AuditServiceOptions {
  db: Database;
  clock: Clock;
  log: Logger;
  /** The instance's retention periods, for tenants that chose none (docs/api-reference.md 16.1). */
  retentionDefaults: RetentionPeriods;
}

export function createAuditService({ db, clock, log, retentionDefaults }: AuditServiceOptions) {
  let stopSweeping: (() => void) | null = null;
  return {
    /**
     * Deletes each tenant's events past both its `eventDays` and its `auditDays` (one record serves the feed and the
     * audit trail), a tenant at a time in bounded batches, keeping those a webhook delivery still waits to send
     * (pruneEvents); answers how many went.
     */
    async prune(): Promise<number> {
      const now = clock();
      return pruneEachTenantByPeriods(db, retentionDefaults, (tenantId, periods, limit) =>
        pruneEvents(db, tenantId, now - recordRetentionDays(periods) * DAY_MS, limit),
      );
    },

    /** Events written so far, every tenant together (countEventsWritten): what the metrics count. */
    eventsWritten: () => countEventsWritten(db),

    start(): void {
      stopSweeping = sweepPeriodically(() => this.prune(), log, 'event log');
    },

    stop(): void {
      stopSweeping?.();
      stopSweeping = null;
    },

    /** The feed (docs/api-reference.md 10): the tenant's events after `after`, in sequence order. */
    async feed(tenantId: string, after: number, types: string | undefined, limit: number): Promise<EventPage> {
      const rows = await listWireEvents(db, tenantId, after, parseTypes(types), limit + 1, {
        now: clock(),
        defaultDays: retentionDefaults.eventDays,
      });
      const page = cutPage(rows, limit);
      return { items: page.rows, nextAfter: page.more && page.last ? page.last.sequence : null };
    },

    async list(tenantId: string, filter: AuditFilter, limit: number, cursor?: string): Promise<Page<AuditEvent>> {
      const rows = await listAuditEvents(db, tenantId, filter, auditCursor.decode(cursor), limit + 1, {
        now: clock(),
        defaultDays: retentionDefaults.auditDays,
      });
      const page = cutPage(rows, limit);
      return { items: page.rows, nextCursor: page.more && page.last ? auditCursor.encode(page.last.id) : null };
    },
  };
}

export type AuditService = ReturnType<typeof createAuditService>;
