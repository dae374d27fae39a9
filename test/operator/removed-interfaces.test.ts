// Removed interfaces (docs/api-reference.md 4.4, docs/service-overview.md 9): 410 with Sunset and a successor link, or kept alive by configuration.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { expectNothingChanged } from '../helpers/database-state.js';
import { basic, clientToken, createClient, type TenantFixture } from '../helpers/oauth.js';
import { twoTenants } from '../helpers/tenants.js';
import {
  LOCK_UUID,
  call,
  expectProblem,
  issueTicket,
  registerLock,
  ticket,
  ticketBody,
  type TicketBody,
} from '../helpers/operator.js';

const SUNSET_2018_01_01 = 'Mon, 01 Jan 2018 00:00:00 GMT';
const SUNSET_2018_02_01 = 'Thu, 01 Feb 2018 00:00:00 GMT';
const SUNSET_2019_01_01 = 'Tue, 01 Jan 2019 00:00:00 GMT';
/** RFC 9745: the Deprecation header is a structured-field date, `@` and Unix seconds. */
const DEPRECATED_2018_01_01 = `@${Date.UTC(2018, 0, 1) / 1000}`;
const DEPRECATED_2018_02_01 = `@${Date.UTC(2018, 1, 1) / 1000}`;

interface Fixture {
  t: TestApp;
  acme: TenantFixture;
  token: string;
  otherToken: string;
}

async function setUp(revived: string): Promise<Fixture> {
  const t = await buildTestApp({ BCRYPT_COST: '4', ...(revived ? { DEPRECATED_INTERFACES_ENABLED: revived } : {}) });
  const { acme, token, otherToken } = await twoTenants(t, {
    acme: { locks: ['door', 'gate'], devices: ['phone'] },
    other: { locks: ['their-door'], devices: ['their-phone'] },
  });
  await ticket(t, otherToken, 'their-door', 'their-phone');
  return { t, acme, token, otherToken };
}

describe('removed interfaces, not revived', () => {
  let f: Fixture;
  beforeAll(async () => {
    f = await setUp('');
    await ticket(f.t, f.token, 'door', 'phone');
  });
  afterAll(async () => {
    await f.t.close();
  });

  it.each([
    ['securedobjects', 'door', 'securedObjectId'],
    ['mobiledevices', 'phone', 'mobileDeviceId'],
  ])('GET /operatorapi/%s/{id}/tickets answers 410 naming GET /operatorapi/tickets, with Sunset and the successor link', async (resource, id, filter) => {
    await expectNothingChanged(f.t, async () => {
      for (const [target, auth] of [
        [id, f.token],
        ['no-such-id', f.token],
        [id, f.otherToken],
      ] as const) {
        const response = await call(f.t, auth, { method: 'GET', url: `/operatorapi/${resource}/${target}/tickets` });
        const problem = expectProblem(response, 410);
        expect(problem.type).toContain('gone');
        expect(problem.detail).toContain('removed on 01.01.2018');
        expect(problem.detail).toContain('GET /operatorapi/tickets');
        expect(problem.successor).toEqual(expect.stringContaining('GET /operatorapi/tickets'));
        expect(response.headers.sunset).toBe(SUNSET_2018_01_01);
        expect(response.headers.link).toBe(`</operatorapi/tickets?${filter}=${target}>; rel="successor-version"`);
        expect(response.headers.deprecation).toBeUndefined();
        expect(response.body).not.toContain('their-');
      }
    });
  });

  it('keeps the declared scope on the removed listings: 401 without a token, 403 without tokens:read', async () => {
    const limited = await clientToken(f.t.app, await createClient(f.t.app, f.acme, ['devices:read']));
    for (const url of ['/operatorapi/securedobjects/door/tickets', '/operatorapi/mobiledevices/phone/tickets']) {
      expect(expectProblem(await call(f.t, null, { method: 'GET', url }), 401)).toBeDefined();
      const forbidden = await call(f.t, limited, { method: 'GET', url });
      expectProblem(forbidden, 403);
      expect(forbidden.headers['www-authenticate']).toContain('scope="tokens:read"');
    }
  });

  it.each(['/operatorapi/tickets/lockserver/binary', '/deviceapi/tickets/lockserver/binary'])(
    'GET %s answers 410 to anyone, naming GET /deviceapi/securedobjects/{id}/sync',
    async (url) => {
      for (const auth of [null, f.token]) {
        const response = await call(f.t, auth, { method: 'GET', url });
        const problem = expectProblem(response, 410);
        expect(problem.detail).toContain('removed on 01.01.2018');
        expect(problem.detail).toContain('GET /deviceapi/securedobjects/{id}/sync');
        expect(problem.successor).toBe('GET /deviceapi/securedobjects/{id}/sync');
        expect(response.headers.sunset).toBe(SUNSET_2018_01_01);
        expect(response.headers.link).toBe('</deviceapi/apidocs/index.html>; rel="successor-version"');
        expect(response.headers.deprecation).toBeUndefined();
      }
    },
  );

  it.each([
    ['/operatorapi/oauthclients', 'operatorapi'],
    ['/v1/residents', 'accessapi'],
    ['/deviceapi/mobiledevices/phone/tickets', 'deviceapi'],
  ])('HTTP Basic on %s answers 401 naming POST /oauth/token, with Sunset and the successor link (docs/api-reference.md 3.5)', async (url, realm) => {
    await expectNothingChanged(f.t, async () => {
      // The management client's real id and secret, as a backend of 2018 sent them.
      const response = await call(f.t, null, { method: 'GET', url, headers: { authorization: basic(f.acme.clientId, f.acme.clientSecret) } });
      const problem = expectProblem(response, 401);
      expect(problem.detail).toContain('removed on 01.01.2019');
      expect(problem.detail).toContain('POST /oauth/token');
      // RFC 6750 3: no bearer token was sent, so the challenge carries no error code.
      expect(response.headers['www-authenticate']).toBe(`Bearer realm="${realm}"`);
      expect(response.headers.sunset).toBe(SUNSET_2019_01_01);
      expect(response.headers.link).toBe('</oauth/token>; rel="successor-version"');
      expect(response.headers.deprecation).toBeUndefined();
    });
    // A 401 for a missing token is no removed interface: neither header.
    const missing = await call(f.t, null, { method: 'GET', url });
    expectProblem(missing, 401);
    expect(missing.headers.sunset).toBeUndefined();
    expect(missing.headers.link).toBeUndefined();
  });

  it('refuses channel nfccard for locks and tickets (422, removed on 01.02.2018)', async () => {
    await expectNothingChanged(f.t, async () => {
      const lockResponse = await registerLock(f.t, f.token, { id: 'nfc-door', channels: ['nfccard'], localName: 'N', uuid: LOCK_UUID });
      expect(expectProblem(lockResponse, 422).detail).toContain('removed on 01.02.2018');
      const ticketResponse = await issueTicket(f.t, f.token, ticketBody(f.t, 'door', 'phone', { channels: ['nfccard'] }));
      expect(expectProblem(ticketResponse, 422).detail).toContain('removed on 01.02.2018');
    });
  });
});

