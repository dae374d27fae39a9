// Device API fixtures for tests: bound clients, downloads, lock syncs walked to the end, a lock's trust anchors,
// credential checks, and the ticket rows (sealed credential, download stamp, change number) the Device API writes.
import type { LightMyRequestResponse } from 'fastify';
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet, type JWK, type JWTPayload } from 'jose';
import { expect } from 'vitest';
import type { TestApp } from './app.js';
import { bearer, clientToken, createClient, createUser, passwordGrant, type TenantFixture } from './oauth.js';
import { nextLink } from './operator.js';

/** A `tokens:download` token of a client bound to the device (docs/api-reference.md 3.7, 6.1). */
export async function phoneToken(t: TestApp, tenant: TenantFixture, mobileDeviceId: string): Promise<string> {
  return clientToken(t.app, await createClient(t.app, tenant, ['tokens:download'], { mobileDeviceId }));
}

/**
 * A `sync` token of a client bound to the lock (docs/api-reference.md 3.7, 6.2). Asked for `sync` alone: the client also
 * holds `keys:register` (docs/api-reference.md 11.1), and a token carrying it stops working when the lock is deleted
 * (docs/api-reference.md 4.1), where a `sync` token keeps syncing.
 */
export async function lockToken(t: TestApp, tenant: TenantFixture, securedObjectId: string): Promise<string> {
  return clientToken(t.app, await createClient(t.app, tenant, ['sync'], { securedObjectId }), 'sync');
}

