// Access API fixtures for tests: a tenant with its Access API user, groups and permissions over HTTP, and the
// database rows (tickets, memberships, audit events) they change.
import type { LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import type { TestApp } from './app.js';
import { bearer, clientToken, createClient, createTenant, createUser, passwordGrant, type ClientFixture, type TenantFixture } from './oauth.js';
import { expectNothingChanged } from './database-state.js';
import { HOUR, expectProblem } from './operator.js';

/** Every scope the Access API's routes declare (docs/api-reference.md 3.6, 5). */
export const ACCESS_API_SCOPES = [
  'device-groups:write',
  'device-groups:read',
  'access-permissions:write',
  'access-permissions:read',
  'devices:read',
];

const PASSWORD = 'correct horse battery staple';

/** One tenant as an Access API caller sees it, with the Operator API token that registers its devices and locks. */
export interface AccessTenant {
  tenant: TenantFixture;
  /** Management client token (Operator API, aud operatorapi). */
  operator: string;
  client: ClientFixture;
  userId: string;
  login: string;
  /** Password-grant token with every Access API scope (aud accessapi). */
  token: string;
  /** The audit actor of requests made with `token`. */
  actor: string;
}

let tenants = 0;

/** A fresh tenant (so counts and pages see only what the test made), its Access API client, user and tokens. */
export async function accessTenant(t: TestApp, label = 'access'): Promise<AccessTenant> {
  tenants += 1;
  const tenant = await createTenant(t.app, `${label}-${tenants}`);
  const operator = await clientToken(t.app, tenant);
  const client = await createClient(t.app, tenant, ACCESS_API_SCOPES);
  const user = await createUser(t.app, tenant, 'manager', PASSWORD);
  const login = `manager@${tenant.name}`;
  const fixture = { tenant, operator, client, userId: user.id, login, token: '', actor: `user:${user.id}` };
  fixture.token = await userToken(t, fixture);
  return fixture;
}

/** A password-grant access token for the tenant's user, with `scope` (default: all the client's Access API scopes). */
export async function userToken(t: TestApp, fixture: Pick<AccessTenant, 'client' | 'login'>, scope?: string): Promise<string> {
  const response = await passwordGrant(t.app, fixture.client, fixture.login, PASSWORD, scope);
  expect(response.statusCode, response.body).toBe(200);
  return response.json().access_token as string;
}

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface AccessRequest {
  method: Method;
  url: string;
  payload?: object;
  headers?: Record<string, string>;
}

export function v1(t: TestApp, token: string | null, request: AccessRequest): Promise<LightMyRequestResponse> {
  return t.app.inject({
    method: request.method,
    url: request.url,
    headers: { ...(token ? bearer(token) : {}), ...request.headers },
    ...(request.payload !== undefined ? { payload: request.payload } : {}),
  });
}

export interface ResidentBody {
  id: string;
  name: string;
  mobileDeviceIds: string[];
  creationDate: number;
}

export interface LockGroupBody {
  id: string;
  name: string;
  securedObjectIds: string[];
  creationDate: number;
}

export interface PermissionBody {
  id: string;
  residentId: string;
  lockGroupId: string;
  beginDate: number;
  endDate: number;
  commands: string[];
  channels: string[];
  creationDate: number;
  tokenCount: number;
}

export async function resident(t: TestApp, token: string, name: string, mobileDeviceIds?: string[]): Promise<ResidentBody> {
  const response = await v1(t, token, { method: 'POST', url: '/v1/residents', payload: { name, ...(mobileDeviceIds ? { mobileDeviceIds } : {}) } });
  expect(response.statusCode, response.body).toBe(201);
  return response.json();
}

export async function lockGroup(t: TestApp, token: string, name: string, securedObjectIds?: string[]): Promise<LockGroupBody> {
  const response = await v1(t, token, { method: 'POST', url: '/v1/lock-groups', payload: { name, ...(securedObjectIds ? { securedObjectIds } : {}) } });
  expect(response.statusCode, response.body).toBe(201);
  return response.json();
}

/** A well-formed permission body valid for the next hour of the app's clock. */
export function permissionBody(t: TestApp, residentId: string, lockGroupId: string, overrides: object = {}) {
  const now = t.app.services.clock();
  return { residentId, lockGroupId, beginDate: now, endDate: now + HOUR, commands: ['open'], channels: ['btlespp'], ...overrides };
}

export function grant(t: TestApp, token: string, body: object, headers: Record<string, string> = {}) {
  return v1(t, token, { method: 'POST', url: '/v1/access-permissions', payload: body, headers });
}

export async function permission(t: TestApp, token: string, residentId: string, lockGroupId: string, overrides: object = {}): Promise<PermissionBody> {
  const response = await grant(t, token, permissionBody(t, residentId, lockGroupId, overrides));
  expect(response.statusCode, response.body).toBe(201);
  return response.json();
}

/** PUT or DELETE of a member: `/v1/residents/{id}/mobiledevices/{member}` or `/v1/lock-groups/{id}/securedobjects/{member}`. */
export function memberUrl(kind: 'residents' | 'lock-groups', id: string, memberId: string): string {
  return `/v1/${kind}/${id}/${kind === 'residents' ? 'mobiledevices' : 'securedobjects'}/${encodeURIComponent(memberId)}`;
}

export async function join(t: TestApp, token: string, kind: 'residents' | 'lock-groups', id: string, memberId: string) {
  const response = await v1(t, token, { method: 'PUT', url: memberUrl(kind, id, memberId) });
  expect(response.statusCode, response.body).toBe(200);
  return response.json();
}

export async function leave(t: TestApp, token: string, kind: 'residents' | 'lock-groups', id: string, memberId: string) {
  const response = await v1(t, token, { method: 'DELETE', url: memberUrl(kind, id, memberId) });
  expect(response.statusCode, response.body).toBe(200);
  return response.json();
}

export interface TicketRow {
  id: string;
  mobile_device_id: string;
  secured_object_id: string;
  access_permission_id: string | null;
  revoked_at: number | null;
  created_at: number;
  begin_date: number;
  end_date: number;
  commands: string[];
  channels: string[];
}

/** The tenant's ticket rows, optionally of one permission, ordered by device, lock and creation. */
export async function ticketRows(t: TestApp, tenantId: string, filter: { accessPermissionId?: string; mobileDeviceId?: string } = {}): Promise<TicketRow[]> {
  const { rows } = await t.database.db.query<TicketRow>(
    `SELECT id, mobile_device_id, secured_object_id, access_permission_id, revoked_at, created_at, begin_date, end_date, commands, channels
       FROM tickets
      WHERE tenant_id = $1 AND ($2::uuid IS NULL OR access_permission_id = $2::uuid) AND ($3::text IS NULL OR mobile_device_id = $3)
      ORDER BY mobile_device_id, secured_object_id, created_at, id`,
    [tenantId, filter.accessPermissionId ?? null, filter.mobileDeviceId ?? null],
  );
  return rows;
}

export const live = (rows: TicketRow[]) => rows.filter((row) => row.revoked_at === null);
export const revoked = (rows: TicketRow[]) => rows.filter((row) => row.revoked_at !== null);

/** `device|lock` for each row, sorted: compares sets of pairs and shows duplicates. */
export const pairsOf = (rows: TicketRow[]) => rows.map((row) => `${row.mobile_device_id}|${row.secured_object_id}`).sort();

/** Every (device, lock) pair of the two lists, sorted like `pairsOf`. */
export const product = (devices: string[], locks: string[]) => devices.flatMap((d) => locks.map((l) => `${d}|${l}`)).sort();

/**
 * For each request: 401 without a token, 401 with an Operator API token (aud operatorapi is not accepted on /v1,
 * docs/api-reference.md 3.4), 403 with a token lacking the declared scope (RFC 6750 3.1). Nothing changes.
 */
export async function expectAccessAuthChecks(
  t: TestApp,
  tokens: { operator: string; wrongScope: string },
  requests: (AccessRequest & { scope: string })[],
): Promise<void> {
  await expectNothingChanged(t, async () => {
    for (const { scope, ...request } of requests) {
      const label = `${request.method} ${request.url}`;
      const anonymous = await v1(t, null, request);
      expectProblem(anonymous, 401);
      expect(anonymous.headers['www-authenticate'], label).toBe('Bearer realm="accessapi"');

      const operator = await v1(t, tokens.operator, request);
      expectProblem(operator, 401);
      expect(operator.headers['www-authenticate'], label).toBe(
        'Bearer realm="accessapi", error="invalid_token", error_description="the access token is for another API"',
      );

      const forbidden = await v1(t, tokens.wrongScope, request);
      expect(expectProblem(forbidden, 403).detail, label).toContain(scope);
      expect(forbidden.headers['www-authenticate'], label).toBe(`Bearer realm="accessapi", error="insufficient_scope", scope="${scope}"`);
    }
  });
}

/** The tenant's audit events as [action, target], in the order they were appended. */
export async function auditTrail(t: TestApp, tenantId: string, filter: { requestId?: string; targetPrefix?: string } = {}) {
  const { rows } = await t.database.db.query<{ action: string; target: string; actor: string; request_id: string | null; time: number }>(
    `SELECT action, target, actor, request_id, time FROM audit_events
      WHERE tenant_id = $1 AND ($2::text IS NULL OR request_id = $2) AND ($3::text IS NULL OR starts_with(target, $3))
      ORDER BY seq`,
    [tenantId, filter.requestId ?? null, filter.targetPrefix ?? null],
  );
  return rows;
}
