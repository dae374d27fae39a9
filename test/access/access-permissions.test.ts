// /v1/access-permissions (docs/api-reference.md 5, docs/service-overview.md section 1): one call makes every device × lock ticket, all or nothing;
// read, page, filter, list its tokens, delete (revoking them); 400/401/403/404/422, idempotency, audit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectNothingChanged } from '../helpers/database-state.js';
import {
  accessTenant,
  auditTrail,
  expectAccessAuthChecks,
  grant,
  live,
  lockGroup,
  memberUrl,
  pairsOf,
  permission,
  permissionBody,
  product,
  resident,
  ticketRows,
  userToken,
  v1,
  type AccessTenant,
  type PermissionBody,
} from '../helpers/access.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { HOUR, UUID_PATTERN, device, expectProblem, lock, problemFields, ticket, walk, type TicketBody } from '../helpers/operator.js';

/** A tenant with devices and locks registered, a resident holding the devices and a lock group holding the locks. */
async function household(t: TestApp, f: AccessTenant, devices: string[], locks: string[]) {
  for (const id of devices) await device(t, f.operator, id);
  for (const id of locks) await lock(t, f.operator, id);
  return { resident: await resident(t, f.token, 'Resident', devices), lockGroup: await lockGroup(t, f.token, 'Locks', locks) };
}

const SOME_UUID = '6f1e2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b';