describe('removed interfaces, tickets-by-object kept alive', () => {
  let f: Fixture;
  const tickets: TicketBody[] = [];
  beforeAll(async () => {
    f = await setUp('tickets-by-object');
    tickets.push(await ticket(f.t, f.token, 'door', 'phone'));
    tickets.push(await ticket(f.t, f.token, 'gate', 'phone'));
    tickets.push(await ticket(f.t, f.token, 'door', 'phone', { commands: ['clos'] }));
    tickets[2] = (await call(f.t, f.token, { method: 'DELETE', url: `/operatorapi/tickets/${tickets[2]!.id}` })).json();
  });
  afterAll(async () => {
    await f.t.close();
  });

  function expectDeprecated(response: { headers: Record<string, unknown> }, link: string) {
    expect(response.headers.deprecation).toBe(DEPRECATED_2018_01_01);
    expect(response.headers.sunset).toBe(SUNSET_2018_01_01);
    expect(response.headers.link).toBe(`<${link}>; rel="successor-version"`);
  }

  it("GET /operatorapi/securedobjects/{id}/tickets answers the ids of the lock's tickets, with Deprecation and Sunset", async () => {
    const response = await call(f.t, f.token, { method: 'GET', url: '/operatorapi/securedobjects/door/tickets' });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual([tickets[0]!.id, tickets[2]!.id]);
    expectDeprecated(response, '/operatorapi/tickets?securedObjectId=door');

    const gate = await call(f.t, f.token, { method: 'GET', url: '/operatorapi/securedobjects/gate/tickets' });
    expect(gate.json()).toEqual([tickets[1]!.id]);
  });

  it("GET /operatorapi/mobiledevices/{id}/tickets answers the device's tickets, with Deprecation and Sunset", async () => {
    const response = await call(f.t, f.token, { method: 'GET', url: '/operatorapi/mobiledevices/phone/tickets' });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toStrictEqual(tickets);
    expect(response.json()[2]).toMatchObject({ status: 'REVOKED', revocationDate: expect.any(Number) });
    expectDeprecated(response, '/operatorapi/tickets?mobileDeviceId=phone');
  });

  it("answers 404 for an unknown or another tenant's lock or device, and needs tokens:read", async () => {
    const limited = await clientToken(f.t.app, await createClient(f.t.app, f.acme, ['devices:read']));
    await expectNothingChanged(f.t, async () => {
      for (const url of [
        '/operatorapi/securedobjects/their-door/tickets',
        '/operatorapi/securedobjects/no-such-door/tickets',
        '/operatorapi/mobiledevices/their-phone/tickets',
        '/operatorapi/mobiledevices/no-such-phone/tickets',
      ]) {
        expectProblem(await call(f.t, f.token, { method: 'GET', url }), 404);
      }
      expectProblem(await call(f.t, limited, { method: 'GET', url: '/operatorapi/securedobjects/door/tickets' }), 403);
      expectProblem(await call(f.t, null, { method: 'GET', url: '/operatorapi/mobiledevices/phone/tickets' }), 401);
    });
    const theirs = await call(f.t, f.otherToken, { method: 'GET', url: '/operatorapi/securedobjects/their-door/tickets' });
    expect(theirs.json()).toHaveLength(1);
  });

  it('revives only what it names: nfccard and the lock-server sync stay removed', async () => {
    await expectNothingChanged(f.t, async () => {
      expectProblem(await registerLock(f.t, f.token, { channels: ['nfccard'], localName: 'N', uuid: LOCK_UUID }), 422);
      expectProblem(await call(f.t, null, { method: 'GET', url: '/deviceapi/tickets/lockserver/binary' }), 410);
    });
  });
});

