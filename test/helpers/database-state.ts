// Row counts of the tables an API change touches, and the assertion that a rejected request changed none of them.
import { expect } from 'vitest';
import type { TestApp } from './app.js';

export interface RowCounts {
  tickets: number;
  revoked_tickets: number;
  secured_objects: number;
  mobile_devices: number;
  audit_events: number;
  idempotency_keys: number;
  oauth_clients: number;
  residents: number;
  resident_devices: number;
  lock_groups: number;
  lock_group_objects: number;
  access_permissions: number;
  lockdowns: number;
  lockdown_locks: number;
}

/** Row counts (all tenants) of every table the Operator and Access APIs change, and how many tickets are revoked. */
export async function rowCounts(t: TestApp): Promise<RowCounts> {
  const { rows } = await t.database.db.query<RowCounts>(
    `SELECT (SELECT count(*) FROM tickets)::int AS tickets,
            (SELECT count(*) FROM tickets WHERE revoked_at IS NOT NULL)::int AS revoked_tickets,
            (SELECT count(*) FROM secured_objects)::int AS secured_objects,
            (SELECT count(*) FROM mobile_devices)::int AS mobile_devices,
            (SELECT count(*) FROM audit_events)::int AS audit_events,
            (SELECT count(*) FROM idempotency_keys)::int AS idempotency_keys,
            (SELECT count(*) FROM oauth_clients)::int AS oauth_clients,
            (SELECT count(*) FROM residents)::int AS residents,
            (SELECT count(*) FROM resident_devices)::int AS resident_devices,
            (SELECT count(*) FROM lock_groups)::int AS lock_groups,
            (SELECT count(*) FROM lock_group_objects)::int AS lock_group_objects,
            (SELECT count(*) FROM access_permissions)::int AS access_permissions,
            (SELECT count(*) FROM lockdowns)::int AS lockdowns,
            (SELECT count(*) FROM lockdown_locks)::int AS lockdown_locks`,
  );
  return rows[0]!;
}

/** Runs `action` (which sends rejected requests) and asserts that no table gained, lost or revoked a row. */
export async function expectNothingChanged(t: TestApp, action: () => Promise<void>): Promise<void> {
  const before = await rowCounts(t);
  await action();
  expect(await rowCounts(t)).toEqual(before);
}
