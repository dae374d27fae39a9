// /operatorapi/jobs (docs/api-reference.md 14): bulk jobs in JSON and CSV, their results with the single endpoints'
// problems, re-runs by natural key, cancellation, limits, scopes and tenants. The worker is driven one round at a time
// (runOnce), so each test knows when its job has run.
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { expectNothingChanged } from '../helpers/database-state.js';
import { clientToken, createClient, type TenantFixture } from '../helpers/oauth.js';
import { twoTenants } from '../helpers/tenants.js';
import { auditEvents, call, expectProblem, HOUR, lock, registerDevice, registerLock, UUID_PATTERN, walk } from '../helpers/operator.js';

const ALL_JOB_SCOPES = 'devices:write devices:read device-groups:write access-permissions:write tokens:create tokens:read';

interface JobBody {
  id: string;
  type: string;
  state: string;
  total: number;
  processed: number;
  succeeded: number;
  failed: number;
  createdTime: number;
  startedTime?: number;
  finishedTime?: number;
}

interface ResultBody {
  index: number;
  key: string;
  outcome: string;
  id?: string;
  problem?: Record<string, unknown>;
}

describe('bulk jobs', () => {
  let t: TestApp;
  let acme: TenantFixture;
  let other: TenantFixture;
  let token: string;
  let otherToken: string;
  let managementToken: string;

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4', JOB_MAX_ITEMS: '50', JOB_MAX_BYTES: '8192', JOB_MAX_ACTIVE_PER_TENANT: '3' });
    // Driven round by round below: no job runs behind a test's back.
    await t.app.services.jobWorker.stop();
    let management: string;
    ({ acme, other, token: management, otherToken } = await twoTenants(t));
    managementToken = management;
    token = await clientToken(t.app, await createClient(t.app, acme, ALL_JOB_SCOPES.split(' ')));
    otherToken = await clientToken(t.app, await createClient(t.app, other, ALL_JOB_SCOPES.split(' ')));
  });
  afterAll(async () => {
    await t.close();
  });

  const sendJson = (body: object, auth: string | null = token, headers: Record<string, string> = {}) =>
    call(t, auth, { method: 'POST', url: '/operatorapi/jobs', payload: body, headers });
  const sendCsv = (type: string, csv: string | Buffer, contentType = 'text/csv', auth: string | null = token) =>
    t.app.inject({
      method: 'POST',
      url: `/operatorapi/jobs?type=${type}`,
      headers: { ...(auth ? { authorization: `Bearer ${auth}` } : {}), 'content-type': contentType },
      payload: csv,
    });
  const getJob = (id: string, auth = token) => call(t, auth, { method: 'GET', url: `/operatorapi/jobs/${id}` });
  const cancel = (id: string, auth = token) => call(t, auth, { method: 'DELETE', url: `/operatorapi/jobs/${id}` });

  /** The 202, then one worker round, then the job and all its results. */
  async function run(response: LightMyRequestResponse): Promise<{ job: JobBody; results: ResultBody[] }> {
    expect(response.statusCode, response.body).toBe(202);
    const queued = response.json<JobBody>();
    expect(response.headers.location).toBe(`/operatorapi/jobs/${queued.id}`);
    expect(Number(response.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(await t.app.services.jobWorker.runOnce()).toBe(true);
    const job = (await getJob(queued.id)).json<JobBody>();
    const { items } = await walk<ResultBody>(t, token, `/operatorapi/jobs/${queued.id}/results?limit=7`);
    return { job, results: items };
  }

  /** What a problem is without the parts that belong to one request. */
  const problemOfResponse = (response: LightMyRequestResponse) => {
    const { instance: _instance, requestId: _requestId, ...rest } = response.json();
    return rest;
  };

  it('a CSV of devices with good and bad rows: the good applied, each bad one with the problem its endpoint answers', async () => {
    await registerDevice(t, token, { id: 'taken-phone', name: 'first' });
    const csv = 'id,name\r\nphone-1,Alice\r\ntaken-phone,second\r\n"bad id!",Bob\r\nphone-2,"Carol, ""C"""\r\n';
    const { job, results } = await run(await sendCsv('mobile-devices', csv));
    expect(job).toMatchObject({ type: 'mobile-devices', state: 'failed', total: 4, processed: 4, succeeded: 2, failed: 2 });
    expect(job.startedTime).toEqual(expect.any(Number));
    expect(job.finishedTime).toEqual(expect.any(Number));
    expect(results.map((result) => [result.index, result.key, result.outcome, result.id])).toEqual([
      [0, 'phone-1', 'created', 'phone-1'],
      [1, 'taken-phone', 'failed', undefined],
      [2, 'bad id!', 'failed', undefined],
      [3, 'phone-2', 'created', 'phone-2'],
    ]);
    // The same problems the single endpoint answers for the same bodies.
    const conflict = await registerDevice(t, token, { id: 'taken-phone', name: 'second' });
    expectProblem(conflict, 409);
    expect(results[1]!.problem).toEqual(problemOfResponse(conflict));
    const invalid = await registerDevice(t, token, { id: 'bad id!', name: 'Bob' });
    expectProblem(invalid, 400);
    expect(results[2]!.problem).toEqual(problemOfResponse(invalid));
    const { rows } = await t.database.db.query<{ id: string; name: string }>(
      "SELECT id, name FROM mobile_devices WHERE tenant_id = $1 AND id IN ('phone-1', 'phone-2', 'taken-phone') ORDER BY id",
      [acme.tenantId],
    );
    expect(rows).toEqual([
      { id: 'phone-1', name: 'Alice' },
      { id: 'phone-2', name: 'Carol, "C"' },
      { id: 'taken-phone', name: 'first' },
    ]);
    // Audited as the single create is: by the job's sender, under the request that sent the job.
    const [created] = await auditEvents(t, { target: 'mobile_device:phone-1' });
    expect(created).toMatchObject({ action: 'mobile_device.created', actor: expect.stringMatching(/^client:/), tenant_id: acme.tenantId });
    const finished = await auditEvents(t, { target: `job:${job.id}` });
    expect(finished.map((event) => event.action)).toEqual(['job.finished']);
    expect(finished[0]!.request_id).toBe(created!.request_id);
    const failedOnly = await walk<ResultBody>(t, token, `/operatorapi/jobs/${job.id}/results?outcome=failed`);
    expect(failedOnly.items.map((result) => result.index)).toEqual([1, 2]);
  });

  it('reads CSV columns by name in any order, with a byte-order mark and LF line ends', async () => {
    const csv = '\uFEFFuuid,localName,timeZone,channels,id\n7d8a0c1e-4b7f-4d5e-9a41-3c2b1f0e9d8c,LOCK-A,Europe/Berlin,btlespp,door-a\n';
    const { job, results } = await run(await sendCsv('secured-objects', csv, 'text/csv; charset=utf-8'));
    expect(job).toMatchObject({ state: 'succeeded', total: 1, succeeded: 1 });
    expect(results).toEqual([{ index: 0, key: 'door-a', outcome: 'created', id: 'door-a' }]);
    const response = await call(t, token, { method: 'GET', url: '/operatorapi/securedobjects/door-a' });
    expect(response.json()).toMatchObject({ id: 'door-a', channels: ['btlespp'], timeZone: 'Europe/Berlin', urls: ['btlespp://LOCK-A/7d8a0c1e-4b7f-4d5e-9a41-3c2b1f0e9d8c'] });
  });

  it('refuses a CSV with another delimiter, another encoding, an unknown or a missing column: 400 naming it, nothing stored', async () => {
    await expectNothingChanged(t, async () => {
      const semicolon = expectProblem(await sendCsv('mobile-devices', 'id;name\r\nx;y\r\n'), 400);
      expect(semicolon.detail).toContain('";" (semicolon)');
      const latin1 = expectProblem(await sendCsv('mobile-devices', Buffer.from('id,name\r\nx,Jos\xe9\r\n', 'latin1')), 400);
      expect(latin1.detail).toContain('not UTF-8');
      const declared = expectProblem(await sendCsv('mobile-devices', 'id,name\r\nx,y\r\n', 'text/csv; charset=iso-8859-1'), 400);
      expect(declared.detail).toContain('iso-8859-1');
      const unknown = expectProblem(await sendCsv('mobile-devices', 'id,nickname\r\nx,y\r\n'), 400);
      expect(unknown.detail).toContain('Unknown column "nickname"');
      const missing = expectProblem(await sendCsv('secured-objects', 'id,channels\r\nx,btlespp\r\n'), 400);
      expect(missing.detail).toContain('localName, uuid');
      const ragged = expectProblem(await sendCsv('mobile-devices', 'id,name\r\nx\r\n'), 400);
      expect(ragged.detail).toContain('Line 2');
      const noType = expectProblem(await sendCsv('', 'id,name\r\nx,y\r\n'), 400);
      expect(noType.errors).toBeDefined();
      expectProblem(await sendCsv('mobile-devices', 'id,name\r\nx,"y"z\r\n'), 400);
      expectProblem(await sendCsv('mobile-devices', 'id,name\r\nx,"y\r\n'), 400);
    });
  });

  it('refuses a malformed JSON job (schema), a job over JOB_MAX_ITEMS or JOB_MAX_BYTES, another media type', async () => {
    await expectNothingChanged(t, async () => {
      expectProblem(await sendJson({ type: 'lamps', items: [{}] }), 400);
      expectProblem(await sendJson({ type: 'mobile-devices' }), 400);
      expectProblem(await sendJson({ type: 'mobile-devices', items: [] }), 400);
      expectProblem(await sendJson({ type: 'mobile-devices', items: [{}], extra: 1 }), 400);
      const many = expectProblem(await sendJson({ type: 'mobile-devices', items: Array.from({ length: 51 }, () => ({})) }), 400);
      expect(many.detail).toContain('JOB_MAX_ITEMS');
      const rows = Array.from({ length: 51 }, (_, index) => `d-${index},x`).join('\r\n');
      expect(expectProblem(await sendCsv('mobile-devices', `id,name\r\n${rows}\r\n`), 400).detail).toContain('more than 50');
      const large = expectProblem(await sendCsv('mobile-devices', `id,name\r\n${'x,'.repeat(5000)}y\r\n`), 413);
      expect(large.detail).toBe('The request body is larger than the limit of 8192 bytes (JOB_MAX_BYTES); send less per request.');
      expectProblem(await sendCsv('mobile-devices', 'id,name\r\n', 'application/xml'), 415);
    });
  });

  it('a re-run of the same items is unchanged, by natural key; a group found by name gets the members it lacks', async () => {
    await lock(t, token, 'door-b');
    await registerDevice(t, token, { id: 'phone-r1' });
    await registerDevice(t, token, { id: 'phone-r2' });
    const residents = { type: 'residents', items: [{ name: 'Resident R', mobileDeviceIds: ['phone-r1'] }] };
    const first = await run(await sendJson(residents));
    expect(first.results).toEqual([{ index: 0, key: 'Resident R', outcome: 'created', id: expect.stringMatching(UUID_PATTERN) }]);
    const again = await run(await sendJson(residents));
    expect(again.job).toMatchObject({ state: 'succeeded', succeeded: 1 });
    expect(again.results).toEqual([{ index: 0, key: 'Resident R', outcome: 'unchanged', id: first.results[0]!.id }]);
    const more = await run(await sendJson({ type: 'residents', items: [{ name: 'Resident R', mobileDeviceIds: ['phone-r1', 'phone-r2'] }] }));
    expect(more.results[0]).toMatchObject({ outcome: 'updated', id: first.results[0]!.id });
    const { rows } = await t.database.db.query<{ mobile_device_id: string }>(
      'SELECT mobile_device_id FROM resident_devices WHERE tenant_id = $1 AND resident_id = $2 ORDER BY mobile_device_id',
      [acme.tenantId, first.results[0]!.id],
    );
    expect(rows.map((row) => row.mobile_device_id)).toEqual(['phone-r1', 'phone-r2']);

    const csv = 'id,name\r\nphone-r3,R3\r\n';
    expect((await run(await sendCsv('mobile-devices', csv))).results[0]!.outcome).toBe('created');
    expect((await run(await sendCsv('mobile-devices', csv))).results[0]!.outcome).toBe('unchanged');
  });

  it('a batch of residents: new names made together, a name again or already there found, an unknown member refused as create refuses it', async () => {
    await registerDevice(t, token, { id: 'phone-b1' });
    await registerDevice(t, token, { id: 'phone-b2' });
    const { job, results } = await run(
      await sendJson({
        type: 'residents',
        items: [
          { name: 'Batch A', mobileDeviceIds: ['phone-b1'] },
          { name: 'Batch B', mobileDeviceIds: ['phone-b2', 'phone-b2'] },
          { name: 'Batch A', mobileDeviceIds: ['phone-b1', 'phone-b2'] },
          { name: 'Batch C', mobileDeviceIds: ['phone-b1', 'nobody-1', 'nobody-2'] },
          { name: 'Resident R', mobileDeviceIds: [] },
        ],
      }),
    );
    expect(job).toMatchObject({ state: 'failed', total: 5, succeeded: 4, failed: 1 });
    expect(results.map((result) => result.outcome)).toEqual(['created', 'created', 'updated', 'failed', 'unchanged']);
    expect(results[2]!.id).toBe(results[0]!.id);
    expect(results[3]!.problem).toEqual({
      type: 'https://access-credential-service.dev/problems/unprocessable',
      title: expect.any(String),
      status: 422,
      detail: 'Unknown mobile devices in this tenant: nobody-1, nobody-2.',
      errors: [{ field: 'mobileDeviceIds', message: 'no mobile device nobody-1, nobody-2' }],
    });
    const { rows } = await t.database.db.query<{ name: string; members: string[] }>(
      `SELECT r.name, ARRAY(SELECT d.mobile_device_id FROM resident_devices d WHERE d.tenant_id = r.tenant_id AND d.resident_id = r.id ORDER BY 1) AS members
         FROM residents r WHERE r.tenant_id = $1 AND r.name LIKE 'Batch %' ORDER BY r.name`,
      [acme.tenantId],
    );
    expect(rows).toEqual([
      { name: 'Batch A', members: ['phone-b1', 'phone-b2'] },
      { name: 'Batch B', members: ['phone-b2'] },
    ]);
    const events = await auditEvents(t, { target: `resident:${results[1]!.id}` });
    expect(events.map((event) => event.action)).toEqual(['resident.created']);

    const devices = await run(await sendJson({ type: 'mobile-devices', items: [{ id: 'phone-twice', name: 'x' }, { id: 'phone-twice', name: 'x' }, { id: 'phone-twice', name: 'y' }] }));
    expect(devices.results.map((result) => result.outcome)).toEqual(['created', 'unchanged', 'failed']);
    expect(devices.results[2]!.problem).toMatchObject({ status: 409, detail: 'The mobile device id phone-twice is in use.' });
  });

  it('lock groups, access permissions and tickets: tickets made as the single endpoints make them, re-runs unchanged', async () => {
    await lock(t, token, 'door-c');
    await lock(t, token, 'door-d');
    await registerDevice(t, token, { id: 'phone-p1' });
    await registerDevice(t, token, { id: 'phone-p2' });
    const group = await run(await sendJson({ type: 'lock-groups', items: [{ name: 'Building P', securedObjectIds: ['door-c', 'door-d'] }] }));
    const resident = await run(await sendJson({ type: 'residents', items: [{ name: 'Resident P', mobileDeviceIds: ['phone-p1', 'phone-p2'] }] }));
    const now = t.app.services.clock();
    const permission = {
      residentId: resident.results[0]!.id,
      lockGroupId: group.results[0]!.id,
      beginDate: now,
      endDate: now + HOUR,
      commands: ['open'],
      channels: ['btlespp'],
    };
    const bad = { ...permission, lockGroupId: '00000000-0000-4000-8000-000000000000' };
    const granted = await run(await sendJson({ type: 'access-permissions', items: [permission, bad] }));
    expect(granted.results.map((result) => result.outcome)).toEqual(['created', 'failed']);
    expect(granted.results[1]!.problem).toMatchObject({ status: 422, errors: [{ field: 'lockGroupId', message: expect.any(String) }] });
    const { rows } = await t.database.db.query<{ count: number }>(
      'SELECT count(*)::integer AS count FROM tickets WHERE tenant_id = $1 AND access_permission_id = $2',
      [acme.tenantId, granted.results[0]!.id],
    );
    expect(rows[0]!.count).toBe(4);
    expect((await run(await sendJson({ type: 'access-permissions', items: [permission] }))).results[0]).toMatchObject({
      outcome: 'unchanged',
      id: granted.results[0]!.id,
    });

    const ticket = { securedObjectId: 'door-c', mobileDeviceId: 'phone-p1', beginDate: now, endDate: now + HOUR, commands: ['open'], channels: ['btlespp'] };
    const csv = `securedObjectId,mobileDeviceId,beginDate,endDate,commands,channels\r\ndoor-c,phone-p1,${now},${now + HOUR},open tokn,btlespp\r\ndoor-c,nobody,${now},${now + HOUR},open,btlespp\r\n`;
    const tickets = await run(await sendCsv('tickets', csv));
    expect(tickets.results.map((result) => result.outcome)).toEqual(['created', 'failed']);
    const single = await call(t, token, { method: 'POST', url: '/operatorapi/tickets', payload: { ...ticket, mobileDeviceId: 'nobody' } });
    expect(tickets.results[1]!.problem).toEqual(problemOfResponse(single));
    const created = await call(t, token, { method: 'GET', url: `/operatorapi/tickets/${tickets.results[0]!.id}` });
    expect(created.json()).toMatchObject({ securedObjectId: 'door-c', mobileDeviceId: 'phone-p1', commands: ['open', 'tokn'], status: 'VALID' });
    expect((await run(await sendCsv('tickets', csv))).results.map((result) => result.outcome)).toEqual(['unchanged', 'failed']);
  });

  it('Idempotency-Key: the same request answers the same job and stores one', async () => {
    const body = { type: 'mobile-devices', items: [{ id: 'phone-idem' }] };
    const first = await sendJson(body, token, { 'idempotency-key': 'job-1' });
    const second = await sendJson(body, token, { 'idempotency-key': 'job-1' });
    expect(second.statusCode).toBe(202);
    expect(second.json().id).toBe(first.json().id);
    expect(second.headers.location).toBe(first.headers.location);
    expect(second.headers['retry-after']).toBe(first.headers['retry-after']);
    expect(second.headers['idempotent-replayed']).toBe('true');
    const { rows } = await t.database.db.query<{ count: number }>('SELECT count(*)::integer AS count FROM jobs WHERE tenant_id = $1 AND id = $2', [
      acme.tenantId,
      first.json().id,
    ]);
    expect(rows[0]!.count).toBe(1);
    await t.app.services.jobWorker.runOnce();
  });

  it('cancel: the items not run never run, job.finished says cancelled; a finished job answers as it is', async () => {
    const sent = await sendJson({ type: 'mobile-devices', items: [{ id: 'phone-never-1' }, { id: 'phone-never-2' }] });
    const id = sent.json<JobBody>().id;
    const cancelled = await cancel(id);
    expect(cancelled.statusCode).toBe(200);
    expect(cancelled.json()).toMatchObject({ id, state: 'cancelled', processed: 0, finishedTime: expect.any(Number) });
    expect(await t.app.services.jobWorker.runOnce()).toBe(false);
    const { rows } = await t.database.db.query("SELECT id FROM mobile_devices WHERE tenant_id = $1 AND id LIKE 'phone-never-%'", [acme.tenantId]);
    expect(rows).toEqual([]);
    expect((await auditEvents(t, { target: `job:${id}` })).map((event) => event.action)).toEqual(['job.finished']);
    expect((await cancel(id)).json()).toMatchObject({ id, state: 'cancelled' });
    expect((await walk(t, token, `/operatorapi/jobs/${id}/results`)).items).toEqual([]);
  });

  it('at most JOB_MAX_ACTIVE_PER_TENANT jobs queued or running: one more is a 429 with Retry-After; another tenant is not counted', async () => {
    const ids: string[] = [];
    for (let index = 0; index < 3; index += 1) {
      const response = await sendJson({ type: 'mobile-devices', items: [{ id: `phone-queue-${index}` }] });
      expect(response.statusCode).toBe(202);
      ids.push(response.json().id);
    }
    const refused = expectProblem(await sendJson({ type: 'mobile-devices', items: [{ id: 'phone-queue-x' }] }), 429);
    expect(refused.detail).toContain('JOB_MAX_ACTIVE_PER_TENANT');
    expect((await sendJson({ type: 'mobile-devices', items: [{ id: 'phone-queue-other' }] }, otherToken)).statusCode).toBe(202);
    for (const id of ids) expect((await cancel(id)).statusCode).toBe(200);
    while (await t.app.services.jobWorker.runOnce());
  });

  it('lists the tenant\'s jobs only', async () => {
    const mine = (await walk<JobBody>(t, token, '/operatorapi/jobs?limit=3')).items;
    expect(mine.length).toBeGreaterThan(3);
    const theirs = (await walk<JobBody>(t, otherToken, '/operatorapi/jobs')).items;
    expect(theirs.map((job) => job.id).filter((id) => mine.some((job) => job.id === id))).toEqual([]);
  });

  it('401 without a token, 403 without devices:write or the type\'s scope, 404 for another tenant\'s job', async () => {
    const job = (await sendJson({ type: 'mobile-devices', items: [{ id: 'phone-auth' }] })).json<JobBody>();
    await t.app.services.jobWorker.runOnce();
    const readOnly = await clientToken(t.app, await createClient(t.app, acme, ['devices:read']));
    const writeOnly = await clientToken(t.app, await createClient(t.app, acme, ['tokens:read']));
    await expectNothingChanged(t, async () => {
      expectProblem(await sendJson({ type: 'mobile-devices', items: [{}] }, null), 401);
      expectProblem(await getJob(job.id, ''), 401);
      const forbidden = expectProblem(await sendJson({ type: 'mobile-devices', items: [{}] }, readOnly), 403);
      expect(forbidden.detail).toContain('devices:write');
      expectProblem(await cancel(job.id, readOnly), 403);
      expectProblem(await getJob(job.id, writeOnly), 403);
      // The management client holds devices:write but not device-groups:write.
      const groups = await sendJson({ type: 'residents', items: [{ name: 'x' }] }, managementToken);
      expectProblem(groups, 403);
      expect(groups.headers['www-authenticate']).toContain('scope="device-groups:write"');
      expectProblem(await sendCsv('access-permissions', 'residentId\r\nx\r\n', 'text/csv', managementToken), 403);
      expectProblem(await getJob(job.id, otherToken), 404);
      expectProblem(await call(t, otherToken, { method: 'GET', url: `/operatorapi/jobs/${job.id}/results` }), 404);
      expectProblem(await cancel(job.id, otherToken), 404);
      expectProblem(await getJob('not-a-uuid'), 404);
    });
    expect((await getJob(job.id)).json()).toMatchObject({ state: 'succeeded' });
  });

  it('an item refused by the single-item endpoint\'s lock check is reported, the lock job goes on', async () => {
    const response = await registerLock(t, token, { id: 'door-z', channels: ['btlespp'], localName: 'Z', uuid: '7d8a0c1e-4b7f-4d5e-9a41-3c2b1f0e9d8c' });
    expect(response.statusCode).toBe(201);
    const { results } = await run(
      await sendJson({
        type: 'secured-objects',
        items: [
          { id: 'door-z', channels: ['btlespp'], localName: 'Z', uuid: '7D8A0C1E-4B7F-4D5E-9A41-3C2B1F0E9D8C' },
          { id: 'door-y', channels: ['nfccard'], localName: 'Y', uuid: '7d8a0c1e-4b7f-4d5e-9a41-3c2b1f0e9d8c' },
          { id: 'door-x', channels: ['btlespp'], localName: 'X', uuid: '7d8a0c1e-4b7f-4d5e-9a41-3c2b1f0e9d8c' },
        ],
      }),
    );
    expect(results.map((result) => result.outcome)).toEqual(['unchanged', 'failed', 'created']);
    const single = await registerLock(t, token, { id: 'door-y', channels: ['nfccard'], localName: 'Y', uuid: '7d8a0c1e-4b7f-4d5e-9a41-3c2b1f0e9d8c' });
    expect(results[1]!.problem).toEqual(problemOfResponse(single));
  });
});
