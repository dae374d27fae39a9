// GET /operatorapi/revocations (docs/api-reference.md 8.4): revoked tickets by whether their lock applied the revocation,
// with the list conventions of GET /operatorapi/tickets (filters, pages, 400s) and tenant isolation.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { download, lockToken, phoneToken, sync } from '../helpers/device.js';
import { clientToken, createClient } from '../helpers/oauth.js';
import { call, expectAuthChecks, expectProblem, nextLink, problemFields, ticket, walk, type TicketBody } from '../helpers/operator.js';
import { twoTenants, type TwoTenants } from '../helpers/tenants.js';

describe('GET /operatorapi/revocations', () => {
  let t: TestApp;
  let tenants: TwoTenants;
  /** Revoked tickets by name, as the tickets API answers them after the syncs below. */
  const made: Record<string, TicketBody> = {};

  const list = (query: string, token = tenants.token) => call(t, token, { method: 'GET', url: `/operatorapi/revocations?${query}` });
  const ids = (items: { id: string }[]) => items.map((item) => item.id);
  const names = (...keys: string[]) => keys.map((key) => made[key]!.id);

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4' });
    tenants = await twoTenants(t, {
      acme: { locks: ['lock-a', 'lock-b', 'gone'], devices: ['dev-x', 'dev-y'] },
      other: { locks: ['lock-a'], devices: ['dev-x'] },
    });
    const { acme, other, token, otherToken } = tenants;
    const issue = async (key: string, lockId: string, deviceId: string) => {
      made[key] = await ticket(t, token, lockId, deviceId);
    };
    // In creation order: one lock-a will apply, two lock-b never will, one of a lock deleted later, one never downloaded.
    await issue('applied', 'lock-a', 'dev-x');
    await issue('pendingB1', 'lock-b', 'dev-x');
    await issue('pendingB2', 'lock-b', 'dev-y');
    await issue('ofDeleted', 'gone', 'dev-y');
    await download(t, await phoneToken(t, acme, 'dev-x'), 'dev-x');
    await download(t, await phoneToken(t, acme, 'dev-y'), 'dev-y');
    await issue('neverDownloaded', 'lock-a', 'dev-y');
    await ticket(t, token, 'lock-a', 'dev-x'); // still valid: never listed
    // The other tenant's own pending revocation on its own "lock-a".
    const foreign = await ticket(t, otherToken, 'lock-a', 'dev-x');
    await download(t, await phoneToken(t, other, 'dev-x'), 'dev-x');
    expect((await call(t, otherToken, { method: 'DELETE', url: `/operatorapi/tickets/${foreign.id}` })).statusCode).toBe(200);

    const lockA = await lockToken(t, acme, 'lock-a');
    const before = await sync(t, lockA, 'lock-a');
    for (const key of ['applied', 'pendingB1', 'pendingB2', 'neverDownloaded']) {
      expect((await call(t, token, { method: 'DELETE', url: `/operatorapi/tickets/${made[key]!.id}` })).statusCode).toBe(200);
    }
    expect((await call(t, token, { method: 'DELETE', url: '/operatorapi/securedobjects/gone' })).statusCode).toBe(204);
    // lock-a applies its revocations: one sync carries them, the next acknowledges them.
    const carried = await sync(t, lockA, 'lock-a', before.cursor);
    await sync(t, lockA, 'lock-a', carried.cursor);
    for (const key of Object.keys(made)) {
      made[key] = (await call(t, token, { method: 'GET', url: `/operatorapi/tickets/${made[key]!.id}` })).json();
    }
  });
  afterAll(async () => {
    await t.close();
  });

  it('lists pending, applied or both, in creation order, with the tickets\' shape', async () => {
    expect(made.applied).toMatchObject({ status: 'REVOKED', revocationAppliedTime: expect.any(Number) });
    const cases: [string, string[]][] = [
      ['applied=false', names('pendingB1', 'pendingB2', 'ofDeleted')],
      ['applied=true', names('applied')],
      ['', names('applied', 'pendingB1', 'pendingB2', 'ofDeleted')],
      ['applied=false&securedObjectId=lock-b', names('pendingB1', 'pendingB2')],
      ['applied=true&securedObjectId=lock-b', []],
      // A deleted lock's door still exists: its revocations are listed until it applied them.
      ['securedObjectId=gone', names('ofDeleted')],
      ['securedObjectId=lock-a', names('applied')],
      ['securedObjectId=no-such-lock', []],
    ];
    for (const [query, expected] of cases) {
      const response = await list(query);
      expect(response.statusCode, query).toBe(200);
      expect(ids(response.json()), query).toEqual(expected);
    }
    expect((await list('applied=true')).json()).toStrictEqual([made.applied]);
    expect((await list('applied=false&securedObjectId=lock-b')).json()).toStrictEqual([made.pendingB1, made.pendingB2]);
  });

  it('never lists another tenant\'s revocations, even for a lock id both tenants use', async () => {
    const foreign = await list('securedObjectId=lock-a&applied=false', tenants.otherToken);
    expect(foreign.statusCode).toBe(200);
    expect(foreign.json()).toHaveLength(1);
    expect(ids(foreign.json())).not.toContain(made.applied!.id);
    expect(ids((await list('applied=false')).json())).not.toContain(foreign.json()[0].id);
    expect((await list('securedObjectId=lock-a&applied=false')).json()).toEqual([]);
  });

  it('pages with Link rel="next" keeping the filters; walking returns each revocation exactly once', async () => {
    const first = await list('limit=1&applied=false');
    const link = nextLink(first);
    expect(link).toMatch(/^\/operatorapi\/revocations\?limit=1&applied=false&cursor=[A-Za-z0-9_-]+$/);
    expect(first.headers.link).toBe(`<${link}>; rel="next"`);
    for (const limit of [1, 2, 3, 4]) {
      const walked = await walk(t, tenants.token, `/operatorapi/revocations?limit=${limit}`);
      expect(ids(walked.items), `limit=${limit}`).toEqual(names('applied', 'pendingB1', 'pendingB2', 'ofDeleted'));
      expect(walked.pages.length).toBe(Math.ceil(4 / limit));
    }
  });

  it('refuses bad query parameters with 400 naming them, and applied=maybe naming the allowed values', async () => {
    const maybe = await list('applied=maybe');
    expect(problemFields(maybe, 400)).toEqual(['applied']);
    expect(maybe.json().errors).toEqual([{ field: 'applied', message: 'must be one of: true, false' }]);
    const cases: [string, string][] = [
      ['applied=TRUE', 'applied'],
      ['applied=1', 'applied'],
      ['limit=0', 'limit'],
      ['limit=1001', 'limit'],
      ['securedObjectId=', 'securedObjectId'],
      ['status=REVOKED', 'status'],
      ['cursor=garbage', 'cursor'],
      [`cursor=${Buffer.from('[1,"not-a-uuid"]').toString('base64url')}`, 'cursor'],
    ];
    for (const [query, field] of cases) {
      expect([...new Set(problemFields(await list(query), 400))], query).toEqual([field]);
    }
  });

  it('needs a token with tokens:read (401 without, 403 with another scope)', async () => {
    const devicesOnly = await clientToken(t.app, await createClient(t.app, tenants.acme, ['devices:read']));
    await expectAuthChecks(t, devicesOnly, [
      { method: 'GET', url: '/operatorapi/revocations', scope: 'tokens:read' },
      { method: 'GET', url: '/operatorapi/revocations?applied=false&securedObjectId=lock-b', scope: 'tokens:read' },
    ]);
    const reader = await clientToken(t.app, await createClient(t.app, tenants.acme, ['tokens:read']));
    expect(ids((await list('applied=false', reader)).json())).toEqual(names('pendingB1', 'pendingB2', 'ofDeleted'));
    expectProblem(await list('applied=false', 'not-a-token'), 401);
  });
});
