// Tenant isolation matrix (docs/house-style.md convention 9): every route that takes an id, called by tenant A with
// tenant B's ids, answers 404 and changes nothing of B's (docs/api-reference.md 2). Generated from the served OpenAPI documents.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACCESS_SCOPES, OPERATOR_SCOPES } from '../../src/shared/scopes.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { bearer, createTenant, tokenRequest, createClient } from '../helpers/oauth.js';
import { accessToken, routeTable, seedTenant, takesIds, tokenWithScope, urlFor, type RouteEntry, type TenantData } from './route-table.js';

const TABLES = [
  'secured_objects',
  'mobile_devices',
  'tickets',
  'oauth_clients',
  'client_tenants',
  'users',
  'residents',
  'resident_devices',
  'lock_groups',
  'lock_group_objects',
  'access_permissions',
  'signing_keys',
  'ticket_key_set_changes',
  'webhooks',
  'webhook_deliveries',
  'webhook_attempts',
  'jobs',
  'job_items',
];

describe('tenant isolation matrix', () => {
  let t: TestApp;
  let a: TenantData;
  let b: TenantData;
  let routes: RouteEntry[];
  /**
   * Tenant A's tokens by API (and Device API scope), each labelled. The Device API's `sync` routes are called both by
   * a client bound to A's lock and by an unbound one (docs/api-reference.md 6.2 lets both sync): the bound client reaches
   * the trust endpoint (docs/api-reference.md 8.1), the unbound one reaches the tenant filter of sync itself, not only the
   * binding check.
   */
  const tokensOfA = new Map<string, [label: string, token: string][]>();

  const tokensFor = (route: RouteEntry) => tokensOfA.get(route.api === 'deviceapi' ? `deviceapi ${route.scope}` : route.api)!;

  function request(route: RouteEntry, data: TenantData, token: string) {
    return t.app.inject({
      method: route.method as 'GET',
      url: urlFor(route, data),
      headers: bearer(token),
      ...(route.exampleBody !== undefined && ['POST', 'PATCH', 'PUT'].includes(route.method) ? { payload: route.exampleBody as object } : {}),
    });
  }

  async function digestOf(tenantId: string): Promise<string> {
    const parts: string[] = [];
    for (const table of TABLES) {
      const { rows } = await t.database.db.query<{ digest: string }>(
        `SELECT coalesce(md5(string_agg(row_to_json(x)::text, '|' ORDER BY row_to_json(x)::text)), '') AS digest
           FROM ${table} x WHERE x.tenant_id = $1`,
        [tenantId],
      );
      parts.push(`${table}:${rows[0]!.digest}`);
    }
    return parts.join(',');
  }

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4', DEPRECATED_INTERFACES_ENABLED: 'tickets-by-object' });
    a = await seedTenant(t.app, await createTenant(t.app, 'tenant-a'), 'a');
    b = await seedTenant(t.app, await createTenant(t.app, 'tenant-b'), 'b');
    routes = (await routeTable(t.app)).filter(takesIds);
    const operatorClient = await createClient(t.app, a.tenant, [...OPERATOR_SCOPES]);
    tokensOfA.set('operatorapi', [['operator', (await tokenRequest(t.app, operatorClient, { grant_type: 'client_credentials' })).json().access_token]]);
    tokensOfA.set('accessapi', [['access', await accessToken(t.app, a.tenant, [...ACCESS_SCOPES])]]);
    tokensOfA.set('deviceapi sync', [
      ['bound to the lock', await tokenWithScope(t.app, a.tenant, 'deviceapi', 'sync', a)],
      ['unbound', await tokenWithScope(t.app, a.tenant, 'deviceapi', 'sync', a, { bound: false })],
    ]);
    tokensOfA.set('deviceapi tokens:download', [['bound to the device', await tokenWithScope(t.app, a.tenant, 'deviceapi', 'tokens:download', a)]]);
    tokensOfA.set('deviceapi keys:register', [
      ['bound to the device', await tokenWithScope(t.app, a.tenant, 'deviceapi', 'keys:register', a)],
      ['bound to the lock', await tokenWithScope(t.app, a.tenant, 'deviceapi', 'keys:register', a, { boundTo: 'lock' })],
    ]);
  });
  afterAll(async () => {
    await t.close();
  });

  it('covers every route that takes an id', () => {
    expect(routes.length).toBeGreaterThanOrEqual(25);
  });

  it("answers 404 to tenant A for every one of tenant B's ids and leaves B's data untouched", async () => {
    const before = await digestOf(b.tenant.tenantId);
    const failures: string[] = [];
    for (const route of routes) {
      for (const [label, token] of tokensFor(route)) {
        const response = await request(route, b, token);
        if (response.statusCode === 404) {
          expect(response.body).not.toContain(b.tenant.tenantId);
          continue;
        }
        // A refusal that does not look at the id (an unbound client at the trust endpoint, docs/api-reference.md 8.1) is
        // no oracle only when A's own id is refused exactly so; such a token never counts as serving the route (the
        // test below requires one that does).
        // A key registration by a client bound to the other kind is such a refusal too (docs/api-reference.md 11.1).
        if (response.statusCode === 403 && (route.method === 'GET' || route.method === 'PUT')) {
          const own = await request(route, a, token);
          if (own.statusCode === 403 && own.json().detail === response.json().detail) continue;
        }
        failures.push(`${route.method} ${route.path} (${label}): ${response.statusCode} ${response.body.slice(0, 120)}`);
      }
    }
    expect(failures).toEqual([]);
    expect(await digestOf(b.tenant.tenantId)).toBe(before);
  });

  it('still serves tenant A its own ids (the matrix is not vacuous)', async () => {
    const reads = routes.filter((route) => route.method === 'GET');
    for (const route of reads) {
      const served: string[] = [];
      for (const [label, token] of tokensFor(route)) {
        const response = await t.app.inject({ url: urlFor(route, a), headers: bearer(token) });
        if (response.statusCode === 200) served.push(label);
        // Every token either serves A's own id or is refused for a reason that does not depend on it (see above).
        else expect(response.statusCode, `${route.path} (${label}): ${response.body}`).toBe(403);
      }
      expect(served.length, `${route.path}: no token of A is served`).toBeGreaterThanOrEqual(1);
    }
    // Both kinds of sync client are served their own lock: the unbound one's 404 above comes from the tenant filter.
    const syncRoute = reads.find((route) => route.path === '/deviceapi/securedobjects/{id}/sync')!;
    for (const [label, token] of tokensFor(syncRoute)) {
      expect((await t.app.inject({ url: urlFor(syncRoute, a), headers: bearer(token) })).statusCode, label).toBe(200);
    }
  });
});
