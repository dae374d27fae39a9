// A ticket's derived status, its wire shape and the checks that need no database (docs/api-reference.md 4.3), without an app.
import { describe, expect, it } from 'vitest';
import type { TicketRecord } from '../../../src/db/repositories/ticket.repo.js';
import { ticketStatus, toTicket, validityErrors } from '../../../src/services/ticket.service.js';
import { parseRevivedInterfaces } from '../../../src/shared/vocabulary.js';

const NOW = 1_767_225_600_000;

const record: TicketRecord = {
  id: '75df36ab-c701-4ac6-9e82-8e95d7efe237',
  tenantId: '0b6c2f4e-1d3a-4e5f-8a7b-9c0d1e2f3a4b',
  securedObjectId: 'front-door',
  mobileDeviceId: 'phone-1',
  beginDate: 0,
  endDate: NOW + 1000,
  createdAt: NOW - 1000,
  commands: ['open'],
  channels: ['btlespp'],
  revokedAt: null,
  downloadedAt: null,
  accessPermissionId: null,
  revocationAppliedAt: null,
  schedule: null,
};

describe('ticketStatus', () => {
  it('is VALID until endDate, EXPIRED from endDate on ([beginDate, endDate) is half-open), REVOKED whenever revoked', () => {
    expect(ticketStatus(record, NOW)).toBe('VALID');
    expect(ticketStatus(record, NOW + 999)).toBe('VALID');
    expect(ticketStatus(record, NOW + 1000)).toBe('EXPIRED');
    expect(ticketStatus({ ...record, revokedAt: NOW }, NOW)).toBe('REVOKED');
    expect(ticketStatus({ ...record, revokedAt: NOW }, NOW + 5000)).toBe('REVOKED');
  });
});

describe('toTicket', () => {
  it('leaves out the fields that do not apply, never null, and never shows the tenant', () => {
    const ticket = toTicket(record, NOW);
    expect(ticket).toEqual({
      id: record.id,
      securedObjectId: 'front-door',
      mobileDeviceId: 'phone-1',
      beginDate: 0,
      endDate: NOW + 1000,
      creationDate: NOW - 1000,
      commands: ['open'],
      channels: ['btlespp'],
      status: 'VALID',
    });
  });

  it('shows revocationDate, downloadDate and accessPermissionId when they apply', () => {
    const ticket = toTicket({ ...record, revokedAt: NOW, downloadedAt: NOW - 10, accessPermissionId: 'p1' }, NOW);
    expect(ticket).toMatchObject({ status: 'REVOKED', revocationDate: NOW, downloadDate: NOW - 10, accessPermissionId: 'p1' });
    expect(ticket).not.toHaveProperty('revocationAppliedTime');
  });

  it('shows revocationAppliedTime once the lock applied the revocation (docs/api-reference.md 8.4)', () => {
    const ticket = toTicket({ ...record, revokedAt: NOW, downloadedAt: NOW - 10, revocationAppliedAt: NOW + 20 }, NOW + 30);
    expect(ticket).toMatchObject({ status: 'REVOKED', revocationDate: NOW, revocationAppliedTime: NOW + 20 });
  });
});

describe('validityErrors', () => {
  const none = parseRevivedInterfaces('');
  const valid = { beginDate: 0, endDate: NOW + 1, commands: ['open'], channels: ['btlespp'] };

  it('finds nothing wrong with a valid ticket', () => {
    expect(validityErrors(valid, NOW, none)).toEqual([]);
  });

  it('reports every problem at once: commands, channels and dates', () => {
    expect(validityErrors({ beginDate: 5, endDate: 5, commands: ['fly'], channels: [] }, NOW, none)).toEqual([
      { field: 'commands[0]', message: 'unknown command fly; allowed: tokn, open, clos' },
      { field: 'channels', message: 'must name at least one channel' },
      { field: 'endDate', message: 'must be after beginDate' },
    ]);
  });

  it('refuses dates after the year 9999 (microseconds), and hints at seconds for a past endDate before 1973', () => {
    const beyond = Date.UTC(10000, 0, 1);
    expect(validityErrors({ ...valid, endDate: beyond - 1 }, NOW, none)).toEqual([]);
    expect(validityErrors({ ...valid, beginDate: beyond, endDate: beyond + 1 }, NOW, none).map((e) => e.field)).toEqual(['beginDate', 'endDate']);
    expect(validityErrors({ ...valid, endDate: 8_640_000_000_000_000 }, NOW, none)).toEqual([]);
    expect(validityErrors({ ...valid, endDate: 8_640_000_000_000_000 - 1 }, NOW, none).map((e) => e.field)).toEqual(['endDate']);
    expect(validityErrors({ ...valid, endDate: 99_999_999_999 }, NOW, none)[0]!.message).toMatch(/looks like seconds/);
    expect(validityErrors({ ...valid, endDate: 100_000_000_000 }, NOW, none)).toEqual([{ field: 'endDate', message: 'is already past' }]);
  });

  it('refuses an endDate that is already past, the present included', () => {
    expect(validityErrors({ ...valid, endDate: NOW }, NOW, none)).toEqual([{ field: 'endDate', message: 'is already past' }]);
  });
});
