// Tickets (docs/api-reference.md 4.3): one mobile device may send the listed commands to one lock over the listed channels
// within [beginDate, endDate). Create, read, page, revoke; the status is derived, never stored.
import { randomUUID } from 'node:crypto';
import type { Database } from '../db/database.js';
import { assertStorableText, isDatabaseUnavailable, isStatementCanceled } from '../db/errors.js';
import { nextChangeSeq } from '../db/repositories/change-log.repo.js';
import {
  createTickets,
  findLockTimeZone,
  findTicket,
  listTickets,
  revokeTicket,
  type CreateTicketOutcome,
  type TicketInBatch,
  type TicketFilter,
  type TicketRecord,
  type TicketStatus,
} from '../db/repositories/ticket.repo.js';
import { NotFoundError, UnprocessableError, detailWithReasons, type FieldError } from '../errors.js';
import { MAX_INSTANT, type Schedule } from '../shared/schedule/types.js';
import { recordChange } from './audit.service.js';
import { createKeyedBatcher } from './batching.js';
import type { ActionContext, Clock } from './context.js';
import type { DomainMetrics } from './domain-metrics.js';
import { isUuid } from '../shared/identifiers.js';
import { neverOpensError, scheduleErrors } from '../shared/schedule/ticket-checks.js';
import { decodeCursor, pageOf, type Page } from '../shared/pagination.js';
import { channelErrors, commandErrors, type RevivedInterfaces } from '../shared/vocabulary.js';

/** A ticket as the APIs show it: fields that do not apply are absent, never null (docs/api-reference.md 4.3). */
export interface Ticket {
  id: string;
  securedObjectId: string;
  mobileDeviceId: string;
  beginDate: number;
  endDate: number;
  creationDate: number;
  commands: string[];
  channels: string[];
  status: TicketStatus;
  revocationDate?: number;
  downloadDate?: number;
  accessPermissionId?: string;
  /** Its weekly schedule in the lock's local time (docs/api-reference.md 9); absent: open all through its validity. */
  schedule?: Schedule;
  /** When its lock applied its revocation (docs/api-reference.md 8.4); absent until then. */
  revocationAppliedTime?: number;
  /** docs/api-reference.md 15: it opens during a lockdown. Absent on ordinary tickets. */
  override?: true;
}

export interface NewTicket {
  securedObjectId: string;
  mobileDeviceId: string;
  beginDate: number;
  endDate: number;
  commands: string[];
  channels: string[];
  /** As the request sent it: validityErrors checks it (validateSchedule) before it is used as a Schedule. */
  schedule?: unknown;
  /** docs/api-reference.md 15: only a caller holding `lockdown:manage` sets it (checked by the route). */
  override?: boolean;
}

export function ticketStatus(record: Pick<TicketRecord, 'revokedAt' | 'endDate'>, now: number): TicketStatus {
  if (record.revokedAt !== null) return 'REVOKED';
  return record.endDate <= now ? 'EXPIRED' : 'VALID';
}

export function toTicket(record: TicketRecord, now: number): Ticket {
  return {
    id: record.id,
    securedObjectId: record.securedObjectId,
    mobileDeviceId: record.mobileDeviceId,
    beginDate: record.beginDate,
    endDate: record.endDate,
    creationDate: record.createdAt,
    commands: record.commands,
    channels: record.channels,
    status: ticketStatus(record, now),
    ...(record.revokedAt !== null ? { revocationDate: record.revokedAt } : {}),
    ...(record.downloadedAt !== null ? { downloadDate: record.downloadedAt } : {}),
    ...(record.accessPermissionId !== null ? { accessPermissionId: record.accessPermissionId } : {}),
    ...(record.schedule !== null ? { schedule: record.schedule } : {}),
    ...(record.revocationAppliedAt !== null ? { revocationAppliedTime: record.revocationAppliedAt } : {}),
    ...(record.override === true ? { override: true as const } : {}),
  };
}

