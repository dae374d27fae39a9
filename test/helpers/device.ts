// Device API fixtures for tests: bound clients, downloads, lock syncs walked to the end, credential checks, and
// the ticket rows (credential, download stamp, change number) the Device API reads and writes.
import type { LightMyRequestResponse } from 'fastify';
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet, type JWTPayload } from 'jose';
import { expect } from 'vitest';
import type { TestApp } from './app.js';
import { bearer, clientToken, createClient, createUser, passwordGrant, type TenantFixture } from './oauth.js';
import { nextLink } from './operator.js';

/** A `tokens:download` token of a client bound to the device (contract 3.7, 6.1). */
export async function phoneToken(t: TestApp, tenant: TenantFixture, mobileDeviceId: string): Promise<string> {
  return clientToken(t.app, await createClient(t.app, tenant, ['tokens:download'], { mobileDeviceId }));
}

/** A `sync` token of a client bound to the lock (contract 3.7, 6.2). */
export async function lockToken(t: TestApp, tenant: TenantFixture, securedObjectId: string): Promise<string> {
  return clientToken(t.app, await createClient(t.app, tenant, ['sync'], { securedObjectId }));
}

export function downloadRequest(t: TestApp, token: string, mobileDeviceId: string, query = '', headers: Record<string, string> = {}) {
  return t.app.inject({ url: `/deviceapi/mobiledevices/${encodeURIComponent(mobileDeviceId)}/tickets${query}`, headers: { ...bearer(token), ...headers } });
}

export interface DownloadedTicket {
  id: string;
  securedObjectId: string;
  mobileDeviceId: string;
  beginDate: number;
  endDate: number;
  creationDate: number;
  commands: string[];
  channels: string[];
  status: string;
  downloadDate: number;
  credential: string;
  accessPermissionId?: string;
}

/** One page of the device's tickets; fails the test unless it answers 200. */
export async function download(t: TestApp, token: string, mobileDeviceId: string, query = ''): Promise<DownloadedTicket[]> {
  const response = await downloadRequest(t, token, mobileDeviceId, query);
  expect(response.statusCode, response.body).toBe(200);
  return response.json();
}

export function syncUrl(securedObjectId: string, cursor?: string, limit?: number): string {
  const query = new URLSearchParams();
  if (limit !== undefined) query.set('limit', String(limit));
  if (cursor !== undefined) query.set('cursor', cursor);
  const search = query.toString();
  return `/deviceapi/securedobjects/${encodeURIComponent(securedObjectId)}/sync${search ? `?${search}` : ''}`;
}

export interface SyncBody {
  tokens: { id: string; securedObjectId: string; status: string; [field: string]: unknown }[];
  revocations: { tokenId: string; revocationDate: number }[];
  cursor: string;
}

export function syncRequest(t: TestApp, token: string, securedObjectId: string, cursor?: string, limit?: number): Promise<LightMyRequestResponse> {
  return t.app.inject({ url: syncUrl(securedObjectId, cursor, limit), headers: bearer(token) });
}

/** One sync answer; fails the test unless it answers 200. */
export async function sync(t: TestApp, token: string, securedObjectId: string, cursor?: string, limit?: number): Promise<SyncBody> {
  const response = await syncRequest(t, token, securedObjectId, cursor, limit);
  expect(response.statusCode, response.body).toBe(200);
  return response.json();
}

export interface SyncWalk {
  pages: SyncBody[];
  tokenIds: string[];
  revokedIds: string[];
  cursor: string;
}

/**
 * Syncs from `cursor` following `Link: rel="next"` until the server has nothing more, checking on the way that the
 * link names the same cursor as the body. Answers every page, and the token and revocation ids in order.
 */
