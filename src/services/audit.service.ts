// The audit trail (docs/contract.md 7.5): how a service records its change, and the read side.
import type { Database, Queryable } from '../db/database.js';
import {
  appendAuditEvents,
  listAuditEvents,
  type AuditEvent,
  type AuditEventInput,
  type AuditFilter,
} from '../db/repositories/audit.repo.js';
import type { ActionContext } from './context.js';
import { cutPage, invalidCursor, type Page } from './pagination.js';

/** The audit event of a change made by `context` (docs/contract.md 7.5); `action` is the full name, e.g. `resident.created`. */
export function auditEvent(context: ActionContext, time: number, action: string, target: string): AuditEventInput {
  return { tenantId: context.tenantId, time, actor: context.actor, action, target, requestId: context.requestId };
}

/**
 * Appends the audit events of one change in the change's own transaction, in one statement. Call it LAST in the
 * transaction: it locks the tenant's audit counter until commit (lock order in audit.repo.ts).
 */
export async function recordChanges(tx: Queryable, events: AuditEventInput[]): Promise<void> {
  await appendAuditEvents(tx, events);
}

/** Appends the one audit event of a change (see recordChanges: last in the transaction). */
export async function recordChange(tx: Queryable, context: ActionContext, time: number, action: string, target: string): Promise<void> {
  await recordChanges(tx, [auditEvent(context, time, action, target)]);
}

/**
 * A cursor is opaque (docs/contract.md 7.3): the tenant's sequence number of the last event shown, behind a version tag, so
 * a cursor of the earlier global numbering is refused (400) instead of silently starting elsewhere.
 */
const CURSOR_TAG = 'a1:';

function encodeAuditCursor(seq: string): string {
  return Buffer.from(`${CURSOR_TAG}${seq}`, 'utf8').toString('base64url');
}

function decodeAuditCursor(cursor: string | undefined): number | null {
  if (cursor === undefined) return null;
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const seq = text.startsWith(CURSOR_TAG) && /^[0-9]{1,15}$/.test(text.slice(CURSOR_TAG.length)) ? Number(text.slice(CURSOR_TAG.length)) : NaN;
  if (!Number.isSafeInteger(seq)) throw invalidCursor();
  return seq;
}

export function createAuditService({ db }: { db: Database }) {
  return {
    async list(tenantId: string, filter: AuditFilter, limit: number, cursor?: string): Promise<Page<AuditEvent>> {
      const rows = await listAuditEvents(db, tenantId, filter, decodeAuditCursor(cursor), limit + 1);
      const page = cutPage(rows, limit);
      return { items: page.rows, nextCursor: page.more && page.last ? encodeAuditCursor(page.last.id) : null };
    },
  };
}

export type AuditService = ReturnType<typeof createAuditService>;
