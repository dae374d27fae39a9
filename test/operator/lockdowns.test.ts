// POST/GET /operatorapi/lockdowns (docs/api-reference.md 15): the scope, the lock group of the tenant only, schema
// rejections that write nothing, the locks a lockdown reaches, its events, and override tickets (lockdown:manage only).
import { AsyncLocalStorage } from 'node:async_hooks';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { expectNothingChanged } from '../helpers/database-state.js';
import { clientToken, createClient } from '../helpers/oauth.js';
import { auditEvents, call, expectAuthChecks, expectProblem, fieldsOf, issueTicket, ticketBody, walk } from '../helpers/operator.js';
import { twoTenants, type TwoTenants } from '../helpers/tenants.js';

describe('/operatorapi/lockdowns', () => {
  let t: TestApp;
  let tenants: TwoTenants;
  /** A client made for lockdowns: `tenant create`'s management client does not hold the scope. */
  let manager: string;
  let acmeGroup: string;
  let otherGroup: string;

  beforeAll(async () => {
    t = await buildTestApp();
    tenants = await twoTenants(t, { acme: { locks: ['hall', 'lab', 'gym'], devices: ['phone'] }, other: { locks: ['hall'] } });
    manager = await clientToken(t.app, await createClient(t.app, tenants.acme, ['lockdown:manage', 'tokens:create', 'tokens:read']));
    const cli = (tenantId: string) => ({ tenantId, actor: 'cli', requestId: null });
    acmeGroup = (await t.app.services.lockGroups.create(cli(tenants.acme.tenantId), 'science wing', ['lab', 'gym'])).id;
    otherGroup = (await t.app.services.lockGroups.create(cli(tenants.other.tenantId), 'their wing', ['hall'])).id;
  });

  afterAll(async () => {
    await t.close();
  });

  const start = (token: string, payload: object) => call(t, token, { method: 'POST', url: '/operatorapi/lockdowns', payload });

  it('starts a lockdown of the tenant: 201, Location, every lock of the tenant reached by one change number, audited as lockdown.started', async () => {
    const response = await start(manager, { scope: 'tenant', mode: 'lockdown', reason: 'drill' });
    expect(response.statusCode, response.body).toBe(201);
    const body = response.json();
    expect(body).toEqual({
      id: expect.any(String),
      scope: 'tenant',
      mode: 'lockdown',
      reason: 'drill',
      creationTime: expect.any(Number),
      serial: expect.any(Number),
      lockCount: 3,
      locksReached: 0,
      locksNotReached: 3,
    });
    expect(response.headers.location).toBe(`/operatorapi/lockdowns/${body.id}`);
    const { rows } = await t.database.db.query<{ secured_object_id: string; mode: string; change_seq: number }>(
      'SELECT secured_object_id, mode, change_seq FROM lockdown_locks WHERE lockdown_id = $1 ORDER BY secured_object_id',
      [body.id],
    );
    expect(rows.map((row) => [row.secured_object_id, row.mode, Number(row.change_seq)])).toEqual([
      ['gym', 'lockdown', body.serial],
      ['hall', 'lockdown', body.serial],
      ['lab', 'lockdown', body.serial],
    ]);
    const events = await auditEvents(t, { target: `lockdown:${body.id}` });
    expect(events.map((event) => [event.tenant_id, event.action])).toEqual([[tenants.acme.tenantId, 'lockdown.started']]);
    // The other tenant's lock of the same id is not touched.
    expect((await t.database.db.query('SELECT 1 FROM lockdown_locks WHERE tenant_id = $1', [tenants.other.tenantId])).rows).toEqual([]);
    expect((await call(t, manager, { method: 'GET', url: `/operatorapi/lockdowns/${body.id}` })).json()).toEqual(body);
  });

  it('ends it for a lock group: only its members get the normal state, with a higher serial, as lockdown.ended', async () => {
    const response = await start(manager, { scope: { lockGroupId: acmeGroup }, mode: 'normal', reason: 'all clear in the science wing' });
    expect(response.statusCode, response.body).toBe(201);
    const body = response.json();
    expect(body).toMatchObject({ scope: { lockGroupId: acmeGroup }, mode: 'normal', lockCount: 2, locksReached: 0, locksNotReached: 2 });
    // The answer made from what the transaction wrote is what a read of it gives.
    expect((await call(t, manager, { method: 'GET', url: `/operatorapi/lockdowns/${body.id}` })).json()).toEqual(body);
    const secured = async (id: string) => (await call(t, tenants.token, { method: 'GET', url: `/operatorapi/securedobjects/${id}` })).json();
    expect(await secured('lab')).toMatchObject({ lockMode: 'normal', lockdownApplied: false });
    expect(await secured('hall')).toMatchObject({ lockMode: 'lockdown', lockdownApplied: false });
    expect(await secured('hall')).not.toHaveProperty('lockdownApplied', true);
    expect((await auditEvents(t, { target: `lockdown:${body.id}` })).map((event) => event.action)).toEqual(['lockdown.ended']);
    const { items } = await walk<{ id: string; mode: string; serial: number }>(t, manager, '/operatorapi/lockdowns?limit=1');
    expect(items.map((item) => item.mode)).toEqual(['lockdown', 'normal']);
    expect(items[1]!.serial).toBeGreaterThan(items[0]!.serial);
  });

  it('a lock group of another tenant, or none, is 404 and writes nothing', async () => {
    await expectNothingChanged(t, async () => {
      for (const lockGroupId of [otherGroup, '00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
        const response = await start(manager, { scope: { lockGroupId }, mode: 'lockdown', reason: 'x' });
        expectProblem(response, 404);
      }
    });
  });

  it('refuses malformed bodies with 400 naming the field, writing nothing', async () => {
    await expectNothingChanged(t, async () => {
      for (const [payload, field] of [
        [{ scope: 'tenant', mode: 'lockdown' }, 'reason'],
        [{ scope: 'tenant', mode: 'closed', reason: 'x' }, 'mode'],
        [{ scope: 'world', mode: 'lockdown', reason: 'x' }, 'scope'],
        [{ scope: { lockGroupId: acmeGroup, extra: 1 }, mode: 'lockdown', reason: 'x' }, 'scope'],
        [{ scope: 'tenant', mode: 'lockdown', reason: '' }, 'reason'],
        [{ scope: 'tenant', mode: 'lockdown', reason: 'x', until: 5 }, 'until'],
      ] as const) {
        const response = await start(manager, payload);
        expectProblem(response, 400);
        expect(fieldsOf(response).join(' '), JSON.stringify(payload)).toContain(field);
      }
    });
  });

  it('needs a token (401) and lockdown:manage (403), which tenant create does not give', async () => {
    await expectAuthChecks(t, tenants.token, [
      { method: 'POST', url: '/operatorapi/lockdowns', payload: { scope: 'tenant', mode: 'lockdown', reason: 'x' }, scope: 'lockdown:manage' },
      { method: 'GET', url: '/operatorapi/lockdowns', scope: 'lockdown:manage' },
      { method: 'GET', url: '/operatorapi/lockdowns/00000000-0000-4000-8000-000000000000', scope: 'lockdown:manage' },
    ]);
  });

  it('another tenant\'s lockdown is 404', async () => {
    const otherManager = await clientToken(t.app, await createClient(t.app, tenants.other, ['lockdown:manage']));
    const theirs = (await start(otherManager, { scope: 'tenant', mode: 'lockdown', reason: 'theirs' })).json();
    expectProblem(await call(t, manager, { method: 'GET', url: `/operatorapi/lockdowns/${theirs.id}` }), 404);
    const { items } = await walk<{ id: string }>(t, manager, '/operatorapi/lockdowns');
    expect(items.map((item) => item.id)).not.toContain(theirs.id);
  });

  it('reads its answer inside its transaction: its commit wakes the held syncs, and nothing after it waits for the pool', async () => {
    // docs/lock-sync.md: held syncs woken by the commit take connections for their looks; an answer read after the
    // commit would queue behind them, and a lockdown that was made could answer 503.
    // Only what the lockdown's own calls ask counts: the app's background workers poll the pool meanwhile.
    const db = t.database.db;
    const calls: string[] = [];
    const lockdown = new AsyncLocalStorage<true>();
    const pooled = db.query.bind(db);
    const query = vi.spyOn(db, 'query').mockImplementation(async (text, params) => {
      if (!lockdown.getStore()) return pooled(text, params);
      calls.push('query');
      throw new Error('the lockdown asked the pool outside its transaction');
    });
    const transaction = db.transaction.bind(db);
    const spied = vi.spyOn(db, 'transaction').mockImplementation(async (work) => {
      if (lockdown.getStore()) calls.push('transaction');
      return transaction(work);
    });
    try {
      const made = await lockdown.run(true, () =>
        t.app.services.lockdowns.create(
          { tenantId: tenants.acme.tenantId, actor: 'cli', requestId: null },
          { scope: 'tenant', mode: 'lockdown', reason: 'read in its transaction' },
        ),
      );
      expect(calls).toEqual(['transaction']);
      expect(made).toMatchObject({ scope: 'tenant', mode: 'lockdown', reason: 'read in its transaction', lockCount: 3, locksNotReached: 3 });
    } finally {
      query.mockRestore();
      spied.mockRestore();
    }
    const { items } = await walk<{ id: string }>(t, manager, '/operatorapi/lockdowns');
    expect(items).toContainEqual(expect.objectContaining({ reason: 'read in its transaction', lockCount: 3 }));
  });

  describe('override tickets', () => {
    it('only a caller holding lockdown:manage issues one (403 otherwise, nothing written); it shows on reads', async () => {
      await expectNothingChanged(t, async () => {
        const refused = await issueTicket(t, tenants.token, ticketBody(t, 'hall', 'phone', { override: true }));
        expectProblem(refused, 403);
        expect(refused.headers['www-authenticate']).toBe('Bearer realm="operatorapi", error="insufficient_scope", scope="lockdown:manage"');
      });
      const issued = await issueTicket(t, manager, ticketBody(t, 'hall', 'phone', { override: true }));
      expect(issued.statusCode, issued.body).toBe(201);
      expect(issued.json()).toMatchObject({ override: true });
      expect((await call(t, tenants.token, { method: 'GET', url: `/operatorapi/tickets/${issued.json().id}` })).json()).toMatchObject({ override: true });
      // An ordinary ticket shows no override, and `override: false` needs no extra scope.
      const ordinary = await issueTicket(t, tenants.token, ticketBody(t, 'hall', 'phone', { override: false }));
      expect(ordinary.statusCode, ordinary.body).toBe(201);
      expect(ordinary.json()).not.toHaveProperty('override');
      expect((await t.database.db.query<{ override: boolean }>('SELECT override FROM tickets WHERE id = $1', [ordinary.json().id])).rows[0]!.override).toBe(false);
    });

    it('override must be a boolean', async () => {
      const response = await issueTicket(t, manager, ticketBody(t, 'hall', 'phone', { override: 'yes' }));
      expectProblem(response, 400);
      expect(fieldsOf(response)).toContain('override');
    });
  });
});
