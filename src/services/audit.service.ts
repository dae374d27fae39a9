// The audit trail (contract 7.5): read side. Events are appended by each change, in its own transaction.
import type { Database } from '../db/database.js';
import { listAuditEvents, type AuditEvent, type AuditFilter } from '../db/repositories/audit.repo.js';
import { BadRequestError } from '../errors.js';
import type { Page } from './pagination.js';

function decodeAuditCursor(cursor: string | undefined): number | null {
  if (cursor === undefined) return null;
  const id = Number(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!Number.isSafeInteger(id) || id < 0) {
    throw new BadRequestError('The cursor is not one this server issued.', [{ field: 'cursor', message: 'is invalid' }]);
  }
  return id;
}

export function createAuditService({ db }: { db: Database }) {
  return {
    async list(tenantId: string, filter: AuditFilter, limit: number, cursor?: string): Promise<Page<AuditEvent>> {
      const rows = await listAuditEvents(db, tenantId, filter, decodeAuditCursor(cursor), limit + 1);
      const hasMore = rows.length > limit;
      const items = hasMore ? rows.slice(0, limit) : rows;
      const last = items[items.length - 1];
      return { items, nextCursor: hasMore && last ? Buffer.from(last.id, 'utf8').toString('base64url') : null };
    },
  };
}

export type AuditService = ReturnType<typeof createAuditService>;
