// GET /v1/residents/{id}/token-card (docs/api-reference.md 5, 6.3): v2 card data holding the credentials of exactly the
// resident's valid tickets; v1 is gone (410); bad versions 400; scope nfc-token-writer; tenants kept apart.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { accessToken, countEvents, deviceTicketRows, expectNoPlainCredentialStored, payloadOf, unsealedCredential, verifyCredential } from '../helpers/device.js';
import { bearer, clientToken, createTenant, type TenantFixture } from '../helpers/oauth.js';
import { HOUR, call, device, expectProblem, lock, ticket } from '../helpers/operator.js';

const MINUTE = 60_000;
const DAY = 24 * HOUR;
const SUNSET_2019_03_01 = 'Fri, 01 Mar 2019 00:00:00 GMT';

describe('GET /v1/residents/{id}/token-card', () => {
  let now = Date.UTC(2026, 6, 1, 10, 0, 0, 0);
  let t: TestApp;
  let acme: TenantFixture;
  let operator: string;
  /** Access API token with nfc-token-writer and the group and permission scopes. */
  let writer: string;
  let residentId: string;
  /** The resident's tickets that are valid at the time of the card. */
  const expected: string[] = [];
  let revokedId: string;
  let expiringId: string;
  let outsiderId: string;

  const card = (token: string, id: string, query = '?version=2') => t.app.inject({ url: `/v1/residents/${id}/token-card${query}`, headers: bearer(token) });

  function decodeCard(cardData: string): { version: number; credentials: string[] } {
    expect(cardData).toMatch(/^[A-Za-z0-9+/]+={0,2}$/);
    return JSON.parse(Buffer.from(cardData, 'base64').toString('utf8'));
  }

  async function v1(method: 'POST', url: string, payload: object) {
    const response = await t.app.inject({ method, url, headers: bearer(writer), payload });
    expect(response.statusCode, response.body).toBe(201);
    return response.json();
  }

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4' }, { clock: () => now });
    acme = await createTenant(t.app, 'acme');
    operator = await clientToken(t.app, acme);
    writer = await accessToken(t, acme, ['nfc-token-writer', 'device-groups:write', 'access-permissions:write']);
    for (const id of ['door', 'gate']) await lock(t, operator, id);
    for (const id of ['card-1', 'card-2', 'outsider']) await device(t, operator, id);

    const resident = await v1('POST', '/v1/residents', { name: 'Alice', mobileDeviceIds: ['card-1', 'card-2'] });
    residentId = resident.id;
    const group = await v1('POST', '/v1/lock-groups', { name: 'Home', securedObjectIds: ['door', 'gate'] });
    const permission = await v1('POST', '/v1/access-permissions', {
      residentId,
      lockGroupId: group.id,
      beginDate: now,
      endDate: now + DAY,
      commands: ['open'],
      channels: ['btlespp'],
    });
    expect(permission.tokenCount).toBe(4);
    const { rows } = await t.database.db.query<{ id: string }>('SELECT id FROM tickets WHERE access_permission_id = $1', [permission.id]);
    expected.push(...rows.map((row) => row.id));
    // A direct Operator API ticket of one of the resident's devices is one of its valid tickets too.
    expected.push((await ticket(t, operator, 'door', 'card-1', { endDate: now + 2 * DAY })).id);
    revokedId = (await ticket(t, operator, 'gate', 'card-2')).id;
    expect((await call(t, operator, { method: 'DELETE', url: `/operatorapi/tickets/${revokedId}` })).statusCode).toBe(200);
    expiringId = (await ticket(t, operator, 'gate', 'card-1', { endDate: now + MINUTE })).id;
    outsiderId = (await ticket(t, operator, 'door', 'outsider')).id;
    now += 2 * MINUTE;
  });
  afterAll(async () => {
    await t.close();
  });

  it('answers {version: 2, cardData}: base64 of {"version":2,"credentials":[…]} covering exactly the resident\'s valid tickets', async () => {
    const response = await card(writer, residentId);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.headers['content-type']).toContain('application/json');
    const body = response.json();
    expect(Object.keys(body).sort()).toEqual(['cardData', 'version']);
    expect(body.version).toBe(2);
    const contents = decodeCard(body.cardData);
    expect(Object.keys(contents)).toEqual(['version', 'credentials']);
    expect(contents.version).toBe(2);

    const covered: string[] = [];
    for (const credential of contents.credentials) {
      // Checked as the card's lock does (docs/api-reference.md 8.1), bounded like a phone's (docs/api-reference.md 8.3).
      const payload = await verifyCredential(t, acme, credential, { securedObjectId: payloadOf(credential).aud as string, at: now });
      expect(['card-1', 'card-2']).toContain(payload.sub);
      covered.push(payload.jti!);
    }
    expect(covered.sort()).toEqual([...expected].sort());
    for (const id of [revokedId, expiringId, outsiderId]) expect(covered).not.toContain(id);

    // Writing a card is its devices' download: credentials stored sealed (docs/security-cases.md G48), first
    // download stamped and audited once.
    const rows = await deviceTicketRows(t, acme.tenantId, expected);
    expect(rows.every((row) => row.credential_encrypted !== null && row.downloaded_at === now)).toBe(true);
    expect(new Set(rows.map((row) => unsealedCredential(t, acme.tenantId, row)))).toEqual(new Set(contents.credentials));
    await expectNoPlainCredentialStored(t, expected, contents.credentials);
    for (const id of expected) expect(await countEvents(t, acme.tenantId, 'ticket.downloaded', `ticket:${id}`)).toBe(1);
    expect((await deviceTicketRows(t, acme.tenantId, [outsiderId, revokedId])).map((row) => [row.credential_encrypted, row.downloaded_at])).toEqual([
      [null, null],
      [null, null],
    ]);

    // The same card again a minute later: the same credentials, no second stamp.
    now += MINUTE;
    const again = await card(writer, residentId);
    expect(new Set(decodeCard(again.json().cardData).credentials)).toEqual(new Set(contents.credentials));
    for (const id of expected) expect(await countEvents(t, acme.tenantId, 'ticket.downloaded', `ticket:${id}`)).toBe(1);
  });

  it('holds no credentials for a resident without valid tickets', async () => {
    const empty = await v1('POST', '/v1/residents', { name: 'Nobody' });
    const response = await card(writer, empty.id);
    expect(response.statusCode, response.body).toBe(200);
    expect(decodeCard(response.json().cardData)).toEqual({ version: 2, credentials: [] });
  });

  it('answers 410 for version=1, naming token card v2, with Sunset and the successor link', async () => {
    const response = await card(writer, residentId, '?version=1');
    const problem = expectProblem(response, 410);
    expect(problem.detail).toContain('Token card v1 was removed on 01.03.2019');
    expect(problem.detail).toContain('v2');
    expect(problem.detail).toContain('version=2');
    expect(response.headers.sunset).toBe(SUNSET_2019_03_01);
    expect(response.headers.link).toBe(`</v1/residents/${residentId}/token-card?version=2>; rel="successor-version"`);
  });

  it.each(['', '?version=3', '?version=0', '?version=two', '?version=2&colour=red'])('answers 400 for %s', async (query) => {
    expectProblem(await card(writer, residentId, query), 400);
  });

  it('answers 403 without nfc-token-writer, 401 without a token or with an Operator API token', async () => {
    const reader = await accessToken(t, acme, ['device-groups:read', 'device-groups:write']);
    const forbidden = await card(reader, residentId);
    expect(expectProblem(forbidden, 403).detail).toContain('nfc-token-writer');
    expect(forbidden.headers['www-authenticate']).toBe('Bearer realm="accessapi", error="insufficient_scope", scope="nfc-token-writer"');

    const anonymous = await t.app.inject({ url: `/v1/residents/${residentId}/token-card?version=2` });
    expectProblem(anonymous, 401);
    expect(anonymous.headers['www-authenticate']).toBe('Bearer realm="accessapi"');
    expectProblem(await card(operator, residentId), 401);
  });

  it('answers another tenant\'s resident exactly as a missing one (404), and writes nothing', async () => {
    const other = await createTenant(t.app, 'other');
    const theirWriter = await accessToken(t, other, ['nfc-token-writer']);
    const before = await deviceTicketRows(t, acme.tenantId);
    const foreign = await card(theirWriter, residentId);
    const missing = await card(theirWriter, '5f1d7a52-5b8e-4f43-9d0a-7d1e0c6b9a21');
    expectProblem(foreign, 404);
    expectProblem(missing, 404);
    expect(foreign.json().title).toBe(missing.json().title);
    expect(expectProblem(await card(theirWriter, 'not-a-uuid'), 404).status).toBe(404);
    expect(await deviceTicketRows(t, acme.tenantId)).toEqual(before);
  });
  it('refuses a card for more than 1000 valid tickets with 422 and stamps nothing; at exactly 1000 it is written', async () => {
    await device(t, operator, 'bulk-card');
    const bulk = await v1('POST', '/v1/residents', { name: 'Bulk', mobileDeviceIds: ['bulk-card'] });
    // 1001 valid tickets of the resident's device, seeded in one statement (issuing them one by one adds nothing here).
    await t.database.db.query(
      `INSERT INTO tickets (id, tenant_id, secured_object_id, mobile_device_id, begin_date, end_date, created_at, commands,
                            channels, change_seq)
       SELECT gen_random_uuid(), $1, 'door', 'bulk-card', $2::bigint, $3::bigint, $2::bigint + n, '{open}', '{btlespp}', 1 FROM generate_series(1, 1001) AS n`,
      [acme.tenantId, now, now + DAY],
    );
    const stamped = async () =>
      (
        await t.database.db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM tickets
            WHERE tenant_id = $1 AND mobile_device_id = 'bulk-card' AND (downloaded_at IS NOT NULL OR credential_encrypted IS NOT NULL)`,
          [acme.tenantId],
        )
      ).rows[0]!.n;

    const refused = await card(writer, bulk.id);
    expect(expectProblem(refused, 422).detail).toContain('at most 1000 credentials');
    expect(await stamped()).toBe(0);

    await t.database.db.query(
      `UPDATE tickets SET revoked_at = $2 WHERE id = (SELECT id FROM tickets WHERE tenant_id = $1 AND mobile_device_id = 'bulk-card' LIMIT 1)`,
      [acme.tenantId, now],
    );
    const written = await card(writer, bulk.id);
    expect(written.statusCode, written.body).toBe(200);
    expect(decodeCard(written.json().cardData).credentials).toHaveLength(1000);
    expect(await stamped()).toBe(1000);
  });
});
