// The protected routes, read from the OpenAPI documents the server serves, with fixtures to fill them: the scope and
// tenant-isolation matrices are generated from this table, so a new route is covered without a new test.
import type { App } from '../../src/app.js';
import { ACCESS_SCOPES, OPERATOR_SCOPES } from '../../src/shared/scopes.js';
import { bearer, clientToken, createClient, createUser, keyRotationToken, passwordGrant, tokenRequest, type TenantFixture } from '../helpers/oauth.js';

export type ApiName = 'operatorapi' | 'accessapi' | 'deviceapi';

export interface RouteEntry {
  api: ApiName;
  method: string;
  /** OpenAPI path template, e.g. `/v1/residents/{id}`. */
  path: string;
  scope: string;
  parameters: string[];
  requiredQuery: string[];
  exampleBody: unknown;
}

const DOCUMENTS: Record<ApiName, string> = {
  operatorapi: '/operatorapi/apidocs/json',
  accessapi: '/v1/swagger-ui/json',
  deviceapi: '/deviceapi/apidocs/json',
};

export const API_SCOPES: Record<ApiName, readonly string[]> = {
  operatorapi: OPERATOR_SCOPES,
  accessapi: ACCESS_SCOPES,
  deviceapi: ['tokens:download', 'sync', 'keys:register'],
};

interface Operation {
  security?: { bearer?: string[] }[];
  parameters?: { name: string; in: string; required?: boolean }[];
  requestBody?: { content?: Record<string, { schema?: { examples?: unknown[]; $ref?: string }; example?: unknown }> };
}

interface ServedDocument {
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, { example?: unknown }> };
}

export async function routeTable(app: App): Promise<RouteEntry[]> {
  const routes: RouteEntry[] = [];
  for (const [api, url] of Object.entries(DOCUMENTS) as [ApiName, string][]) {
    const document = (await app.inject({ url })).json() as ServedDocument;
    for (const [path, operations] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        // `security: []` declares a route without a bearer token (a claim link's code is its credential,
        // docs/api-reference.md 12): no scope to check, no tenant to isolate by id.
        if (Array.isArray(operation.security) && operation.security.length === 0) continue;
        const scope = operation.security?.[0]?.bearer?.[0];
        if (!scope) throw new Error(`${method} ${path} declares no scope`);
        const content = operation.requestBody?.content?.['application/json'];
        routes.push({
          api,
          method: method.toUpperCase(),
          path,
          scope,
          parameters: (operation.parameters ?? []).filter((p) => p.in === 'path').map((p) => p.name),
          requiredQuery: (operation.parameters ?? []).filter((p) => p.in === 'query' && p.required).map((p) => p.name),
          // @fastify/swagger moves a schema's first example to the media type's `example`; a named model's example is
          // in its component (src/plugins/openapi-components.ts).
          exampleBody:
            content?.example ??
            content?.schema?.examples?.[0] ??
            document.components?.schemas?.[content?.schema?.$ref?.replace('#/components/schemas/', '') ?? '']?.example,
        });
      }
    }
  }
  // Deleting runs last, so the fixtures the other routes use still exist.
  return routes.sort((a, b) => Number(a.method === 'DELETE') - Number(b.method === 'DELETE'));
}

/** One tenant's data: an id of every kind of resource a route can name. */
export interface TenantData {
  tenant: TenantFixture;
  lockId: string;
  deviceId: string;
  ticketId: string;
  clientId: string;
  username: string;
  residentId: string;
  lockGroupId: string;
  permissionId: string;
  /** A published ticket key of the tenant (docs/api-reference.md 8.1). */
  ticketKeyId: string;
  /** A webhook subscription of the tenant (docs/api-reference.md 10). */
  webhookId: string;
  /** A claim link for the tenant's resident (docs/api-reference.md 12). */
  claimId: string;
  /** A finished erasure of the tenant (docs/api-reference.md 16.2). */
  erasureId: string;
  /** A lockdown of the tenant (docs/api-reference.md 15). */
  lockdownId: string;
  /** A bulk job of the tenant, cancelled before it ran, so no worker changes anything while a matrix compares (14). */
  jobId: string;
}

/** The collection a path parameter follows names the kind of id it takes. */
const KIND_BY_COLLECTION: Record<string, keyof Omit<TenantData, 'tenant'>> = {
  securedobjects: 'lockId',
  mobiledevices: 'deviceId',
  tickets: 'ticketId',
  oauthclients: 'clientId',
  users: 'username',
  residents: 'residentId',
  'lock-groups': 'lockGroupId',
  'access-permissions': 'permissionId',
  'ticket-keys': 'ticketKeyId',
  webhooks: 'webhookId',
  claims: 'claimId',
  erasures: 'erasureId',
  lockdowns: 'lockdownId',
  jobs: 'jobId',
};

