// A client generated from the committed OpenAPI documents (openapi-typescript types + openapi-fetch) drives the
// server over real HTTP: Operator API (lock → device → ticket → read → list → revoke), Device API (phone download,
// lock sync) and Access API (resident → lock group → access permission). The `data` it reads is typed by the
// documents, so a schema change that breaks a caller breaks compilation here; every answer is also validated against
// the documents at run time, so an answer its schema does not describe fails the test.
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import createClient from 'openapi-fetch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GENERATED_DIRECTORY, generateClientTypes, generatedFileName } from '../../scripts/generate-client-types.js';
import { DOCUMENTED_APIS } from '../../scripts/openapi-files.js';
import { ACCESS_API_SCOPES } from '../helpers/access.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { basic, createTenant, form, type ClientFixture, type TenantFixture } from '../helpers/oauth.js';
import { OpenApiResponseValidator, responseValidation } from '../helpers/openapi-response-validator.js';
import { HOUR, LOCK_UUID, UUID_PATTERN } from '../helpers/operator.js';
import type { paths as AccessApiPaths } from './generated/accessapi.js';
import type { paths as DeviceApiPaths } from './generated/deviceapi.js';
import type { components as OperatorApiComponents, paths as OperatorApiPaths } from './generated/operatorapi.js';

const JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
const PASSWORD = 'correct horse battery staple';

describe('generated client types', () => {
  it('match a fresh generation from the committed documents (`npm run openapi` writes both)', async () => {
    for (const api of DOCUMENTED_APIS) {
      const committed = readFileSync(new URL(generatedFileName(api), GENERATED_DIRECTORY), 'utf8');
      expect(await generateClientTypes(api), `test/ecosystem/generated/${generatedFileName(api)} is stale: run npm run openapi`).toBe(committed);
    }
  });
});

