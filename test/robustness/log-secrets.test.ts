// Logs at debug level over a representative flow: no client secret, password, refresh token, access token or
// ticket credential reaches any log line (docs/house-style.md 12).
import type { InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { basic, bearer, createClient, createTenant, form, tokenRequest, type TenantFixture } from '../helpers/oauth.js';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

describe('no secret in the logs', () => {
  let t: TestApp;
  let tenant: TenantFixture;
  /** Every secret value the flow saw, with what it is. */
  const secrets: { what: string; value: string }[] = [];
  const keep = (what: string, value: unknown) => {
    expect(typeof value, what).toBe('string');
    secrets.push({ what, value: value as string });
    // A JWT's signature alone identifies it; a log line holding only that part leaks it as well.
    const parts = (value as string).split('.');
    if (parts.length === 3 && parts[2]!.length > 20) secrets.push({ what: `${what} (signature)`, value: parts[2]! });
    return value as string;
  };

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4', LOG_LEVEL: 'debug' });
    tenant = await createTenant(t.app, 'logs');
    keep('tenant client secret', tenant.clientSecret);
  });
  afterAll(async () => {
    await t.close();
  });

  it('runs grants, management, tickets, download and sync without logging a secret', async () => {
    const inject = async (options: InjectOptions, expected: number) => {
      const response = await t.app.inject(options);
      expect(response.statusCode, `${response.body}`).toBe(expected);
      return response;
    };
    // Client credentials, with HTTP Basic and with the secret in the form.
    const operator = keep('access token (basic)', (await tokenRequest(t.app, tenant, { grant_type: 'client_credentials' })).json().access_token);
    keep(
      'access token (form)',
      (
        await inject(
          { method: 'POST', url: '/oauth/token', headers: FORM, payload: form({ grant_type: 'client_credentials', client_id: tenant.clientId, client_secret: tenant.clientSecret }) },
          200,
        )
      ).json().access_token,
    );

    // Client create and secret rotation through the Operator API.
    const created = (
      await inject({ method: 'POST', url: '/operatorapi/oauthclients', headers: bearer(operator), payload: { name: 'app', scopes: ['offline', 'device-groups:read'] } }, 201)
    ).json();
    keep('created client secret', created.clientSecret);
    const rotated = keep(
      'rotated client secret',
      (await inject({ method: 'POST', url: `/operatorapi/oauthclients/${created.clientId}/secret`, headers: bearer(operator) }, 200)).json().clientSecret,
    );
    const appClient = { clientId: created.clientId as string, clientSecret: rotated };

    // User create, password grant (offline: a refresh token), refresh, and a failed login.
    const password = keep('password', 'Horse-Battery-7f3kq9-Staple');
    await inject({ method: 'POST', url: '/operatorapi/users', headers: bearer(operator), payload: { username: 'resident1', password } }, 201);
    const granted = (
      await tokenRequest(t.app, appClient, { grant_type: 'password', username: 'resident1@logs', password, scope: 'offline device-groups:read' }, '/oauth2/token')
    ).json();
    keep('password-grant access token', granted.access_token);
    const refresh = keep('refresh token', granted.refresh_token);
    const refreshed = (await tokenRequest(t.app, appClient, { grant_type: 'refresh_token', refresh_token: refresh }, '/oauth2/token')).json();
    keep('refreshed access token', refreshed.access_token);
    keep('rotated refresh token', refreshed.refresh_token);
    const wrong = keep('wrong password', 'Wrong-Password-q8z1v5-Guess');
    const failed = await tokenRequest(t.app, appClient, { grant_type: 'password', username: 'resident1@logs', password: wrong }, '/oauth2/token');
    expect(failed.statusCode).toBe(400);
    // A reused refresh token (family revoked) and a wrong client secret are logged failures too.
    expect((await tokenRequest(t.app, appClient, { grant_type: 'refresh_token', refresh_token: refresh }, '/oauth2/token')).statusCode).toBe(400);
    const wrongSecret = keep('wrong client secret', 'not-the-secret-3n8d0w');
    expect(
      (await inject({ method: 'POST', url: '/oauth/token', headers: { ...FORM, authorization: basic(tenant.clientId, wrongSecret) }, payload: 'grant_type=client_credentials' }, 401)).statusCode,
    ).toBe(401);

    // A lock, a phone and a ticket; the phone downloads it, the lock syncs.
    await inject(
      { method: 'POST', url: '/operatorapi/securedobjects', headers: bearer(operator), payload: { id: 'lock-1', channels: ['btlespp'], localName: 'L1', uuid: '7d8a0c1e-4b7f-4d5e-9a41-3c2b1f0e9d8c' } },
      201,
    );
    await inject({ method: 'POST', url: '/operatorapi/mobiledevices', headers: bearer(operator), payload: { id: 'phone-1' } }, 201);
    await inject(
      {
        method: 'POST',
        url: '/operatorapi/tickets',
        headers: bearer(operator),
        payload: { securedObjectId: 'lock-1', mobileDeviceId: 'phone-1', beginDate: 0, endDate: Date.now() + 86_400_000, commands: ['open'], channels: ['btlespp'] },
      },
      201,
    );
    const phone = await createClient(t.app, tenant, ['tokens:download'], { mobileDeviceId: 'phone-1' });
    keep('phone client secret', phone.clientSecret);
    const phoneToken = keep('phone access token', (await tokenRequest(t.app, phone, { grant_type: 'client_credentials' })).json().access_token);
    const downloaded = (await inject({ url: '/deviceapi/mobiledevices/phone-1/tickets', headers: bearer(phoneToken) }, 200)).json();
    expect(downloaded.length).toBe(1);
    keep('ticket credential', downloaded[0].credential);
    const lock = await createClient(t.app, tenant, ['sync'], { securedObjectId: 'lock-1' });
    keep('lock client secret', lock.clientSecret);
    const lockToken = keep('lock access token', (await tokenRequest(t.app, lock, { grant_type: 'client_credentials' })).json().access_token);
    const synced = (await inject({ url: '/deviceapi/securedobjects/lock-1/sync', headers: bearer(lockToken) }, 200)).json();
    expect(synced.tokens.length).toBe(1);
    for (const token of synced.tokens as { credential?: string }[]) if (token.credential) keep('synced credential', token.credential);

    // Introspection and revocation carry tokens in their bodies.
    await inject({ method: 'POST', url: '/oauth/introspect', headers: { ...FORM, authorization: basic(tenant.clientId, tenant.clientSecret) }, payload: form({ token: operator }) }, 200);
    await inject({ method: 'POST', url: '/oauth/revoke', headers: { ...FORM, authorization: basic(appClient.clientId, appClient.clientSecret) }, payload: form({ token: refreshed.refresh_token }) }, 200);

    // Lock telemetry (docs/api-reference.md 8.4–8.6): the lock's and the relaying phone's log uploads, the explain (which
    // unseals the phone's credential to judge it), the revocations and the log pages. The credential and its sealed
    // form at rest reach no log line.
    const { rows: sealedRows } = await t.database.db.query<{ sealed: Uint8Array }>('SELECT credential_encrypted AS sealed FROM tickets WHERE id = $1', [downloaded[0].id]);
    const sealed = Buffer.from(sealedRows[0]!.sealed);
    keep('sealed credential (base64)', sealed.toString('base64'));
    keep('sealed credential (hex)', sealed.toString('hex'));
    const logged = { entryNo: 1, lockTime: Date.now(), tokenId: downloaded[0].id, command: 'open', channel: 'btlespp', result: 'granted' };
    await inject({ method: 'POST', url: '/deviceapi/securedobjects/lock-1/accesslog', headers: bearer(lockToken), payload: { appliedSerial: synced.serial, lockTime: Date.now(), entries: [logged] } }, 200);
    await inject({ method: 'POST', url: '/deviceapi/mobiledevices/phone-1/accesslog', headers: bearer(phoneToken), payload: { securedObjectId: 'lock-1', entries: [{ ...logged, entryNo: 2 }] } }, 200);
    // A malformed upload is logged as a refusal: it must not quote the body.
    await inject({ method: 'POST', url: '/deviceapi/securedobjects/lock-1/accesslog', headers: bearer(lockToken), payload: { entries: [{ ...logged, entryNo: 0, reason: downloaded[0].credential }] } }, 400);
    for (const url of [
      '/operatorapi/access-checks?mobileDeviceId=phone-1&securedObjectId=lock-1',
      '/operatorapi/accesslog?securedObjectId=lock-1',
      '/operatorapi/revocations',
      '/operatorapi/securedobjects/lock-1',
    ]) {
      await inject({ url, headers: bearer(operator) }, 200);
    }

    // Webhook subscriptions (docs/api-reference.md 10): the signing secret of a creation and of a rotation, and its sealed
    // form at rest; a refused URL is logged as a refusal.
    const webhook = (
      await inject({ method: 'POST', url: '/operatorapi/webhooks', headers: bearer(operator), payload: { url: 'https://93.184.215.14/in', eventTypes: ['ticket.created'] } }, 201)
    ).json();
    keep('webhook secret', webhook.secret);
    keep('rotated webhook secret', (await inject({ method: 'POST', url: `/operatorapi/webhooks/${webhook.id}/secret`, headers: bearer(operator) }, 200)).json().secret);
    await inject({ method: 'PATCH', url: `/operatorapi/webhooks/${webhook.id}`, headers: bearer(operator), payload: { url: 'https://127.0.0.1/in' } }, 422);
    await inject({ url: `/operatorapi/webhooks/${webhook.id}`, headers: bearer(operator) }, 200);
    const { rows: webhookRows } = await t.database.db.query<{ sealed: Uint8Array; previous: Uint8Array }>(
      'SELECT secret_sealed AS sealed, previous_secret_sealed AS previous FROM webhooks WHERE id = $1',
      [webhook.id],
    );
    for (const value of [webhookRows[0]!.sealed, webhookRows[0]!.previous]) keep('sealed webhook secret', Buffer.from(value).toString('base64'));

    // The logs are there (at debug level: every request and response line, refused grants), and hold no secret.
    expect(t.app.log.level).toBe('debug');
    expect(t.logLines.length).toBeGreaterThan(20);
    expect(t.logLines.some((line) => line.includes('incoming request'))).toBe(true);
    const leaks = secrets.flatMap(({ what, value }) =>
      t.logLines.filter((line) => line.includes(value)).map((line) => `${what} in: ${line.slice(0, 300)}`),
    );
    expect(leaks).toEqual([]);
    // Nor their form-encoded or base64 (Basic) forms.
    for (const { what, value } of secrets) {
      const encoded = encodeURIComponent(value);
      expect(t.logLines.some((line) => line.includes(encoded)), `${what} (URL-encoded)`).toBe(false);
    }
    expect(t.logLines.some((line) => line.includes(basic(tenant.clientId, tenant.clientSecret).slice('Basic '.length)))).toBe(false);
  });
});
