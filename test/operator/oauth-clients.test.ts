// /operatorapi/oauthclients (docs/api-reference.md 3.7): create, list, read, delete, rotate; scope, tenant and audit checks.
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { bearer, clientToken, createClient, createTenant, tokenRequest, type TenantFixture } from '../helpers/oauth.js';
import { twoTenants } from '../helpers/tenants.js';

describe('OAuth client management', () => {
  let t: TestApp;
  let acme: TenantFixture;
  let token: string;
  let otherToken: string;

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4' });
    ({ acme, token, otherToken } = await twoTenants(t));
  });
  afterAll(async () => {
    await t.close();
  });

  const create = (body: unknown, auth = token) =>
    t.app.inject({ method: 'POST', url: '/operatorapi/oauthclients', headers: bearer(auth), payload: body as object });

  async function auditActions(target: string): Promise<string[]> {
    const { rows } = await t.database.db.query<{ action: string }>(
      'SELECT action FROM audit_events WHERE target = $1 ORDER BY seq',
      [target],
    );
    return rows.map((row) => row.action);
  }

  it('creates a client whose secret works once shown and is never shown again', async () => {
    const response = await create({ name: 'backend', scopes: ['tokens:read', 'devices:read'] });
    expect(response.statusCode).toBe(201);
    const body = response.json();
    expect(body).toEqual({
      clientId: expect.any(String),
      clientSecret: expect.any(String),
      name: 'backend',
      scopes: ['tokens:read', 'devices:read'],
      creationDate: expect.any(Number),
    });
    expect(Buffer.from(body.clientSecret, 'base64url').length).toBeGreaterThanOrEqual(32);
    expect(response.headers.location).toBe(`/operatorapi/oauthclients/${body.clientId}`);

    const granted = await tokenRequest(t.app, body, { grant_type: 'client_credentials' });
    expect(granted.statusCode).toBe(200);
    expect(granted.json().scope).toBe('tokens:read devices:read');

    const read = await t.app.inject({ url: `/operatorapi/oauthclients/${body.clientId}`, headers: bearer(token) });
    expect(read.statusCode).toBe(200);
    expect(read.json()).toEqual({ clientId: body.clientId, name: 'backend', scopes: ['tokens:read', 'devices:read'], creationDate: body.creationDate });
    expect(read.body).not.toContain(body.clientSecret);

    const { rows } = await t.database.db.query<{ secret_hash: Buffer }>('SELECT secret_hash FROM oauth_clients WHERE client_id = $1', [body.clientId]);
    expect(Buffer.from(rows[0]!.secret_hash).toString('utf8')).not.toContain(body.clientSecret);
    expect(await auditActions(`client:${body.clientId}`)).toEqual(['client.created']);
  });

  it('creates a client bound to a mobile device that exists in the tenant', async () => {
    const unknown = await create({ name: 'phone', scopes: ['tokens:download'], mobileDeviceId: 'phone-1' });
    expect(unknown.statusCode).toBe(422);
    const registered = await t.app.inject({ method: 'POST', url: '/operatorapi/mobiledevices', headers: bearer(token), payload: { id: 'phone-1' } });
    expect(registered.statusCode).toBe(201);
    const response = await create({ name: 'phone', scopes: ['tokens:download'], mobileDeviceId: 'phone-1' });
    expect(response.statusCode).toBe(201);
    expect(response.json()).toMatchObject({ mobileDeviceId: 'phone-1' });
    expect(response.json()).not.toHaveProperty('securedObjectId');
  });

  it('refuses malformed bodies and unknown scopes with 400 naming the field', async () => {
    const missing = await create({ scopes: 'tokens:read', extra: 1 });
    expect(missing.statusCode).toBe(400);
    expect(missing.headers['content-type']).toContain('application/problem+json');
    const fields = missing.json().errors.map((error: { field: string }) => error.field);
    expect(fields).toEqual(expect.arrayContaining(['name', 'scopes', 'extra']));

    const unknown = await create({ name: 'x', scopes: ['tokens:read', 'doors:kick'] });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().detail).toContain('doors:kick');

    const both = await create({ name: 'x', scopes: ['sync'], mobileDeviceId: 'a', securedObjectId: 'b' });
    expect(both.statusCode).toBe(422);

    const { rows } = await t.database.db.query<{ n: number }>("SELECT count(*)::int AS n FROM oauth_clients WHERE name = 'x'");
    expect(rows[0]!.n).toBe(0);
  });

  it('needs a token (401) with the clients:manage scope (403)', async () => {
    const none = await t.app.inject({ url: '/operatorapi/oauthclients' });
    expect(none.statusCode).toBe(401);
    expect(none.headers['www-authenticate']).toBe('Bearer realm="operatorapi"');

    const limited = await createClient(t.app, acme, ['tokens:read']);
    const limitedToken = await clientToken(t.app, limited);
    const forbidden = await t.app.inject({ url: '/operatorapi/oauthclients', headers: bearer(limitedToken) });
    expect(forbidden.statusCode).toBe(403);
    expect(forbidden.headers['www-authenticate']).toBe('Bearer realm="operatorapi", error="insufficient_scope", scope="clients:manage"');
    expect(forbidden.json()).toMatchObject({ status: 403, requestId: forbidden.headers['x-request-id'] });
  });

  it("answers another tenant's client as missing (404) and changes nothing", async () => {
    const created = (await create({ name: 'acme only', scopes: ['tokens:read'] })).json();
    for (const request of [
      { method: 'GET' as const, url: `/operatorapi/oauthclients/${created.clientId}` },
      { method: 'DELETE' as const, url: `/operatorapi/oauthclients/${created.clientId}` },
      { method: 'POST' as const, url: `/operatorapi/oauthclients/${created.clientId}/secret` },
    ]) {
      const response = await t.app.inject({ ...request, headers: bearer(otherToken) });
      expect(response.statusCode).toBe(404);
      expect(response.json().type).toContain('not-found');
    }
    const stillThere = await tokenRequest(t.app, created, { grant_type: 'client_credentials' });
    expect(stillThere.statusCode).toBe(200);
    const list = await t.app.inject({ url: '/operatorapi/oauthclients?limit=1000', headers: bearer(otherToken) });
    expect(list.json().map((c: { clientId: string }) => c.clientId)).not.toContain(created.clientId);
  });

  it('rotates the secret: the new one works, the old one does not', async () => {
    const created = (await create({ name: 'rotating', scopes: ['tokens:read'] })).json();
    // Used once before, so this instance holds the client (and its old secret) in its cache.
    expect((await tokenRequest(t.app, created, { grant_type: 'client_credentials' })).statusCode).toBe(200);
    const rotated = await t.app.inject({ method: 'POST', url: `/operatorapi/oauthclients/${created.clientId}/secret`, headers: bearer(token) });
    expect(rotated.statusCode).toBe(200);
    const next = rotated.json();
    expect(next.clientSecret).not.toBe(created.clientSecret);
    expect((await tokenRequest(t.app, created, { grant_type: 'client_credentials' })).statusCode).toBe(401);
    expect((await tokenRequest(t.app, next, { grant_type: 'client_credentials' })).statusCode).toBe(200);
    expect(await auditActions(`client:${created.clientId}`)).toEqual(['client.created', 'client.secret_rotated']);
  });

  it('deletes a client: 204, its tokens stop working, and a second delete is 404', async () => {
    const created = (await create({ name: 'doomed', scopes: ['tokens:read', 'clients:manage'] })).json();
    const doomedToken = await clientToken(t.app, created);
    expect((await t.app.inject({ url: '/operatorapi/oauthclients', headers: bearer(doomedToken) })).statusCode).toBe(200);

    const deleted = await t.app.inject({ method: 'DELETE', url: `/operatorapi/oauthclients/${created.clientId}`, headers: bearer(token) });
    expect(deleted.statusCode).toBe(204);
    expect(deleted.body).toBe('');
    expect((await t.app.inject({ url: '/operatorapi/oauthclients', headers: bearer(doomedToken) })).statusCode).toBe(401);
    expect((await tokenRequest(t.app, created, { grant_type: 'client_credentials' })).json().error).toBe('invalid_client');
    const again = await t.app.inject({ method: 'DELETE', url: `/operatorapi/oauthclients/${created.clientId}`, headers: bearer(token) });
    expect(again.statusCode).toBe(404);
    expect(await auditActions(`client:${created.clientId}`)).toEqual(['client.created', 'client.deleted']);
  });

  it('pages the list with a Link header and a stable cursor', async () => {
    const pageTenant = await createTenant(t.app, 'paging');
    for (let i = 0; i < 4; i++) await createClient(t.app, pageTenant, ['tokens:read']);
    const pageToken = await clientToken(t.app, pageTenant);
    const seen: string[] = [];
    let url: string | undefined = '/operatorapi/oauthclients?limit=2';
    while (url) {
      const response: LightMyRequestResponse = await t.app.inject({ url, headers: bearer(pageToken) });
      expect(response.statusCode).toBe(200);
      seen.push(...response.json().map((c: { clientId: string }) => c.clientId));
      url = /<([^>]+)>; rel="next"/.exec(String(response.headers.link ?? ''))?.[1];
    }
    expect(seen).toHaveLength(6); // the management client, the console's (docs/api-reference.md 3.8) and four more
    expect(new Set(seen).size).toBe(6);

    const badCursor = await t.app.inject({ url: '/operatorapi/oauthclients?cursor=bogus', headers: bearer(pageToken) });
    expect(badCursor.statusCode).toBe(400);
    const badLimit = await t.app.inject({ url: '/operatorapi/oauthclients?limit=1001', headers: bearer(pageToken) });
    expect(badLimit.statusCode).toBe(400);
  });
});