describe('a generated client against the running server', () => {
  let t: TestApp;
  let baseUrl: string;
  let tenant: TenantFixture;
  const validators = {
    operatorapi: OpenApiResponseValidator.committed('operatorapi'),
    accessapi: OpenApiResponseValidator.committed('accessapi'),
    deviceapi: OpenApiResponseValidator.committed('deviceapi'),
  };

  /** The token endpoints are not part of the three documents: plain fetch, as any OAuth library would. */
  async function accessToken(path: '/oauth/token' | '/oauth2/token', client: ClientFixture, fields: Record<string, string>): Promise<string> {
    const response = await fetch(`${baseUrl}${path}`, {
      method: 'POST',
      headers: { authorization: basic(client.clientId, client.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
      body: form(fields),
    });
    const body = (await response.json()) as { access_token?: string; token_type?: string };
    expect(response.status, JSON.stringify(body)).toBe(200);
    expect(body.token_type).toBe('Bearer');
    return body.access_token!;
  }

  const clientCredentials = (client: ClientFixture) => accessToken('/oauth/token', client, { grant_type: 'client_credentials' });
  const authorization = (token: string) => ({ authorization: `Bearer ${token}` });

  function operatorClient(token: string) {
    const client = createClient<OperatorApiPaths>({ baseUrl, headers: authorization(token) });
    client.use(responseValidation(validators.operatorapi));
    return client;
  }

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4' });
    // A real socket on an ephemeral port: openapi-fetch speaks HTTP through the global fetch, not app.inject.
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    baseUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    tenant = await createTenant(t.app, 'ecosystem');
  });
  afterAll(async () => {
    await t?.close();
  });

  it('runs token → lock → device → ticket → read → list → revoke, and the Device API sees it', async () => {
    const operator = operatorClient(await clientCredentials(tenant));

    const lock = await operator.POST('/operatorapi/securedobjects', {
      body: { id: 'front-door', channels: ['btlespp'], localName: 'LOCK-0042', uuid: LOCK_UUID },
    });
    expect(lock.response.status).toBe(201);
    expect(lock.data).toEqual({ id: 'front-door', channels: ['btlespp'], urls: [`btlespp://LOCK-0042/${LOCK_UUID}`], creationTime: expect.any(Number), timeZone: 'UTC' });

    const phone = await operator.POST('/operatorapi/mobiledevices', { body: { id: 'phone-alice-1', name: 'Alice' } });
    expect(phone.response.status).toBe(201);
    expect(phone.data).toEqual({ id: 'phone-alice-1', name: 'Alice', creationTime: expect.any(Number) });

    const now = Date.now();
    const issued = await operator.POST('/operatorapi/tickets', {
      params: { header: { 'idempotency-key': 'ecosystem-ticket-1' } },
      body: { securedObjectId: lock.data!.id, mobileDeviceId: phone.data!.id, beginDate: now, endDate: now + HOUR, commands: ['open'], channels: ['btlespp'] },
    });
    expect(issued.response.status).toBe(201);
    const ticket = issued.data!;
    expect(ticket.id).toMatch(UUID_PATTERN);
    expect(ticket).toMatchObject({ securedObjectId: 'front-door', mobileDeviceId: 'phone-alice-1', beginDate: now, endDate: now + HOUR, status: 'VALID' });
    expect(ticket.revocationDate).toBeUndefined();

    const read = await operator.GET('/operatorapi/tickets/{id}', { params: { path: { id: ticket.id } } });
    expect(read.response.status).toBe(200);
    expect(read.data).toEqual(ticket);

    const valid = await operator.GET('/operatorapi/tickets', {
      params: { query: { mobileDeviceId: 'phone-alice-1', securedObjectId: 'front-door', status: 'VALID', limit: 10 } },
    });
    expect(valid.data?.map((listed) => listed.id)).toEqual([ticket.id]);
    const noneRevoked = await operator.GET('/operatorapi/tickets', { params: { query: { status: 'REVOKED' } } });
    expect(noneRevoked.data).toEqual([]);

    // The phone downloads its ticket with a client bound to it (docs/api-reference.md 3.7), created through the Operator API.
    const phoneClient = await operator.POST('/operatorapi/oauthclients', {
      body: { name: 'Alice phone', scopes: ['tokens:download'], mobileDeviceId: 'phone-alice-1' },
    });
    expect(phoneClient.response.status).toBe(201);
    expect(phoneClient.data).toMatchObject({ scopes: ['tokens:download', 'keys:register'], mobileDeviceId: 'phone-alice-1', clientSecret: expect.any(String) });
    const phoneApi = createClient<DeviceApiPaths>({ baseUrl, headers: authorization(await clientCredentials({ clientId: phoneClient.data!.clientId, clientSecret: phoneClient.data!.clientSecret! })) });
    phoneApi.use(responseValidation(validators.deviceapi));
    const downloaded = await phoneApi.GET('/deviceapi/mobiledevices/{id}/tickets', { params: { path: { id: 'phone-alice-1' } } });
    expect(downloaded.response.status).toBe(200);
    expect(downloaded.data).toHaveLength(1);
    const [credentialed] = downloaded.data!;
    expect(credentialed).toMatchObject({ id: ticket.id, status: 'VALID', downloadDate: expect.any(Number) });
    expect(credentialed!.credential).toMatch(JWS);

    const revoked = await operator.DELETE('/operatorapi/tickets/{id}', { params: { path: { id: ticket.id } } });
    expect(revoked.response.status).toBe(200);
    expect(revoked.data).toMatchObject({ id: ticket.id, status: 'REVOKED', revocationDate: expect.any(Number) });

    const afterRevoke = await operator.GET('/operatorapi/tickets/{id}', { params: { path: { id: ticket.id } } });
    expect(afterRevoke.data?.status).toBe('REVOKED');
    expect(afterRevoke.data?.revocationDate).toBe(revoked.data!.revocationDate);
    const revokedList = await operator.GET('/operatorapi/tickets', { params: { query: { status: 'REVOKED', securedObjectId: 'front-door' } } });
    expect(revokedList.data?.map((listed) => listed.id)).toEqual([ticket.id]);

    // Error answers are typed too: the Problem schema, as application/problem+json, validated like any answer.
    const missing = await operator.GET('/operatorapi/tickets/{id}', { params: { path: { id: '00000000-0000-4000-8000-000000000000' } } });
    expect(missing.response.status).toBe(404);
    expect(missing.response.headers.get('content-type')).toContain('application/problem+json');
    expect(missing.error).toMatchObject({ status: 404, requestId: missing.response.headers.get('x-request-id') });
    const malformed = await operator.GET('/operatorapi/tickets', { params: { query: { limit: 0 } } });
    expect(malformed.response.status).toBe(400);
    expect(malformed.error?.errors?.map((error) => error.field)).toEqual(['limit']);

    // The lock syncs with a client bound to it: the revoked ticket arrives as a revocation, not as a token.
    const lockClient = await operator.POST('/operatorapi/oauthclients', { body: { name: 'Front door', scopes: ['sync'], securedObjectId: 'front-door' } });
    expect(lockClient.response.status).toBe(201);
    const lockApi = createClient<DeviceApiPaths>({ baseUrl, headers: authorization(await clientCredentials({ clientId: lockClient.data!.clientId, clientSecret: lockClient.data!.clientSecret! })) });
    lockApi.use(responseValidation(validators.deviceapi));
    const synced = await lockApi.GET('/deviceapi/securedobjects/{id}/sync', { params: { path: { id: 'front-door' }, query: { limit: 100 } } });
    expect(synced.response.status).toBe(200);
    expect(synced.data?.tokens).toEqual([]);
    expect(synced.data?.revocations).toEqual([{ tokenId: ticket.id, revocationDate: revoked.data!.revocationDate }]);
    expect(synced.data?.cursor).toEqual(expect.any(String));

    expect(validators.operatorapi.checked.length).toBeGreaterThanOrEqual(12);
    expect(validators.deviceapi.checked).toHaveLength(2);
  });

  it('runs password grant → resident → lock group → access permission → its tickets → delete', async () => {
    const operator = operatorClient(await clientCredentials(tenant));
    for (const id of ['phone-bob-1', 'phone-bob-2']) {
      expect((await operator.POST('/operatorapi/mobiledevices', { body: { id } })).response.status).toBe(201);
    }
    // Members come back sorted by id.
    const locks = ['cellar', 'garage'];
    for (const id of locks) {
      const registered = await operator.POST('/operatorapi/securedobjects', { body: { id, channels: ['btlespp'], localName: `LOCK-${id}`, uuid: LOCK_UUID } });
      expect(registered.response.status).toBe(201);
    }

    // The Access API's caller: a user and a client of the tenant, both made through the Operator API.
    const user = await operator.POST('/operatorapi/users', { body: { username: 'manager', password: PASSWORD } });
    expect(user.response.status).toBe(201);
    expect(user.data).toEqual({ id: expect.stringMatching(UUID_PATTERN), username: 'manager', creationDate: expect.any(Number) });
    // The documents list the scopes (a named NewClient model with an enum), so the generated type is their union.
    const scopes = ACCESS_API_SCOPES as OperatorApiComponents['schemas']['NewClient']['scopes'];
    const accessClient = await operator.POST('/operatorapi/oauthclients', { body: { name: 'Front desk', scopes } });
    expect(accessClient.response.status).toBe(201);
    const token = await accessToken('/oauth2/token', { clientId: accessClient.data!.clientId, clientSecret: accessClient.data!.clientSecret! }, { grant_type: 'password', username: `manager@${tenant.name}`, password: PASSWORD });

    const access = createClient<AccessApiPaths>({ baseUrl, headers: authorization(token) });
    access.use(responseValidation(validators.accessapi));

    const resident = await access.POST('/v1/residents', { body: { name: 'Bob', mobileDeviceIds: ['phone-bob-1', 'phone-bob-2'] } });
    expect(resident.response.status).toBe(201);
    expect(resident.data).toMatchObject({ name: 'Bob', mobileDeviceIds: ['phone-bob-1', 'phone-bob-2'] });

    const lockGroup = await access.POST('/v1/lock-groups', { body: { name: 'Outbuildings', securedObjectIds: locks } });
    expect(lockGroup.response.status).toBe(201);
    expect(lockGroup.data?.securedObjectIds).toEqual(locks);

    const now = Date.now();
    const granted = await access.POST('/v1/access-permissions', {
      body: { residentId: resident.data!.id, lockGroupId: lockGroup.data!.id, beginDate: now, endDate: now + HOUR, commands: ['open'], channels: ['btlespp'] },
    });
    expect(granted.response.status).toBe(201);
    const permission = granted.data!;
    // One ticket per device × lock.
    expect(permission).toMatchObject({ residentId: resident.data!.id, lockGroupId: lockGroup.data!.id, tokenCount: 4 });

    const read = await access.GET('/v1/access-permissions/{id}', { params: { path: { id: permission.id } } });
    expect(read.data).toEqual(permission);
    const listed = await access.GET('/v1/access-permissions', { params: { query: { residentId: resident.data!.id } } });
    expect(listed.data?.map((item) => item.id)).toEqual([permission.id]);

    const tickets = await access.GET('/v1/access-permissions/{id}/tokens', { params: { path: { id: permission.id }, query: { limit: 10 } } });
    expect(tickets.response.status).toBe(200);
    expect(tickets.data?.map((item) => `${item.mobileDeviceId}|${item.securedObjectId}`).sort()).toEqual(
      ['phone-bob-1|cellar', 'phone-bob-1|garage', 'phone-bob-2|cellar', 'phone-bob-2|garage'],
    );
    expect(tickets.data?.every((item) => item.accessPermissionId === permission.id && item.status === 'VALID')).toBe(true);

    const devices = await access.GET('/v1/mobiledevices');
    expect(devices.data?.map((item) => item.id)).toEqual(expect.arrayContaining(['phone-bob-1', 'phone-bob-2']));

    const deleted = await access.DELETE('/v1/access-permissions/{id}', { params: { path: { id: permission.id } } });
    expect(deleted.response.status).toBe(204);
    // Deleting the permission revoked its tickets: the Operator API lists them as REVOKED.
    const revoked = await operator.GET('/operatorapi/tickets', { params: { query: { mobileDeviceId: 'phone-bob-1', status: 'REVOKED' } } });
    expect(revoked.data?.map((item) => item.accessPermissionId)).toEqual([permission.id, permission.id]);

    expect(validators.accessapi.checked.length).toBeGreaterThanOrEqual(8);
  });
});
