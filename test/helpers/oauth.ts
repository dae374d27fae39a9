// OAuth fixtures for tests: tenants with their management client, more clients, users, and access tokens.
import type { App } from '../../src/app.js';

export interface TenantFixture {
  tenantId: string;
  name: string;
  clientId: string;
  clientSecret: string;
}

export interface ClientFixture {
  clientId: string;
  clientSecret: string;
}

const cli = (tenantId: string) => ({ tenantId, actor: 'cli', requestId: null });

export async function createTenant(app: App, name: string): Promise<TenantFixture> {
  const created = await app.services.tenants.create(name);
  return { tenantId: created.tenant.id, name, clientId: created.clientId, clientSecret: created.clientSecret };
}

export async function createClient(
  app: App,
  tenant: TenantFixture,
  scopes: string[],
  binding: { mobileDeviceId?: string; securedObjectId?: string } = {},
): Promise<ClientFixture> {
  const client = await app.services.clients.create(cli(tenant.tenantId), { name: 'test client', scopes, ...binding });
  return { clientId: client.clientId, clientSecret: client.clientSecret };
}

export async function createUser(app: App, tenant: TenantFixture, username: string, password: string) {
  return app.services.users.create(cli(tenant.tenantId), username, password);
}

export function basic(clientId: string, clientSecret: string): string {
  const encode = (value: string) => encodeURIComponent(value).replaceAll('%20', '+');
  return `Basic ${Buffer.from(`${encode(clientId)}:${encode(clientSecret)}`).toString('base64')}`;
}

export function form(fields: Record<string, string>): string {
  return new URLSearchParams(fields).toString();
}

/** POST /oauth/token (or /oauth2/token) with Basic client authentication. */
export function tokenRequest(app: App, client: ClientFixture, fields: Record<string, string>, path = '/oauth/token') {
  return app.inject({
    method: 'POST',
    url: path,
    headers: { authorization: basic(client.clientId, client.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
    payload: form(fields),
  });
}

/** An access token by client credentials; throws when the grant fails. */
export async function clientToken(app: App, client: ClientFixture, scope?: string): Promise<string> {
  const response = await tokenRequest(app, client, { grant_type: 'client_credentials', ...(scope ? { scope } : {}) });
  if (response.statusCode !== 200) throw new Error(`token request failed: ${response.statusCode} ${response.body}`);
  return response.json().access_token as string;
}

/**
 * A token of a client made for ticket-key rotations: `keys:rotate` is in no default set (docs/security-cases.md H50),
 * so the tenant's management client cannot rotate.
 */
export async function keyRotationToken(app: App, tenant: TenantFixture): Promise<string> {
  return clientToken(app, await createClient(app, tenant, ['keys:rotate']));
}

/** The password grant for `username@tenant`. */
export function passwordGrant(app: App, client: ClientFixture, login: string, password: string, scope?: string) {
  return tokenRequest(app, client, { grant_type: 'password', username: login, password, ...(scope ? { scope } : {}) }, '/oauth2/token');
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
