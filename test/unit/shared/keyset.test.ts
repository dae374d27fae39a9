// keysetPage: the one keyset condition and order every paged repository builds its statement with (docs/api-reference.md 7.3).
import { describe, expect, it } from 'vitest';
import { keysetPage, type KeysetColumns } from '../../../src/shared/keyset.js';

const TICKETS: KeysetColumns = { createdAt: 'created_at', id: 'id', idType: 'uuid' };
const TICKET_ID = '0b7f6a52-6c1e-4d55-9a43-1f0e6a2b9c11';

describe('keysetPage', () => {
  it('pages from the start with the page index\'s condition alone on the first page, the limit its only parameter', () => {
    const params: unknown[] = ['tenant-1'];
    expect(keysetPage(params, TICKETS, null, 51)).toEqual({
      condition: "created_at >= '-9223372036854775808'::bigint",
      orderAndLimit: 'ORDER BY created_at, id LIMIT $2',
    });
    expect(params).toEqual(['tenant-1', 51]);
  });

  it('keeps the rows after the position, numbering its parameters after the statement’s own', () => {
    const params: unknown[] = ['tenant-1', 'device-7', 1_700_000_000_000];
    expect(keysetPage(params, TICKETS, { createdAt: 1_700_000_000_123, id: TICKET_ID }, 101)).toEqual({
      condition: "created_at >= '-9223372036854775808'::bigint AND (created_at, id) > ($4::bigint, $5::uuid)",
      orderAndLimit: 'ORDER BY created_at, id LIMIT $6',
    });
    expect(params).toEqual(['tenant-1', 'device-7', 1_700_000_000_000, 1_700_000_000_123, TICKET_ID, 101]);
  });

  it('orders by the columns it is given, qualified and of their own type', () => {
    const params: unknown[] = ['tenant-1'];
    const users: KeysetColumns = { createdAt: 'u.created_at', id: 'u.username', idType: 'text' };
    expect(keysetPage(params, users, { createdAt: 5, id: 'alice' }, 10)).toEqual({
      condition: "u.created_at >= '-9223372036854775808'::bigint AND (u.created_at, u.username) > ($2::bigint, $3::text)",
      orderAndLimit: 'ORDER BY u.created_at, u.username LIMIT $4',
    });
    expect(params).toEqual(['tenant-1', 5, 'alice', 10]);
  });
});