describe('access permissions', () => {
  let t: TestApp;
  let acme: AccessTenant;
  let other: AccessTenant;

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4' });
    acme = await accessTenant(t, 'acme');
    other = await accessTenant(t, 'other');
  });
  afterAll(async () => {
    await t.close();
  });

  const get = (id: string, f = acme) => v1(t, f.token, { method: 'GET', url: `/v1/access-permissions/${id}` });
  const permissionCount = async (tenantId: string) =>
    (await t.database.db.query('SELECT 1 FROM access_permissions WHERE tenant_id = $1', [tenantId])).rows.length;

  it('docs/service-overview.md section 1: a resident with 2 devices and a lock group with 5 locks → one call makes exactly 10 tickets', async () => {
    const f = await accessTenant(t, 'seed');
    const devices = ['phone-alice', 'card-alice'];
    const locks = ['front-door', 'garage', 'cellar', 'bike-room', 'roof'];
    const groups = await household(t, f, devices, locks);
    const body = permissionBody(t, groups.resident.id, groups.lockGroup.id, { commands: ['open', 'clos', 'open'], channels: ['btlespp'] });

    const response = await grant(t, f.token, body, { 'x-request-id': 'grant-seed' });
    expect(response.statusCode, response.body).toBe(201);
    const created = response.json<PermissionBody>();
    expect(created).toStrictEqual({
      id: expect.stringMatching(UUID_PATTERN),
      residentId: groups.resident.id,
      lockGroupId: groups.lockGroup.id,
      beginDate: body.beginDate,
      endDate: body.endDate,
      commands: ['open', 'clos'],
      channels: ['btlespp'],
      creationDate: expect.any(Number),
      tokenCount: 10,
    });
    expect(response.headers.location).toBe(`/v1/access-permissions/${created.id}`);

    // The database: 10 rows, each (device, lock) pair once, each carrying the permission, with its terms.
    const rows = await ticketRows(t, f.tenant.tenantId);
    expect(rows).toHaveLength(10);
    expect(pairsOf(rows)).toEqual(product(devices, locks));
    for (const row of rows) {
      expect(row).toMatchObject({
        access_permission_id: created.id,
        revoked_at: null,
        begin_date: body.beginDate,
        end_date: body.endDate,
        commands: ['open', 'clos'],
        channels: ['btlespp'],
        created_at: created.creationDate,
      });
    }

    // The grant's events (docs/api-reference.md 10): its 10 tickets in one chunk, then the permission.
    expect(await auditTrail(t, f.tenant.tenantId, { requestId: String(response.headers['x-request-id']) })).toEqual([
      { action: 'ticket.created', target: `access_permission:${created.id}`, actor: f.actor, request_id: String(response.headers['x-request-id']), time: created.creationDate },
      { action: 'access_permission.created', target: `access_permission:${created.id}`, actor: f.actor, request_id: String(response.headers['x-request-id']), time: created.creationDate },
    ]);

    // Visible through the Operator API, as ordinary tickets that name their permission.
    const operatorView = await walk<TicketBody>(t, f.operator, '/operatorapi/tickets?limit=1000');
    expect(operatorView.items).toHaveLength(10);
    for (const item of operatorView.items) {
      expect(item).toStrictEqual({
        id: expect.stringMatching(UUID_PATTERN),
        securedObjectId: expect.any(String),
        mobileDeviceId: expect.any(String),
        beginDate: body.beginDate,
        endDate: body.endDate,
        creationDate: created.creationDate,
        commands: ['open', 'clos'],
        channels: ['btlespp'],
        status: 'VALID',
        accessPermissionId: created.id,
      });
    }
    expect(operatorView.items.map((item) => item.id).sort()).toEqual(rows.map((row) => row.id).sort());
    const one = await v1(t, f.operator, { method: 'GET', url: `/operatorapi/tickets/${rows[0]!.id}` });
    expect(one.json()).toMatchObject({ id: rows[0]!.id, accessPermissionId: created.id, status: 'VALID' });

    // GET /v1/access-permissions/{id}/tokens pages the same 10 with Link rel="next".
    const firstPage = await v1(t, f.token, { method: 'GET', url: `/v1/access-permissions/${created.id}/tokens?limit=4` });
    expect(firstPage.statusCode).toBe(200);
    expect(firstPage.headers.link).toMatch(
      new RegExp(`^</v1/access-permissions/${created.id}/tokens\\?limit=4&cursor=[A-Za-z0-9_-]+>; rel="next"$`),
    );
    const tokens = await walk<TicketBody>(t, f.token, `/v1/access-permissions/${created.id}/tokens?limit=4`);
    expect(tokens.pages.map((page) => page.length)).toEqual([4, 4, 2]);
    expect([...tokens.items].sort((a, b) => (a.id < b.id ? -1 : 1))).toStrictEqual(
      [...operatorView.items].sort((a, b) => (a.id < b.id ? -1 : 1)),
    );

    // GET one answers the creation body.
    const read = await get(created.id, f);
    expect(read.statusCode).toBe(200);
    expect(read.json()).toStrictEqual(created);
  });

  it('grants over empty groups: 201 with tokenCount 0 and no tickets', async () => {
    const f = await accessTenant(t);
    const empty = { resident: await resident(t, f.token, 'Nobody yet'), lockGroup: await lockGroup(t, f.token, 'No locks yet') };
    const created = await permission(t, f.token, empty.resident.id, empty.lockGroup.id);
    expect(created.tokenCount).toBe(0);
    expect(await ticketRows(t, f.tenant.tenantId)).toEqual([]);
    expect(await permissionCount(f.tenant.tenantId)).toBe(1);
  });

  it('refuses malformed bodies with 400 naming every bad field, creating nothing', async () => {
    const f = await accessTenant(t);
    const groups = await household(t, f, ['phone'], ['door']);
    const valid = permissionBody(t, groups.resident.id, groups.lockGroup.id);
    await expectNothingChanged(t, async () => {
      const bad = await grant(t, f.token, { residentId: 1, beginDate: 'soon', commands: 'open', channels: ['btlespp'], colour: 'red' });
      expect(problemFields(bad, 400)).toEqual(['beginDate', 'colour', 'commands', 'endDate', 'lockGroupId', 'residentId']);
      expect(bad.json().errors).toContainEqual({ field: 'colour', message: 'is not a known field' });
      expect(problemFields(await grant(t, f.token, { ...valid, beginDate: 1.5, endDate: -1 }), 400)).toEqual(['beginDate', 'endDate']);
      expect(problemFields(await grant(t, f.token, { ...valid, commands: [7], channels: 'btlespp' }), 400)).toEqual(['channels', 'commands[0]']);
      expect(problemFields(await grant(t, f.token, { ...valid, residentId: '', lockGroupId: 'x'.repeat(65) }), 400)).toEqual([
        'lockGroupId',
        'residentId',
      ]);
      expect(problemFields(await grant(t, f.token, { ...valid, endDate: 8640000000000001 }), 400)).toEqual(['endDate']);
      expect(problemFields(await grant(t, f.token, { ...valid, tokenCount: 10 }), 400)).toEqual(['tokenCount']);
    });
    expect(await permissionCount(f.tenant.tenantId)).toBe(0);
  });

  it("answers 422 for unknown residents and lock groups (another tenant's, missing, not a UUID), creating nothing", async () => {
    const f = await accessTenant(t);
    const mine = await household(t, f, ['my-phone'], ['my-door']);
    const theirs = await household(t, other, ['their-phone-422'], ['their-door-422']);
    await expectNothingChanged(t, async () => {
      const foreign = await grant(t, f.token, permissionBody(t, theirs.resident.id, theirs.lockGroup.id));
      expect(problemFields(foreign, 422)).toEqual(['lockGroupId', 'residentId']);
      expect(problemFields(await grant(t, f.token, permissionBody(t, mine.resident.id, theirs.lockGroup.id)), 422)).toEqual(['lockGroupId']);
      expect(problemFields(await grant(t, f.token, permissionBody(t, theirs.resident.id, mine.lockGroup.id)), 422)).toEqual(['residentId']);
      expect(problemFields(await grant(t, f.token, permissionBody(t, SOME_UUID, 'not-a-uuid')), 422)).toEqual(['lockGroupId', 'residentId']);
      // A lock group id given as the resident, and the other way round.
      expect(problemFields(await grant(t, f.token, permissionBody(t, mine.lockGroup.id, mine.resident.id)), 422)).toEqual([
        'lockGroupId',
        'residentId',
      ]);
    });
    expect(await ticketRows(t, f.tenant.tenantId)).toEqual([]);
    expect(await permissionCount(f.tenant.tenantId)).toBe(0);
  });

  it('answers 422 for impossible terms (dates, commands, channels, nfccard with its removal), naming each, creating nothing', async () => {
    const f = await accessTenant(t);
    const groups = await household(t, f, ['phone'], ['door']);
    const now = t.app.services.clock();
    const body = (overrides: object) => permissionBody(t, groups.resident.id, groups.lockGroup.id, overrides);
    await expectNothingChanged(t, async () => {
      expect(problemFields(await grant(t, f.token, body({ beginDate: now + HOUR, endDate: now + HOUR })), 422)).toEqual(['endDate']);
      expect(problemFields(await grant(t, f.token, body({ beginDate: now + 2 * HOUR, endDate: now + HOUR })), 422)).toEqual(['endDate']);
      const past = await grant(t, f.token, body({ beginDate: 0, endDate: now - 1 }));
      expect(problemFields(past, 422)).toEqual(['endDate']);
      expect(past.json().detail).toContain('past');
      expect(problemFields(await grant(t, f.token, body({ commands: [] })), 422)).toEqual(['commands']);
      expect(problemFields(await grant(t, f.token, body({ commands: ['open', 'fly'] })), 422)).toEqual(['commands[1]']);
      expect(problemFields(await grant(t, f.token, body({ channels: [] })), 422)).toEqual(['channels']);
      expect(problemFields(await grant(t, f.token, body({ channels: ['bluetooth'] })), 422)).toEqual(['channels[0]']);

      const nfc = await grant(t, f.token, body({ channels: ['btlespp', 'nfccard'] }));
      expect(problemFields(nfc, 422)).toEqual(['channels[1]']);
      const problem = nfc.json();
      expect(problem.errors[0].message).toContain('01.02.2018');
      expect(problem.errors[0].message).toContain('btlespp');
      // docs/api-reference.md 4.3: "the detail says so", not only errors[].
      expect(problem.detail).toContain('nfccard');
      expect(problem.detail).toContain('01.02.2018');

      const everything = await grant(t, f.token, body({ beginDate: 5, endDate: 4, commands: ['fly'], channels: ['nfccard'] }));
      expect(problemFields(everything, 422)).toEqual(['channels[0]', 'commands[0]', 'endDate']);
    });
    expect(await permissionCount(f.tenant.tenantId)).toBe(0);
    expect(await ticketRows(t, f.tenant.tenantId)).toEqual([]);
  });

  it('all or nothing: a failure after the tickets were inserted leaves no ticket, no permission and no audit event', async () => {
    const f = await accessTenant(t, 'atomic');
    const groups = await household(t, f, ['p1', 'p2'], ['l1', 'l2', 'l3']);
    // The audit event is the grant's last statement: make it fail for this tenant only, after the fan-out ran. A check
    // constraint (NOT VALID: the rows already there are not read), not a trigger, which Citus refuses on its tables.
    await t.database.db.query(
      `ALTER TABLE audit_events ADD CONSTRAINT refuse_grant_audit
         CHECK (tenant_id <> '${f.tenant.tenantId}' OR action <> 'access_permission.created') NOT VALID`,
    );
    try {
      await expectNothingChanged(t, async () => {
        const failed = await grant(t, f.token, permissionBody(t, groups.resident.id, groups.lockGroup.id));
        expectProblem(failed, 500);
      });
    } finally {
      await t.database.db.query('ALTER TABLE audit_events DROP CONSTRAINT refuse_grant_audit');
    }
    expect(await ticketRows(t, f.tenant.tenantId)).toEqual([]);
    expect(await permissionCount(f.tenant.tenantId)).toBe(0);

    // The same request now succeeds in full.
    expect((await permission(t, f.token, groups.resident.id, groups.lockGroup.id)).tokenCount).toBe(6);
    expect(await ticketRows(t, f.tenant.tenantId)).toHaveLength(6);
  });

  it('replays a grant with the same Idempotency-Key: the first response, and no second set of tickets', async () => {
    const f = await accessTenant(t);
    const groups = await household(t, f, ['p1', 'p2'], ['l1', 'l2']);
    const body = permissionBody(t, groups.resident.id, groups.lockGroup.id);
    const headers = { 'idempotency-key': 'grant-once' };
    const first = await grant(t, f.token, body, headers);
    expect(first.statusCode).toBe(201);
    expect(first.json().tokenCount).toBe(4);

    const again = await grant(t, f.token, body, headers);
    expect(again.statusCode).toBe(201);
    expect(again.json()).toStrictEqual(first.json());
    expect(again.headers.location).toBe(first.headers.location);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(await permissionCount(f.tenant.tenantId)).toBe(1);
    expect(await ticketRows(t, f.tenant.tenantId)).toHaveLength(4);
    expect((await auditTrail(t, f.tenant.tenantId, { targetPrefix: 'access_permission:' })).map((event) => event.action)).toEqual([
      'ticket.created',
      'access_permission.created',
    ]);

    const different = await grant(t, f.token, { ...body, commands: ['tokn'] }, headers);
    expect(problemFields(different, 422)).toEqual(['Idempotency-Key']);
    expect(await ticketRows(t, f.tenant.tenantId)).toHaveLength(4);

    // Without a key, the same body is a second permission with its own tickets.
    const second = await grant(t, f.token, body);
    expect(second.statusCode).toBe(201);
    expect(second.json().id).not.toBe(first.json().id);
    expect(await ticketRows(t, f.tenant.tenantId)).toHaveLength(8);
  });

  it('pages permissions oldest first, filtered by residentId and lockGroupId, with Link rel="next"', async () => {
    const f = await accessTenant(t);
    await device(t, f.operator, 'phone');
    await lock(t, f.operator, 'door');
    const residents = [await resident(t, f.token, 'R1', ['phone']), await resident(t, f.token, 'R2')];
    const groups = [await lockGroup(t, f.token, 'G1', ['door']), await lockGroup(t, f.token, 'G2')];
    const made: PermissionBody[] = [];
    for (const r of residents) for (const g of groups) made.push(await permission(t, f.token, r.id, g.id));
    await permission(t, other.token, (await resident(t, other.token, 'theirs')).id, (await lockGroup(t, other.token, 'theirs')).id);
    const byAge = (list: PermissionBody[]) => [...list].sort((a, b) => a.creationDate - b.creationDate || (a.id < b.id ? -1 : 1));

    const first = await v1(t, f.token, { method: 'GET', url: '/v1/access-permissions?limit=3' });
    expect(first.headers.link).toMatch(/^<\/v1\/access-permissions\?limit=3&cursor=[A-Za-z0-9_-]+>; rel="next"$/);
    const all = await walk<PermissionBody>(t, f.token, '/v1/access-permissions?limit=3');
    expect(all.pages.map((page) => page.length)).toEqual([3, 1]);
    expect(all.items).toStrictEqual(byAge(made));
    expect(all.items.map((item) => item.tokenCount)).toEqual(byAge(made).map((item) => item.tokenCount));
    expect(made.map((item) => item.tokenCount)).toEqual([1, 0, 0, 0]);

    const ofResident = await walk<PermissionBody>(t, f.token, `/v1/access-permissions?residentId=${residents[0]!.id}&limit=1`);
    expect(ofResident.pages.map((page) => page.length)).toEqual([1, 1]);
    expect(ofResident.items).toStrictEqual(byAge(made.filter((item) => item.residentId === residents[0]!.id)));
    const ofGroup = await walk<PermissionBody>(t, f.token, `/v1/access-permissions?lockGroupId=${groups[1]!.id}`);
    expect(ofGroup.items).toStrictEqual(byAge(made.filter((item) => item.lockGroupId === groups[1]!.id)));
    const both = await walk<PermissionBody>(t, f.token, `/v1/access-permissions?residentId=${residents[1]!.id}&lockGroupId=${groups[0]!.id}`);
    expect(both.items).toStrictEqual(made.filter((item) => item.residentId === residents[1]!.id && item.lockGroupId === groups[0]!.id));

    // A filter that matches nothing, or names another tenant's group, answers an empty page.
    for (const query of [`residentId=${SOME_UUID}`, 'residentId=not-a-uuid', `lockGroupId=${other.tenant.tenantId}`]) {
      const response = await v1(t, f.token, { method: 'GET', url: `/v1/access-permissions?${query}` });
      expect(response.statusCode, query).toBe(200);
      expect(response.json()).toEqual([]);
    }
    for (const query of ['limit=0', 'limit=1001', 'cursor=W10', 'status=VALID', 'residentId=']) {
      expect(problemFields(await v1(t, f.token, { method: 'GET', url: `/v1/access-permissions?${query}` }), 400), query).toEqual([
        query.split('=')[0],
      ]);
    }
  });

  it('deletes a permission: 204, its tickets REVOKED at one time, others untouched, GET → 404, one audit event', async () => {
    const f = await accessTenant(t);
    const groups = await household(t, f, ['p1', 'p2'], ['l1', 'l2']);
    const doomed = await permission(t, f.token, groups.resident.id, groups.lockGroup.id);
    const kept = await permission(t, f.token, groups.resident.id, groups.lockGroup.id, { commands: ['tokn'] });
    const direct = await ticket(t, f.operator, 'l1', 'p1');

    const removed = await v1(t, f.token, { method: 'DELETE', url: `/v1/access-permissions/${doomed.id}`, headers: { 'x-request-id': 'delete-grant' } });
    expect(removed.statusCode).toBe(204);
    expect(removed.body).toBe('');

    const rows = await ticketRows(t, f.tenant.tenantId, { accessPermissionId: doomed.id });
    expect(rows).toHaveLength(4);
    const revokedAt = rows[0]!.revoked_at;
    expect(revokedAt).toEqual(expect.any(Number));
    for (const row of rows) expect(row.revoked_at).toBe(revokedAt);
    expect(live(await ticketRows(t, f.tenant.tenantId, { accessPermissionId: kept.id }))).toHaveLength(4);
    expect((await v1(t, f.operator, { method: 'GET', url: `/operatorapi/tickets/${direct.id}` })).json().status).toBe('VALID');
    const operatorView = await walk<TicketBody>(t, f.operator, '/operatorapi/tickets?status=REVOKED');
    expect(operatorView.items.map((item) => item.id).sort()).toEqual(rows.map((row) => row.id).sort());
    for (const item of operatorView.items) expect(item).toMatchObject({ status: 'REVOKED', revocationDate: revokedAt, accessPermissionId: doomed.id });

    expectProblem(await get(doomed.id, f), 404);
    expectProblem(await v1(t, f.token, { method: 'GET', url: `/v1/access-permissions/${doomed.id}/tokens` }), 404);
    expect((await get(kept.id, f)).json()).toStrictEqual(kept);
    expect(await auditTrail(t, f.tenant.tenantId, { requestId: String(removed.headers['x-request-id']) })).toEqual([
      { action: 'ticket.revoked', target: `access_permission:${doomed.id}`, actor: f.actor, request_id: String(removed.headers['x-request-id']), time: revokedAt },
      { action: 'access_permission.deleted', target: `access_permission:${doomed.id}`, actor: f.actor, request_id: String(removed.headers['x-request-id']), time: revokedAt },
    ]);
    await expectNothingChanged(t, async () => {
      expectProblem(await v1(t, f.token, { method: 'DELETE', url: `/v1/access-permissions/${doomed.id}` }), 404);
    });
  });

  it('lists the tokens of a permission, revoked ones included, and tokenCount counts only the live ones', async () => {
    const f = await accessTenant(t);
    const groups = await household(t, f, ['p1', 'p2'], ['l1', 'l2', 'l3']);
    const created = await permission(t, f.token, groups.resident.id, groups.lockGroup.id);
    expect(created.tokenCount).toBe(6);
    expect((await v1(t, f.token, { method: 'DELETE', url: memberUrl('residents', groups.resident.id, 'p2') })).statusCode).toBe(200);

    expect((await get(created.id, f)).json()).toStrictEqual({ ...created, tokenCount: 3 });
    const tokens = await walk<TicketBody>(t, f.token, `/v1/access-permissions/${created.id}/tokens?limit=2`);
    expect(tokens.pages.map((page) => page.length)).toEqual([2, 2, 2]);
    const statusByDevice = tokens.items.map((item) => `${item.mobileDeviceId}:${item.status}`).sort();
    expect(statusByDevice).toEqual(['p1:VALID', 'p1:VALID', 'p1:VALID', 'p2:REVOKED', 'p2:REVOKED', 'p2:REVOKED']);
    for (const query of ['limit=0', 'cursor=W10', 'status=VALID']) {
      expect(problemFields(await v1(t, f.token, { method: 'GET', url: `/v1/access-permissions/${created.id}/tokens?${query}` }), 400)).toEqual([
        query.split('=')[0],
      ]);
    }
  });

  it("answers another tenant's permissions as missing (404) and leaves them and their tickets unchanged", async () => {
    const f = await accessTenant(t);
    const theirs = await household(t, other, ['their-phone-404'], ['their-door-404']);
    const theirPermission = await permission(t, other.token, theirs.resident.id, theirs.lockGroup.id);
    await expectNothingChanged(t, async () => {
      for (const id of [theirPermission.id, SOME_UUID, 'not-a-uuid']) {
        expectProblem(await get(id, f), 404);
        expectProblem(await v1(t, f.token, { method: 'GET', url: `/v1/access-permissions/${id}/tokens` }), 404);
        expectProblem(await v1(t, f.token, { method: 'DELETE', url: `/v1/access-permissions/${id}` }), 404);
      }
    });
    expect((await get(theirPermission.id, other)).json()).toStrictEqual(theirPermission);
    expect(live(await ticketRows(t, other.tenant.tenantId, { accessPermissionId: theirPermission.id }))).toHaveLength(1);
    expect((await walk(t, f.token, '/v1/access-permissions')).items).toEqual([]);
  });

  it('needs a token of the Access API with the declared scope on every route', async () => {
    const readOnly = await userToken(t, acme, 'access-permissions:read device-groups:write');
    const writeOnly = await userToken(t, acme, 'access-permissions:write device-groups:read');
    await expectAccessAuthChecks(t, { operator: acme.operator, wrongScope: readOnly }, [
      { method: 'POST', url: '/v1/access-permissions', payload: permissionBody(t, SOME_UUID, SOME_UUID), scope: 'access-permissions:write' },
      { method: 'DELETE', url: `/v1/access-permissions/${SOME_UUID}`, scope: 'access-permissions:write' },
    ]);
    await expectAccessAuthChecks(t, { operator: acme.operator, wrongScope: writeOnly }, [
      { method: 'GET', url: '/v1/access-permissions', scope: 'access-permissions:read' },
      { method: 'GET', url: `/v1/access-permissions/${SOME_UUID}`, scope: 'access-permissions:read' },
      { method: 'GET', url: `/v1/access-permissions/${SOME_UUID}/tokens`, scope: 'access-permissions:read' },
    ]);
  });
});