const QUERY_VALUES: Record<string, string> = { version: '2' };

/** Required query parameters that name a tenant's resource (the explain endpoint's phone and lock, docs/api-reference.md 8.6). */
const KIND_BY_QUERY: Record<string, keyof Omit<TenantData, 'tenant'>> = { mobileDeviceId: 'deviceId', securedObjectId: 'lockId' };

/** Whether the route names a tenant's resource, in its path or in a required query parameter. */
export const takesIds = (route: RouteEntry): boolean => route.parameters.length > 0 || route.requiredQuery.some((name) => name in KIND_BY_QUERY);

/** The concrete URL of a route for a tenant's data; fails loudly for a parameter nobody taught it. */
export function urlFor(route: RouteEntry, data: TenantData): string {
  const segments = route.path.split('/');
  const filled = segments.map((segment, index) => {
    const match = /^\{(.+)\}$/.exec(segment);
    if (!match) return segment;
    const collection = segments[index - 1] ?? '';
    const kind = KIND_BY_COLLECTION[collection];
    if (!kind) throw new Error(`No fixture for {${match[1]}} after /${collection}/ in ${route.path}: teach test/matrix/route-table.ts`);
    return encodeURIComponent(data[kind]);
  });
  const query = route.requiredQuery.map((name) => {
    const kind = KIND_BY_QUERY[name];
    const value = kind ? data[kind] : QUERY_VALUES[name];
    if (value === undefined) throw new Error(`No value for the required query parameter ${name} of ${route.path}`);
    return `${name}=${encodeURIComponent(value)}`;
  });
  return filled.join('/') + (query.length > 0 ? `?${query.join('&')}` : '');
}

/** Creates one of every resource in the tenant through the APIs, with a management token. */
export async function seedTenant(app: App, tenant: TenantFixture, suffix: string): Promise<TenantData> {
  const operator = bearer(await clientToken(app, tenant));
  const post = async (url: string, headers: Record<string, string>, payload: object) => {
    const response = await app.inject({ method: 'POST', url, headers, payload });
    if (response.statusCode !== 201) throw new Error(`seeding ${url}: ${response.statusCode} ${response.body}`);
    return response.json();
  };
  const lock = await post('/operatorapi/securedobjects', operator, {
    id: `lock-${suffix}`,
    channels: ['btlespp'],
    localName: `L${suffix}`,
    uuid: '7d8a0c1e-4b7f-4d5e-9a41-3c2b1f0e9d8c',
  });
  const device = await post('/operatorapi/mobiledevices', operator, { id: `phone-${suffix}` });
  const ticket = await post('/operatorapi/tickets', operator, {
    securedObjectId: lock.id,
    mobileDeviceId: device.id,
    beginDate: 0,
    endDate: Date.now() + 365 * 86_400_000,
    commands: ['open'],
    channels: ['btlespp'],
  });
  const client = await createClient(app, tenant, ['tokens:read']);
  const username = `user-${suffix}`;
  await createUser(app, tenant, username, 'long enough pass');
  const access = bearer(await accessToken(app, tenant, [...ACCESS_SCOPES]));
  const resident = await post('/v1/residents', access, { name: 'Resident', mobileDeviceIds: [device.id] });
  const group = await post('/v1/lock-groups', access, { name: 'Group', securedObjectIds: [lock.id] });
  const permission = await post('/v1/access-permissions', access, {
    residentId: resident.id,
    lockGroupId: group.id,
    beginDate: 0,
    endDate: Date.now() + 365 * 86_400_000,
    commands: ['open'],
    channels: ['btlespp'],
  });
  // The tenant's first ticket key (it signs at once: there is no key to announce it ahead of).
  const ticketKey = await post('/operatorapi/ticket-keys/rotations', bearer(await keyRotationToken(app, tenant)), {});
  // An address literal, so no DNS is asked; a type nothing here writes, so nothing is ever delivered to it. Paused, so
  // the delivery worker never moves its position while a matrix compares the tables before and after.
  const webhook = await post('/operatorapi/webhooks', operator, { url: `https://93.184.215.14/hooks/${suffix}`, eventTypes: ['webhook.disabled'] });
  const paused = await app.inject({ method: 'PATCH', url: `/operatorapi/webhooks/${webhook.id}`, headers: operator, payload: { enabled: false } });
  if (paused.statusCode !== 200) throw new Error(`pausing the seeded webhook: ${paused.statusCode} ${paused.body}`);
  const claim = await post(`/v1/residents/${resident.id}/claims`, access, {});
  // The access logs of a device of its own (it has none): finished before the matrices compare the tables.
  await post('/operatorapi/mobiledevices', operator, { id: `erased-${suffix}` });
  const started = await app.inject({ method: 'POST', url: '/operatorapi/erasures', headers: operator, payload: { mobileDeviceId: `erased-${suffix}`, accessLogsOnly: true } });
  if (started.statusCode !== 202) throw new Error(`seeding an erasure: ${started.statusCode} ${started.body}`);
  await app.services.erasures.settled();
  // A lockdown's end for the lock group (normal: the seeded lock keeps opening), made by a client holding the scope.
  const lockdowns = bearer(await clientToken(app, await createClient(app, tenant, ['lockdown:manage'])));
  const lockdown = await post('/operatorapi/lockdowns', lockdowns, { scope: { lockGroupId: group.id }, mode: 'normal', reason: 'seed' });
  const job = await app.inject({ method: 'POST', url: '/operatorapi/jobs', headers: operator, payload: { type: 'mobile-devices', items: [{ id: `job-phone-${suffix}` }] } });
  if (job.statusCode !== 202) throw new Error(`seeding a job: ${job.statusCode} ${job.body}`);
  const cancelled = await app.inject({ method: 'DELETE', url: `/operatorapi/jobs/${job.json().id}`, headers: operator });
  if (cancelled.statusCode !== 200) throw new Error(`cancelling the seeded job: ${cancelled.statusCode} ${cancelled.body}`);
  return {
    erasureId: started.json().id,
    tenant,
    claimId: claim.id,
    lockdownId: lockdown.id,
    jobId: job.json().id,
    lockId: lock.id,
    deviceId: device.id,
    ticketId: ticket.id,
    clientId: client.clientId,
    username,
    residentId: resident.id,
    lockGroupId: group.id,
    permissionId: permission.id,
    ticketKeyId: ticketKey.kid,
    webhookId: webhook.id,
  };
}

