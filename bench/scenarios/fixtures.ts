// Set-up steps the Operator API scenarios share: a tenant (CLI), its access token, a lock, a device, a ticket.
import { randomUUID } from 'node:crypto';
import { basicAuthorization, newTicketBody } from '../requests.js';
import type { ScenarioContext } from '../types.js';

export interface TenantCredentials {
  tenant: string;
  clientId: string;
  clientSecret: string;
}

/** `tenant create NAME --json` (docs/api-reference.md 2): the tenant and its management client. */
export async function createTenant(context: ScenarioContext, name: string): Promise<TenantCredentials> {
  return JSON.parse(await context.cli(['tenant', 'create', name, '--json'])) as TenantCredentials;
}

/** Fails the scenario's set-up with the answer when a request did not get the expected status. */
async function expectStatus(
  context: ScenarioContext,
  spec: Parameters<ScenarioContext['request']>[0],
  status: number,
): Promise<{ status: number; headers: Headers; body: unknown }> {
  const response = await context.request(spec);
  if (response.status !== status) {
    throw new Error(`${spec.method} ${spec.path} answered ${response.status}, not ${status}: ${JSON.stringify(response.body)}`);
  }
  return response;
}

/** An access token from `POST /oauth/token` (client credentials, HTTP Basic, every scope of the client). */
export async function accessToken(
  context: ScenarioContext,
  credentials: Pick<TenantCredentials, 'clientId' | 'clientSecret'>,
): Promise<string> {
  const response = await expectStatus(
    context,
    {
      url: context.appUrl,
      method: 'POST',
      path: '/oauth/token',
      headers: {
        authorization: basicAuthorization(credentials.clientId, credentials.clientSecret),
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: 'grant_type=client_credentials',
    },
    200,
  );
  return (response.body as { access_token: string }).access_token;
}

export interface OperatorFixture {
  credentials: TenantCredentials;
  /** `authorization: Bearer …` for the Operator API. */
  headers: Record<string, string>;
  tenantId: string;
  securedObjectId: string;
  mobileDeviceId: string;
}

/** A tenant with a token, one secured object (channel btlespp) and one mobile device, made through the API. */
export async function operatorFixture(context: ScenarioContext, tenantName: string): Promise<OperatorFixture> {
  const credentials = await createTenant(context, tenantName);
  const headers = { authorization: `Bearer ${await accessToken(context, credentials)}` };
  const call = (method: 'POST' | 'GET', path: string, body?: Record<string, unknown>) =>
    expectStatus(context, { url: context.appUrl, method, path, headers, ...(body ? { body } : {}) }, method === 'POST' ? 201 : 200);
  const lock = await call('POST', '/operatorapi/securedobjects', { channels: ['btlespp'], localName: 'BENCH', uuid: randomUUID() });
  const device = await call('POST', '/operatorapi/mobiledevices', {});
  // The tenant's id is in its token (claim `tenant`), which is all the seeding SQL needs.
  const payload = JSON.parse(Buffer.from(headers.authorization.split('.')[1]!, 'base64url').toString('utf8')) as { tenant: string };
  return {
    credentials,
    headers,
    tenantId: payload.tenant,
    securedObjectId: (lock.body as { id: string }).id,
    mobileDeviceId: (device.body as { id: string }).id,
  };
}

/** Issues one ticket for the fixture's lock and device; resolves its id. */
export async function issueTicket(context: ScenarioContext, fixture: OperatorFixture): Promise<string> {
  const response = await expectStatus(
    context,
    {
      url: context.appUrl,
      method: 'POST',
      path: '/operatorapi/tickets',
      headers: fixture.headers,
      body: newTicketBody(fixture.securedObjectId, fixture.mobileDeviceId),
    },
    201,
  );
  return (response.body as { id: string }).id;
}