describe('access permissions over a channel a lock lacks (nfccard kept alive)', () => {
  let t: TestApp;
  let f: AccessTenant;

  beforeAll(async () => {
    // With the removed channel revived, nfccard is a known channel, so a btlespp-only lock can lack it.
    t = await buildTestApp({ BCRYPT_COST: '4', DEPRECATED_INTERFACES_ENABLED: 'nfccard-channel' });
    f = await accessTenant(t, 'nfc');
    await device(t, f.operator, 'phone');
    await device(t, f.operator, 'card');
    await lock(t, f.operator, 'both-1', ['btlespp', 'nfccard']);
    await lock(t, f.operator, 'both-2', ['btlespp', 'nfccard']);
    await lock(t, f.operator, 'ble-only', ['btlespp']);
  });
  afterAll(async () => {
    await t.close();
  });

  it('all or nothing: a grant whose lock group holds a lock lacking the channel is 422 and leaves no ticket and no permission', async () => {
    const r = await resident(t, f.token, 'Ann', ['phone', 'card']);
    const g = await lockGroup(t, f.token, 'Mixed', ['both-1', 'ble-only', 'both-2']);
    await expectNothingChanged(t, async () => {
      const refused = await grant(t, f.token, permissionBody(t, r.id, g.id, { channels: ['btlespp', 'nfccard'] }));
      expect(problemFields(refused, 422)).toEqual(['channels']);
      expect(refused.json().errors[0].message).toContain('ble-only');
      expect(refused.json().errors[0].message).not.toContain('both-1');
      expect(refused.json().detail).toContain('ble-only');
    });
    const { rows } = await t.database.db.query('SELECT 1 FROM access_permissions WHERE tenant_id = $1 AND lock_group_id = $2', [
      f.tenant.tenantId,
      g.id,
    ]);
    expect(rows).toHaveLength(0);
    expect(await ticketRows(t, f.tenant.tenantId)).toEqual([]);

    // The channel every lock supports is granted in full: 2 devices × 3 locks.
    const granted = await permission(t, f.token, r.id, g.id, { channels: ['btlespp'] });
    expect(granted.tokenCount).toBe(6);
    expect(pairsOf(await ticketRows(t, f.tenant.tenantId, { accessPermissionId: granted.id }))).toEqual(
      product(['phone', 'card'], ['both-1', 'ble-only', 'both-2']),
    );
  });

  it('a lock lacking a channel of the group\'s permissions cannot join it (422), and nothing changes', async () => {
    const r = await resident(t, f.token, 'Ben', ['phone']);
    const g = await lockGroup(t, f.token, 'NFC doors', ['both-1']);
    const nfc = await permission(t, f.token, r.id, g.id, { channels: ['nfccard'] });
    expect(nfc.tokenCount).toBe(1);
    await expectNothingChanged(t, async () => {
      const refused = await v1(t, f.token, { method: 'PUT', url: memberUrl('lock-groups', g.id, 'ble-only') });
      expect(expectProblem(refused, 422).detail).toContain('ble-only');
      expect(refused.json().detail).toContain(nfc.id);
    });
    expect((await v1(t, f.token, { method: 'GET', url: `/v1/lock-groups/${g.id}` })).json().securedObjectIds).toEqual(['both-1']);
    // A lock that supports it joins and gets its ticket.
    const joined = await v1(t, f.token, { method: 'PUT', url: memberUrl('lock-groups', g.id, 'both-2') });
    expect(joined.statusCode).toBe(200);
    expect(pairsOf(live(await ticketRows(t, f.tenant.tenantId, { accessPermissionId: nfc.id })))).toEqual(product(['phone'], ['both-1', 'both-2']));
  });
});