/** A token of a client bound to the lock with every scope it holds, `keys:register` included (docs/api-reference.md 11.1). */
export async function lockKeysToken(t: TestApp, tenant: TenantFixture, securedObjectId: string): Promise<string> {
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
  /**
   * Absent, with `credentialAvailableFrom` instead, while the ticket begins beyond one credential lifetime
   * (docs/api-reference.md 8.2); the tests that reach that case read it as optional (test/device/lock-trust.test.ts).
   */
  credential: string;
  credentialAvailableFrom?: number;
  /** The signed revocation list of the ticket's lock (docs/api-reference.md 8.3). */
  revocationList?: string;
  /** The lock's signed state, beside it (docs/api-reference.md 15). */
  lockState?: string;
  accessPermissionId?: string;
  override?: true;
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
  /** The change-log position the lock has reached once it applied the answer. */
  serial: number;
  /** The tenant's ticket key set: on a full sync and after the set changed (docs/api-reference.md 8.1). */
  keys?: { keys: JWK[] };
  /** The lock was deleted; its client syncs what the deletion caused (docs/api-reference.md 4.1). */
  decommissioned?: true;
  /** The lock's effective holder-binding policy (docs/api-reference.md 11.2). */
  holderBinding: 'optional' | 'required';
  /** Phone keys revoked since the cursor (docs/api-reference.md 11.4). */
  revokedKeys: { jkt: string; revocationDate: number }[];
  /** The lock's signed state: on a full sync and after it changed (docs/api-reference.md 15). */
  lockState?: string;
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

/** The access-token JWKS at `/.well-known/jwks.json` (RFC 9068; docs/api-reference.md 8.1: access-token keys only). */
export async function jwks(t: TestApp): Promise<JSONWebKeySet> {
  const response = await t.app.inject({ url: '/.well-known/jwks.json' });
  expect(response.statusCode).toBe(200);
  return response.json();
}

/** What an installer writes into a lock (docs/api-reference.md 8.1). */
export interface LockTrust {
  issuer: string;
  securedObjectId: string;
  keys: { keys: JWK[] };
  maxCredentialLifetime: number;
  /** docs/api-reference.md 11.2: the lock's effective policy, its own key, its starting serial and revocations. */
  holderBinding: 'optional' | 'required';
  keyThumbprint?: string;
  serial: number;
  revoked: string[];
  revokedKeys: string[];
}

/** `GET /deviceapi/securedobjects/{id}/trust` with `token` (a client bound to the lock); fails the test unless 200. */
export async function trustWith(t: TestApp, token: string, securedObjectId: string): Promise<LockTrust> {
  const response = await t.app.inject({ url: `/deviceapi/securedobjects/${encodeURIComponent(securedObjectId)}/trust`, headers: bearer(token) });
  expect(response.statusCode, response.body).toBe(200);
  return response.json();
}

/** The lock's trust anchors, fetched through a new client bound to it (docs/api-reference.md 8.1). */
export async function lockTrust(t: TestApp, tenant: TenantFixture, securedObjectId: string): Promise<LockTrust> {
  return trustWith(t, await lockToken(t, tenant, securedObjectId), securedObjectId);
}

/** The tenant's credential issuer, `{PUBLIC_URL}/tenants/{tenant}` (docs/api-reference.md 8.1). */
export const issuerOf = (t: TestApp, tenant: TenantFixture): string => `${t.config.PUBLIC_URL}/tenants/${tenant.name}`;

/**
 * Verifies a credential as a lock provisioned with its tenant's trust anchors would (docs/api-reference.md 6.3, 8.1, 8.2):
 * the issuer and key set its trust endpoint answers (until the tenant's `jwks.json` is served), `kid` in that set,
 * `typ` ticket+jwt, `aud` the lock, valid at `at`, and lasting no longer than `maxCredentialLifetime`.
 */
export async function verifyCredential(
  t: TestApp,
  tenant: TenantFixture,
  credential: string,
  expected: { securedObjectId: string; at: number },
): Promise<JWTPayload & Record<string, unknown>> {
  const trust = await lockTrust(t, tenant, expected.securedObjectId);
  expect(trust).toMatchObject({ issuer: issuerOf(t, tenant), securedObjectId: expected.securedObjectId });
  const { payload, protectedHeader } = await jwtVerify(credential, createLocalJWKSet(trust.keys as JSONWebKeySet), {
    issuer: trust.issuer,
    audience: expected.securedObjectId,
    typ: 'ticket+jwt',
    currentDate: new Date(expected.at),
  });
  expect(protectedHeader.typ).toBe('ticket+jwt');
  expect(payload.exp! - payload.iat!).toBeLessThanOrEqual(trust.maxCredentialLifetime);
  return payload as JWTPayload & Record<string, unknown>;
}

export interface DeviceTicketRow {
  id: string;
  secured_object_id: string;
  mobile_device_id: string;
  /** The last credential handed out, sealed under SECRETS_KEY (docs/security-cases.md G48). */
  credential_encrypted: Buffer | null;
  credential_kid: string | null;
  credential_issued_at: number | null;
  credential_expires_at: number | null;
  downloaded_at: number | null;
  revoked_at: number | null;
  change_seq: number;
}

const nullableNumber = (value: unknown): number | null => (value === null ? null : Number(value));

/** The tenant's ticket rows with the Device API's columns, in creation order; optionally only `ids`. */
export async function deviceTicketRows(t: TestApp, tenantId: string, ids?: string[]): Promise<DeviceTicketRow[]> {
  const { rows } = await t.database.db.query<DeviceTicketRow>(
    `SELECT id, secured_object_id, mobile_device_id, credential_encrypted, credential_kid, credential_issued_at,
            credential_expires_at, downloaded_at, revoked_at, change_seq FROM tickets
      WHERE tenant_id = $1 AND ($2::uuid[] IS NULL OR id = ANY ($2::uuid[])) ORDER BY created_at, id`,
    [tenantId, ids ?? null],
  );
  return rows.map((row) => ({
    ...row,
    credential_encrypted: row.credential_encrypted === null ? null : Buffer.from(row.credential_encrypted),
    credential_issued_at: nullableNumber(row.credential_issued_at),
    credential_expires_at: nullableNumber(row.credential_expires_at),
    downloaded_at: nullableNumber(row.downloaded_at),
    revoked_at: nullableNumber(row.revoked_at),
    change_seq: Number(row.change_seq),
  }));
}

/** The credential stored for a ticket row, opened with the server's key; null when none is stored. */
export function unsealedCredential(t: TestApp, tenantId: string, row: DeviceTicketRow): string | null {
  return row.credential_encrypted === null ? null : t.app.services.credentials.unseal(tenantId, row.id, row.credential_encrypted);
}

const JWS_TEXT = /eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/;

/**
 * docs/security-cases.md G48: no column of the tickets' rows holds a credential in plain text, neither as text
 * nor as bytes, neither whole nor its payload or signature. `credentials` are the ones handed out for these tickets.
 */
export async function expectNoPlainCredentialStored(t: TestApp, ticketIds: string[], credentials: string[]): Promise<void> {
  const { rows } = await t.database.db.query<Record<string, unknown>>('SELECT * FROM tickets WHERE id = ANY ($1::uuid[])', [ticketIds]);
  expect(rows).toHaveLength(ticketIds.length);
  for (const row of rows) {
    for (const [column, value] of Object.entries(row)) {
      if (value === null) continue;
      const texts =
        value instanceof Uint8Array
          ? [Buffer.from(value).toString('latin1'), Buffer.from(value).toString('utf8')]
          : [typeof value === 'string' ? value : JSON.stringify(value)];
      for (const text of texts) {
        expect(text, `tickets.${column}`).not.toMatch(JWS_TEXT);
        for (const credential of credentials) {
          const [, payload, signature] = credential.split('.');
          expect(text.includes(payload!) || text.includes(signature!), `tickets.${column} holds a credential's payload or signature`).toBe(false);
        }
      }
    }
  }
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