/**
 * The first instant after the year 9999. docs/api-reference.md 7.4 lets a date run to 8,640,000,000,000,000 (the end of
 * JavaScript time, in the year 275,760), and that exact value stays the way to say "no end". Any other date past the
 * year 9999 is in practice a time in microseconds, so it is refused with that hint rather than stored as a ticket
 * valid until the year 58,000.
 */
export const LAST_SANE_DATE = Date.UTC(10000, 0, 1);
/** Times before 1973-03-03 (10^11 ms) are almost always seconds sent as milliseconds. */
const SECONDS_SUSPECT_BELOW = 100_000_000_000;
const MILLISECONDS_HINT = 'times are milliseconds since 1970-01-01T00:00:00Z';

function dateErrors(field: 'beginDate' | 'endDate', value: number): FieldError[] {
  if (value >= LAST_SANE_DATE && value !== MAX_INSTANT) {
    return [
      {
        field,
        message: `is after the year 9999; ${MILLISECONDS_HINT} (this looks like microseconds: divide by 1000; ${MAX_INSTANT} alone means no end)`,
      },
    ];
  }
  return [];
}

/** Validity checks that need no database (docs/api-reference.md 4.3's 422 cases), all reported at once. */
export function validityErrors(input: Omit<NewTicket, 'securedObjectId' | 'mobileDeviceId'>, now: number, revived: RevivedInterfaces): FieldError[] {
  const errors = [...commandErrors('commands', input.commands), ...channelErrors('channels', input.channels, revived)];
  const dates = [...dateErrors('beginDate', input.beginDate), ...dateErrors('endDate', input.endDate)];
  errors.push(...dates);
  // A date in the wrong unit, compared with the other date or with now, would only add a misleading second error.
  if (dates.length === 0 && input.beginDate >= input.endDate) errors.push({ field: 'endDate', message: 'must be after beginDate' });
  else if (dates.length === 0 && input.endDate <= now) {
    const hint = input.endDate < SECONDS_SUSPECT_BELOW ? `; ${MILLISECONDS_HINT} (this looks like seconds: multiply by 1000)` : '';
    errors.push({ field: 'endDate', message: `is already past${hint}` });
  }
  errors.push(...scheduleErrors(input.schedule));
  return errors;
}

export interface TicketServiceOptions {
  db: Database;
  clock: Clock;
  revived: RevivedInterfaces;
  /** Counts what the service did, after it committed (services/domain-metrics.ts). */
  metrics: DomainMetrics;
}

/** Bounds one statement's size; ten concurrent writers of one tenant make batches of about ten. */
const MAX_TICKETS_PER_BATCH = 100;