let accessUsers = 0;

/** An Access API token with exactly `scopes`, through the password grant. */
export async function accessToken(app: App, tenant: TenantFixture, scopes: string[]): Promise<string> {
  const client = await createClient(app, tenant, [...ACCESS_SCOPES]);
  const username = `scoped-${++accessUsers}`;
  await createUser(app, tenant, username, 'long enough pass');
  const response = await passwordGrant(app, client, `${username}@${tenant.name}`, 'long enough pass', scopes.join(' '));
  if (response.statusCode !== 200) throw new Error(`password grant: ${response.body}`);
  return response.json().access_token;
}

/**
 * A token of the API with exactly one scope. A Device API client is bound as its routes expect (docs/api-reference.md 3.7):
 * `tokens:download` to the tenant's device, `sync` to its lock (the trust endpoint answers only the lock's own client,
 * docs/api-reference.md 8.1); `{ bound: false }` gives an unbound `sync` client, which may sync any lock of its tenant (6.2).
 */
/**
 * The token a route's own scope is tried with: `keys:register` on a lock's path needs a client bound to a lock, on a
 * device's path one bound to a device (docs/api-reference.md 11.1).
 */
export const tokenKeyFor = (route: Pick<RouteEntry, 'api' | 'path'>, scope: string): string =>
  route.api === 'deviceapi' && scope === 'keys:register' && route.path.startsWith('/deviceapi/securedobjects/')
    ? 'deviceapi keys:register lock'
    : `${route.api} ${scope}`;

export async function tokenWithScope(
  app: App,
  tenant: TenantFixture,
  api: ApiName,
  scope: string,
  data: Pick<TenantData, 'deviceId' | 'lockId'>,
  { bound = true, boundTo }: { bound?: boolean; boundTo?: 'device' | 'lock' } = {},
): Promise<string> {
  if (api === 'accessapi') return accessToken(app, tenant, [scope]);
  // `keys:register` serves either kind (docs/api-reference.md 11.1): bound to the device unless asked otherwise.
  const kind = boundTo ?? (scope === 'sync' ? 'lock' : scope === 'tokens:download' || scope === 'keys:register' ? 'device' : undefined);
  const binding =
    api !== 'deviceapi' || !bound || kind === undefined ? {} : kind === 'device' ? { mobileDeviceId: data.deviceId } : { securedObjectId: data.lockId };
  const client = await createClient(app, tenant, [scope], binding);
  const response = await tokenRequest(app, client, { grant_type: 'client_credentials', scope });
  if (response.statusCode !== 200) throw new Error(`client credentials for ${scope}: ${response.body}`);
  return response.json().access_token;
}
