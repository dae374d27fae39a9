// /operatorapi/securedobjects (docs/api-reference.md 4.1): register, read, page, remove (revoking tickets); scope, tenant, audit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { expectNothingChanged } from '../helpers/database-state.js';
import { clientToken, createClient, createTenant, type TenantFixture } from '../helpers/oauth.js';
import { twoTenants } from '../helpers/tenants.js';
import {
  LOCK_UUID,
  UUID_PATTERN,
  auditEvents,
  call,
  device,
  expectAuthChecks,
  expectProblem,
  fieldsOf,
  problemFields,
  lock,
  registerLock,
  ticket,
  walk,
} from '../helpers/operator.js';

describe('secured objects', () => {
  let t: TestApp;
  let acme: TenantFixture;
  let other: TenantFixture;
  let token: string;
  let otherToken: string;

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4' });
    ({ acme, other, token, otherToken } = await twoTenants(t));
  });
  afterAll(async () => {
    await t.close();
  });

  const get = (id: string, auth = token) => call(t, auth, { method: 'GET', url: `/operatorapi/securedobjects/${id}` });
  const remove = (id: string, auth = token) => call(t, auth, { method: 'DELETE', url: `/operatorapi/securedobjects/${id}` });

  async function row(tenantId: string, id: string) {
    const { rows } = await t.database.db.query<{ channels: string[]; local_name: string; uuid: string; created_at: number }>(
      'SELECT channels, local_name, uuid, created_at FROM secured_objects WHERE tenant_id = $1 AND id = $2',
      [tenantId, id],
    );
    return rows[0];
  }

  it('registers a lock under its id: 201, Location, {id, channels, urls, creationTime}, one row, one audit event', async () => {
    const response = await registerLock(
      t,
      token,
      { id: 'front-door', channels: ['btlespp'], localName: 'LOCK-0042', uuid: LOCK_UUID.toUpperCase() },
      { 'x-request-id': 'register-front-door' },
    );
    expect(response.statusCode).toBe(201);
    const body = response.json();
    expect(body).toStrictEqual({
      id: 'front-door',
      channels: ['btlespp'],
      urls: [`btlespp://LOCK-0042/${LOCK_UUID}`],
      creationTime: expect.any(Number),
      timeZone: 'UTC',
    });
    expect(Math.abs(body.creationTime - Date.now())).toBeLessThan(60_000);
    expect(response.headers.location).toBe('/operatorapi/securedobjects/front-door');
    // The server's request id, not the client's X-Request-Id.
    expect(response.headers['x-request-id']).toMatch(UUID_PATTERN);

    expect(await row(acme.tenantId, 'front-door')).toEqual({
      channels: ['btlespp'],
      local_name: 'LOCK-0042',
      uuid: LOCK_UUID,
      created_at: body.creationTime,
    });
    expect(await auditEvents(t, { target: 'secured_object:front-door' })).toEqual([
      {
        tenant_id: acme.tenantId,
        time: body.creationTime,
        actor: `client:${acme.clientId}`,
        action: 'secured_object.created',
        target: 'secured_object:front-door',
        request_id: String(response.headers['x-request-id']),
      },
    ]);

    const read = await get('front-door');
    expect(read.statusCode).toBe(200);
    // The single read adds the lock's telemetry (docs/api-reference.md 8.4): a lock never seen has nothing pending.
    expect(read.json()).toStrictEqual({ ...body, pendingRevocations: 0, pendingKeyRevocations: 0, clockDrift: false });
  });

  it('makes an id when none is given, and keeps one url per distinct channel', async () => {
    const response = await registerLock(t, token, { channels: ['btlespp', 'btlespp'], localName: 'side', uuid: LOCK_UUID });
    expect(response.statusCode).toBe(201);
    const body = response.json();
    expect(body.id).toMatch(UUID_PATTERN);
    expect(body).toStrictEqual({ id: body.id, channels: ['btlespp'], urls: [`btlespp://side/${LOCK_UUID}`], creationTime: expect.any(Number), timeZone: 'UTC' });
    expect(response.headers.location).toBe(`/operatorapi/securedobjects/${body.id}`);
    expect((await get(body.id)).json()).toStrictEqual({ ...body, pendingRevocations: 0, pendingKeyRevocations: 0, clockDrift: false });
    expect(await row(acme.tenantId, body.id)).toBeDefined();
  });

  it('answers 409 for an id in use and changes nothing; the same id is free in another tenant', async () => {
    await lock(t, token, 'taken');
    const before = await row(acme.tenantId, 'taken');
    await expectNothingChanged(t, async () => {
      const conflict = await registerLock(t, token, { id: 'taken', channels: ['btlespp'], localName: 'other-name', uuid: LOCK_UUID });
      expect(expectProblem(conflict, 409).detail).toContain('taken');
    });
    expect(await row(acme.tenantId, 'taken')).toEqual(before);

    const elsewhere = await registerLock(t, otherToken, { id: 'taken', channels: ['btlespp'], localName: 'theirs', uuid: LOCK_UUID });
    expect(elsewhere.statusCode).toBe(201);
    expect(await row(acme.tenantId, 'taken')).toEqual(before);
    expect((await row(other.tenantId, 'taken'))?.local_name).toBe('theirs');
  });

  it('refuses channel nfccard (removed on 01.02.2018), unknown and empty channels with 422, changing nothing', async () => {
    await expectNothingChanged(t, async () => {
      const nfc = await registerLock(t, token, { id: 'nfc-lock', channels: ['btlespp', 'nfccard'], localName: 'n', uuid: LOCK_UUID });
      const problem = expectProblem(nfc, 422);
      expect(problem.detail).toContain('nfccard');
      expect(problem.detail).toContain('removed on 01.02.2018');
      expect(problem.errors).toEqual([{ field: 'channels[1]', message: expect.stringContaining('removed on 01.02.2018') }]);

      const unknown = await registerLock(t, token, { id: 'foo-lock', channels: ['foo'], localName: 'n', uuid: LOCK_UUID });
      expect(expectProblem(unknown, 422).errors).toEqual([{ field: 'channels[0]', message: expect.stringContaining('unknown channel foo') }]);

      const empty = await registerLock(t, token, { id: 'empty-lock', channels: [], localName: 'n', uuid: LOCK_UUID });
      expect(problemFields(empty, 422)).toEqual(['channels']);
    });
    for (const id of ['nfc-lock', 'foo-lock', 'empty-lock']) expect((await get(id)).statusCode).toBe(404);
  });

  it('refuses malformed bodies with 400 naming every bad field, changing nothing', async () => {
    await expectNothingChanged(t, async () => {
      const bad = await registerLock(t, token, { id: 'bad id!', channels: 'btlespp', localName: 'a/b', uuid: 'not-a-uuid', colour: 'red' });
      expectProblem(bad, 400);
      expect(fieldsOf(bad)).toEqual(['channels', 'colour', 'id', 'localName', 'uuid']);
      expect(bad.json().errors).toContainEqual({ field: 'colour', message: 'is not a known field' });

      const missing = await registerLock(t, token, {});
      expect(problemFields(missing, 400)).toEqual(['channels', 'localName', 'uuid']);

      const types = await registerLock(t, token, { id: 7, channels: [1], localName: 5, uuid: true });
      expect(problemFields(types, 400)).toEqual(['channels[0]', 'id', 'localName', 'uuid']);

      const nulls = await registerLock(t, token, { id: null, channels: ['btlespp'], localName: 'x', uuid: LOCK_UUID });
      expect(problemFields(nulls, 400)).toEqual(['id']);

      const tooLong = await registerLock(t, token, { id: 'x'.repeat(129), channels: ['btlespp'], localName: 'y'.repeat(65), uuid: LOCK_UUID });
      expect(problemFields(tooLong, 400)).toEqual(['id', 'localName']);

      const notJson = await t.app.inject({
        method: 'POST',
        url: '/operatorapi/securedobjects',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'text/plain' },
        payload: 'id=x',
      });
      expectProblem(notJson, 415);
    });
  });

  it('refuses ids a URL cannot carry as a path segment (dot segments), changing nothing', async () => {
    await expectNothingChanged(t, async () => {
      for (const id of ['.', '..']) {
        const response = await registerLock(t, token, { id, channels: ['btlespp'], localName: 'dots', uuid: LOCK_UUID });
        expect(problemFields(response, 400)).toEqual(['id']);
      }
    });
    // Dots inside an id are fine.
    expect((await registerLock(t, token, { id: '...x', channels: ['btlespp'], localName: 'dots', uuid: LOCK_UUID })).statusCode).toBe(201);
  });

  it('pages the tenant\'s locks oldest first with Link rel="next"; bad limits and cursors are 400', async () => {
    const tenant = await createTenant(t.app, 'paging');
    const pageToken = await clientToken(t.app, tenant);
    const ids = ['p1', 'p2', 'p3', 'p4', 'p5'];
    for (const id of ids) await lock(t, pageToken, id);

    const first = await call(t, pageToken, { method: 'GET', url: '/operatorapi/securedobjects?limit=2' });
    expect(first.statusCode).toBe(200);
    expect(first.headers.link).toMatch(/^<\/operatorapi\/securedobjects\?limit=2&cursor=[A-Za-z0-9_-]+>; rel="next"$/);
    expect(first.json()[0]).toStrictEqual({ id: 'p1', channels: ['btlespp'], urls: [`btlespp://LOCK-p1/${LOCK_UUID}`], creationTime: expect.any(Number), timeZone: 'UTC' });

    const { pages, items } = await walk(t, pageToken, '/operatorapi/securedobjects?limit=2');
    expect(pages.map((page) => page.length)).toEqual([2, 2, 1]);
    expect(items.map((item) => item.id)).toEqual(ids);

    const all = await call(t, pageToken, { method: 'GET', url: '/operatorapi/securedobjects' });
    expect(all.json().map((item: { id: string }) => item.id)).toEqual(ids);
    expect(all.headers.link).toBeUndefined();

    const foreign = await walk(t, otherToken, '/operatorapi/securedobjects?limit=1000');
    expect(foreign.items.map((item) => item.id)).not.toContain('p1');

    for (const query of ['limit=0', 'limit=1001', 'limit=two', 'cursor=garbage', 'cursor=', 'colour=red']) {
      const response = await call(t, pageToken, { method: 'GET', url: `/operatorapi/securedobjects?${query}` });
      expectProblem(response, 400);
      expect(fieldsOf(response)).toEqual([query.split('=')[0]]);
    }
  });

  it('searches the locks by a text in their id or local name, ignoring case, literally, page by page, in the tenant only', async () => {
    const tenant = await createTenant(t.app, 'searching');
    const searchToken = await clientToken(t.app, tenant);
    const register = async (id: string, localName: string) =>
      expect((await registerLock(t, searchToken, { id, channels: ['btlespp'], localName, uuid: LOCK_UUID })).statusCode).toBe(201);
    await register('front-door', 'LOCK-A');
    await register('back-door', 'LOCK-B');
    await register('Front_Gate', 'GATE-1');
    await register('cellar', 'FRONTLINE-7');
    await register('attic', 'ROOF%1');
    // The other tenant has a lock whose id matches too: never found here.
    await lock(t, otherToken, 'front-other');
    const search = async (text: string) =>
      (await walk(t, searchToken, `/operatorapi/securedobjects?search=${encodeURIComponent(text)}&limit=1000`)).items.map((item) => item.id);

    // The id or the local name, ignoring case, oldest first.
    expect(await search('front')).toEqual(['front-door', 'Front_Gate', 'cellar']);
    expect(await search('DOOR')).toEqual(['front-door', 'back-door']);
    expect(await search('gate-1')).toEqual(['Front_Gate']);
    // Literal: `_` and `%` are no wildcards.
    expect(await search('t_g')).toEqual(['Front_Gate']);
    expect(await search('t_')).toEqual(['Front_Gate']);
    expect(await search('%')).toEqual(['attic']);
    expect(await search('nothing like it')).toEqual([]);

    // Paged: the next link keeps the search.
    const first = await call(t, searchToken, { method: 'GET', url: '/operatorapi/securedobjects?search=front&limit=2' });
    expect(first.json().map((item: { id: string }) => item.id)).toEqual(['front-door', 'Front_Gate']);
    expect(first.headers.link).toMatch(/^<\/operatorapi\/securedobjects\?search=front&limit=2&cursor=[A-Za-z0-9_-]+>; rel="next"$/);
    const { pages } = await walk(t, searchToken, '/operatorapi/securedobjects?search=front&limit=2');
    expect(pages.map((page) => page.map((item) => item.id))).toEqual([['front-door', 'Front_Gate'], ['cellar']]);

    // An empty text, one too long, or two of them: 400 naming the field, as any bad filter.
    for (const query of ['search=', `search=${'x'.repeat(129)}`, 'search=a&search=b']) {
      const response = await call(t, searchToken, { method: 'GET', url: `/operatorapi/securedobjects?${query}` });
      expectProblem(response, 400);
      expect(fieldsOf(response)).toEqual(['search']);
    }
  });

  it("answers another tenant's lock as missing (404) and leaves it and its tickets unchanged", async () => {
    await lock(t, otherToken, 'their-door');
    await device(t, otherToken, 'their-phone');
    const theirTicket = await ticket(t, otherToken, 'their-door', 'their-phone');
    await expectNothingChanged(t, async () => {
      expect(expectProblem(await get('their-door'), 404).type).toContain('not-found');
      expectProblem(await remove('their-door'), 404);
      expectProblem(await get('no-such-lock'), 404);
      expectProblem(await remove('no-such-lock'), 404);
    });
    expect((await get('their-door', otherToken)).statusCode).toBe(200);
    const theirs = await call(t, otherToken, { method: 'GET', url: `/operatorapi/tickets/${theirTicket.id}` });
    expect(theirs.json().status).toBe('VALID');
  });

  it('removes a lock: 204, every ticket for it becomes REVOKED at once, with one audit event per change', async () => {
    await lock(t, token, 'doomed');
    await lock(t, token, 'survivor');
    await device(t, token, 'phone-a');
    await device(t, token, 'phone-b');
    const first = await ticket(t, token, 'doomed', 'phone-a');
    const second = await ticket(t, token, 'doomed', 'phone-b', { commands: ['open', 'clos'] });
    const earlier = await ticket(t, token, 'doomed', 'phone-a');
    const earlierRevoked = (await call(t, token, { method: 'DELETE', url: `/operatorapi/tickets/${earlier.id}` })).json();
    const unrelated = await ticket(t, token, 'survivor', 'phone-a');

    const removed = await call(t, token, { method: 'DELETE', url: '/operatorapi/securedobjects/doomed', headers: { 'x-request-id': 'remove-doomed' } });
    expect(removed.statusCode).toBe(204);
    expect(removed.body).toBe('');
    expect(await row(acme.tenantId, 'doomed')).toBeUndefined();
    expectProblem(await get('doomed'), 404);

    const { rows } = await t.database.db.query<{ id: string; revoked_at: number | null }>(
      'SELECT id, revoked_at FROM tickets WHERE tenant_id = $1 AND id = ANY($2::uuid[])',
      [acme.tenantId, [first.id, second.id, earlier.id, unrelated.id]],
    );
    const revokedAt = Object.fromEntries(rows.map((r) => [r.id, r.revoked_at]));
    expect(revokedAt[first.id]).toEqual(expect.any(Number));
    expect(revokedAt[second.id]).toBe(revokedAt[first.id]);
    expect(revokedAt[earlier.id]).toBe(earlierRevoked.revocationDate);
    expect(revokedAt[unrelated.id]).toBeNull();

    for (const id of [first.id, second.id]) {
      const read = await call(t, token, { method: 'GET', url: `/operatorapi/tickets/${id}` });
      expect(read.json()).toMatchObject({ id, status: 'REVOKED', revocationDate: revokedAt[first.id] });
    }
    expect((await call(t, token, { method: 'GET', url: `/operatorapi/tickets/${unrelated.id}` })).json().status).toBe('VALID');

    const events = await auditEvents(t, { requestId: String(removed.headers['x-request-id']) });
    expect(events.map((event) => [event.action, event.target]).sort()).toEqual(
      [
        ['secured_object.deleted', 'secured_object:doomed'],
        // Its tickets' revocations in one chunk (docs/api-reference.md 10), under the removed row.
        ['ticket.revoked', 'secured_object:doomed'],
      ].sort(),
    );
    const { rows: chunk } = await t.database.db.query<{ ids: string[] }>(
      `SELECT data -> 'ticketIds' AS ids FROM audit_events WHERE request_id = $1 AND action = 'ticket.revoked'`,
      [String(removed.headers['x-request-id'])],
    );
    expect(chunk[0]!.ids.sort()).toEqual([first.id, second.id].sort());
    for (const event of events) expect(event).toMatchObject({ tenant_id: acme.tenantId, actor: `client:${acme.clientId}`, time: revokedAt[first.id] });

    await expectNothingChanged(t, async () => {
      expectProblem(await remove('doomed'), 404);
    });
  });

  it('removes the lock and revokes its tickets in one transaction: a failed revocation keeps the lock', async () => {
    await lock(t, token, 'sturdy');
    await device(t, token, 'phone-s');
    const held = await ticket(t, token, 'sturdy', 'phone-s');
    // The revocation fails on a check that refuses this lock's revoked tickets: a constraint, not a trigger, so the
    // same failure happens on PostgreSQL, PGlite and a Citus cluster (which refuses triggers on distributed tables).
    // NOT VALID: only the rows written from now on are checked.
    await t.database.db.query(
      `ALTER TABLE tickets ADD CONSTRAINT refused_revocation CHECK (secured_object_id <> 'sturdy' OR revoked_at IS NULL) NOT VALID`,
    );
    try {
      await expectNothingChanged(t, async () => {
        const failed = await remove('sturdy');
        expect(expectProblem(failed, 500).detail).not.toContain('refused');
      });
    } finally {
      await t.database.db.query('ALTER TABLE tickets DROP CONSTRAINT refused_revocation');
    }
    expect(await row(acme.tenantId, 'sturdy')).toBeDefined();
    expect((await call(t, token, { method: 'GET', url: `/operatorapi/tickets/${held.id}` })).json().status).toBe('VALID');
    expect(await auditEvents(t, { target: 'secured_object:sturdy' })).toHaveLength(1);
  });

  it('needs a token (401) and devices:read or devices:write (403)', async () => {
    const limited = await clientToken(t.app, await createClient(t.app, acme, ['tokens:read', 'tokens:create', 'audit:read']));
    await expectAuthChecks(t, limited, [
      { method: 'POST', url: '/operatorapi/securedobjects', payload: { id: 'x', channels: ['btlespp'], localName: 'x', uuid: LOCK_UUID }, scope: 'devices:write' },
      { method: 'GET', url: '/operatorapi/securedobjects', scope: 'devices:read' },
      { method: 'GET', url: '/operatorapi/securedobjects/front-door', scope: 'devices:read' },
      { method: 'DELETE', url: '/operatorapi/securedobjects/front-door', scope: 'devices:write' },
    ]);
    // devices:read does not let a client write.
    const reader = await clientToken(t.app, await createClient(t.app, acme, ['devices:read']));
    expect((await get('front-door', reader)).statusCode).toBe(200);
    await expectNothingChanged(t, async () => {
      expectProblem(await remove('front-door', reader), 403);
    });
  });
});
