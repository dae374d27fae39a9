// Text PostgreSQL cannot store (U+0000) is the client's fault: 400 on the APIs, invalid_request on OAuth; never 500.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { bearer, clientToken, createTenant, form } from '../helpers/oauth.js';
import { device, issueTicket, lock, ticketBody } from '../helpers/operator.js';

/** The problem a request carrying text PostgreSQL cannot store answers, whether the database or a check refused it. */
const UNSTORABLE = { status: 400, title: 'Bad Request', detail: 'The request holds a character the service cannot store (such as U+0000).' };

describe('U+0000 in paths, queries and bodies', () => {
  let t: TestApp;
  let headers: Record<string, string>;
  let token: string;
  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4' });
    token = await clientToken(t.app, await createTenant(t.app, 'acme'));
    headers = bearer(token);
  });
  afterAll(async () => {
    await t.close();
  });

  it.each([
    ['GET', '/operatorapi/oauthclients/%00'],
    ['GET', '/operatorapi/securedobjects/a%00b'],
    ['DELETE', '/operatorapi/users/%00'],
    ['GET', '/operatorapi/tickets?mobileDeviceId=%00'],
  ])('%s %s → 400 problem', async (method, url) => {
    const response = await t.app.inject({ method: method as 'GET', url, headers });
    expect(response.statusCode).toBe(400);
    expect(response.headers['content-type']).toContain('application/problem+json');
    expect(response.json().detail).toContain('U+0000');
  });

  it('refuses it in a JSON body and stores nothing', async () => {
    const response = await t.app.inject({ method: 'POST', url: '/operatorapi/mobiledevices', headers, payload: { name: 'a\u0000b' } });
    expect(response.statusCode).toBe(400);
    const { rows } = await t.database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM mobile_devices');
    expect(rows[0]!.n).toBe(0);
  });

  it('answers invalid_request (or invalid_client) on the token endpoint', async () => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: form({ grant_type: 'client_credentials', client_id: 'a\u0000', client_secret: 'b' }),
    });
    expect([400, 401]).toContain(response.statusCode);
    expect(['invalid_request', 'invalid_client']).toContain(response.json().error);
  });

  describe('in a ticket create', () => {
    beforeAll(async () => {
      await lock(t, token, 'door');
      await device(t, token, 'phone');
    });

    // Ticket creates are written in batches (src/services/batching.ts): what the database would refuse is refused
    // before, with the same problem, so it never reaches a batch shared with other requests (docs/security-cases.md G47).
    it.each([
      ['U+0000 in securedObjectId', { securedObjectId: 'door\u0000' }],
      ['U+0000 in mobileDeviceId', { mobileDeviceId: 'phone\u0000' }],
      ['U+0000 in a channel', { channels: ['btlespp\u0000'] }],
      ['a lone surrogate in securedObjectId', { securedObjectId: 'door\ud800' }],
      ['a lone surrogate in a command', { commands: ['open', '\udc00'] }],
    ])('refuses a ticket with %s: the same 400 problem, nothing stored', async (_, overrides) => {
      const response = await issueTicket(t, token, ticketBody(t, 'door', 'phone', overrides));
      expect(response.statusCode, response.body).toBe(400);
      expect(response.headers['content-type']).toContain('application/problem+json');
      const requestId = response.headers['x-request-id'];
      expect(response.json()).toMatchObject({ ...UNSTORABLE, requestId });
      const { rows } = await t.database.db.query<{ tickets: number; events: number; counters: number }>(
        `SELECT (SELECT count(*)::int FROM tickets) AS tickets,
                (SELECT count(*)::int FROM audit_events WHERE request_id = $1) AS events,
                (SELECT count(*)::int FROM tenant_change_counters) AS counters`,
        [requestId],
      );
      expect(rows[0]).toEqual({ tickets: 0, events: 0, counters: 0 });
    });

    it('lets paired surrogates through: an emoji in an id is text like any other (422: no such lock)', async () => {
      const response = await issueTicket(t, token, ticketBody(t, 'door-\u{1F6AA}', 'phone'));
      expect(response.statusCode, response.body).toBe(422);
      expect(response.json().errors).toEqual([{ field: 'securedObjectId', message: 'no secured object door-\u{1F6AA} in this tenant' }]);
    });
  });
});