export async function syncAll(t: TestApp, token: string, securedObjectId: string, cursor?: string, limit?: number): Promise<SyncWalk> {
  const pages: SyncBody[] = [];
  let url: string | undefined = syncUrl(securedObjectId, cursor, limit);
  while (url) {
    const response = await t.app.inject({ url, headers: bearer(token) });
    expect(response.statusCode, response.body).toBe(200);
    const body = response.json() as SyncBody;
    pages.push(body);
    url = nextLink(response);
    if (url) expect(new URL(url, 'http://x').searchParams.get('cursor')).toBe(body.cursor);
    if (pages.length > 1000) throw new Error('the sync never ends');
  }
  return {
    pages,
    tokenIds: pages.flatMap((page) => page.tokens.map((ticket) => ticket.id)),
    revokedIds: pages.flatMap((page) => page.revocations.map((revocation) => revocation.tokenId)),
    cursor: pages[pages.length - 1]!.cursor,
  };
}

export async function jwks(t: TestApp): Promise<JSONWebKeySet> {
  const response = await t.app.inject({ url: '/.well-known/jwks.json' });
  expect(response.statusCode).toBe(200);
  return response.json();
}

/** Verifies a credential as a lock would (contract 6.3): by kid against the JWKS, typ ticket+jwt, for its lock. */
export async function verifyCredential(
  t: TestApp,
  credential: string,
  expected: { securedObjectId: string; at: number },
): Promise<JWTPayload & Record<string, unknown>> {
  const { payload, protectedHeader } = await jwtVerify(credential, createLocalJWKSet(await jwks(t)), {
    issuer: t.config.PUBLIC_URL,
    audience: expected.securedObjectId,
    typ: 'ticket+jwt',
    currentDate: new Date(expected.at),
  });
  expect(protectedHeader.typ).toBe('ticket+jwt');
  return payload as JWTPayload & Record<string, unknown>;
}

export interface DeviceTicketRow {
  id: string;
  secured_object_id: string;
  mobile_device_id: string;
  credential: string | null;
  downloaded_at: number | null;
  revoked_at: number | null;
  change_seq: number;
}

/** The tenant's ticket rows with the Device API's columns, in creation order; optionally only `ids`. */
export async function deviceTicketRows(t: TestApp, tenantId: string, ids?: string[]): Promise<DeviceTicketRow[]> {
  const { rows } = await t.database.db.query<DeviceTicketRow>(
    `SELECT id, secured_object_id, mobile_device_id, credential, downloaded_at, revoked_at, change_seq FROM tickets
      WHERE tenant_id = $1 AND ($2::uuid[] IS NULL OR id = ANY ($2::uuid[])) ORDER BY created_at, id`,
    [tenantId, ids ?? null],
  );
  return rows.map((row) => ({ ...row, change_seq: Number(row.change_seq) }));
}

/** The tenant's change counter (0 before its first ticket-writing transaction). */
export async function changeCounter(t: TestApp, tenantId: string): Promise<number> {
  const { rows } = await t.database.db.query<{ last_seq: number }>('SELECT last_seq FROM tenant_change_counters WHERE tenant_id = $1', [tenantId]);
  return rows[0] ? Number(rows[0].last_seq) : 0;
}

/** How many audit events of `action` the tenant has for `target`. */
export async function countEvents(t: TestApp, tenantId: string, action: string, target: string): Promise<number> {
  const { rows } = await t.database.db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM audit_events WHERE tenant_id = $1 AND action = $2 AND target = $3',
    [tenantId, action, target],
  );
  return rows[0]!.n;
}

/** base64url JSON of a compact JWS's payload, without verifying it. */
export function payloadOf(jws: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(jws.split('.')[1]!, 'base64url').toString('utf8')) as Record<string, unknown>;
}

let users = 0;

/** A password-grant (Access API) token of a new user of the tenant, from a new client holding `scopes`. */
export async function accessToken(t: TestApp, tenant: TenantFixture, scopes: string[]): Promise<string> {
  users += 1;
  const username = `device-test-${users}`;
  const password = 'correct horse battery staple';
  await createUser(t.app, tenant, username, password);
  const response = await passwordGrant(t.app, await createClient(t.app, tenant, scopes), `${username}@${tenant.name}`, password);
  expect(response.statusCode, response.body).toBe(200);
  return response.json().access_token as string;
}
