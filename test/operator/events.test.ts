// The tenant's event log (docs/api-reference.md 10, 7.5): each change writes its typed event with its data in the change's
// transaction, fan-outs in chunks of 1,000 tickets, a gapless sequence; GET /operatorapi/events; retention.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accessTenant, join, leave, lockGroup, permission, resident, v1, type AccessTenant } from '../helpers/access.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { clientToken, createClient, createTenant } from '../helpers/oauth.js';
import { recordLockContact } from '../../src/db/repositories/lock-telemetry.repo.js';
import { download, lockToken, phoneToken } from '../helpers/device.js';
import { bearer } from '../helpers/oauth.js';
import { call, device, expectProblem, lock, ticket } from '../helpers/operator.js';

interface WireEvent {
  id: string;
  type: string;
  sequence: number;
  time: number;
  data: Record<string, unknown>;
  requestId?: string;
}

const DAY = 86_400_000;

describe('event log', () => {
  let t: TestApp;
  let offset = 0;

  beforeAll(async () => {
    // The audit trail kept as long as the feed, so a record goes once 30 days are over (docs/api-reference.md 16.1).
    t = await buildTestApp({ BCRYPT_COST: '4', AUDIT_RETENTION_DAYS: '30' }, { clock: () => Date.now() + offset });
  });
  afterAll(async () => {
    await t.close();
  });

  const feed = (token: string | null, query = '') => call(t, token, { method: 'GET', url: `/operatorapi/events${query}` });

  /** Every event of the tenant through the feed, following `Link: rel="next"`. */
  /** The sequence numbers of the tenant's events still stored, whether or not a read may show them. */
  async function keptSequences(tenantId: string): Promise<number[]> {
    const { rows } = await t.database.db.query<{ seq: string }>('SELECT seq FROM audit_events WHERE tenant_id = $1 ORDER BY seq', [tenantId]);
    return rows.map((row) => Number(row.seq));
  }

  async function allEvents(token: string, limit = 1000): Promise<WireEvent[]> {
    const events: WireEvent[] = [];
    let url: string | null = `/operatorapi/events?limit=${limit}`;
    while (url) {
      const response = await call(t, token, { method: 'GET', url });
      expect(response.statusCode, response.body).toBe(200);
      events.push(...(response.json() as WireEvent[]));
      const link = response.headers.link as string | undefined;
      url = link ? new URL(/<([^>]+)>/.exec(link)![1]!, 'http://x').pathname + new URL(/<([^>]+)>/.exec(link)![1]!, 'http://x').search : null;
    }
    return events;
  }

  /** 2 devices × `locks` locks, seeded set-based, in a resident and a lock group of the tenant. */
  async function bigGroups(f: AccessTenant, locks: number) {
    const now = t.app.services.clock();
    await t.database.db.query(
      `INSERT INTO secured_objects (tenant_id, id, channels, local_name, uuid, created_at)
       SELECT $1, 'big-l' || n, '{btlespp}', 'L' || n, '7d8a0c1e-4b7f-4d5e-9a41-3c2b1f0e9d8c', $2::bigint FROM generate_series(1, $3) AS n`,
      [f.tenant.tenantId, now, locks],
    );
    await device(t, f.operator, 'big-d1');
    await device(t, f.operator, 'big-d2');
    const r = await resident(t, f.token, 'Big', ['big-d1', 'big-d2']);
    const g = await lockGroup(t, f.token, 'Big', ['big-l1']);
    await t.database.db.query(
      `INSERT INTO lock_group_objects (tenant_id, lock_group_id, secured_object_id)
       SELECT $1, $2, 'big-l' || n FROM generate_series(2, $3) AS n`,
      [f.tenant.tenantId, g.id, locks],
    );
    return { r, g };
  }

  it('writes each change\'s typed event with the ids it touched, and a fan-out in chunks of 1,000 tickets', async () => {
    const f = await accessTenant(t, 'events');
    await lock(t, f.operator, 'door');
    await device(t, f.operator, 'phone');
    const r = await resident(t, f.token, 'Ann');
    const g = await lockGroup(t, f.token, 'Front', ['door']);
    await join(t, f.token, 'residents', r.id, 'phone');
    const p = await permission(t, f.token, r.id, g.id);
    await leave(t, f.token, 'residents', r.id, 'phone');
    const gone = await v1(t, f.token, { method: 'DELETE', url: `/v1/access-permissions/${p.id}` });
    expect(gone.statusCode).toBe(204);
    expect((await call(t, f.operator, { method: 'DELETE', url: '/operatorapi/securedobjects/door' })).statusCode).toBe(204);
    expect((await call(t, f.operator, { method: 'DELETE', url: '/operatorapi/mobiledevices/phone' })).statusCode).toBe(204);

    const events = await allEvents(f.operator);
    const types = events.map((event) => event.type);
    expect(types).toEqual([
      // The management client and the console's (tenant create), then the Access API client.
      'client.created',
      'client.created',
      'client.created',
      'user.created',
      'secured_object.created',
      'mobile_device.created',
      'resident.created',
      'lock_group.created',
      'resident.device_added',
      'ticket.created',
      'access_permission.created',
      'ticket.revoked',
      'resident.device_removed',
      'access_permission.deleted',
      'secured_object.deleted',
      'mobile_device.deleted',
    ]);
    expect(events.map((event) => event.sequence)).toEqual(events.map((_, index) => index + 1));
    const byType = (type: string) => events.find((event) => event.type === type)!;
    const ticketId = (byType('ticket.created').data.ticketIds as string[])[0]!;
    expect(byType('ticket.created').data).toEqual({ accessPermissionId: p.id, ticketIds: [ticketId] });
    expect(byType('access_permission.created').data).toEqual({ accessPermissionId: p.id, residentId: r.id, lockGroupId: g.id, ticketCount: 1 });
    expect(byType('resident.device_added').data).toEqual({ residentId: r.id, mobileDeviceId: 'phone' });
    expect(byType('resident.device_removed').data).toEqual({ residentId: r.id, mobileDeviceId: 'phone' });
    expect(byType('ticket.revoked').data).toEqual({ residentId: r.id, mobileDeviceId: 'phone', ticketIds: [ticketId] });
    expect(byType('access_permission.deleted').data).toEqual({ accessPermissionId: p.id });
    expect(byType('secured_object.created').data).toEqual({ securedObjectId: 'door' });
    expect(byType('secured_object.deleted').data).toEqual({ securedObjectId: 'door' });
    expect(byType('mobile_device.deleted').data).toEqual({ mobileDeviceId: 'phone' });
    for (const event of events) {
      expect(event.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(Math.abs(event.time - t.app.services.clock())).toBeLessThan(60_000);
    }
    // The audit view is the same rows: its ids are the sequence numbers, its actions the types.
    const audit = await call(t, f.operator, { method: 'GET', url: '/operatorapi/audit-events?limit=1000' });
    expect((audit.json() as { id: string; action: string }[]).map((row) => [Number(row.id), row.action])).toEqual(
      events.map((event) => [event.sequence, event.type]),
    );
  });

  it('reports what locks and phones tell: downloads, revocations applied, clock drift (once), access-log entries', async () => {
    const f = await accessTenant(t, 'reports');
    await lock(t, f.operator, 'gate');
    await device(t, f.operator, 'ph');
    const first = await ticket(t, f.operator, 'gate', 'ph');
    const second = await ticket(t, f.operator, 'gate', 'ph');
    await download(t, await phoneToken(t, f.tenant, 'ph'), 'ph');
    for (const id of [first.id, second.id]) {
      expect((await call(t, f.operator, { method: 'DELETE', url: `/operatorapi/tickets/${id}` })).statusCode).toBeLessThan(300);
    }
    const seqOf = async (id: string) =>
      Number((await t.database.db.query<{ seq: string }>('SELECT change_seq AS seq FROM tickets WHERE id = $1', [id])).rows[0]!.seq);
    const firstSeq = await seqOf(first.id);
    const secondSeq = await seqOf(second.id);
    expect(secondSeq).toBeGreaterThan(firstSeq);
    const gateToken = await lockToken(t, f.tenant, 'gate');
    const since = (await allEvents(f.operator)).length;

    const upload = (payload: object) =>
      t.app.inject({ method: 'POST', url: '/deviceapi/securedobjects/gate/accesslog', headers: bearer(gateToken), payload });
    const now = t.app.services.clock();
    const entry = (entryNo: number, result: string) => ({ entryNo, lockTime: now - 1000, command: 'open', channel: 'btlespp', result });
    const uploaded = await upload({ lockTime: now + 60_000, appliedSerial: firstSeq, entries: [entry(1, 'granted'), entry(2, 'denied'), entry(3, 'granted')] });
    expect(uploaded.statusCode, uploaded.body).toBe(200);
    const afterUpload = (await allEvents(f.operator)).slice(since);
    const data = afterUpload.map((event) => [event.type, event.data]);
    expect(data).toEqual([
      ['ticket.revocation_applied', { securedObjectId: 'gate', ticketIds: [first.id] }],
      ['secured_object.clock_drift', { securedObjectId: 'gate', clockOffset: expect.any(Number) }],
      ['access_log.granted', { securedObjectId: 'gate', via: 'lock', signed: true, entryNos: [1, 3] }],
      ['access_log.denied', { securedObjectId: 'gate', via: 'lock', signed: true, entryNos: [2] }],
    ]);
    expect(Math.abs((afterUpload[1]!.data.clockOffset as number) - 60_000)).toBeLessThan(5_000);

    // Still drifting, nothing new applied, a duplicate entry: only the new entry's event.
    expect((await upload({ lockTime: t.app.services.clock() + 60_000, entries: [entry(3, 'granted'), entry(4, 'denied')] })).statusCode).toBe(200);
    expect((await allEvents(f.operator)).slice(since + 4).map((event) => [event.type, event.data.entryNos])).toEqual([['access_log.denied', [4]]]);

    // A sync's acknowledgement writes its event in its own statement; one that stamps nothing writes nothing.
    const stamped = await recordLockContact(t.database.db, f.tenant.tenantId, 'gate', { seenAt: t.app.services.clock(), appliedThrough: secondSeq });
    expect(stamped.events).toEqual({ revocationsApplied: [], driftOffsetMs: null });
    const applied = (await allEvents(f.operator)).slice(since + 5);
    expect(applied.map((event) => [event.type, event.data])).toEqual([['ticket.revocation_applied', { securedObjectId: 'gate', ticketIds: [second.id] }]]);
    await recordLockContact(t.database.db, f.tenant.tenantId, 'gate', { seenAt: t.app.services.clock(), appliedThrough: secondSeq });
    expect(await allEvents(f.operator)).toHaveLength(since + 6);

    // The downloads were recorded with their ids; a ticket's history shows all of it.
    const history = await call(t, f.operator, { method: 'GET', url: `/operatorapi/audit-events?target=ticket:${second.id}` });
    expect((history.json() as { action: string }[]).map((row) => row.action)).toEqual([
      'ticket.created',
      'ticket.downloaded',
      'ticket.revoked',
      'ticket.revocation_applied',
    ]);
    const downloaded = (await allEvents(f.operator)).filter((event) => event.type === 'ticket.downloaded');
    expect(downloaded.map((event) => event.data).sort((a, b) => String(a.ticketIds).localeCompare(String(b.ticketIds)))).toEqual(
      [first.id, second.id].sort().map((id) => ({ ticketIds: [id], mobileDeviceId: 'ph', securedObjectId: 'gate' })),
    );
  });

  it('a grant of 1,200 tickets writes 2 ticket.created events; ?target=ticket:ID shows a granted ticket\'s creation and its revocation by a membership removal', async () => {
    const f = await accessTenant(t, 'grant');
    const { r, g } = await bigGroups(f, 600);
    const p = await permission(t, f.token, r.id, g.id);
    expect(p.tokenCount).toBe(1200);
    const created = (await allEvents(f.operator)).filter((event) => event.type === 'ticket.created');
    expect(created.map((event) => (event.data.ticketIds as string[]).length)).toEqual([1000, 200]);
    const ids = created.flatMap((event) => event.data.ticketIds as string[]);
    const { rows } = await t.database.db.query<{ id: string; mobile_device_id: string }>(
      'SELECT id, mobile_device_id FROM tickets WHERE tenant_id = $1 AND access_permission_id = $2',
      [f.tenant.tenantId, p.id],
    );
    expect(new Set(ids)).toEqual(new Set(rows.map((row) => row.id)));
    expect(ids).toHaveLength(1200);

    const granted = rows.find((row) => row.mobile_device_id === 'big-d1')!.id;
    await leave(t, f.token, 'residents', r.id, 'big-d1');
    const history = await call(t, f.operator, { method: 'GET', url: `/operatorapi/audit-events?target=ticket:${granted}` });
    expect(history.statusCode).toBe(200);
    expect((history.json() as { action: string; target: string }[]).map((row) => [row.action, row.target])).toEqual([
      ['ticket.created', `access_permission:${p.id}`],
      ['ticket.revoked', `resident:${r.id}/mobile_device:big-d1`],
    ]);
  });

  it('keeps the sequence gapless and duplicate-free under concurrent writers', async () => {
    const f = await accessTenant(t, 'race');
    const before = (await allEvents(f.operator)).length;
    await Promise.all(Array.from({ length: 12 }, (_, i) => device(t, f.operator, `race-${i}`)));
    await Promise.all(Array.from({ length: 6 }, (_, i) => resident(t, f.token, `race-${i}`, [`race-${i}`, `race-${i + 6}`])));
    const events = await allEvents(f.operator, 5);
    expect(events).toHaveLength(before + 18);
    expect(events.map((event) => event.sequence)).toEqual(events.map((_, index) => index + 1));
    expect(new Set(events.map((event) => event.id)).size).toBe(events.length);
  });

  it('pages with after, types and Link rel="next"; refuses unknown types (400); sees only its own tenant', async () => {
    const f = await accessTenant(t, 'pages');
    const other = await accessTenant(t, 'pages-other');
    await device(t, other.operator, 'theirs');
    const all = await allEvents(f.operator);
    const first = await feed(f.operator, '?limit=1');
    expect(first.json()).toEqual([all[0]]);
    expect(first.headers.link).toBe('</operatorapi/events?limit=1&after=1>; rel="next"');
    const rest = await feed(f.operator, '?after=1');
    expect(rest.json()).toEqual(all.slice(1));
    expect(rest.headers.link).toBeUndefined();
    const users = await feed(f.operator, '?types=user.created,client.created');
    // tenant create's management and console clients, the fixture's client, its user.
    expect((users.json() as WireEvent[]).map((event) => event.type).sort()).toEqual(['client.created', 'client.created', 'client.created', 'user.created']);
    expect(expectProblem(await feed(f.operator, '?types=ticket.created,nope.happened'), 400).detail).toContain('nope.happened');
    expect(expectProblem(await feed(f.operator, '?after=-1'), 400).status).toBe(400);
    expect(all.some((event) => JSON.stringify(event.data).includes('theirs'))).toBe(false);
  });

  it('counts the events written in event_log_events_written_total', async () => {
    const written = async () => {
      const response = await t.app.inject({ method: 'GET', url: '/metrics' });
      expect(response.statusCode).toBe(200);
      const line = /^event_log_events_written_total (\d+)$/m.exec(response.body);
      expect(line, 'the counter is exposed').not.toBeNull();
      return Number(line![1]);
    };
    const f = await accessTenant(t, 'metric');
    const before = await written();
    await device(t, f.operator, 'counted-1');
    await device(t, f.operator, 'counted-2');
    await resident(t, f.token, 'Counted', ['counted-1']);
    expect((await written()) - before).toBe(3);
  });

  it('needs a token (401) with events:read (403)', async () => {
    const tenant = await createTenant(t.app, 'events-scope');
    const wrong = await createClient(t.app, tenant, ['devices:read']);
    expect(expectProblem(await feed(null), 401).status).toBe(401);
    const token = await clientToken(t.app, wrong);
    expect(expectProblem(await feed(token), 403).detail).toContain('events:read');
  });

  it('retention deletes events older than EVENT_RETENTION_DAYS, but never one a webhook delivery still waits for', async () => {
    const f = await accessTenant(t, 'retention');
    const old = await allEvents(f.operator);
    // A subscription dispatched through every event so far, with one delivery still pending (event 1).
    const { rows } = await t.database.db.query<{ id: string }>(
      `INSERT INTO webhooks (tenant_id, id, url, event_types, secret_sealed, dispatched_through, created_at, updated_at)
       SELECT $1, gen_random_uuid(), 'https://hooks.test/x', '{client.created}', '\\x00', last_seq, 0, 0
         FROM tenant_audit_counters WHERE tenant_id = $1 RETURNING id`,
      [f.tenant.tenantId],
    );
    await t.database.db.query(
      `INSERT INTO webhook_deliveries (tenant_id, webhook_id, event_seq, state, next_attempt_at, created_at) VALUES ($1, $2, 1, 'pending', 0, 0)`,
      [f.tenant.tenantId, rows[0]!.id],
    );
    offset += 31 * DAY;
    try {
      // A token issued 31 days ago has expired: a new one from the same management client.
      const fresh = await clientToken(t.app, f.tenant);
      await device(t, fresh, 'fresh');
      await t.app.services.audit.prune();
      expect(await keptSequences(f.tenant.tenantId)).toEqual([1, old.length + 1]);
      // The feed serves only what is within the tenant's eventDays: the first event stays for its delivery alone.
      const served = await allEvents(fresh);
      expect(served.map((event) => [event.type, event.sequence])).toEqual([['mobile_device.created', old.length + 1]]);
    } finally {
      offset -= 31 * DAY;
    }
  });

  it('retention keeps an event a subscription has not been dispatched yet (paused), so resuming loses nothing', async () => {
    const f = await accessTenant(t, 'retention-paused');
    // A subscription to mobile_device.created, paused with everything so far dispatched (migration 013).
    const { rows } = await t.database.db.query<{ id: string }>(
      `INSERT INTO webhooks (tenant_id, id, url, event_types, enabled, disabled_reason, disabled_at, secret_sealed,
                             dispatched_through, created_at, updated_at)
       SELECT $1, gen_random_uuid(), 'https://hooks.test/x', '{mobile_device.created}', false, 'operator', 0, '\\x00',
              last_seq, 0, 0
         FROM tenant_audit_counters WHERE tenant_id = $1 RETURNING id`,
      [f.tenant.tenantId],
    );
    const webhookId = rows[0]!.id;
    await device(t, f.operator, 'while-paused');
    const paused = (await allEvents(f.operator)).filter((event) => event.type === 'mobile_device.created' && event.data.mobileDeviceId === 'while-paused');
    expect(paused).toHaveLength(1);
    offset += 31 * DAY;
    try {
      await t.app.services.audit.prune();
      // The paused subscription's event stays; the events it never receives go as usual.
      expect(await keptSequences(f.tenant.tenantId)).toEqual([paused[0]!.sequence]);
      await t.database.db.query(`UPDATE webhooks SET enabled = true, disabled_reason = NULL, disabled_at = NULL WHERE tenant_id = $1 AND id = $2`, [
        f.tenant.tenantId,
        webhookId,
      ]);
      // Resumed, it still has that event to receive: after its cursor (migration 018), or as a retry if the worker has
      // already tried it (the receiver never answers).
      const { rows: owed } = await t.database.db.query<{ seq: string }>(
        `SELECT e.seq FROM audit_events e
           JOIN webhooks w ON w.tenant_id = e.tenant_id AND w.id = $2
          WHERE e.tenant_id = $1 AND e.action = ANY (w.event_types)
            AND (e.seq > w.dispatched_through
                 OR EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.tenant_id = e.tenant_id AND d.webhook_id = w.id AND d.event_seq = e.seq))
          ORDER BY e.seq`,
        [f.tenant.tenantId, webhookId],
      );
      expect(owed.map((row) => Number(row.seq))).toEqual([paused[0]!.sequence]);
    } finally {
      offset -= 31 * DAY;
    }
  });
});
