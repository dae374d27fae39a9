// kill -9 of the instance running a bulk job (docs/api-reference.md 14): a second instance takes the job over once the
// lease runs out and finishes it, and no item is applied twice: devices one batch after another, and access
// permissions granted set-based, a batch of them with their tickets in a few statements.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAll } from '../test/helpers/process.js';
import { createPrivateCluster, privateClusterAvailable, type PrivateCluster } from './helpers/cluster.js';
import { SECRETS_KEY, call, cli, sleep, startServer, token } from './helpers/server.js';

const ITEMS = 5000;
/** Residents, each with two phones and one permission over a group of GRANT_LOCKS locks. */
const GRANTS = 3000;
const GRANT_LOCKS = 10;
const LEASE_SECONDS = 3;

describe.skipIf(!privateClusterAvailable())('a bulk job whose instance is killed (private cluster)', () => {
  let cluster: PrivateCluster | undefined;
  let db: pg.Client;
  let env: Record<string, string>;

  beforeAll(async () => {
    cluster = await createPrivateCluster();
    env = {
      DATABASE_URL: cluster.url(),
      SECRETS_KEY,
      PUBLIC_URL: 'https://acs.example.test',
      JOB_LEASE_SECONDS: String(LEASE_SECONDS),
      JOB_WORKER_INTERVAL_MS: '50',
    };
    db = new pg.Client({ connectionString: cluster.url() });
    await db.connect();
  }, 180_000);

  afterAll(async () => {
    await killAll();
    await db?.end().catch(() => undefined);
    cluster?.destroy();
  }, 60_000);

  const jobRow = async (id: string) =>
    (
      await db.query<{ state: string; processed: number; succeeded: number; failed: number; claim: number }>(
        'SELECT state, processed, succeeded, failed, claim FROM jobs WHERE id = $1',
        [id],
      )
    ).rows[0]!;

  it('is finished by a second instance with every item applied exactly once', async () => {
    const first = await startServer(env);
    const tenant = await cli(['tenant', 'create', 'bulk'], env);
    const bearer = await token(first.base, { clientId: tenant.clientId!, clientSecret: tenant.clientSecret! }, { grant_type: 'client_credentials' });
    const items = Array.from({ length: ITEMS }, (_, index) => ({ id: `phone-${index}`, name: `Phone ${index}` }));
    const sent = await call(first.base, 'POST', '/operatorapi/jobs', bearer, { type: 'mobile-devices', items });
    expect(sent.status, JSON.stringify(sent.body)).toBe(202);
    const jobId = (sent.body as { id: string }).id;

    // Killed once it is under way, well before its end.
    const started = Date.now();
    while ((await jobRow(jobId)).processed < 200) {
      if (Date.now() - started > 120_000) throw new Error('the job never got under way');
      await sleep(20);
    }
    first.child.process.kill('SIGKILL');
    await first.child.waitForExit(30_000);
    const atKill = await jobRow(jobId);
    expect(atKill.state).toBe('running');
    expect(atKill.processed).toBeLessThan(ITEMS);

    const second = await startServer(env);
    const deadline = Date.now() + 240_000;
    let job = await jobRow(jobId);
    while (job.state === 'running' || job.state === 'queued') {
      if (Date.now() > deadline) throw new Error(`the job did not finish: ${JSON.stringify(job)}`);
      await sleep(200);
      job = await jobRow(jobId);
    }
    expect(job).toMatchObject({ state: 'succeeded', processed: ITEMS, succeeded: ITEMS, failed: 0 });
    // Claimed again by the second instance after the first one's lease ran out.
    expect(job.claim).toBeGreaterThanOrEqual(2);

    // Each item once: every outcome `created` (an item applied again would have found its device: `unchanged`), one
    // device and one audit event per item, one job.finished.
    const outcomes = await db.query<{ outcome: string; n: number }>(
      'SELECT outcome, count(*)::int AS n FROM job_items WHERE job_id = $1 GROUP BY outcome',
      [jobId],
    );
    expect(outcomes.rows).toEqual([{ outcome: 'created', n: ITEMS }]);
    const devices = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM mobile_devices WHERE id LIKE 'phone-%'");
    expect(devices.rows[0]!.n).toBe(ITEMS);
    const created = await db.query<{ n: number; targets: number }>(
      "SELECT count(*)::int AS n, count(DISTINCT target)::int AS targets FROM audit_events WHERE action = 'mobile_device.created'",
    );
    expect(created.rows[0]).toEqual({ n: ITEMS, targets: ITEMS });
    const finished = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM audit_events WHERE action = 'job.finished' AND target = $1", [
      `job:${jobId}`,
    ]);
    expect(finished.rows[0]!.n).toBe(1);
    const read = await call(second.base, 'GET', `/operatorapi/jobs/${jobId}`, bearer);
    expect(read.body).toMatchObject({ id: jobId, state: 'succeeded', processed: ITEMS, finishedTime: expect.any(Number) });
  }, 300_000);

  /** Waits until the job has ended; its state. */
  const ended = async (jobId: string, ms: number) => {
    const deadline = Date.now() + ms;
    let job = await jobRow(jobId);
    while (job.state === 'running' || job.state === 'queued') {
      if (Date.now() > deadline) throw new Error(`the job did not finish: ${JSON.stringify(job)}`);
      await sleep(100);
      job = await jobRow(jobId);
    }
    return job;
  };

  it('an access-permission job granted in set-based batches is finished by a second instance, each permission and its tickets made once', async () => {
    // Only this test's instances run jobs.
    await killAll();
    const first = await startServer(env);
    await cli(['tenant', 'create', 'bulk-grants'], env);
    const client = await cli(['client', 'create', '--tenant', 'bulk-grants', '--scopes', 'devices:write devices:read device-groups:write access-permissions:write'], env);
    const bearer = await token(first.base, { clientId: client.clientId!, clientSecret: client.clientSecret! }, { grant_type: 'client_credentials' });
    const send = async (type: string, items: object[]) => {
      const sent = await call(first.base, 'POST', '/operatorapi/jobs', bearer, { type, items });
      expect(sent.status, JSON.stringify(sent.body)).toBe(202);
      return (sent.body as { id: string }).id;
    };
    const made = async (jobId: string) => {
      expect(await ended(jobId, 120_000)).toMatchObject({ state: 'succeeded', failed: 0 });
      const { rows } = await db.query<{ id: string }>('SELECT resource_id AS id FROM job_items WHERE job_id = $1 ORDER BY item_index', [jobId]);
      return rows.map((row) => row.id);
    };
    const locks = await made(
      await send(
        'secured-objects',
        Array.from({ length: GRANT_LOCKS }, (_, n) => ({ id: `grant-lock-${n}`, channels: ['btlespp'], localName: `G${n}`, uuid: '7d8a0c1e-4b7f-4d5e-9a41-3c2b1f0e9d8c' })),
      ),
    );
    const [groupId] = await made(await send('lock-groups', [{ name: 'Grants building', securedObjectIds: locks }]));
    await made(await send('mobile-devices', Array.from({ length: GRANTS * 2 }, (_, n) => ({ id: `grant-phone-${n}` }))));
    const residentIds = await made(
      await send('residents', Array.from({ length: GRANTS }, (_, n) => ({ name: `Grantee ${n}`, mobileDeviceIds: [`grant-phone-${2 * n}`, `grant-phone-${2 * n + 1}`] }))),
    );
    const permissions = residentIds.map((residentId) => ({
      residentId,
      lockGroupId: groupId,
      beginDate: 0,
      endDate: 4102444800000,
      commands: ['open'],
      channels: ['btlespp'],
    }));
    const jobId = await send('access-permissions', permissions);

    // Killed once a batch has committed, well before the end.
    const started = Date.now();
    while ((await jobRow(jobId)).processed === 0) {
      if (Date.now() - started > 120_000) throw new Error('the job never got under way');
      await sleep(20);
    }
    first.child.process.kill('SIGKILL');
    await first.child.waitForExit(30_000);
    const atKill = await jobRow(jobId);
    expect(atKill.state).toBe('running');
    expect(atKill.processed).toBeLessThan(GRANTS);

    await startServer(env);
    expect(await ended(jobId, 240_000)).toMatchObject({ state: 'succeeded', processed: GRANTS, succeeded: GRANTS, failed: 0 });
    expect((await jobRow(jobId)).claim).toBeGreaterThanOrEqual(2);

    // Each permission once (an item applied again would have found its permission: `unchanged`), each with its 20
    // tickets and its two events, once.
    const { rows } = await db.query<Record<string, number>>(
      `SELECT (SELECT count(*)::int FROM job_items WHERE job_id = $1 AND outcome = 'created') AS created,
              (SELECT count(*)::int FROM access_permissions WHERE tenant_id = j.tenant_id) AS permissions,
              (SELECT count(*)::int FROM tickets WHERE tenant_id = j.tenant_id AND access_permission_id IS NOT NULL) AS tickets,
              (SELECT count(DISTINCT (access_permission_id, mobile_device_id, secured_object_id))::int FROM tickets
                WHERE tenant_id = j.tenant_id AND access_permission_id IS NOT NULL) AS pairs,
              (SELECT count(*)::int FROM audit_events WHERE tenant_id = j.tenant_id AND action = 'access_permission.created') AS grant_events,
              (SELECT count(DISTINCT target)::int FROM audit_events WHERE tenant_id = j.tenant_id AND action = 'access_permission.created') AS grant_targets,
              (SELECT count(*)::int FROM audit_events WHERE tenant_id = j.tenant_id AND action = 'ticket.created') AS ticket_events
         FROM jobs j WHERE j.id = $1`,
      [jobId],
    );
    expect(rows[0]).toEqual({
      created: GRANTS,
      permissions: GRANTS,
      tickets: GRANTS * 2 * GRANT_LOCKS,
      pairs: GRANTS * 2 * GRANT_LOCKS,
      grant_events: GRANTS,
      grant_targets: GRANTS,
      ticket_events: GRANTS,
    });
  }, 600_000);
});
