// Operator API fixtures for tests: locks, devices and tickets over HTTP, problems, pages, and the auth checks.
import type { LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import type { TestApp } from './app.js';
import { expectNothingChanged } from './database-state.js';
import { bearer } from './oauth.js';

export const LOCK_UUID = '7d8a0c1e-4b7f-4d5e-9a41-3c2b1f0e9d8c';
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const HOUR = 3_600_000;

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

export interface OperatorRequest {
  method: Method;
  url: string;
  payload?: object;
  headers?: Record<string, string>;
}

export function call(t: TestApp, token: string | null, request: OperatorRequest) {
  return t.app.inject({
    method: request.method,
    url: request.url,
    headers: { ...(token ? bearer(token) : {}), ...request.headers },
    ...(request.payload !== undefined ? { payload: request.payload } : {}),
  });
}

export function registerLock(t: TestApp, token: string, body: object, headers: Record<string, string> = {}) {
  return call(t, token, { method: 'POST', url: '/operatorapi/securedobjects', payload: body, headers });
}

export function registerDevice(t: TestApp, token: string, body: object, headers: Record<string, string> = {}) {
  return call(t, token, { method: 'POST', url: '/operatorapi/mobiledevices', payload: body, headers });
}

export function issueTicket(t: TestApp, token: string, body: object, headers: Record<string, string> = {}) {
  return call(t, token, { method: 'POST', url: '/operatorapi/tickets', payload: body, headers });
}

/** Registers a lock (btlespp) and answers its body; fails the test when the server refuses. */
export async function lock(t: TestApp, token: string, id: string, channels = ['btlespp']): Promise<{ id: string }> {
  const response = await registerLock(t, token, { id, channels, localName: `LOCK-${id}`, uuid: LOCK_UUID });
  expect(response.statusCode, response.body).toBe(201);
  return response.json();
}

export async function device(t: TestApp, token: string, id: string, name?: string): Promise<{ id: string }> {
  const response = await registerDevice(t, token, { id, ...(name ? { name } : {}) });
  expect(response.statusCode, response.body).toBe(201);
  return response.json();
}

/** A well-formed ticket body valid for the next hour of the app's clock. */
export function ticketBody(t: TestApp, securedObjectId: string, mobileDeviceId: string, overrides: object = {}) {
  const now = t.app.services.clock();
  return { securedObjectId, mobileDeviceId, beginDate: now, endDate: now + HOUR, commands: ['open'], channels: ['btlespp'], ...overrides };
}

export interface TicketBody {
  id: string;
  securedObjectId: string;
  mobileDeviceId: string;
  status: string;
  revocationDate?: number;
  [field: string]: unknown;
}

export async function ticket(t: TestApp, token: string, securedObjectId: string, mobileDeviceId: string, overrides: object = {}): Promise<TicketBody> {
  const response = await issueTicket(t, token, ticketBody(t, securedObjectId, mobileDeviceId, overrides));
  expect(response.statusCode, response.body).toBe(201);
  return response.json();
}

/** The status, the problem+json content type, and the requestId equal to X-Request-Id. */
export function expectProblem(response: LightMyRequestResponse, status: number): Record<string, unknown> & { errors?: { field: string; message: string }[]; detail?: string } {
  expect(response.statusCode, response.body).toBe(status);
  expect(response.headers['content-type']).toContain('application/problem+json');
  const body = response.json();
  expect(body).toMatchObject({ status, type: expect.any(String), title: expect.any(String), requestId: response.headers['x-request-id'] });
  expect(response.body).not.toMatch(/\bat .*\.(ts|js):\d+|SELECT|INSERT/);
  return body;
}

/** The fields a 400 or 422 problem names, sorted. */
export function fieldsOf(response: LightMyRequestResponse): string[] {
  const errors = (response.json().errors ?? []) as { field: string }[];
  return errors.map((error) => error.field).sort();
}

export function nextLink(response: LightMyRequestResponse): string | undefined {
  return /<([^>]+)>; rel="next"/.exec(String(response.headers.link ?? ''))?.[1];
}

/** Follows `Link: rel="next"` from `url` to the last page; answers every page's items. */
export async function walk<T = { id: string }>(t: TestApp, token: string, url: string): Promise<{ pages: T[][]; items: T[] }> {
  const pages: T[][] = [];
  let next: string | undefined = url;
  while (next) {
    const response = await call(t, token, { method: 'GET', url: next });
    expect(response.statusCode, response.body).toBe(200);
    pages.push(response.json());
    next = nextLink(response);
    if (pages.length > 1000) throw new Error('the pages never end');
  }
  return { pages, items: pages.flat() };
}

/** 401 without a token and 403 with a token lacking the route's scope, for each request; nothing changes. */
export async function expectAuthChecks(t: TestApp, wrongScopeToken: string, requests: (OperatorRequest & { scope: string })[]) {
  await expectNothingChanged(t, async () => {
    for (const { scope, ...request } of requests) {
      const anonymous = await call(t, null, request);
      expectProblem(anonymous, 401);
      expect(anonymous.headers['www-authenticate'], `${request.method} ${request.url}`).toBe('Bearer realm="operatorapi"');

      const forbidden = await call(t, wrongScopeToken, request);
      expectProblem(forbidden, 403);
      expect(forbidden.headers['www-authenticate'], `${request.method} ${request.url}`).toBe(
        `Bearer realm="operatorapi", error="insufficient_scope", scope="${scope}"`,
      );
    }
  });
}

/**
 * The audit events matching `where`, each tenant's in its sequence (`seq`, docs/api-reference.md 7.5). Not by `id`: on
 * Citus a row inserted on a worker (a call Citus runs there, as db distribute has it for issue_tickets) takes its id
 * from that worker's range of the sequence, far above the coordinator's.
 */
export async function auditEvents(t: TestApp, where: { target?: string; requestId?: string; tenantId?: string }) {
  const conditions: string[] = [];
  const params: string[] = [];
  for (const [column, value] of [
    ['target', where.target],
    ['request_id', where.requestId],
    ['tenant_id', where.tenantId],
  ] as const) {
    if (value === undefined) continue;
    params.push(value);
    conditions.push(`${column} = $${params.length}`);
  }
  const { rows } = await t.database.db.query<{ tenant_id: string; time: number; actor: string; action: string; target: string; request_id: string | null }>(
    `SELECT tenant_id, time, actor, action, target, request_id FROM audit_events
      ${conditions.length ? `WHERE ${conditions.join(' AND ')}` : ''} ORDER BY tenant_id, seq`,
    params,
  );
  return rows;
}

/** Asserts a problem with this status and answers the fields its `errors` name, sorted. */
export function problemFields(response: LightMyRequestResponse, status: number): string[] {
  expectProblem(response, status);
  return fieldsOf(response);
}
