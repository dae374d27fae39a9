// /operatorapi/tickets (docs/api-reference.md 4.3): issue, read, page with filters, revoke; derived status; 400/422 cases.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { expectNothingChanged } from '../helpers/database-state.js';
import { clientToken, createClient, createTenant, type TenantFixture } from '../helpers/oauth.js';
import { twoTenants } from '../helpers/tenants.js';
import {
  HOUR,
  UUID_PATTERN,
  auditEvents,
  call,
  device,
  expectAuthChecks,
  expectProblem,
  issueTicket,
  lock,
  nextLink,
  problemFields,
  ticket,
  ticketBody,
  walk,
  type TicketBody,
} from '../helpers/operator.js';

const MAX_TIME = 8_640_000_000_000_000;

describe('tickets', () => {
  let t: TestApp;
  let acme: TenantFixture;
  let token: string;
  let otherToken: string;
  /** Added to the real time: tests move it forward to let tickets expire. */
  let offset = 0;
  /** When set, the clock stands still at this time. */
  let frozen: number | null = null;

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4' }, { clock: () => frozen ?? Date.now() + offset });
    ({ acme, token, otherToken } = await twoTenants(t, {
      acme: { locks: ['front-door', 'back-door'], devices: ['phone-1', 'phone-2'] },
      other: { locks: ['their-door'], devices: ['their-phone'] },
    }));
  });
  afterAll(async () => {
    await t.close();
  });

  const now = () => t.app.services.clock();
  const get = (id: string, auth = token) => call(t, auth, { method: 'GET', url: `/operatorapi/tickets/${id}` });
  const revoke = (id: string, auth = token, headers: Record<string, string> = {}) =>
    call(t, auth, { method: 'DELETE', url: `/operatorapi/tickets/${id}`, headers });
  const list = (query: string, auth = token) => call(t, auth, { method: 'GET', url: `/operatorapi/tickets?${query}` });

  async function row(id: string) {
    const { rows } = await t.database.db.query<Record<string, unknown>>(
      `SELECT tenant_id, secured_object_id, mobile_device_id, begin_date, end_date, created_at, commands, channels, revoked_at, downloaded_at
         FROM tickets WHERE id = $1`,
      [id],
    );
    return rows[0];
  }

  it('issues a ticket: 201, Location, the token with status VALID and no field that does not apply', async () => {
    const begin = now() - 60_000;
    const end = now() + 24 * HOUR;
    const body = { securedObjectId: 'front-door', mobileDeviceId: 'phone-1', beginDate: begin, endDate: end, commands: ['open', 'clos'], channels: ['btlespp'] };
    const response = await issueTicket(t, token, body, { 'x-request-id': 'issue-1' });
    expect(response.statusCode).toBe(201);
    const created = response.json();
    expect(created).toStrictEqual({
      id: expect.stringMatching(UUID_PATTERN),
      ...body,
      creationDate: expect.any(Number),
      status: 'VALID',
    });
    for (const absent of ['revocationDate', 'downloadDate', 'accessPermissionId']) expect(created).not.toHaveProperty(absent);
    expect(response.body).not.toContain('null');
    expect(response.headers.location).toBe(`/operatorapi/tickets/${created.id}`);

    expect(await row(created.id)).toEqual({
      tenant_id: acme.tenantId,
      secured_object_id: 'front-door',
      mobile_device_id: 'phone-1',
      begin_date: begin,
      end_date: end,
      created_at: created.creationDate,
      commands: ['open', 'clos'],
      channels: ['btlespp'],
      revoked_at: null,
      downloaded_at: null,
    });
    expect(await auditEvents(t, { target: `ticket:${created.id}` })).toEqual([
      {
        tenant_id: acme.tenantId,
        time: created.creationDate,
        actor: `client:${acme.clientId}`,
        action: 'ticket.created',
        target: `ticket:${created.id}`,
        request_id: String(response.headers['x-request-id']),
      },
    ]);

    const read = await get(created.id);
    expect(read.statusCode).toBe(200);
    expect(read.json()).toStrictEqual(created);
  });

  it('accepts the bounds (beginDate 0, endDate 8640000000000000) and keeps repeated commands and channels once', async () => {
    const created = await ticket(t, token, 'front-door', 'phone-2', {
      beginDate: 0,
      endDate: MAX_TIME,
      commands: ['tokn', 'open', 'tokn'],
      channels: ['btlespp', 'btlespp'],
    });
    expect(created).toMatchObject({ beginDate: 0, endDate: MAX_TIME, commands: ['tokn', 'open'], channels: ['btlespp'], status: 'VALID' });
    expect(await row(created.id)).toMatchObject({ begin_date: 0, end_date: MAX_TIME, commands: ['tokn', 'open'] });
  });

  it('answers 422 for well-formed but impossible tickets, saying why, and issues nothing', async () => {
    // One reading of the clock: two calls a millisecond apart would make "beginDate = endDate" a valid ticket.
    const at = now();
    const cases: [string, object, { field: string; message: unknown }[]][] = [
      ['unknown lock', { securedObjectId: 'no-such-door' }, [{ field: 'securedObjectId', message: expect.stringContaining('no-such-door') }]],
      ['unknown device', { mobileDeviceId: 'no-such-phone' }, [{ field: 'mobileDeviceId', message: expect.stringContaining('no-such-phone') }]],
      [
        'both unknown',
        { securedObjectId: 'nope', mobileDeviceId: 'nada' },
        [
          { field: 'mobileDeviceId', message: expect.any(String) },
          { field: 'securedObjectId', message: expect.any(String) },
        ],
      ],
      ["another tenant's lock", { securedObjectId: 'their-door' }, [{ field: 'securedObjectId', message: expect.any(String) }]],
      ["another tenant's device", { mobileDeviceId: 'their-phone' }, [{ field: 'mobileDeviceId', message: expect.any(String) }]],
      ['beginDate = endDate', { beginDate: at + HOUR, endDate: at + HOUR }, [{ field: 'endDate', message: 'must be after beginDate' }]],
      ['beginDate > endDate', { beginDate: at + 2 * HOUR, endDate: at + HOUR }, [{ field: 'endDate', message: 'must be after beginDate' }]],
      ['endDate past', { beginDate: 0, endDate: at - 1000 }, [{ field: 'endDate', message: 'is already past' }]],
      [
        'dates in seconds',
        { beginDate: Math.floor(at / 1000), endDate: Math.floor(at / 1000) + 3600 },
        [{ field: 'endDate', message: 'is already past; times are milliseconds since 1970-01-01T00:00:00Z (this looks like seconds: multiply by 1000)' }],
      ],
      [
        'dates in microseconds (valid in the year 58,000 as milliseconds)',
        { beginDate: at * 1000, endDate: (at + HOUR) * 1000 },
        [
          { field: 'beginDate', message: expect.stringMatching(/^is after the year 9999; times are milliseconds .*divide by 1000; 8640000000000000 alone means no end\)$/) },
          { field: 'endDate', message: expect.stringMatching(/^is after the year 9999; times are milliseconds .*divide by 1000; 8640000000000000 alone means no end\)$/) },
        ],
      ],
      ['unknown command', { commands: ['open', 'kick'] }, [{ field: 'commands[1]', message: expect.stringContaining('tokn, open, clos') }]],
      ['upper-case command', { commands: ['OPEN'] }, [{ field: 'commands[0]', message: expect.stringContaining('OPEN') }]],
      ['no commands', { commands: [] }, [{ field: 'commands', message: expect.any(String) }]],
      ['no channels', { channels: [] }, [{ field: 'channels', message: expect.any(String) }]],
      [
        'no commands and no channels',
        { commands: [], channels: [] },
        [
          { field: 'channels', message: expect.any(String) },
          { field: 'commands', message: expect.any(String) },
        ],
      ],
      ['channel nfccard', { channels: ['nfccard'] }, [{ field: 'channels[0]', message: expect.stringContaining('removed on 01.02.2018') }]],
      ['unknown channel', { channels: ['btlespp', 'foo'] }, [{ field: 'channels[1]', message: expect.stringContaining('unknown channel foo') }]],
    ];
    await expectNothingChanged(t, async () => {
      for (const [name, overrides, errors] of cases) {
        const response = await issueTicket(t, token, ticketBody(t, 'front-door', 'phone-1', overrides));
        const problem = expectProblem(response, 422);
        const sorted = [...(problem.errors ?? [])].sort((a, b) => a.field.localeCompare(b.field));
        expect(sorted, name).toEqual(errors);
        expect(problem.type).toContain('unprocessable');
        for (const error of problem.errors ?? []) expect(problem.detail, name).toContain(error.message);
      }
    });
    // The detail itself names the nfccard removal (docs/api-reference.md 4.3).
    const nfc = await issueTicket(t, token, ticketBody(t, 'front-door', 'phone-1', { channels: ['nfccard'] }));
    expect(nfc.json().detail).toMatch(/nfccard was removed on 01\.02\.2018/);
  });

  it('answers 422 for a lock or device removed since', async () => {
    await lock(t, token, 'removed-door');
    await device(t, token, 'removed-phone');
    await call(t, token, { method: 'DELETE', url: '/operatorapi/securedobjects/removed-door' });
    await call(t, token, { method: 'DELETE', url: '/operatorapi/mobiledevices/removed-phone' });
    await expectNothingChanged(t, async () => {
      expect(problemFields(await issueTicket(t, token, ticketBody(t, 'removed-door', 'phone-1')), 422)).toEqual(['securedObjectId']);
      expect(problemFields(await issueTicket(t, token, ticketBody(t, 'front-door', 'removed-phone')), 422)).toEqual(['mobileDeviceId']);
    });
  });

  it('answers 400 for malformed bodies, naming every bad field, and issues nothing', async () => {
    const valid = ticketBody(t, 'front-door', 'phone-1');
    const cases: [string, object, string[]][] = [
      ['beginDate over the maximum', { ...valid, beginDate: MAX_TIME + 1, endDate: MAX_TIME + 2 }, ['beginDate', 'endDate']],
      ['negative beginDate', { ...valid, beginDate: -1 }, ['beginDate']],
      ['numbers as strings', { ...valid, beginDate: String(valid.beginDate), endDate: String(valid.endDate) }, ['beginDate', 'endDate']],
      ['fractional milliseconds', { ...valid, endDate: valid.endDate + 0.5 }, ['endDate']],
      ['an array as a string', { ...valid, commands: 'open', channels: 'btlespp' }, ['channels', 'commands']],
      ['numbers in arrays', { ...valid, commands: [1], channels: [true] }, ['channels[0]', 'commands[0]']],
      ['nulls', { ...valid, securedObjectId: null, mobileDeviceId: null }, ['mobileDeviceId', 'securedObjectId']],
      ['empty ids', { ...valid, securedObjectId: '', mobileDeviceId: '' }, ['mobileDeviceId', 'securedObjectId']],
      ['unknown fields', { ...valid, status: 'VALID', id: randomUUID() }, ['id', 'status']],
      ['everything missing', {}, ['beginDate', 'channels', 'commands', 'endDate', 'mobileDeviceId', 'securedObjectId']],
    ];
    await expectNothingChanged(t, async () => {
      for (const [name, body, fields] of cases) {
        const response = await issueTicket(t, token, body);
        expect(problemFields(response, 400), name).toEqual(fields);
      }
      const notAnObject = await t.app.inject({
        method: 'POST',
        url: '/operatorapi/tickets',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        payload: '"ticket"',
      });
      expectProblem(notAnObject, 400);
    });
  });

  it("reads one ticket; a malformed id, an unknown id and another tenant's id are 404", async () => {
    const theirs = await ticket(t, otherToken, 'their-door', 'their-phone');
    await expectNothingChanged(t, async () => {
      for (const id of ['not-a-uuid', randomUUID(), theirs.id, 'lockserver']) {
        expect(expectProblem(await get(id), 404).type, id).toContain('not-found');
      }
    });
    expect((await get(theirs.id, otherToken)).json()).toStrictEqual(theirs);
  });

  it('derives EXPIRED once endDate has passed, without a revocationDate', async () => {
    const soon = await ticket(t, token, 'back-door', 'phone-2', { endDate: now() + 60_000 });
    expect(soon.status).toBe('VALID');
    offset += 120_000;
    const read = (await get(soon.id)).json();
    expect(read).toStrictEqual({ ...soon, status: 'EXPIRED' });
    expect(read).not.toHaveProperty('revocationDate');
    expect((await row(soon.id))?.revoked_at).toBeNull();

    const expired = await walk<TicketBody>(t, token, '/operatorapi/tickets?status=EXPIRED&securedObjectId=back-door');
    expect(expired.items.map((item) => item.id)).toContain(soon.id);
    const valid = await walk<TicketBody>(t, token, '/operatorapi/tickets?status=VALID&securedObjectId=back-door');
    expect(valid.items.map((item) => item.id)).not.toContain(soon.id);

    // An expired ticket can still be revoked; it then reads REVOKED.
    const revoked = (await revoke(soon.id)).json();
    expect(revoked).toStrictEqual({ ...soon, status: 'REVOKED', revocationDate: expect.any(Number) });
  });

  it('revokes: 200 with the REVOKED ticket; again → 200 and the same revocationDate; one audit event', async () => {
    const issued = await ticket(t, token, 'front-door', 'phone-2');
    const first = await revoke(issued.id, token, { 'x-request-id': 'revoke-once' });
    expect(first.statusCode).toBe(200);
    const revoked = first.json();
    expect(revoked).toStrictEqual({ ...issued, status: 'REVOKED', revocationDate: expect.any(Number) });
    expect((await row(issued.id))?.revoked_at).toBe(revoked.revocationDate);

    offset += 5_000;
    const second = await revoke(issued.id, token, { 'x-request-id': 'revoke-twice' });
    expect(second.statusCode).toBe(200);
    expect(second.json()).toStrictEqual(revoked);
    expect((await row(issued.id))?.revoked_at).toBe(revoked.revocationDate);
    expect((await get(issued.id)).json()).toStrictEqual(revoked);

    const events = await auditEvents(t, { target: `ticket:${issued.id}` });
    expect(events.map((event) => [event.action, event.request_id, event.time])).toEqual([
      ['ticket.created', expect.any(String), issued.creationDate],
      ['ticket.revoked', String(first.headers['x-request-id']), revoked.revocationDate],
    ]);
  });

  it("answers 404 for revoking an unknown, malformed or another tenant's ticket, which stays VALID", async () => {
    const theirs = await ticket(t, otherToken, 'their-door', 'their-phone');
    await expectNothingChanged(t, async () => {
      for (const id of [theirs.id, randomUUID(), 'not-a-uuid']) expectProblem(await revoke(id), 404);
    });
    expect((await row(theirs.id))?.revoked_at).toBeNull();
    expect((await get(theirs.id, otherToken)).json().status).toBe('VALID');
  });

  describe('listing', () => {
    let tenant: TenantFixture;
    let listToken: string;
    const made: Record<string, TicketBody> = {};

    beforeAll(async () => {
      tenant = await createTenant(t.app, 'lister');
      listToken = await clientToken(t.app, tenant);
      for (const id of ['lock-a', 'lock-b']) await lock(t, listToken, id);
      for (const id of ['dev-x', 'dev-y']) await device(t, listToken, id);
      made.ax = await ticket(t, listToken, 'lock-a', 'dev-x');
      made.ay = await ticket(t, listToken, 'lock-a', 'dev-y');
      made.bx = await ticket(t, listToken, 'lock-b', 'dev-x');
      made.by = await ticket(t, listToken, 'lock-b', 'dev-y');
      made.axRevoked = await ticket(t, listToken, 'lock-a', 'dev-x');
      made.axRevoked = (await revoke(made.axRevoked.id, listToken)).json();
      made.byExpiring = await ticket(t, listToken, 'lock-b', 'dev-y', { endDate: now() + 1000 });
      offset += 2000;
      made.byExpiring = { ...made.byExpiring, status: 'EXPIRED' };
    });

    const ids = (items: { id: string }[]) => items.map((item) => item.id);
    const names = (...keys: string[]) => keys.map((key) => made[key]!.id);

    it('answers the tenant\'s tickets in creation order with their current status', async () => {
      const all = await list('', listToken);
      expect(all.statusCode).toBe(200);
      expect(all.headers.link).toBeUndefined();
      expect(all.json()).toStrictEqual(names('ax', 'ay', 'bx', 'by', 'axRevoked', 'byExpiring').map((id) => Object.values(made).find((m) => m.id === id)));
      const foreign = await walk(t, token, '/operatorapi/tickets?limit=1000');
      expect(ids(foreign.items)).not.toContain(made.ax!.id);
    });

    it('filters by mobileDeviceId, securedObjectId and status, alone and together', async () => {
      const cases: [string, string[]][] = [
        ['mobileDeviceId=dev-x', names('ax', 'bx', 'axRevoked')],
        ['securedObjectId=lock-b', names('bx', 'by', 'byExpiring')],
        ['mobileDeviceId=dev-y&securedObjectId=lock-a', names('ay')],
        ['status=VALID', names('ax', 'ay', 'bx', 'by')],
        ['status=REVOKED', names('axRevoked')],
        ['status=EXPIRED', names('byExpiring')],
        ['status=VALID&mobileDeviceId=dev-x&securedObjectId=lock-a', names('ax')],
        ['status=REVOKED&securedObjectId=lock-b', []],
        ['mobileDeviceId=their-phone', []],
        ['securedObjectId=no-such-lock', []],
      ];
      for (const [query, expected] of cases) {
        const response = await list(query, listToken);
        expect(response.statusCode, query).toBe(200);
        expect(ids(response.json()), query).toEqual(expected);
      }
      // Another tenant's device is never listed, even by its id.
      expect((await list('mobileDeviceId=dev-x', otherToken)).json()).toEqual([]);
    });

    it('refuses bad query parameters with 400 naming them', async () => {
      const cases: [string, string][] = [
        ['limit=0', 'limit'],
        ['limit=1001', 'limit'],
        ['limit=1.5', 'limit'],
        ['limit=many', 'limit'],
        ['status=valid', 'status'],
        ['status=DELETED', 'status'],
        ['mobileDeviceId=', 'mobileDeviceId'],
        ['colour=red', 'colour'],
        ['cursor=garbage', 'cursor'],
        [`cursor=${Buffer.from('[1,"not-a-uuid"]').toString('base64url')}`, 'cursor'],
        [`cursor=${Buffer.from('{"a":1}').toString('base64url')}`, 'cursor'],
        [`cursor=${'x'.repeat(600)}`, 'cursor'],
      ];
      for (const [query, field] of cases) {
        const response = await list(query, listToken);
        expect([...new Set(problemFields(response, 400))], query).toEqual([field]);
      }
      expect((await list('limit=1000', listToken)).statusCode).toBe(200);
      expect((await list('limit=1', listToken)).statusCode).toBe(200);
    });

    it('pages with Link rel="next" keeping the filters; walking returns each ticket exactly once', async () => {
      const first = await list('limit=2&mobileDeviceId=dev-x', listToken);
      const link = nextLink(first);
      expect(link).toMatch(/^\/operatorapi\/tickets\?limit=2&mobileDeviceId=dev-x&cursor=[A-Za-z0-9_-]+$/);
      expect(first.headers.link).toBe(`<${link}>; rel="next"`);
      const filtered = await walk(t, listToken, '/operatorapi/tickets?limit=2&mobileDeviceId=dev-x');
      expect(filtered.pages.map((page) => page.length)).toEqual([2, 1]);
      expect(ids(filtered.items)).toEqual(names('ax', 'bx', 'axRevoked'));

      for (const limit of [1, 2, 3, 5, 6]) {
        const walked = await walk(t, listToken, `/operatorapi/tickets?limit=${limit}`);
        expect(ids(walked.items), `limit=${limit}`).toEqual(names('ax', 'ay', 'bx', 'by', 'axRevoked', 'byExpiring'));
        expect(walked.pages.length).toBe(Math.ceil(6 / limit));
      }
    });

    it('keeps pages stable while tickets are added between page fetches', async () => {
      const stable = await createTenant(t.app, 'stable');
      const stableToken = await clientToken(t.app, stable);
      await lock(t, stableToken, 'door');
      await device(t, stableToken, 'phone');
      const original: string[] = [];
      for (let i = 0; i < 7; i++) original.push((await ticket(t, stableToken, 'door', 'phone')).id);

      const seen: string[] = [];
      let next: string | undefined = '/operatorapi/tickets?limit=3';
      let round = 0;
      while (next) {
        const response = await call(t, stableToken, { method: 'GET', url: next });
        expect(response.statusCode).toBe(200);
        seen.push(...ids(response.json()));
        next = nextLink(response);
        if (next) {
          // Between page fetches: new tickets through the API, and rows whose creation time ties with or precedes the
          // last one seen (a clock that did not move, a slow transaction committing late).
          round++;
          await ticket(t, stableToken, 'door', 'phone');
          const cursorTime = JSON.parse(Buffer.from(new URL(next, 'http://x').searchParams.get('cursor')!, 'base64url').toString())[0];
          try {
            for (const createdAt of [cursorTime, cursorTime, cursorTime - 1]) {
              frozen = createdAt;
              await ticket(t, stableToken, 'door', 'phone');
            }
          } finally {
            frozen = null;
          }
        }
      }
      expect(round).toBeGreaterThanOrEqual(2);
      expect(new Set(seen).size).toBe(seen.length);
      for (const id of original) expect(seen.filter((s) => s === id)).toHaveLength(1);
      // The originally present rows come in their order.
      expect(seen.filter((id) => original.includes(id))).toEqual(original);
    });
  });

  it('needs a token (401) and tokens:create, tokens:read or tokens:delete (403)', async () => {
    const issued = await ticket(t, token, 'front-door', 'phone-1');
    const limited = await clientToken(t.app, await createClient(t.app, acme, ['devices:read', 'devices:write', 'audit:read']));
    await expectAuthChecks(t, limited, [
      { method: 'POST', url: '/operatorapi/tickets', payload: ticketBody(t, 'front-door', 'phone-1'), scope: 'tokens:create' },
      { method: 'GET', url: '/operatorapi/tickets', scope: 'tokens:read' },
      { method: 'GET', url: `/operatorapi/tickets/${issued.id}`, scope: 'tokens:read' },
      { method: 'DELETE', url: `/operatorapi/tickets/${issued.id}`, scope: 'tokens:delete' },
    ]);
    // Each scope grants only its own operation.
    const reader = await clientToken(t.app, await createClient(t.app, acme, ['tokens:read']));
    await expectNothingChanged(t, async () => {
      expectProblem(await issueTicket(t, reader, ticketBody(t, 'front-door', 'phone-1')), 403);
      expectProblem(await revoke(issued.id, reader), 403);
    });
    expect((await get(issued.id, reader)).json().status).toBe('VALID');
    const creator = await clientToken(t.app, await createClient(t.app, acme, ['tokens:create']));
    expectProblem(await get(issued.id, creator), 403);
  });
});
