// Erasure on request (docs/api-reference.md 16.2): after it, a search of every text column of every table (read from the
// catalog, so a table added later is searched too) finds none of the person's values in the tenant; the record stays;
// tickets, sequences and another tenant's data are as they were; an erasure an instance left is resumed.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { appendAuditEvent } from '../../src/db/repositories/audit.repo.js';
import { claimErasure, insertErasure, renewErasureLease } from '../../src/db/repositories/erasure.repo.js';
import { insertJob } from '../../src/db/repositories/job.repo.js';
import { accessTenant, lockGroup, permission, resident, ticketRows, type AccessTenant } from '../helpers/access.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { phoneToken } from '../helpers/device.js';
import { bearer, clientToken, createClient, createUser, passwordGrant } from '../helpers/oauth.js';
import { call, device, expectAuthChecks, expectProblem, lock, ticket, UUID_PATTERN } from '../helpers/operator.js';

interface ErasureBody {
  id: string;
  subject: { kind: string; id: string };
  accessLogsOnly: boolean;
  state: string;
  requestedBy: string;
  requestedTime: number;
  finishedTime?: number;
  rows: Record<string, number>;
}

describe('erasures', () => {
  let t: TestApp;
  let acme: AccessTenant;
  let other: AccessTenant;

  beforeAll(async () => {
    t = await buildTestApp({ BCRYPT_COST: '4' });
    acme = await accessTenant(t, 'erasing');
    other = await accessTenant(t, 'bystander');
  });
  afterAll(async () => {
    await t.close();
  });

  const erase = (token: string, body: object) => t.app.inject({ method: 'POST', url: '/operatorapi/erasures', headers: bearer(token), payload: body });

  /** Starts an erasure, waits for it, and answers it as read back. */
  async function erased(token: string, body: object): Promise<ErasureBody> {
    const started = await erase(token, body);
    expect(started.statusCode, started.body).toBe(202);
    // A bulk job of type erasure (docs/api-reference.md 14, 16.2): one item, the person; the record has its id.
    const job = started.json() as { id: string; type: string; state: string; total: number };
    expect(job).toMatchObject({ id: expect.stringMatching(UUID_PATTERN), type: 'erasure', state: 'running', total: 1 });
    expect(started.headers.location).toBe(`/operatorapi/jobs/${job.id}`);
    expect(started.headers['retry-after']).toBe('2');
    await t.app.services.erasures.settled();
    const finished = await call(t, token, { method: 'GET', url: `/operatorapi/jobs/${job.id}` });
    expect(finished.json()).toMatchObject({ id: job.id, type: 'erasure', state: 'succeeded', total: 1, processed: 1, succeeded: 1, failed: 0 });
    const results = await call(t, token, { method: 'GET', url: `/operatorapi/jobs/${job.id}/results` });
    expect(results.json()).toEqual([{ index: 0, key: expect.any(String), outcome: 'updated', id: expect.any(String) }]);
    const read = await call(t, token, { method: 'GET', url: `/operatorapi/erasures/${job.id}` });
    expect(read.statusCode, read.body).toBe(200);
    return read.json() as ErasureBody;
  }

  /**
   * Where `value` is still found: every text, json and array column of every table in the catalog, rows of `tenantId`
   * where the table has a tenant, every row where it has none.
   */
  async function whereFound(tenantId: string, value: string): Promise<string[]> {
    const { rows: columns } = await t.database.db.query<{ table_name: string; column_name: string }>(
      `SELECT c.table_name, c.column_name FROM information_schema.columns c
         JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name AND t.table_type = 'BASE TABLE'
        WHERE c.table_schema = current_schema() AND c.data_type IN ('text', 'character varying', 'jsonb', 'json', 'ARRAY')
        ORDER BY 1, 2`,
    );
    expect(columns.length).toBeGreaterThan(40);
    const { rows: tenantTables } = await t.database.db.query<{ table_name: string }>(
      `SELECT table_name FROM information_schema.columns WHERE table_schema = current_schema() AND column_name = 'tenant_id'`,
    );
    const scoped = new Set(tenantTables.map((row) => row.table_name));
    const found: string[] = [];
    for (const { table_name: table, column_name: column } of columns) {
      const { rows } = await t.database.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM "${table}" WHERE strpos("${column}"::text, $1) > 0${scoped.has(table) ? ' AND tenant_id = $2' : ''}`,
        scoped.has(table) ? [value, tenantId] : [value],
      );
      if (rows[0]!.n > 0) found.push(`${table}.${column}`);
    }
    return found;
  }

  async function sequences(tenantId: string): Promise<number[]> {
    const { rows } = await t.database.db.query<{ seq: string }>('SELECT seq FROM audit_events WHERE tenant_id = $1 ORDER BY seq', [tenantId]);
    return rows.map((row) => Number(row.seq));
  }

  async function accessLogCount(tenantId: string, mobileDeviceId: string): Promise<number> {
    const { rows } = await t.database.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM access_log_entries WHERE tenant_id = $1 AND mobile_device_id = $2',
      [tenantId, mobileDeviceId],
    );
    return rows[0]!.n;
  }

  /**
   * A phone relays entries of its own visits to `lockId` (docs/api-reference.md 8.5): each names its ticket, which is
   * how an entry is filed under the device.
   */
  async function visits(tenant: AccessTenant, mobileDeviceId: string, lockId: string, count: number): Promise<void> {
    const [held] = (await ticketRows(t, tenant.tenant.tenantId, { mobileDeviceId })).filter((row) => row.secured_object_id === lockId);
    expect(held, `a ticket of ${mobileDeviceId} for ${lockId}`).toBeDefined();
    const response = await t.app.inject({
      method: 'POST',
      url: `/deviceapi/mobiledevices/${mobileDeviceId}/accesslog`,
      headers: bearer(await phoneToken(t, tenant.tenant, mobileDeviceId)),
      payload: {
        securedObjectId: lockId,
        entries: Array.from({ length: count }, (_, index) => ({
          entryNo: index + 1,
          lockTime: t.app.services.clock() - 60_000,
          tokenId: held!.id,
          command: 'open',
          channel: 'btlespp',
          result: 'granted',
        })),
      },
    });
    expect(response.statusCode, response.body).toBe(200);
  }

  /** A household with the same values in both tenants: one to erase, and one that must stay as it is. */
  async function household(tenant: AccessTenant, prefix: string) {
    await lock(t, tenant.operator, `${prefix}-door`);
    const named = async (id: string, name: string, key: string) => {
      const response = await t.app.inject({
        method: 'POST',
        url: '/operatorapi/mobiledevices',
        headers: { ...bearer(tenant.operator), 'idempotency-key': key },
        payload: { id, name },
      });
      expect(response.statusCode, response.body).toBe(201);
    };
    await named(`${prefix}-phone`, 'Zelda Quixote phone', `${prefix}-1`);
    await named(`${prefix}-tablet`, 'ZQ tablet of Q. Zelda', `${prefix}-2`);
    const household = await resident(t, tenant.token, 'Zelda Quixote', [`${prefix}-phone`, `${prefix}-tablet`]);
    const group = await lockGroup(t, tenant.token, `${prefix} doors`, [`${prefix}-door`]);
    await permission(t, tenant.token, household.id, group.id);
    await t.app.services.clients.create(
      { tenantId: tenant.tenant.tenantId, actor: 'cli', requestId: null },
      { name: 'App of Zelda Quixote', scopes: ['tokens:download'], mobileDeviceId: `${prefix}-phone` },
    );
    await visits(tenant, `${prefix}-phone`, `${prefix}-door`, 3);
    const claim = await t.app.inject({
      method: 'POST',
      url: `/v1/residents/${household.id}/claims`,
      headers: bearer(tenant.token),
      payload: { note: 'New phone for Zelda Quixote, 3rd floor' },
    });
    expect(claim.statusCode, claim.body).toBe(201);
    // The household sent again as a bulk job (docs/api-reference.md 14): its item and natural key hold the name.
    const importer = await clientToken(t.app, await createClient(t.app, tenant.tenant, ['devices:write', 'device-groups:write']));
    const job = await t.app.inject({
      method: 'POST',
      url: '/operatorapi/jobs',
      headers: bearer(importer),
      payload: { type: 'residents', items: [{ name: 'Zelda Quixote', mobileDeviceIds: [`${prefix}-phone`] }] },
    });
    expect(job.statusCode, job.body).toBe(202);
    // The worker is woken by the job (or this round runs it); either way it ends.
    await t.app.services.jobWorker.runOnce();
    await vi.waitFor(
      async () => {
        const { rows } = await t.database.db.query<{ state: string }>('SELECT state FROM jobs WHERE tenant_id = $1 AND id = $2', [tenant.tenant.tenantId, job.json().id]);
        expect(rows[0]!.state).toBe('succeeded');
      },
      { timeout: 30_000, interval: 50 },
    );
    // No event of this version carries a name (they name ids), but an event may: one that quotes the device's name
    // in a list beside other values, which stay.
    await appendAuditEvent(t.database.db, {
      tenantId: tenant.tenant.tenantId,
      time: t.app.services.clock(),
      actor: 'cli',
      action: 'mobile_device.created',
      target: `mobile_device:${prefix}-phone`,
      requestId: null,
      data: { mobileDeviceId: `${prefix}-phone`, names: ['Zelda Quixote phone', 'Zelda'], note: 'Zelda Quixote' },
    });
    // A delivery error that quotes the name, as a receiver's answer might.
    await t.database.db.query(
      `WITH hook AS (
         INSERT INTO webhooks (tenant_id, id, url, event_types, secret_sealed, dispatched_through, created_at, updated_at)
         VALUES ($1, gen_random_uuid(), 'https://hooks.test/x', '{resident.created}', '\\x00', 0, 0, 0) RETURNING id)
       INSERT INTO webhook_attempts (tenant_id, webhook_id, event_id, time, error, duration_ms)
       SELECT $1, id, gen_random_uuid(), 0, 'receiver said: no such person Zelda Quixote', 5 FROM hook`,
      [tenant.tenant.tenantId],
    );
    return household;
  }

  it('replaces every value of a resident, deletes their access logs, and changes nothing else', async () => {
    const zelda = await household(acme, 'zq');
    const bystander = await household(other, 'zq');
    const ticketsBefore = await ticketRows(t, acme.tenant.tenantId);
    expect(ticketsBefore.length).toBe(2);
    const sequenceBefore = await sequences(acme.tenant.tenantId);
    expect(await whereFound(acme.tenant.tenantId, 'Zelda Quixote')).not.toEqual([]);
    expect(await accessLogCount(acme.tenant.tenantId, 'zq-phone')).toBe(3);

    const erasure = await erased(acme.operator, { residentId: zelda.id });
    expect(erasure).toMatchObject({
      id: expect.stringMatching(UUID_PATTERN),
      subject: { kind: 'resident', id: zelda.id },
      accessLogsOnly: false,
      state: 'succeeded',
      requestedBy: expect.stringMatching(/^client:/),
      finishedTime: expect.any(Number),
    });
    expect(erasure.rows).toMatchObject({ residents: 1, claims: 1, job_items: 1, mobile_devices: 2, access_log_entries: 3, webhook_attempts: 1, idempotency_keys: 2 });
    // The app's client, and the one the test's phone token came through: every client bound to the person's devices.
    expect(erasure.rows.oauth_clients).toBe(2);
    expect(erasure.rows.audit_events).toBe(1);

    for (const value of ['Zelda Quixote', 'Zelda Quixote phone', 'ZQ tablet of Q. Zelda', 'App of Zelda Quixote', 'New phone for Zelda Quixote, 3rd floor']) {
      expect(await whereFound(acme.tenant.tenantId, value), value).toEqual([]);
    }
    // Whole values only: a string that merely holds a part of a name is not the person's and stays.
    const { rows: quoted } = await t.database.db.query<{ data: { names: string[]; note: string } }>(
      "SELECT data FROM audit_events WHERE tenant_id = $1 AND target = 'mobile_device:zq-phone' AND data ? 'names'",
      [acme.tenant.tenantId],
    );
    expect(quoted[0]!.data.names).toEqual([expect.stringMatching(/^erased-/), 'Zelda']);
    expect(quoted[0]!.data.note).toMatch(/^erased-/);
    expect(await accessLogCount(acme.tenant.tenantId, 'zq-phone')).toBe(0);
    // The ids, the tickets and the gapless sequence are intact: three more events, the request, the finish, the job's.
    const read = await call(t, acme.operator, { method: 'GET', url: '/operatorapi/mobiledevices/zq-phone' });
    expect(read.json()).toMatchObject({ id: 'zq-phone', name: expect.stringMatching(/^erased-/) });
    expect(await ticketRows(t, acme.tenant.tenantId)).toEqual(ticketsBefore);
    const sequenceAfter = await sequences(acme.tenant.tenantId);
    expect(sequenceAfter).toEqual([...sequenceBefore, sequenceBefore.length + 1, sequenceBefore.length + 2, sequenceBefore.length + 3]);
    const { rows: finished } = await t.database.db.query<{ action: string; data: Record<string, unknown> }>(
      "SELECT action, data FROM audit_events WHERE tenant_id = $1 AND (action LIKE 'erasure.%' OR target = 'job:' || $2) ORDER BY seq",
      [acme.tenant.tenantId, erasure.id],
    );
    expect(finished.map((row) => row.action)).toEqual(['erasure.requested', 'erasure.finished', 'job.finished']);
    expect(finished[1]!.data).toMatchObject({ erasureId: erasure.id, subjectKind: 'resident', subjectId: zelda.id });

    // The other tenant's household of the same name is untouched.
    for (const table of ['residents.name', 'claims.note', 'job_items.key', 'job_items.item', 'mobile_devices.name', 'oauth_clients.name', 'audit_events.data', 'webhook_attempts.error', 'idempotency_keys.response_body']) {
      expect(await whereFound(other.tenant.tenantId, 'Zelda Quixote')).toContain(table);
    }
    expect(await accessLogCount(other.tenant.tenantId, 'zq-phone')).toBe(3);
    expect(bystander.name).toBe('Zelda Quixote');

    // The record stays, listed newest first.
    const listed = await call(t, acme.operator, { method: 'GET', url: '/operatorapi/erasures' });
    expect((listed.json() as ErasureBody[]).map((item) => item.id)).toEqual([erasure.id]);
  });

  it('erases a user by username and records them by id; the old login no longer signs in', async () => {
    const user = await createUser(t.app, acme.tenant, 'yolanda.unique', 'correct horse battery staple');
    expect((await passwordGrant(t.app, acme.client, `yolanda.unique@${acme.tenant.name}`, 'wrong password')).statusCode).toBe(400);
    const erasure = await erased(acme.operator, { username: 'yolanda.unique' });
    expect(erasure.subject).toEqual({ kind: 'user', id: user.id });
    expect(erasure.rows).toMatchObject({ users: 1, login_failures: 1 });
    expect(await whereFound(acme.tenant.tenantId, 'yolanda.unique')).toEqual([]);
    expect(JSON.stringify(erasure)).not.toContain('yolanda');
    expect((await passwordGrant(t.app, acme.client, `yolanda.unique@${acme.tenant.name}`, 'correct horse battery staple')).statusCode).toBe(400);
  });

  it('erases only the access logs of a device when asked, and keeps its name', async () => {
    await lock(t, acme.operator, 'side-door');
    await device(t, acme.operator, 'logs-only', 'Walter Logsonly');
    await ticket(t, acme.operator, 'side-door', 'logs-only');
    await visits(acme, 'logs-only', 'side-door', 4);
    const erasure = await erased(acme.operator, { mobileDeviceId: 'logs-only', accessLogsOnly: true });
    expect(erasure).toMatchObject({ accessLogsOnly: true, state: 'succeeded', rows: { access_log_entries: 4 } });
    expect(await accessLogCount(acme.tenant.tenantId, 'logs-only')).toBe(0);
    expect(await whereFound(acme.tenant.tenantId, 'Walter Logsonly')).toContain('mobile_devices.name');
  });

  it('resumes an erasure whose instance stopped, once its lease is over', async () => {
    await device(t, acme.operator, 'left-behind', 'Victor Leftbehind');
    const record = await insertErasure(
      t.database.db,
      {
        tenantId: acme.tenant.tenantId,
        id: '5b0e4c1a-7f3d-4e2b-9a8c-6d5e4f3a2b1c',
        subjectKind: 'mobile-device',
        subjectId: 'left-behind',
        accessLogsOnly: false,
        requestedBy: 'cli',
        requestId: null,
        requestedAt: t.app.services.clock(),
      },
      0,
    );
    expect(await t.app.services.erasures.resumeAbandoned()).toBe(1);
    await t.app.services.erasures.settled();
    expect((await t.app.services.erasures.get(acme.tenant.tenantId, record.id)).state).toBe('succeeded');
    expect(await whereFound(acme.tenant.tenantId, 'Victor Leftbehind')).toEqual([]);
    expect(await t.app.services.erasures.resumeAbandoned()).toBe(0);
  });

  it('lets only the instance holding the lease go on: a renewal against a lease another instance took fails', async () => {
    const now = t.app.services.clock();
    const record = await insertErasure(
      t.database.db,
      { tenantId: acme.tenant.tenantId, id: '6a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d', subjectKind: 'mobile-device', subjectId: 'left-behind', accessLogsOnly: true, requestedBy: 'cli', requestId: null, requestedAt: now },
      now - 1,
    );
    // This instance's lease (now - 1) is over; another instance takes the erasure, and this one's renewal is refused.
    expect(await claimErasure(t.database.db, acme.tenant.tenantId, record.id, now, now + 60_000)).toBe(true);
    expect(await renewErasureLease(t.database.db, acme.tenant.tenantId, record.id, now - 1, now + 120_000)).toBe(false);
    expect(await claimErasure(t.database.db, acme.tenant.tenantId, record.id, now, now + 90_000)).toBe(false);
    expect(await renewErasureLease(t.database.db, acme.tenant.tenantId, record.id, now + 60_000, now + 120_000)).toBe(true);
    // Another tenant's statement never reaches it.
    expect(await renewErasureLease(t.database.db, other.tenant.tenantId, record.id, now + 120_000, now + 180_000)).toBe(false);
    await t.database.db.query('DELETE FROM erasures WHERE tenant_id = $1 AND id = $2', [acme.tenant.tenantId, record.id]);
  });

  it('refuses anything but exactly one known person with 400 or 404, and changes nothing', async () => {
    await device(t, other.operator, 'only-theirs', 'Ursula Other');
    const before = await sequences(acme.tenant.tenantId);
    for (const body of [{}, { accessLogsOnly: true }, { residentId: 'not-a-uuid' }, { mobileDeviceId: 'a', username: 'b' }, { username: 'has space' }, { name: 'x' }]) {
      expectProblem(await erase(acme.operator, body), 400);
    }
    for (const body of [{ residentId: '00000000-0000-4000-8000-000000000000' }, { mobileDeviceId: 'only-theirs' }, { username: 'nobody-here' }]) {
      expect(expectProblem(await erase(acme.operator, body), 404).detail).toMatch(/^No /);
    }
    expect(await sequences(acme.tenant.tenantId)).toEqual(before);
    expect(await whereFound(other.tenant.tenantId, 'Ursula Other')).toContain('mobile_devices.name');
    const { rows } = await t.database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM erasures WHERE tenant_id = $1', [other.tenant.tenantId]);
    expect(rows[0]!.n).toBe(0);
  });

  it("refuses to cancel an erasure's job while it runs (409), and answers a finished one as it is", async () => {
    await device(t, acme.operator, 'to-finish', 'Tara Tofinish');
    const done = await erased(acme.operator, { mobileDeviceId: 'to-finish' });
    const finished = await call(t, acme.operator, { method: 'DELETE', url: `/operatorapi/jobs/${done.id}` });
    expect(finished.json()).toMatchObject({ id: done.id, type: 'erasure', state: 'succeeded' });
    // One still running: its record and job as a request makes them, its lease held for a minute by no one here.
    const now = t.app.services.clock();
    const id = '7c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f';
    await insertErasure(
      t.database.db,
      { tenantId: acme.tenant.tenantId, id, subjectKind: 'mobile-device', subjectId: 'to-finish', accessLogsOnly: true, requestedBy: 'cli', requestId: null, requestedAt: now },
      now + 60_000,
    );
    await insertJob(t.database.db, {
      tenantId: acme.tenant.tenantId,
      id,
      type: 'erasure',
      state: 'running',
      total: 1,
      processed: 0,
      succeeded: 0,
      failed: 0,
      actor: 'cli',
      requestId: null,
      createdAt: now,
      startedAt: now,
      finishedAt: null,
      claim: 0,
    });
    const refused = await call(t, acme.operator, { method: 'DELETE', url: `/operatorapi/jobs/${id}` });
    expect(expectProblem(refused, 409).detail).toContain('cannot be cancelled');
    expect((await call(t, acme.operator, { method: 'GET', url: `/operatorapi/jobs/${id}` })).json()).toMatchObject({ state: 'running' });
    // The bulk-job worker never takes it: only the erasure service runs an erasure.
    expect(await t.app.services.jobWorker.runOnce()).toBe(false);
  });

  it("answers another tenant's erasure as unknown, and needs settings:manage", async () => {
    const [mine] = (await call(t, acme.operator, { method: 'GET', url: '/operatorapi/erasures' })).json() as ErasureBody[];
    expectProblem(await call(t, other.operator, { method: 'GET', url: `/operatorapi/erasures/${mine!.id}` }), 404);
    expectProblem(await call(t, acme.operator, { method: 'GET', url: '/operatorapi/erasures/not-a-uuid' }), 404);
    const reader = await createClient(t.app, acme.tenant, ['devices:read']);
    await expectAuthChecks(t, await clientToken(t.app, reader), [
      { method: 'POST', url: '/operatorapi/erasures', payload: { mobileDeviceId: 'zq-phone' }, scope: 'settings:manage' },
      { method: 'GET', url: '/operatorapi/erasures', scope: 'settings:manage' },
      { method: 'GET', url: `/operatorapi/erasures/${mine!.id}`, scope: 'settings:manage' },
    ]);
  });
});
