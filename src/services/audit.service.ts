// The audit trail (contract 7.5): read side. Events are appended by each change, in its own transaction.
import type { Database } from '../db/database.js';
import { listAuditEvents, type AuditEvent, type AuditFilter } from '../db/repositories/audit.repo.js';
import { cutPage, invalidCursor, type Page } from './pagination.js';

/**
 * A cursor is opaque (contract 7.3): the tenant's sequence number of the last event shown, behind a version tag, so
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
