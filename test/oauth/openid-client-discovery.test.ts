// openid-client (v6) as docs/app-integration.md 2 tells app developers to use it: discovery with the documented options, then grants.
import { readFileSync } from 'node:fs';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createClient, createTenant, createUser, type ClientFixture } from '../helpers/oauth.js';
import { freePort } from '../helpers/process.js';

const guide = readFileSync(new URL('../../docs/app-integration.md', import.meta.url), 'utf8');

describe('openid-client with the options docs/app-integration.md documents', () => {
  let t: TestApp;
  let issuer: string;
  let operatorClient: ClientFixture;
  let accessClient: ClientFixture;
  const password = 'correct horse battery';

  beforeAll(async () => {
    const port = await freePort();
    issuer = `http://127.0.0.1:${port}`;
    t = await buildTestApp({ PUBLIC_URL: issuer, BCRYPT_COST: '4' });
    await t.app.listen({ port, host: '127.0.0.1' });
    const tenant = await createTenant(t.app, 'discovery');
    operatorClient = await createClient(t.app, tenant, ['tokens:create', 'tokens:read']);
    accessClient = await createClient(t.app, tenant, ['device-groups:read', 'access-permissions:read']);
    await createUser(t.app, tenant, 'manager', password);
  });
  afterAll(() => t.close());

  it('documents the discovery options, and the plain-HTTP one for a development server', () => {
    expect(guide).toContain("client.ClientSecretBasic(), { algorithm: 'oauth2' });");
    expect(guide).toContain('execute: [client.allowInsecureRequests]');
  });

  it('fails discovery with its defaults: this server is no OpenID provider and serves no openid-configuration', async () => {
    const openid = await fetch(`${issuer}/.well-known/openid-configuration`);
    expect(openid.status).toBe(404);
    await expect(
      client.discovery(new URL(issuer), operatorClient.clientId, operatorClient.clientSecret, client.ClientSecretBasic(), {
        execute: [client.allowInsecureRequests],
      }),
    ).rejects.toThrow();
  });

  it('discovers the RFC 8414 metadata and obtains tokens with the documented options', async () => {
    const options: client.DiscoveryRequestOptions = { algorithm: 'oauth2', execute: [client.allowInsecureRequests] };
    const operator = await client.discovery(new URL(issuer), operatorClient.clientId, operatorClient.clientSecret, client.ClientSecretBasic(), options);
    expect(operator.serverMetadata().issuer).toBe(issuer);
    const tokens = await client.clientCredentialsGrant(operator, { scope: 'tokens:create tokens:read' });
    expect(tokens.scope).toBe('tokens:create tokens:read');
    const page = await fetch(`${issuer}/operatorapi/tickets`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(page.status).toBe(200);

    const app = await client.discovery(new URL(issuer), accessClient.clientId, accessClient.clientSecret, client.ClientSecretBasic(), options);
    const login = await client.genericGrantRequest(app, 'password', { username: 'manager@discovery', password, scope: 'device-groups:read' });
    const residents = await fetch(`${issuer}/v1/residents`, { headers: { authorization: `Bearer ${login.access_token}` } });
    expect(residents.status).toBe(200);
  });
});
