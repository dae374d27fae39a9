// The lock-telemetry repository (docs/api-reference.md 8.4): a contact only raises what it records, acknowledges no change
// that has not happened, and stamps exactly the revocations at or below the applied position.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findLockTelemetry, recordLockContact } from '../../src/db/repositories/lock-telemetry.repo.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { download, phoneToken } from '../helpers/device.js';
import { clientToken, createTenant, type TenantFixture } from '../helpers/oauth.js';
import { call, device, lock, ticket } from '../helpers/operator.js';

describe('lock telemetry repository', () => {
  const now = Date.UTC(2026, 0, 15, 9, 0, 0, 0);
  let t: TestApp;
  let acme: TenantFixture;
  let operator: string;

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4' }, { clock: () => now });
    acme = await createTenant(t.app, 'acme');
    operator = await clientToken(t.app, acme);
    await lock(t, operator, 'door');
    await device(t, operator, 'phone');
  });
  afterAll(async () => {
    await t.close();
  });

  it('stamps a downloaded ticket\'s revocation once the lock applied its change, and never lowers the position', async () => {
    const kept = await ticket(t, operator, 'door', 'phone');
    const revoked = await ticket(t, operator, 'door', 'phone');
    await download(t, await phoneToken(t, acme, 'phone'), 'phone');
    expect((await call(t, operator, { method: 'DELETE', url: `/operatorapi/tickets/${revoked.id}` })).statusCode).toBe(200);
    const db = t.database.db;
    const tenantId = acme.tenantId;
    const { rows } = await db.query<{ change_seq: number }>('SELECT change_seq FROM tickets WHERE id = $1', [revoked.id]);
    const seq = Number(rows[0]!.change_seq);

    const before = await recordLockContact(db, tenantId, 'door', { seenAt: now, appliedThrough: seq - 1 });
    expect(before).toMatchObject({ lastSeenAt: now, appliedThrough: seq - 1, clockOffsetMs: null });
    const pending = await db.query<{ revocation_applied_at: number | null }>('SELECT revocation_applied_at FROM tickets WHERE id = $1', [revoked.id]);
    expect(pending.rows[0]!.revocation_applied_at).toBeNull();

    // Beyond the lock's own last change (here also the tenant's): capped, so no caller acknowledges what has not happened.
    const after = await recordLockContact(db, tenantId, 'door', { seenAt: now + 1000, appliedThrough: seq + 1000, clockOffsetMs: -45_000 });
    expect(after).toMatchObject({ lastSeenAt: now + 1000, appliedThrough: seq, clockOffsetMs: -45_000, clockCheckedAt: now + 1000 });
    const stamped = await db.query<{ id: string; revocation_applied_at: number | null }>(
      'SELECT id, revocation_applied_at FROM tickets WHERE id = ANY ($1::uuid[]) ORDER BY id',
      [[kept.id, revoked.id]],
    );
    expect(Object.fromEntries(stamped.rows.map((row) => [row.id, row.revocation_applied_at === null ? null : Number(row.revocation_applied_at)]))).toEqual({
      [kept.id]: null,
      [revoked.id]: now + 1000,
    });

    // An older contact (a relayed upload arriving late) lowers nothing.
    const late = await recordLockContact(db, tenantId, 'door', { seenAt: now + 500, appliedThrough: 1 });
    expect(late).toMatchObject({ lastSeenAt: now + 1000, appliedThrough: seq, clockOffsetMs: -45_000 });
    const { events, ...telemetry } = late;
    // Nothing was stamped by it (the position never lowers), so it had nothing for the event log (docs/api-reference.md 10).
    expect(events).toEqual({ revocationsApplied: [], driftOffsetMs: null });
    expect(await findLockTelemetry(db, tenantId, 'door')).toEqual(telemetry);
    expect(await findLockTelemetry(db, tenantId, 'elsewhere')).toBeNull();
  });

  it('acknowledges nothing for a contact without a position, on the first contact and on a later one', async () => {
    await lock(t, operator, 'gate');
    const issued = await ticket(t, operator, 'gate', 'phone');
    await download(t, await phoneToken(t, acme, 'phone'), 'phone');
    expect((await call(t, operator, { method: 'DELETE', url: `/operatorapi/tickets/${issued.id}` })).statusCode).toBe(200);
    const db = t.database.db;
    expect(await recordLockContact(db, acme.tenantId, 'gate', { seenAt: now, clockOffsetMs: 1000 })).toMatchObject({ lastSeenAt: now, appliedThrough: 0 });
    expect(await recordLockContact(db, acme.tenantId, 'gate', { seenAt: now + 1 })).toMatchObject({ lastSeenAt: now + 1, appliedThrough: 0, clockOffsetMs: 1000 });
    const { rows } = await db.query<{ revocation_applied_at: number | null }>('SELECT revocation_applied_at FROM tickets WHERE id = $1', [issued.id]);
    expect(rows[0]!.revocation_applied_at).toBeNull();
  });
});