describe('removed interfaces, channel nfccard kept alive', () => {
  let f: Fixture;
  beforeAll(async () => {
    f = await setUp('nfccard-channel');
  });
  afterAll(async () => {
    await f.t.close();
  });

  it('registers a lock with nfccard and issues a ticket over it, with Deprecation and Sunset headers', async () => {
    const registered = await registerLock(f.t, f.token, { id: 'card-door', channels: ['btlespp', 'nfccard'], localName: 'CARD', uuid: LOCK_UUID });
    expect(registered.statusCode).toBe(201);
    const body = registered.json();
    expect(body).toStrictEqual({ id: 'card-door', channels: ['btlespp', 'nfccard'], urls: expect.any(Array), creationTime: expect.any(Number), timeZone: 'UTC' });
    expect(body.urls).toHaveLength(2);
    expect(body.urls[0]).toBe(`btlespp://CARD/${LOCK_UUID}`);
    expect(registered.headers.deprecation).toBe(DEPRECATED_2018_02_01);
    expect(registered.headers.sunset).toBe(SUNSET_2018_02_01);

    const issued = await issueTicket(f.t, f.token, ticketBody(f.t, 'card-door', 'phone', { channels: ['nfccard'] }));
    expect(issued.statusCode).toBe(201);
    expect(issued.json()).toMatchObject({ securedObjectId: 'card-door', channels: ['nfccard'], status: 'VALID' });
    expect(issued.headers.deprecation).toBe(DEPRECATED_2018_02_01);
    expect(issued.headers.sunset).toBe(SUNSET_2018_02_01);
    const { rows } = await f.t.database.db.query<{ channels: string[] }>('SELECT channels FROM tickets WHERE id = $1', [issued.json().id]);
    expect(rows[0]!.channels).toEqual(['nfccard']);

    // Requests that do not use the channel carry no deprecation headers.
    const plain = await issueTicket(f.t, f.token, ticketBody(f.t, 'card-door', 'phone'));
    expect(plain.statusCode).toBe(201);
    expect(plain.headers.deprecation).toBeUndefined();
    expect(plain.headers.sunset).toBeUndefined();
  });

  it('answers 422 for a ticket over a channel the lock does not support', async () => {
    await expectNothingChanged(f.t, async () => {
      const response = await issueTicket(f.t, f.token, ticketBody(f.t, 'door', 'phone', { channels: ['btlespp', 'nfccard'] }));
      const problem = expectProblem(response, 422);
      expect(problem.errors).toEqual([{ field: 'channels[1]', message: 'the secured object does not support nfccard' }]);
      expect(problem.detail).toContain('does not support nfccard');
      expectProblem(await issueTicket(f.t, f.token, ticketBody(f.t, 'door', 'phone', { channels: ['foo'] })), 422);
    });
  });

  it('keeps the listings by object removed', async () => {
    expectProblem(await call(f.t, f.token, { method: 'GET', url: '/operatorapi/securedobjects/door/tickets' }), 410);
  });
});
