// Scope matrix (docs/api-reference.md 3.6, docs/house-style.md convention 3): every protected route × every scope of
// its API — only the declared scope passes the bearer check. Generated from the served OpenAPI documents.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { bearer, createTenant } from '../helpers/oauth.js';
import { API_SCOPES, routeTable, seedTenant, tokenKeyFor, tokenWithScope, urlFor, type ApiName, type RouteEntry, type TenantData } from './route-table.js';

describe('scope matrix', () => {
  let t: TestApp;
  let data: TenantData;
  let routes: RouteEntry[];
  const tokens = new Map<string, string>();

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4', DEPRECATED_INTERFACES_ENABLED: 'tickets-by-object' });
    data = await seedTenant(t.app, await createTenant(t.app, 'scopes'), 'a');
    routes = await routeTable(t.app);
    for (const [api, scopes] of Object.entries(API_SCOPES) as [ApiName, readonly string[]][]) {
      for (const scope of scopes) tokens.set(`${api} ${scope}`, await tokenWithScope(t.app, data.tenant, api, scope, data));
    }
    tokens.set('deviceapi keys:register lock', await tokenWithScope(t.app, data.tenant, 'deviceapi', 'keys:register', data, { boundTo: 'lock' }));
  });
  afterAll(async () => {
    await t.close();
  });

  it('covers every protected route of the three APIs', () => {
    expect(routes.length).toBeGreaterThanOrEqual(45);
    expect(new Set(routes.map((route) => route.api))).toEqual(new Set(['operatorapi', 'accessapi', 'deviceapi']));
  });

  it('lets only the declared scope through', async () => {
    const failures: string[] = [];
    for (const route of routes) {
      for (const scope of API_SCOPES[route.api]) {
        const response = await t.app.inject({
          method: route.method as 'GET',
          url: urlFor(route, data),
          headers: bearer(tokens.get(tokenKeyFor(route, scope))!),
          ...(route.exampleBody !== undefined && ['POST', 'PATCH', 'PUT'].includes(route.method) ? { payload: route.exampleBody as object } : {}),
        });
        const label = `${route.method} ${route.path} with ${scope}: ${response.statusCode}`;
        if (scope === route.scope) {
          if (response.statusCode === 401 || response.statusCode === 403 || response.statusCode >= 500) failures.push(`${label} (declared scope refused)`);
        } else if (response.statusCode !== 403 || !String(response.headers['www-authenticate']).includes(`scope="${route.scope}"`)) {
          failures.push(`${label} (expected 403 insufficient_scope)`);
        }
      }
    }
    expect(failures).toEqual([]);
  });
});
