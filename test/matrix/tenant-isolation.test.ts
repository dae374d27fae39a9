// Issue 7 tenant isolation matrix: every route that takes an id, called by tenant A with tenant B's ids, answers 404
// and changes nothing of B's (contract 2). Generated from the served OpenAPI documents.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACCESS_SCOPES, OPERATOR_SCOPES } from '../../src/services/scopes.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { bearer, createTenant, tokenRequest, createClient } from '../helpers/oauth.js';
import { accessToken, routeTable, seedTenant, tokenWithScope, urlFor, type ApiName, type RouteEntry, type TenantData } from './route-table.js';

const TABLES = [
  'secured_objects',
  'mobile_devices',
  'tickets',
  'oauth_clients',
  'users',
  'residents',
  'resident_devices',
  'lock_groups',
  'lock_group_objects',
  'access_permissions',
  'signing_keys',
  'ticket_key_set_changes',
];

describe('tenant isolation matrix', () => {
  let t: TestApp;
  let a: TenantData;
  let b: TenantData;
  let routes: RouteEntry[];
  const tokensOfA = new Map<string, string>();

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
    routes = (await routeTable(t.app)).filter((route) => route.parameters.length > 0);
    const operatorClient = await createClient(t.app, a.tenant, [...OPERATOR_SCOPES]);
    tokensOfA.set('operatorapi', (await tokenRequest(t.app, operatorClient, { grant_type: 'client_credentials' })).json().access_token);
    tokensOfA.set('accessapi', await accessToken(t.app, a.tenant, [...ACCESS_SCOPES]));
    tokensOfA.set('deviceapi sync', await tokenWithScope(t.app, a.tenant, 'deviceapi', 'sync', a.deviceId));
    tokensOfA.set('deviceapi tokens:download', await tokenWithScope(t.app, a.tenant, 'deviceapi', 'tokens:download', a.deviceId));
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
      const key: string = route.api === 'deviceapi' ? `deviceapi ${route.scope}` : (route.api satisfies ApiName);
      const response = await t.app.inject({
        method: route.method as 'GET',
        url: urlFor(route, b),
        headers: bearer(tokensOfA.get(key)!),
        ...(route.exampleBody !== undefined && ['POST', 'PATCH', 'PUT'].includes(route.method) ? { payload: route.exampleBody as object } : {}),
      });
      if (response.statusCode !== 404) failures.push(`${route.method} ${route.path}: ${response.statusCode} ${response.body.slice(0, 120)}`);
      else expect(response.body).not.toContain(b.tenant.tenantId);
    }
    expect(failures).toEqual([]);
    expect(await digestOf(b.tenant.tenantId)).toBe(before);
  });

  it('still serves tenant A its own ids (the matrix is not vacuous)', async () => {
    const reads = routes.filter((route) => route.method === 'GET');
    for (const route of reads) {
      const key: string = route.api === 'deviceapi' ? `deviceapi ${route.scope}` : route.api;
      const response = await t.app.inject({ url: urlFor(route, a), headers: bearer(tokensOfA.get(key)!) });
      expect(response.statusCode, `${route.path}`).toBe(200);
    }
  });
});
