// kill -9 of the instance running a bulk job (docs/api-reference.md 14): a second instance takes the job over once the
// lease runs out and finishes it, and no item is applied twice.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAll } from '../test/helpers/process.js';
import { createPrivateCluster, privateClusterAvailable, type PrivateCluster } from './helpers/cluster.js';
import { SECRETS_KEY, call, cli, sleep, startServer, token } from './helpers/server.js';

const ITEMS = 5000;
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
});