export function createTicketService({ db, clock, revived, metrics }: TicketServiceOptions) {
  // Concurrent creates of one tenant share one statement and one commit (see batching.ts). That statement is all
  // or nothing, so when the database refuses it for a reason no check before it saw, its tickets are written again one
  // by one: only the one at fault fails, the others are written once (docs/security-cases.md G47). Not when the database is
  // unavailable or the statement was cancelled (statement_timeout): no ticket is at fault, and each alone would wait
  // out the same timeout again.
  const issuing = createKeyedBatcher<TicketInBatch, CreateTicketOutcome>(
    (tenantId, tickets) => createTickets(db, tenantId, tickets),
    MAX_TICKETS_PER_BATCH,
    {
      shedQueuedOn: isDatabaseUnavailable,
      retryAloneOn: (error) => !isDatabaseUnavailable(error) && !isStatementCanceled(error),
    },
  );

  return {
    async create(context: ActionContext, input: NewTicket): Promise<Ticket> {
      // Refused here, before batching, with the problem the database's refusal answers: in a batch it would fail
      // every create it shares a statement with (docs/security-cases.md G47). Malformed text is a 400 before any 422.
      assertStorableText([input, context]);
      const now = clock();
      const commands = [...new Set(input.commands)];
      const channels = [...new Set(input.channels)];
      const errors = validityErrors({ ...input, commands, channels }, now, revived);
      if (errors.length > 0) throw new UnprocessableError(detailWithReasons('The ticket cannot be issued', errors), errors);
      const schedule = input.schedule === undefined ? null : (input.schedule as Schedule);
      if (schedule !== null) {
        // A lock that does not exist has no zone; the statement below reports it.
        const timeZone = await findLockTimeZone(db, context.tenantId, input.securedObjectId);
        const never = timeZone === null ? null : neverOpensError(schedule, [timeZone], input, now);
        if (never) throw new UnprocessableError(detailWithReasons('The ticket cannot be issued', [never]), [never]);
      }

      const outcome = await issuing.submit(context.tenantId, {
        ...input,
        commands,
        channels,
        schedule,
        id: randomUUID(),
        createdAt: now,
        audit: { actor: context.actor, requestId: context.requestId },
      });
      if (outcome.created) {
        // Its batch's statement has committed: the batcher resolves only after it.
        metrics.ticketsCreated(1);
        return toTicket(outcome.created, now);
      }
      const reasons: FieldError[] = [];
      if (outcome.lockChannels === null) {
        reasons.push({ field: 'securedObjectId', message: `no secured object ${input.securedObjectId} in this tenant` });
      }
      if (!outcome.deviceExists) {
        reasons.push({ field: 'mobileDeviceId', message: `no mobile device ${input.mobileDeviceId} in this tenant` });
      }
      if (outcome.lockChannels !== null) {
        channels.forEach((channel, index) => {
          if (!outcome.lockChannels!.includes(channel)) {
            reasons.push({ field: `channels[${index}]`, message: `the secured object does not support ${channel}` });
          }
        });
      }
      throw new UnprocessableError(detailWithReasons('The ticket cannot be issued', reasons), reasons);
    },

    async get(tenantId: string, id: string): Promise<Ticket> {
      const record = isUuid(id) ? await findTicket(db, tenantId, id) : null;
      if (!record) throw new NotFoundError(`No ticket ${id}.`);
      return toTicket(record, clock());
    },

    async list(tenantId: string, filter: TicketFilter, limit: number, cursor?: string): Promise<Page<Ticket>> {
      const after = decodeCursor(cursor, isUuid);
      const now = clock();
      const rows = await listTickets(db, tenantId, filter, now, after, limit + 1);
      return pageOf(rows, limit, (row) => ({ createdAt: row.createdAt, id: row.id }), (row) => toTicket(row, now));
    },

    /** Every ticket matching the filter, page by page (for the removed listings an operator kept alive). */
    async *all(tenantId: string, filter: TicketFilter): AsyncGenerator<Ticket> {
      let cursor: string | undefined;
      do {
        const page = await this.list(tenantId, filter, 1000, cursor);
        yield* page.items;
        cursor = page.nextCursor ?? undefined;
      } while (cursor);
    },

    /** DELETE is idempotent: the second call answers the same REVOKED ticket (docs/api-reference.md 4.3). */
    async revoke(context: ActionContext, id: string): Promise<Ticket> {
      if (!isUuid(id)) throw new NotFoundError(`No ticket ${id}.`);
      const now = clock();
      const result = await db.transaction(async (tx) => {
        const seq = await nextChangeSeq(tx, context.tenantId);
        const revoked = await revokeTicket(tx, context.tenantId, id, now, seq);
        if (!revoked) throw new NotFoundError(`No ticket ${id}.`);
        if (revoked.revokedNow) {
          await recordChange(tx, context, now, 'ticket.revoked', `ticket:${id}`, {
            ticketIds: [id],
            securedObjectId: revoked.ticket.securedObjectId,
            mobileDeviceId: revoked.ticket.mobileDeviceId,
          });
        }
        return revoked;
      });
      if (result.revokedNow) metrics.ticketsRevoked(1);
      return toTicket(result.ticket, now);
    },
  };
}

export type TicketService = ReturnType<typeof createTicketService>;
