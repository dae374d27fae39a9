// The audit trail (docs/api-reference.md 7.5): one event per change with actor, target and request id; GET /operatorapi/audit-events.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { expectNothingChanged } from '../helpers/database-state.js';
import { clientToken, createClient, createTenant, type TenantFixture } from '../helpers/oauth.js';
import { twoTenants } from '../helpers/tenants.js';
import {
  LOCK_UUID,
  auditEvents,
  call,
  device,
  expectAuthChecks,
  expectProblem,
  issueTicket,
  lock,
  nextLink,
  problemFields,
  registerDevice,
  registerLock,
  ticket,
  ticketBody,
  UUID_PATTERN,
  walk,
} from '../helpers/operator.js';

interface AuditEvent {
  id: string;
  time: number;
  actor: string;
  action: string;
  target: string;
  requestId?: string;
}

describe('audit events', () => {
  let t: TestApp;
  let acme: TenantFixture;
  let other: TenantFixture;
  let token: string;
  let otherToken: string;
  let offset = 0;

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4' }, { clock: () => Date.now() + offset });
    ({ acme, other, token, otherToken } = await twoTenants(t));
  });
  afterAll(async () => {
    await t.close();
  });

  const list = (query: string, auth = token) => call(t, auth, { method: 'GET', url: `/operatorapi/audit-events?${query}` });

  it('appends exactly one event per change, with actor client:<id>, the target and the X-Request-Id of the change', async () => {
    const actor = `client:${acme.clientId}`;
    const changes: [string, () => ReturnType<typeof call>, string, (body: { id: string }) => string][] = [
      ['register lock', () => registerLock(t, token, { id: 'audit-door', channels: ['btlespp'], localName: 'A', uuid: LOCK_UUID }), 'secured_object.created', () => 'secured_object:audit-door'],
      ['register device', () => registerDevice(t, token, { id: 'audit-phone' }), 'mobile_device.created', () => 'mobile_device:audit-phone'],
      ['issue ticket', () => issueTicket(t, token, ticketBody(t, 'audit-door', 'audit-phone')), 'ticket.created', (body) => `ticket:${body.id}`],
    ];
    let ticketId = '';
    const check = async (response: Awaited<ReturnType<typeof call>>, action: string, target: string) => {
      expect(response.statusCode, response.body).toBeLessThan(300);
      const requestId = String(response.headers['x-request-id']);
      const events = await auditEvents(t, { requestId });
      expect(events).toEqual([{ tenant_id: acme.tenantId, time: expect.any(Number), actor, action, target, request_id: requestId }]);
      expect(Math.abs(events[0]!.time - t.app.services.clock())).toBeLessThan(60_000);
      const listed = await list(`target=${encodeURIComponent(target)}&action=${action}`);
      expect(listed.json()).toStrictEqual([{ id: expect.stringMatching(/^\d+$/), time: events[0]!.time, actor, action, target, requestId }]);
    };
    for (const [, send, action, target] of changes) {
      const response = await send();
      const body = response.json();
      if (action === 'ticket.created') ticketId = body.id;
      await check(response, action, target(body));
    }
    await check(await call(t, token, { method: 'DELETE', url: `/operatorapi/tickets/${ticketId}` }), 'ticket.revoked', `ticket:${ticketId}`);

    // Revoking again changes nothing, so it appends nothing.
    await expectNothingChanged(t, async () => {
      const again = await call(t, token, { method: 'DELETE', url: `/operatorapi/tickets/${ticketId}` });
      expect(again.statusCode).toBe(200);
      expect(await auditEvents(t, { requestId: String(again.headers['x-request-id']) })).toEqual([]);
    });

    // The device's only ticket is already revoked: its removal is one event.
    await check(await call(t, token, { method: 'DELETE', url: '/operatorapi/mobiledevices/audit-phone' }), 'mobile_device.deleted', 'mobile_device:audit-phone');
    await check(await call(t, token, { method: 'DELETE', url: '/operatorapi/securedobjects/audit-door' }), 'secured_object.deleted', 'secured_object:audit-door');

    expect((await auditEvents(t, { target: `ticket:${ticketId}` })).map((event) => event.action)).toEqual(['ticket.created', 'ticket.revoked']);
  });

  it('appends nothing for refused requests and idempotent replays', async () => {
    await lock(t, token, 'quiet-door');
    await device(t, token, 'quiet-phone');
    const body = ticketBody(t, 'quiet-door', 'quiet-phone');
    expect((await issueTicket(t, token, body, { 'idempotency-key': 'audit-replay' })).statusCode).toBe(201);
    await expectNothingChanged(t, async () => {
      expect((await issueTicket(t, token, body, { 'idempotency-key': 'audit-replay' })).headers['idempotent-replayed']).toBe('true');
      expectProblem(await issueTicket(t, token, { ...body, commands: ['kick'] }), 422);
      expectProblem(await issueTicket(t, token, { ...body, extra: true }), 400);
      expectProblem(await registerLock(t, token, { id: 'quiet-door', channels: ['btlespp'], localName: 'Q', uuid: LOCK_UUID }), 409);
      expectProblem(await call(t, otherToken, { method: 'DELETE', url: '/operatorapi/securedobjects/quiet-door' }), 404);
    });
  });

  it('answers events as {id, time, actor, action, target, requestId?}; requestId is absent for changes made outside a request', async () => {
    const all = await walk<AuditEvent>(t, token, '/operatorapi/audit-events?limit=1000');
    const cliMade = all.items.filter((event) => event.actor === 'cli');
    expect(cliMade.length).toBeGreaterThan(0);
    for (const event of cliMade) {
      expect(event).not.toHaveProperty('requestId');
      expect(Object.keys(event).sort()).toEqual(['action', 'actor', 'id', 'target', 'time']);
    }
    for (const event of all.items.filter((item) => item.actor !== 'cli')) {
      expect(Object.keys(event).sort()).toEqual(['action', 'actor', 'id', 'requestId', 'target', 'time']);
    }
    const ids = all.items.map((event) => Number(event.id));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
  });

  it('filters by target, action and the time range [from, to)', async () => {
    const timeline = await createTenant(t.app, 'timeline');
    const timelineToken = await clientToken(t.app, timeline);
    const times: number[] = [];
    for (const id of ['t1', 't2', 't3']) {
      offset += 10_000;
      times.push(t.app.services.clock());
      await lock(t, timelineToken, id);
    }
    offset += 10_000;
    await device(t, timelineToken, 't-phone');
    const issued = await ticket(t, timelineToken, 't2', 't-phone');
    const events = (await walk<AuditEvent>(t, timelineToken, '/operatorapi/audit-events')).items;
    const lockEvents = events.filter((event) => event.action === 'secured_object.created');
    expect(lockEvents.map((event) => event.target)).toEqual(['secured_object:t1', 'secured_object:t2', 'secured_object:t3']);
    // Each lock event is stamped with the clock of its change; the spacing lets the range filters cut between them.
    const [first, second, third] = lockEvents.map((event) => event.time) as [number, number, number];
    expect(second - first).toBeGreaterThanOrEqual(9_000);
    expect(third - second).toBeGreaterThanOrEqual(9_000);

    const targets = async (query: string) => {
      const response = await list(query, timelineToken);
      expect(response.statusCode, `${query}: ${response.body}`).toBe(200);
      return (response.json() as AuditEvent[]).map((event) => event.target);
    };
    expect(await targets('target=secured_object:t2')).toEqual(['secured_object:t2']);
    expect(await targets(`target=ticket:${issued.id}`)).toEqual([`ticket:${issued.id}`]);
    expect(await targets('action=secured_object.created')).toEqual(['secured_object:t1', 'secured_object:t2', 'secured_object:t3']);
    expect(await targets('action=mobile_device.created')).toEqual(['mobile_device:t-phone']);
    expect(await targets(`action=secured_object.created&from=${second}`)).toEqual(['secured_object:t2', 'secured_object:t3']);
    expect(await targets(`action=secured_object.created&to=${second}`)).toEqual(['secured_object:t1']);
    expect(await targets(`action=secured_object.created&from=${first}&to=${third}`)).toEqual(['secured_object:t1', 'secured_object:t2']);
    expect(await targets(`action=secured_object.created&from=${third + 1}`)).toEqual([]);
    expect(await targets(`from=${second}&to=${second}`)).toEqual([]);
    expect(await targets('target=secured_object:t2&action=ticket.created')).toEqual([]);
    // Another tenant's targets are invisible, even by name.
    expect(await targets('target=secured_object:quiet-door')).toEqual([]);
  });

  it('pages with Link rel="next" keeping the filters; every event exactly once; bad parameters are 400', async () => {
    const pager = await createTenant(t.app, 'pager');
    const pagerToken = await clientToken(t.app, pager);
    for (let i = 0; i < 5; i++) await lock(t, pagerToken, `pl-${i}`);
    const everything = (await list('limit=1000', pagerToken)).json() as AuditEvent[];

    const first = await list('limit=2&action=secured_object.created', pagerToken);
    expect(nextLink(first)).toMatch(/^\/operatorapi\/audit-events\?limit=2&action=secured_object\.created&cursor=[A-Za-z0-9_-]+$/);
    const walked = await walk<AuditEvent>(t, pagerToken, '/operatorapi/audit-events?limit=2&action=secured_object.created');
    expect(walked.pages.map((page) => page.length)).toEqual([2, 2, 1]);
    expect(walked.items.map((event) => event.target)).toEqual([0, 1, 2, 3, 4].map((i) => `secured_object:pl-${i}`));

    const all = await walk<AuditEvent>(t, pagerToken, '/operatorapi/audit-events?limit=1');
    expect(all.items).toStrictEqual(everything);
    expect(new Set(all.items.map((event) => event.id)).size).toBe(everything.length);

    // A cursor stays valid while events are appended: the walk goes on from where it stopped.
    const page = await list('limit=3', pagerToken);
    await lock(t, pagerToken, 'pl-late');
    const rest = await walk<AuditEvent>(t, pagerToken, nextLink(page)!);
    expect([...(page.json() as AuditEvent[]), ...rest.items].map((event) => event.target)).toEqual([
      ...everything.map((event) => event.target),
      'secured_object:pl-late',
    ]);

    for (const [query, field] of [
      ['limit=0', 'limit'],
      ['limit=1001', 'limit'],
      ['cursor=garbage', 'cursor'],
      [`cursor=${Buffer.from('-1').toString('base64url')}`, 'cursor'],
      [`cursor=${Buffer.from('99999999999999999999').toString('base64url')}`, 'cursor'],
      ['from=-1', 'from'],
      ['from=yesterday', 'from'],
      ['to=8640000000000001', 'to'],
      ['target=', 'target'],
      ['actor=cli', 'actor'],
    ]) {
      expect([...new Set(problemFields(await list(query!, pagerToken), 400))], query).toEqual([field]);
    }
  });

  it("never shows another tenant's events", async () => {
    await lock(t, otherToken, 'their-door');
    await device(t, otherToken, 'their-phone');
    const theirs = await ticket(t, otherToken, 'their-door', 'their-phone');
    const acmeEvents = (await walk<AuditEvent>(t, token, '/operatorapi/audit-events?limit=7')).items;
    // Ids are per tenant (each starts at 1), so the rows themselves say whose an event is.
    const rowsOf = async (tenantId: string) =>
      (await t.database.db.query<{ seq: number; target: string }>('SELECT seq, target FROM audit_events WHERE tenant_id = $1 ORDER BY seq', [tenantId])).rows.map(
        (row) => [String(row.seq), row.target],
      );
    const foreign = await rowsOf(other.tenantId);
    expect(foreign.length).toBeGreaterThan(0);
    expect(acmeEvents.map((event) => [event.id, event.target])).toEqual(await rowsOf(acme.tenantId));
    expect(acmeEvents.map((event) => event.target)).not.toContain(`ticket:${theirs.id}`);
    expect((await list(`target=ticket:${theirs.id}`)).json()).toEqual([]);
    expect((await list(`target=ticket:${theirs.id}`, otherToken)).json()).toHaveLength(1);
    const theirEvents = (await walk<AuditEvent>(t, otherToken, '/operatorapi/audit-events?limit=1000')).items;
    expect(theirEvents.map((event) => event.target)).not.toContain('secured_object:quiet-door');
    expect(theirEvents.map((event) => [event.id, event.target])).toEqual(foreign);
  });

  it('records the request id the server made, never a client-chosen X-Request-Id (in the event, the problem body, the header)', async () => {
    const forged = 'attacker-chosen';
    const created = await registerLock(t, token, { id: 'forged-door', channels: ['btlespp'], localName: 'F', uuid: LOCK_UUID }, { 'x-request-id': forged });
    expect(created.statusCode, created.body).toBe(201);
    const serverId = String(created.headers['x-request-id']);
    expect(serverId).toMatch(UUID_PATTERN);
    expect(await auditEvents(t, { requestId: forged })).toEqual([]);
    expect(await auditEvents(t, { target: 'secured_object:forged-door' })).toEqual([
      expect.objectContaining({ action: 'secured_object.created', request_id: serverId }),
    ]);
    const listed = (await list('target=secured_object:forged-door')).json() as AuditEvent[];
    expect(listed.map((event) => event.requestId)).toEqual([serverId]);

    const refused = await registerLock(t, token, { id: 'forged-door', channels: ['btlespp'], localName: 'F', uuid: LOCK_UUID }, { 'x-request-id': forged });
    const problem = expectProblem(refused, 409);
    expect(problem.requestId).toMatch(UUID_PATTERN);
    expect(problem.requestId).not.toBe(forged);
    expect(problem.requestId).not.toBe(serverId);
  });

  it("numbers each tenant's events 1, 2, 3, ... with no gap while tenants interleave; cursors walk them all once", async () => {
    const [north, south] = [await createTenant(t.app, 'north'), await createTenant(t.app, 'south')];
    const [northToken, southToken] = [await clientToken(t.app, north), await clientToken(t.app, south)];
    // Interleaved, and concurrent within each round: each tenant's numbers must still run without a gap.
    for (let round = 0; round < 4; round++) {
      await Promise.all([
        lock(t, northToken, `n-${round}`),
        lock(t, southToken, `s-${round}`),
        device(t, northToken, `n-phone-${round}`),
      ]);
    }
    await device(t, southToken, 's-phone');
    await ticket(t, southToken, 's-0', 's-phone');
    await call(t, southToken, { method: 'DELETE', url: '/operatorapi/securedobjects/s-0' });
    for (const [fixture, auth] of [[north, northToken], [south, southToken]] as const) {
      const { rows } = await t.database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM audit_events WHERE tenant_id = $1', [fixture.tenantId]);
      const expected = Array.from({ length: rows[0]!.n }, (_, index) => String(index + 1));
      expect(expected.length).toBeGreaterThan(8);
      const walked = await walk<AuditEvent>(t, auth, '/operatorapi/audit-events?limit=3');
      expect(walked.items.map((event) => event.id)).toEqual(expected);
      expect((await list('limit=1000', auth)).json().map((event: AuditEvent) => event.id)).toEqual(expected);
      // Filtered pages keep the tenant's numbers and their order.
      const locks = await walk<AuditEvent>(t, auth, '/operatorapi/audit-events?limit=1&action=secured_object.created');
      expect(locks.items.map((event) => Number(event.id))).toEqual([...locks.items.map((event) => Number(event.id))].sort((a, b) => a - b));
      expect(locks.items).toHaveLength(4);
    }
    // The counter agrees with the events: the next change gets the next number.
    await lock(t, northToken, 'n-last');
    const last = (await list('target=secured_object:n-last', northToken)).json() as AuditEvent[];
    const { rows } = await t.database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM audit_events WHERE tenant_id = $1', [north.tenantId]);
    expect(last.map((event) => event.id)).toEqual([String(rows[0]!.n)]);
  });

  it('needs a token (401) and audit:read (403)', async () => {
    const limited = await clientToken(t.app, await createClient(t.app, acme, ['tokens:read', 'devices:read', 'clients:manage']));
    await expectAuthChecks(t, limited, [{ method: 'GET', url: '/operatorapi/audit-events', scope: 'audit:read' }]);
    const auditor = await clientToken(t.app, await createClient(t.app, acme, ['audit:read']));
    expect((await list('limit=1', auditor)).statusCode).toBe(200);
  });
});
