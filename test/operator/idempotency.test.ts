// Idempotency-Key on the Operator API's creates (docs/api-reference.md 4.3): replay, 422 on another body, 409 while running, per client.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestFingerprint } from '../../src/services/idempotency.service.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { expectNothingChanged, rowCounts } from '../helpers/database-state.js';
import { clientToken, createClient, type TenantFixture } from '../helpers/oauth.js';
import { twoTenants } from '../helpers/tenants.js';
import {
  HOUR,
  LOCK_UUID,
  auditEvents,
  expectProblem,
  issueTicket,
  lock,
  problemFields,
  registerDevice,
  registerLock,
  ticketBody,
} from '../helpers/operator.js';

const DAY = 24 * HOUR;

describe('Idempotency-Key', () => {
  let t: TestApp;
  let acme: TenantFixture;
  let other: TenantFixture;
  let token: string;
  let otherToken: string;
  /** Added to the real time: one test lets a key expire. */
  let offset = 0;

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4' }, { clock: () => Date.now() + offset });
    const seed = { locks: ['door'], devices: ['phone'] };
    ({ acme, other, token, otherToken } = await twoTenants(t, { acme: seed, other: seed }));
  });
  afterAll(async () => {
    await t.close();
  });

  const key = (value: string) => ({ 'idempotency-key': value });

  async function ticketCount(tenantId = acme.tenantId): Promise<number> {
    const { rows } = await t.database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM tickets WHERE tenant_id = $1', [tenantId]);
    return rows[0]!.n;
  }

  async function keyRow(tenantId: string, value: string, clientId = tenantId === other.tenantId ? other.clientId : acme.clientId) {
    const { rows } = await t.database.db.query<{
      request_hash: Uint8Array;
      created_at: number;
      expires_at: number;
      response_status: number | null;
      response_body: string | null;
    }>(`SELECT request_hash, created_at, expires_at, response_status, response_body FROM idempotency_keys
        WHERE tenant_id = $1 AND key = $2 AND client_id = $3`, [tenantId, value, clientId]);
    const row = rows[0];
    return row ? { ...row, request_hash: Buffer.from(row.request_hash).toString('hex') } : undefined;
  }

  const fingerprint = (path: string, body: unknown) => requestFingerprint('POST', path, body).toString('hex');

  it('answers a repeat with the same body with the first response and creates nothing', async () => {
    const body = ticketBody(t, 'door', 'phone');
    const before = await ticketCount();
    const first = await issueTicket(t, token, body, key('retry-1'));
    expect(first.statusCode).toBe(201);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    expect(await ticketCount()).toBe(before + 1);

    const stored = await keyRow(acme.tenantId, 'retry-1');
    expect(stored).toEqual({
      request_hash: fingerprint('/operatorapi/tickets', body),
      created_at: expect.any(Number),
      expires_at: stored!.created_at + DAY,
      response_status: 201,
      response_body: first.body,
    });

    // The same fields in another order are the same request.
    const reordered = Object.fromEntries(Object.entries(body).reverse());
    for (const repeat of [body, reordered]) {
      const again = await issueTicket(t, token, repeat, key('retry-1'));
      expect(again.statusCode).toBe(201);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.headers.location).toBe(first.headers.location);
      expect(again.headers['content-type']).toBe(first.headers['content-type']);
      expect(again.body).toBe(first.body);
      expect(again.headers['x-request-id']).not.toBe(first.headers['x-request-id']);
    }
    expect(await ticketCount()).toBe(before + 1);
    expect(await auditEvents(t, { target: `ticket:${first.json().id}` })).toHaveLength(1);
  });

  it('answers 422 for the same key with a different body, or on another route, and creates nothing', async () => {
    const body = ticketBody(t, 'door', 'phone');
    const first = await issueTicket(t, token, body, key('retry-2'));
    expect(first.statusCode).toBe(201);
    const stored = await keyRow(acme.tenantId, 'retry-2');

    await expectNothingChanged(t, async () => {
      const changed = await issueTicket(t, token, { ...body, commands: ['open', 'clos'] }, key('retry-2'));
      expect(expectProblem(changed, 422).errors).toEqual([{ field: 'Idempotency-Key', message: expect.any(String) }]);
      expect(changed.headers['idempotent-replayed']).toBeUndefined();

      const elsewhere = await registerDevice(t, token, { id: 'retry-2-device' }, key('retry-2'));
      expectProblem(elsewhere, 422);
    });
    expect(await keyRow(acme.tenantId, 'retry-2')).toEqual(stored);
    // The original still replays.
    expect((await issueTicket(t, token, body, key('retry-2'))).body).toBe(first.body);
  });

  it('answers 409 while the first request with the key is still running (422 if its body differs)', async () => {
    const body = ticketBody(t, 'door', 'phone');
    // A reservation without a response is what a request still being handled leaves behind.
    const now = t.app.services.clock();
    await t.database.db.query(
      'INSERT INTO idempotency_keys (tenant_id, client_id, key, request_hash, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)',
      [acme.tenantId, acme.clientId, 'in-flight', requestFingerprint('POST', '/operatorapi/tickets', body), now, now + DAY],
    );
    await expectNothingChanged(t, async () => {
      const running = await issueTicket(t, token, body, key('in-flight'));
      expect(expectProblem(running, 409).detail).toContain('still being processed');
      const different = await issueTicket(t, token, { ...body, commands: ['clos'] }, key('in-flight'));
      expectProblem(different, 422);
    });
    expect((await keyRow(acme.tenantId, 'in-flight'))?.response_status).toBeNull();
  });

  it('frees a key whose request never answered (its instance died) once the reservation lease has passed', async () => {
    const body = ticketBody(t, 'door', 'phone');
    const owner = { tenantId: acme.tenantId, clientId: acme.clientId };
    // What a request killed between reserving its key and storing its answer leaves behind: the reservation alone.
    const fingerprint = requestFingerprint('POST', '/operatorapi/tickets', body);
    expect(await t.app.services.idempotency.begin(owner, 'orphan', fingerprint)).toEqual({ kind: 'proceed' });
    // Within the lease the first request may still be running: 409, nothing made.
    offset = 55_000;
    try {
      await expectNothingChanged(t, async () => {
        expectProblem(await issueTicket(t, token, body, key('orphan')), 409);
      });
      // After it (60 s, twice the 30 s statement timeout being shorter), the retry runs once; its answer is kept 24 h.
      offset = 60_001;
      const before = await ticketCount();
      const retry = await issueTicket(t, token, body, key('orphan'));
      expect(retry.statusCode).toBe(201);
      expect(await ticketCount()).toBe(before + 1);
      const stored = await keyRow(acme.tenantId, 'orphan');
      expect(stored?.response_status).toBe(201);
      expect(Number(stored!.expires_at) - Number(stored!.created_at)).toBe(DAY);
      expect((await issueTicket(t, token, body, key('orphan'))).body).toBe(retry.body);
      expect(await ticketCount()).toBe(before + 1);
    } finally {
      offset = 0;
    }
  });

  it('lets exactly one of 20 concurrent requests with one key create the ticket; the others replay it or get 409', async () => {
    const body = ticketBody(t, 'door', 'phone', { commands: ['tokn'] });
    const before = await ticketCount();
    const responses = await Promise.all(Array.from({ length: 20 }, () => issueTicket(t, token, body, key('stampede'))));
    const statuses = responses.map((response) => response.statusCode);
    expect(statuses.every((status) => status === 201 || status === 409), statuses.join(',')).toBe(true);
    const created = responses.filter((response) => response.statusCode === 201);
    expect(created.length).toBeGreaterThanOrEqual(1);
    expect(created.filter((response) => response.headers['idempotent-replayed'] === undefined)).toHaveLength(1);
    expect(new Set(created.map((response) => response.body)).size).toBe(1);
    for (const conflict of responses.filter((response) => response.statusCode === 409)) expectProblem(conflict, 409);

    expect(await ticketCount()).toBe(before + 1);
    const { rows } = await t.database.db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM tickets WHERE tenant_id = $1 AND commands = '{tokn}'",
      [acme.tenantId],
    );
    expect(rows[0]!.n).toBe(1);
    // Once done, every repeat replays.
    const later = await issueTicket(t, token, body, key('stampede'));
    expect(later.statusCode).toBe(201);
    expect(later.body).toBe(created[0]!.body);
  });

  it('keeps keys per tenant: another tenant may use the same key for its own request', async () => {
    const acmeFirst = await issueTicket(t, token, ticketBody(t, 'door', 'phone', { commands: ['clos'] }), key('shared-key'));
    expect(acmeFirst.statusCode).toBe(201);
    const stored = await keyRow(acme.tenantId, 'shared-key');

    const otherBefore = await ticketCount(other.tenantId);
    const theirs = await issueTicket(t, otherToken, ticketBody(t, 'door', 'phone', { commands: ['open'] }), key('shared-key'));
    expect(theirs.statusCode).toBe(201);
    expect(theirs.headers['idempotent-replayed']).toBeUndefined();
    expect(theirs.json().id).not.toBe(acmeFirst.json().id);
    expect(await ticketCount(other.tenantId)).toBe(otherBefore + 1);
    expect(await keyRow(acme.tenantId, 'shared-key')).toEqual(stored);
    expect((await keyRow(other.tenantId, 'shared-key'))?.response_body).toBe(theirs.body);
  });

  it("keeps keys per client: another client of the same tenant gets its own execution, never the first client's answer", async () => {
    const second = await createClient(t.app, acme, ['tokens:create']);
    const secondToken = await clientToken(t.app, second);
    const firstBody = ticketBody(t, 'door', 'phone', { commands: ['clos'] });
    const secondBody = ticketBody(t, 'door', 'phone', { commands: ['open'] });
    const before = await ticketCount();
    const mine = await issueTicket(t, token, firstBody, key('client-key'));
    expect(mine.statusCode).toBe(201);

    // Another body under the same key: no 422 and no replay, a ticket of its own.
    const theirs = await issueTicket(t, secondToken, secondBody, key('client-key'));
    expect(theirs.statusCode, theirs.body).toBe(201);
    expect(theirs.headers['idempotent-replayed']).toBeUndefined();
    expect(theirs.json()).toMatchObject({ commands: ['open'] });
    expect(theirs.json().id).not.toBe(mine.json().id);
    // The same body under the same key: still its own execution, not the other client's stored answer.
    const same = await issueTicket(t, secondToken, firstBody, key('client-key-2'));
    expect(same.statusCode).toBe(201);
    const sameAgain = await issueTicket(t, token, firstBody, key('client-key-2'));
    expect(sameAgain.statusCode).toBe(201);
    expect(sameAgain.headers['idempotent-replayed']).toBeUndefined();
    expect(sameAgain.json().id).not.toBe(same.json().id);
    expect(await ticketCount()).toBe(before + 4);

    // Each client's repeat replays its own answer, and creates nothing.
    for (const [auth, body, first] of [[token, firstBody, mine], [secondToken, secondBody, theirs], [secondToken, firstBody, same]] as const) {
      const again = await issueTicket(t, auth, body, key(first === same ? 'client-key-2' : 'client-key'));
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.body).toBe(first.body);
    }
    expect(await ticketCount()).toBe(before + 4);
    // One record per client under the one key.
    expect((await keyRow(acme.tenantId, 'client-key', acme.clientId))?.response_body).toBe(mine.body);
    expect((await keyRow(acme.tenantId, 'client-key', second.clientId))?.response_body).toBe(theirs.body);
  });

  it('replaces an expired record with the new request', async () => {
    // A record from yesterday for another request: it no longer counts.
    const now = t.app.services.clock();
    await t.database.db.query(
      `INSERT INTO idempotency_keys (tenant_id, client_id, key, request_hash, created_at, expires_at, response_status, response_headers, response_body)
       VALUES ($1, $2, 'stale', $3, $4, $5, 201, '{}', '{"stale":true}')`,
      [acme.tenantId, acme.clientId, Buffer.alloc(32, 7), now - DAY - 1000, now - 1000],
    );
    const body = ticketBody(t, 'door', 'phone');
    const before = await ticketCount();
    const fresh = await issueTicket(t, token, body, key('stale'));
    expect(fresh.statusCode).toBe(201);
    expect(fresh.headers['idempotent-replayed']).toBeUndefined();
    expect(fresh.json().status).toBe('VALID');
    expect(await ticketCount()).toBe(before + 1);
    const replaced = await keyRow(acme.tenantId, 'stale');
    expect(replaced).toMatchObject({ request_hash: fingerprint('/operatorapi/tickets', body), response_status: 201, response_body: fresh.body });
    expect(replaced!.expires_at).toBeGreaterThan(now);
  });

  it('forgets a key after 24 hours: the same request then creates again', async () => {
    const body = ticketBody(t, 'door', 'phone', { endDate: t.app.services.clock() + 3 * DAY });
    const first = await issueTicket(t, token, body, key('day-old'));
    expect(first.statusCode).toBe(201);
    offset += DAY + 60_000;
    // Tokens issued before the jump have expired; later tests use fresh ones.
    token = await clientToken(t.app, acme);
    otherToken = await clientToken(t.app, other);
    const before = await ticketCount();
    const later = await issueTicket(t, token, body, key('day-old'));
    expect(later.statusCode).toBe(201);
    expect(later.headers['idempotent-replayed']).toBeUndefined();
    expect(later.json().id).not.toBe(first.json().id);
    expect(await ticketCount()).toBe(before + 1);
  });

  it('works on POST /operatorapi/securedobjects and /operatorapi/mobiledevices too', async () => {
    const lockBody = { id: 'idem-door', channels: ['btlespp'], localName: 'IDEM', uuid: LOCK_UUID };
    const firstLock = await registerLock(t, token, lockBody, key('lock-once'));
    expect(firstLock.statusCode).toBe(201);
    const retryLock = await registerLock(t, token, lockBody, key('lock-once'));
    expect(retryLock.statusCode).toBe(201);
    expect(retryLock.headers['idempotent-replayed']).toBe('true');
    expect(retryLock.headers.location).toBe('/operatorapi/securedobjects/idem-door');
    expect(retryLock.body).toBe(firstLock.body);
    // Without the key a retry is a second registration: 409.
    expectProblem(await registerLock(t, token, lockBody), 409);

    // A server-made id: the replay names the same device, and only one was made.
    const countDevices = async () => (await rowCounts(t)).mobile_devices;
    const devicesBefore = await countDevices();
    const firstDevice = await registerDevice(t, token, { name: 'made once' }, key('device-once'));
    const retryDevice = await registerDevice(t, token, { name: 'made once' }, key('device-once'));
    expect(firstDevice.statusCode).toBe(201);
    expect(retryDevice.statusCode).toBe(201);
    expect(retryDevice.json()).toStrictEqual(firstDevice.json());
    expect(retryDevice.headers.location).toBe(firstDevice.headers.location);
    expect(await countDevices()).toBe(devicesBefore + 1);
    expect(await auditEvents(t, { target: `mobile_device:${firstDevice.json().id}` })).toHaveLength(1);
  });

  it('replays the first answer even when it was a refusal (422), since the key names that one request', async () => {
    const body = ticketBody(t, 'not-yet-door', 'phone');
    const refused = await issueTicket(t, token, body, key('refused-once'));
    expectProblem(refused, 422);
    await lock(t, token, 'not-yet-door');
    const again = await issueTicket(t, token, body, key('refused-once'));
    expect(again.statusCode).toBe(422);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toBe(refused.body);
    // A new key is a new request.
    expect((await issueTicket(t, token, body, key('refused-once-2'))).statusCode).toBe(201);
  });

  it('refuses an invalid key with 400 and records nothing; malformed, unauthenticated or forbidden requests record nothing', async () => {
    await expectNothingChanged(t, async () => {
      for (const invalid of ['k'.repeat(256), 'k'.repeat(300), ' padded', 'padded ', '']) {
        const response = await issueTicket(t, token, ticketBody(t, 'door', 'phone'), key(invalid));
        expect(problemFields(response, 400), JSON.stringify(invalid)).toEqual(['Idempotency-Key']);
      }
      expect((await issueTicket(t, token, { commands: 'open' }, key('malformed'))).statusCode).toBe(400);
      expect((await issueTicket(t, 'not-a-token', ticketBody(t, 'door', 'phone'), key('no-auth'))).statusCode).toBe(401);
      const reader = await clientToken(t.app, acme, 'tokens:read');
      expect((await issueTicket(t, reader, ticketBody(t, 'door', 'phone'), key('no-scope'))).statusCode).toBe(403);
    });
    for (const value of ['malformed', 'no-auth', 'no-scope']) expect(await keyRow(acme.tenantId, value)).toBeUndefined();
    // 255 printable characters is the longest key accepted.
    expect((await issueTicket(t, token, ticketBody(t, 'door', 'phone'), key('k'.repeat(255)))).statusCode).toBe(201);
  });
  // docs/security-cases.md H57: the creates that show a secret once honour the key too, and a replay shows it no more.
  it.each([
    {
      path: '/operatorapi/oauthclients',
      table: 'oauth_clients',
      secret: 'clientSecret',
      body: { name: 'front desk', scopes: ['tokens:read'] },
      other: { name: 'front desk', scopes: ['tokens:create'] },
    },
    {
      path: '/operatorapi/webhooks',
      table: 'webhooks',
      secret: 'secret',
      body: { url: 'https://93.184.215.14/hooks/idempotent', eventTypes: ['ticket.created'] },
      other: { url: 'https://93.184.215.14/hooks/idempotent', eventTypes: ['ticket.revoked'] },
    },
  ])('$path: a retry with the same key makes nothing, answers the same resource without the secret', async ({ path, table, secret, body, other: otherBody }) => {
    const count = async () =>
      (await t.database.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE tenant_id = $1`, [acme.tenantId])).rows[0]!.n;
    const before = await count();
    const headers = { authorization: `Bearer ${token}`, ...key(`create-once-${table}`) };
    const first = await t.app.inject({ method: 'POST', url: path, headers, payload: body });
    expect(first.statusCode, first.body).toBe(201);
    const created = first.json() as Record<string, unknown>;
    expect(typeof created[secret]).toBe('string');
    expect(created.secretWithheld).toBeUndefined();
    expect(await count()).toBe(before + 1);

    const again = await t.app.inject({ method: 'POST', url: path, headers, payload: body });
    expect(again.statusCode, again.body).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.headers.location).toBe(first.headers.location);
    expect(again.headers['cache-control']).toBe(first.headers['cache-control']);
    const { [secret]: shown, ...withoutSecret } = created;
    expect(again.json()).toEqual({ ...withoutSecret, secretWithheld: true });
    expect(again.body).not.toContain(String(shown));
    expect(await count()).toBe(before + 1);
    // Never stored: the replay's record holds no secret either.
    const row = await keyRow(acme.tenantId, `create-once-${table}`);
    expect(row?.response_body).not.toContain(String(shown));

    const different = await t.app.inject({ method: 'POST', url: path, headers, payload: otherBody });
    expectProblem(different, 422);
    expect(await count()).toBe(before + 1);
  });
});
