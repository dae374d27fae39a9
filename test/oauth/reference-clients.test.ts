// docs/security-cases.md 35: the OAuth clients users point at us (openid-client, oauth4webapi, simple-oauth2), unmodified.
import * as oauth from 'oauth4webapi';
import * as client from 'openid-client';
import { ClientCredentials, ResourceOwnerPassword } from 'simple-oauth2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createClient, createTenant, createUser, type ClientFixture, type TenantFixture } from '../helpers/oauth.js';
import { freePort } from '../helpers/process.js';

describe('reference OAuth clients against a live server', () => {
  let t: TestApp;
  let issuer: string;
  let tenant: TenantFixture;
  let operatorClient: ClientFixture;
  let accessClient: ClientFixture;
  const password = 'correct horse battery';

  beforeAll(async () => {
    const port = await freePort();
    issuer = `http://127.0.0.1:${port}`;
    t = await buildTestApp({ PUBLIC_URL: issuer, BCRYPT_COST: '4' });
    await t.app.listen({ port, host: '127.0.0.1' });
    tenant = await createTenant(t.app, 'reference');
    operatorClient = await createClient(t.app, tenant, ['tokens:read', 'devices:read', 'clients:manage']);
    accessClient = await createClient(t.app, tenant, ['offline', 'device-groups:read', 'access-permissions:read']);
    await createUser(t.app, tenant, 'resident-admin', password);
  });
  afterAll(async () => {
    await t.close();
  });

  async function discover(fixture: ClientFixture, auth: client.ClientAuth) {
    return client.discovery(new URL(issuer), fixture.clientId, fixture.clientSecret, auth, {
      algorithm: 'oauth2',
      execute: [client.allowInsecureRequests],
    });
  }

  describe('openid-client', () => {
    it('discovers the RFC 8414 metadata with the issuer byte for byte', async () => {
      const config = await discover(operatorClient, client.ClientSecretBasic());
      const metadata = config.serverMetadata();
      expect(metadata.issuer).toBe(issuer);
      expect(metadata.token_endpoint).toBe(`${issuer}/oauth/token`);
      expect(metadata.jwks_uri).toBe(`${issuer}/.well-known/jwks.json`);
    });

    it('runs client_credentials with ClientSecretBasic and with ClientSecretPost', async () => {
      for (const auth of [client.ClientSecretBasic(), client.ClientSecretPost()]) {
        const config = await discover(operatorClient, auth);
        const tokens = await client.clientCredentialsGrant(config, { scope: 'tokens:read devices:read' });
        expect(tokens.token_type).toBe('bearer');
        expect(tokens.scope).toBe('tokens:read devices:read');
        expect(tokens.expiresIn()).toBeGreaterThan(3500);
        expect(tokens.refresh_token).toBeUndefined();
        const response = await fetch(`${issuer}/operatorapi/oauthclients`, {
          headers: { authorization: `Bearer ${tokens.access_token}` },
        });
        // A valid token without clients:manage in its scope: the bearer check accepts it and asks for the scope.
        expect(response.status).toBe(403);
      }
    });

    it('runs the password grant, refresh, introspection and revocation', async () => {
      const config = await discover(accessClient, client.ClientSecretBasic());
      const tokens = await client.genericGrantRequest(config, 'password', {
        username: `resident-admin@${tenant.name}`,
        password,
        scope: 'offline device-groups:read',
      });
      expect(tokens.refresh_token).toEqual(expect.any(String));
      expect(tokens.scope).toBe('offline device-groups:read');

      const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
      expect(refreshed.access_token).not.toBe(tokens.access_token);
      expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);

      const active = await client.tokenIntrospection(config, refreshed.access_token);
      expect(active).toMatchObject({ active: true, client_id: accessClient.clientId, scope: 'offline device-groups:read' });

      await client.tokenRevocation(config, refreshed.access_token);
      expect(await client.tokenIntrospection(config, refreshed.access_token)).toEqual({ active: false });

      await client.tokenRevocation(config, refreshed.refresh_token!);
      expect(await client.tokenIntrospection(config, refreshed.refresh_token!)).toEqual({ active: false });
      await expect(client.refreshTokenGrant(config, refreshed.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    });
  });

  describe('oauth4webapi', () => {
    it('validates our access tokens with validateJwtAccessToken (RFC 9068)', async () => {
      const config = await discover(operatorClient, client.ClientSecretBasic());
      const tokens = await client.clientCredentialsGrant(config, { scope: 'tokens:read' });
      const as = await oauth
        .discoveryRequest(new URL(issuer), { algorithm: 'oauth2', [oauth.allowInsecureRequests]: true })
        .then((response) => oauth.processDiscoveryResponse(new URL(issuer), response));
      const request = new Request(`${issuer}/operatorapi/tickets`, {
        headers: { authorization: `Bearer ${tokens.access_token}` },
      });
      const claims = await oauth.validateJwtAccessToken(as, request, 'operatorapi', { [oauth.allowInsecureRequests]: true });
      expect(claims).toMatchObject({
        iss: issuer,
        aud: 'operatorapi',
        sub: operatorClient.clientId,
        client_id: operatorClient.clientId,
        scope: 'tokens:read',
        tenant: tenant.tenantId,
      });
      expect(claims.jti).toEqual(expect.any(String));
      await expect(oauth.validateJwtAccessToken(as, request, 'accessapi', { [oauth.allowInsecureRequests]: true })).rejects.toThrow();
    });
  });

  describe('simple-oauth2', () => {
    const options = (fixture: ClientFixture, path: string) => ({
      client: { id: fixture.clientId, secret: fixture.clientSecret },
      auth: { tokenHost: issuer, tokenPath: path },
    });

    it('runs ClientCredentials', async () => {
      const grant = new ClientCredentials(options(operatorClient, '/oauth/token'));
      const token = await grant.getToken({ scope: 'devices:read' });
      expect(token.token.token_type).toBe('Bearer');
      expect(token.token.scope).toBe('devices:read');
      expect(token.expired()).toBe(false);
    });

    it('runs ResourceOwnerPassword and refreshes', async () => {
      const grant = new ResourceOwnerPassword(options(accessClient, '/oauth2/token'));
      const token = await grant.getToken({ username: `resident-admin@${tenant.name}`, password, scope: 'offline access-permissions:read' });
      expect(token.token.refresh_token).toEqual(expect.any(String));
      const refreshed = await token.refresh();
      expect(refreshed.token.access_token).not.toBe(token.token.access_token);
    });

    it('surfaces invalid_grant for a wrong password', async () => {
      const grant = new ResourceOwnerPassword(options(accessClient, '/oauth2/token'));
      await expect(grant.getToken({ username: `resident-admin@${tenant.name}`, password: 'wrong password!' })).rejects.toMatchObject({
        output: { statusCode: 400 },
        data: { payload: expect.objectContaining({ error: 'invalid_grant' }) },
      });
    });
  });
});
