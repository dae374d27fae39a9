// GET /deviceapi/mobiledevices/{id}/tickets (docs/api-reference.md 6.1): the device's VALID tickets with credentials and their
// locks' revocation lists, the download stamp and its audit event set once (also under concurrent downloads),
// credentials stored sealed and handed out again, pages.
import { decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import {
  accessToken,
  countEvents,
  deviceTicketRows,
  download,
  downloadRequest,
  expectNoPlainCredentialStored,
  payloadOf,
  phoneToken,
  unsealedCredential,
  type DownloadedTicket,
} from '../helpers/device.js';
import { bearer, clientToken, createClient, createTenant, type TenantFixture } from '../helpers/oauth.js';
import { HOUR, call, device, expectProblem, fieldsOf, lock, nextLink, ticket, walk } from '../helpers/operator.js';

const MINUTE = 60_000;
const DAY = 24 * HOUR;
const JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

describe('GET /deviceapi/mobiledevices/{id}/tickets', () => {
  let now = Date.UTC(2026, 0, 15, 9, 0, 0, 250);
  /** While set, every reading of the clock moves it one second on: concurrent requests see different times. */
  let ticking = false;
  let t: TestApp;
  let acme: TenantFixture;
  let operator: string;

  /** The ticket as the Operator API shows it now. */
  async function operatorView(id: string): Promise<Record<string, unknown>> {
    const response = await call(t, operator, { method: 'GET', url: `/operatorapi/tickets/${id}` });
    expect(response.statusCode, response.body).toBe(200);
    return response.json();
  }

  /** Issues a ticket, then moves the clock a millisecond: creation order is then the order of issue. */
  async function issue(securedObjectId: string, mobileDeviceId: string, overrides: object = {}) {
    const made = await ticket(t, operator, securedObjectId, mobileDeviceId, overrides);
    now += 1;
    return made;
  }

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4' }, { clock: () => (ticking ? (now += 1000) : now) });
    acme = await createTenant(t.app, 'acme');
    operator = await clientToken(t.app, acme);
    await lock(t, operator, 'door');
    await lock(t, operator, 'gate');
  });
  afterAll(async () => {
    await t.close();
  });

  it('answers only the device\'s VALID tickets (not revoked, not expired), each with its credential and its lock\'s revocation list', async () => {
    await device(t, operator, 'phone-valid');
    await device(t, operator, 'phone-elsewhere');
    const open = await issue('door', 'phone-valid', { endDate: now + DAY });
    const later = await issue('gate', 'phone-valid', { beginDate: now + DAY, endDate: now + 2 * DAY, commands: ['open', 'clos'] });
    const short = await issue('door', 'phone-valid', { endDate: now + MINUTE });
    const gone = await issue('gate', 'phone-valid');
    expect((await call(t, operator, { method: 'DELETE', url: `/operatorapi/tickets/${gone.id}` })).statusCode).toBe(200);
    const elsewhere = await issue('door', 'phone-elsewhere');
    const token = await phoneToken(t, acme, 'phone-valid');

    const response = await downloadRequest(t, token, 'phone-valid');
    expect(response.statusCode, response.body).toBe(200);
    expect(response.headers['content-type']).toContain('application/json');
    expect(response.headers.link).toBeUndefined();
    const items = response.json() as DownloadedTicket[];
    // A ticket not yet begun is VALID: the phone needs it before the door does.
    expect(items.map((item) => item.id)).toEqual([open.id, later.id, short.id]);
    for (const [index, item] of items.entries()) {
      // Each begins within one credential lifetime, so each carries its credential (docs/api-reference.md 8.2); the first
      // ticket of each lock carries that lock's signed revocation list (docs/api-reference.md 8.3): door, gate, not door again.
      const carriesList = index < 2;
      expect(item).toEqual({
        ...(await operatorView(item.id)),
        credential: expect.stringMatching(JWS),
        ...(carriesList ? { revocationList: expect.stringMatching(JWS), lockState: expect.stringMatching(JWS) } : {}),
      });
      expect(item).toMatchObject({ status: 'VALID', downloadDate: now, mobileDeviceId: 'phone-valid' });
      expect(item).not.toHaveProperty('revocationDate');
      expect(item).not.toHaveProperty('credentialAvailableFrom');
      if (carriesList) expect(payloadOf(item.revocationList!)).toMatchObject({ iss: 'http://issuer.test/tenants/acme', aud: item.securedObjectId });
    }
    // The revoked ticket was never downloaded: no credential of it exists, so the gate's list does not carry it
    // (docs/api-reference.md 8.2).
    expect(payloadOf(items[1]!.revocationList!).revoked).toEqual([]);

    now += 2 * MINUTE;
    expect((await download(t, token, 'phone-valid')).map((item) => item.id)).toEqual([open.id, later.id]);
    expect((await operatorView(short.id)).status).toBe('EXPIRED');

    // Neither the revoked ticket nor another device's was touched.
    const untouched = await deviceTicketRows(t, acme.tenantId, [gone.id, elsewhere.id]);
    expect(untouched.map((row) => [row.credential_encrypted, row.credential_expires_at, row.downloaded_at])).toEqual([
      [null, null, null],
      [null, null, null],
    ]);
  });

  it('sets downloadDate on the first download only and audits it once per ticket', async () => {
    await device(t, operator, 'phone-stamp');
    const client = await createClient(t.app, acme, ['tokens:download'], { mobileDeviceId: 'phone-stamp' });
    const token = await clientToken(t.app, client);
    const door = await issue('door', 'phone-stamp');
    const gate = await issue('gate', 'phone-stamp');
    expect(await operatorView(door.id)).not.toHaveProperty('downloadDate');
    expect(await countEvents(t, acme.tenantId, 'ticket.downloaded', `ticket:${door.id}`)).toBe(0);

    const first = now;
    const response = await downloadRequest(t, token, 'phone-stamp');
    expect(response.statusCode).toBe(200);
    expect((response.json() as DownloadedTicket[]).map((item) => item.downloadDate)).toEqual([first, first]);
    const rows = await deviceTicketRows(t, acme.tenantId, [door.id, gate.id]);
    expect(rows.map((row) => Number(row.downloaded_at))).toEqual([first, first]);
    const { rows: events } = await t.database.db.query<{ actor: string; request_id: string; time: number; target: string }>(
      `SELECT actor, request_id, time, target FROM audit_events WHERE tenant_id = $1 AND action = 'ticket.downloaded' AND target = ANY ($2::text[]) ORDER BY target`,
      [acme.tenantId, [`ticket:${door.id}`, `ticket:${gate.id}`]],
    );
    expect(events).toEqual(
      [`ticket:${door.id}`, `ticket:${gate.id}`].sort().map((target) => ({
        actor: `client:${client.clientId}`,
        request_id: response.headers['x-request-id'],
        time: first,
        target,
      })),
    );

    now += 5000;
    const again = await download(t, token, 'phone-stamp');
    expect(again.map((item) => item.downloadDate)).toEqual([first, first]);
    expect((await operatorView(door.id)).downloadDate).toBe(first);
    for (const id of [door.id, gate.id]) expect(await countEvents(t, acme.tenantId, 'ticket.downloaded', `ticket:${id}`)).toBe(1);

    // A ticket issued after the first download gets its own first download, now.
    const late = await issue('door', 'phone-stamp');
    const third = await download(t, token, 'phone-stamp');
    expect(third.map((item) => [item.id, item.downloadDate])).toEqual([
      [door.id, first],
      [gate.id, first],
      [late.id, now],
    ]);
    expect(await countEvents(t, acme.tenantId, 'ticket.downloaded', `ticket:${late.id}`)).toBe(1);
    expect(await countEvents(t, acme.tenantId, 'ticket.downloaded', `ticket:${door.id}`)).toBe(1);
  });

  it('stores each credential sealed in the ticket row at the first download and answers it unchanged after', async () => {
    await device(t, operator, 'phone-cache');
    const issued = await issue('door', 'phone-cache');
    const token = await phoneToken(t, acme, 'phone-cache');
    expect((await deviceTicketRows(t, acme.tenantId, [issued.id]))[0]).toMatchObject({
      credential_encrypted: null,
      credential_kid: null,
      credential_issued_at: null,
      credential_expires_at: null,
    });

    const signedAt = now;
    const [first] = await download(t, token, 'phone-cache');
    expect(first!.credential).toMatch(JWS);
    const payload = payloadOf(first!.credential) as { iat: number; exp: number };
    // Stored beside its ciphertext: its key, and its iat and exp in ms (docs/api-reference.md 8.2: the expiry bounds how
    // long the lock needs the ticket's revocation).
    const [stored] = await deviceTicketRows(t, acme.tenantId, [issued.id]);
    expect(stored).toMatchObject({
      credential_kid: decodeProtectedHeader(first!.credential).kid,
      credential_issued_at: payload.iat * 1000,
      credential_expires_at: payload.exp * 1000,
    });
    expect(unsealedCredential(t, acme.tenantId, stored!)).toBe(first!.credential);
    // docs/security-cases.md G48: sealed under SECRETS_KEY, never in plain text.
    await expectNoPlainCredentialStored(t, [issued.id], [first!.credential]);

    // Signed again a minute later it would carry another iat: the same bytes prove it was not signed again. It has
    // more than half its lifetime left (docs/api-reference.md 8.2).
    now += MINUTE;
    const [second] = await download(t, token, 'phone-cache');
    expect(second!.credential).toBe(first!.credential);
    expect(payloadOf(second!.credential).iat).toBe(Math.floor(signedAt / 1000));
    expect(await deviceTicketRows(t, acme.tenantId, [issued.id])).toEqual([stored]);
  });

  it('stamps each ticket once, audits it once and stores one sealed credential whose expiry covers all those answered, under 10 concurrent downloads', async () => {
    await device(t, operator, 'phone-rush');
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await issue(i % 2 ? 'gate' : 'door', 'phone-rush')).id);
    const token = await phoneToken(t, acme, 'phone-rush');

    ticking = true;
    let responses;
    try {
      responses = await Promise.all(Array.from({ length: 10 }, () => downloadRequest(t, token, 'phone-rush')));
    } finally {
      ticking = false;
    }
    const bodies = responses.map((response) => {
      expect(response.statusCode, response.body).toBe(200);
      return response.json() as DownloadedTicket[];
    });
    const rows = await deviceTicketRows(t, acme.tenantId, ids);
    for (const row of rows) {
      const answered = bodies.map((body) => body.find((item) => item.id === row.id)!);
      expect(answered.every(Boolean)).toBe(true);
      // Concurrent first downloads may each sign (the clock ticks between them); one of those is stored, and the
      // stored expiry is the latest handed out: the lock needs a revocation until every one has expired
      // (docs/api-reference.md 8.2).
      const credentials = new Set(answered.map((item) => item.credential));
      expect(credentials).toContain(unsealedCredential(t, acme.tenantId, row));
      expect(row.credential_expires_at).toBe(Math.max(...[...credentials].map((credential) => (payloadOf(credential).exp as number) * 1000)));
      expect(new Set(answered.map((item) => item.downloadDate))).toEqual(new Set([row.downloaded_at]));
      expect(await countEvents(t, acme.tenantId, 'ticket.downloaded', `ticket:${row.id}`)).toBe(1);
      await expectNoPlainCredentialStored(t, [row.id], [...credentials]);
    }
    expect(bodies.every((body) => body.length === 5)).toBe(true);
  });

  it('pages with limit and Link: rel="next"; every ticket once, in creation order', async () => {
    await device(t, operator, 'phone-pages');
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push((await issue('door', 'phone-pages')).id);
    }
    const token = await phoneToken(t, acme, 'phone-pages');

    const first = await downloadRequest(t, token, 'phone-pages', '?limit=2');
    expect(first.statusCode).toBe(200);
    expect(first.json()).toHaveLength(2);
    expect(first.headers.link).toMatch(/^<\/deviceapi\/mobiledevices\/phone-pages\/tickets\?limit=2&cursor=[A-Za-z0-9_-]+>; rel="next"$/);

    const { pages, items } = await walk<DownloadedTicket>(t, token, '/deviceapi/mobiledevices/phone-pages/tickets?limit=2');
    expect(pages.map((page) => page.length)).toEqual([2, 2, 1]);
    expect(items.map((item) => item.id)).toEqual(ids);

    const whole = await downloadRequest(t, token, 'phone-pages', '?limit=5');
    expect(whole.json()).toHaveLength(5);
    expect(nextLink(whole)).toBeUndefined();

    for (const query of ['?cursor=garbage', `?cursor=${Buffer.from('[1,"x"]').toString('base64url')}`]) {
      expect(fieldsOf(await downloadRequest(t, token, 'phone-pages', query))).toEqual(['cursor']);
    }
    for (const query of ['?limit=0', '?limit=1001', '?limit=many', '?colour=red']) {
      expectProblem(await downloadRequest(t, token, 'phone-pages', query), 400);
    }
  });

  it('signs nothing for a 100-ticket permission until a device downloads, then only that device\'s tickets', async () => {
    const bulk = await createTenant(t.app, 'bulk');
    const bulkOperator = await clientToken(t.app, bulk);
    const phones = Array.from({ length: 10 }, (_, i) => `fleet-${i}`);
    const wings = Array.from({ length: 10 }, (_, i) => `wing-${i}`);
    for (const id of phones) await device(t, bulkOperator, id);
    for (const id of wings) await lock(t, bulkOperator, id);
    const manager = await accessToken(t, bulk, ['device-groups:write', 'access-permissions:write']);
    const post = (url: string, payload: object) => t.app.inject({ method: 'POST', url, headers: bearer(manager), payload });
    const resident = (await post('/v1/residents', { name: 'Fleet', mobileDeviceIds: phones })).json();
    const group = (await post('/v1/lock-groups', { name: 'Wings', securedObjectIds: wings })).json();
    const granted = await post('/v1/access-permissions', {
      residentId: resident.id,
      lockGroupId: group.id,
      beginDate: now,
      endDate: now + DAY,
      commands: ['open'],
      channels: ['btlespp'],
    });
    expect(granted.statusCode, granted.body).toBe(201);
    expect(granted.json().tokenCount).toBe(100);

    const rows = await deviceTicketRows(t, bulk.tenantId);
    expect(rows).toHaveLength(100);
    expect(rows.filter((row) => row.credential_encrypted !== null || row.credential_expires_at !== null || row.downloaded_at !== null)).toEqual([]);
    const ticketKeys = async () =>
      (await t.database.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM signing_keys WHERE tenant_id = $1 AND purpose = 'ticket'`, [bulk.tenantId])).rows[0]!.n;
    expect(await ticketKeys()).toBe(0);

    const items = await download(t, await phoneToken(t, bulk, 'fleet-3'), 'fleet-3');
    expect(items.map((item) => item.securedObjectId).sort()).toEqual([...wings].sort());
    expect(items.every((item) => item.accessPermissionId === granted.json().id)).toBe(true);
    const after = await deviceTicketRows(t, bulk.tenantId);
    expect(after.filter((row) => row.credential_encrypted !== null).map((row) => row.mobile_device_id)).toEqual(Array(10).fill('fleet-3'));
    expect(after.filter((row) => row.credential_encrypted === null && row.credential_expires_at === null)).toHaveLength(90);
    expect(await ticketKeys()).toBe(1);
  });

  it('answers 401 without a token, and 401 once the bound device is removed (its client goes with it, docs/api-reference.md 4.2)', async () => {
    await device(t, operator, 'phone-removed');
    await issue('door', 'phone-removed');
    const token = await phoneToken(t, acme, 'phone-removed');

    const anonymous = await t.app.inject({ url: '/deviceapi/mobiledevices/phone-removed/tickets' });
    expectProblem(anonymous, 401);
    expect(anonymous.headers['www-authenticate']).toBe('Bearer realm="deviceapi"');

    expect((await call(t, operator, { method: 'DELETE', url: '/operatorapi/mobiledevices/phone-removed' })).statusCode).toBe(204);
    const removed = await downloadRequest(t, token, 'phone-removed');
    expectProblem(removed, 401);
    expect(removed.headers['www-authenticate']).toBe(
      'Bearer realm="deviceapi", error="invalid_token", error_description="the access token has been revoked"',
    );
  });
});
