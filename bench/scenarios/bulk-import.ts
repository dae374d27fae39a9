// Bulk import (docs/api-reference.md 14): a building of BENCH_BULK_RESIDENTS residents (default 10,000), two phones each,
// and one access permission each over a lock group of 10 locks, sent as bulk jobs; timed against the bare INSERT …
// SELECT of the same rows, and a ticket read's p99 beside the running job against the same read without it.
import { performance } from 'node:perf_hooks';
import type pg from 'pg';
import { clientToken, expectOk, median, round, scaleTenant, timed, type ScaleContext, type ScaleResult, type ScaleRun } from '../scale.js';

const RESIDENTS = Number(process.env.BENCH_BULK_RESIDENTS ?? 10_000);
const LOCKS = 10;
const GOAL_SECONDS = 60;
const END = 4102444800000;
/** Concurrent ticket readers while a latency sample is taken, and how long each sample lasts. */
const READERS = 2;
const SAMPLE_SECONDS = 5;

interface JobBody {
  id: string;
  state: string;
  processed: number;
  total: number;
  failed: number;
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
};

/** Sends one job and waits for its end; fails the run when an item failed. */
async function runJob(context: ScaleContext, headers: Record<string, string>, type: string, items: object[]): Promise<JobBody> {
  const sent = (await expectOk(context, { method: 'POST', path: '/operatorapi/jobs', headers, body: { type, items } }, 202)).body as JobBody;
  for (;;) {
    const job = (await expectOk(context, { method: 'GET', path: `/operatorapi/jobs/${sent.id}`, headers }, 200)).body as JobBody;
    if (job.state !== 'queued' && job.state !== 'running') {
      if (job.failed > 0 || job.state !== 'succeeded') throw new Error(`bulk job of ${type} ended ${job.state} with ${job.failed} failed items`);
      return job;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The ids of a finished job's items, in item order, from its results. */
async function resultIds(context: ScaleContext, headers: Record<string, string>, jobId: string): Promise<string[]> {
  const ids: string[] = [];
  let path: string | null = `/operatorapi/jobs/${jobId}/results?limit=1000`;
  while (path) {
    const response = await expectOk(context, { method: 'GET', path, headers }, 200);
    for (const result of response.body as { id: string }[]) ids.push(result.id);
    const next = /<([^>]+)>; rel="next"/.exec(response.headers.get('link') ?? '');
    path = next ? next[1]! : null;
  }
  return ids;
}

/** Ticket reads by READERS loops until `until` resolves (or SAMPLE_SECONDS pass when it is null); their latencies in ms. */
async function ticketReads(context: ScaleContext, headers: Record<string, string>, ticketId: string, until: Promise<unknown> | null): Promise<number[]> {
  const latencies: number[] = [];
  let done = false;
  const stop = until ?? new Promise((resolve) => setTimeout(resolve, SAMPLE_SECONDS * 1000));
  void stop.finally(() => {
    done = true;
  });
  const reader = async () => {
    while (!done) {
      const started = performance.now();
      await expectOk(context, { method: 'GET', path: `/operatorapi/tickets/${ticketId}`, headers }, 200);
      latencies.push(performance.now() - started);
    }
  };
  await Promise.all(Array.from({ length: READERS }, reader));
  await stop;
  return latencies;
}

/** The reference: the same rows by bare INSERT … SELECT statements in one transaction, then removed. */
async function bareImport(db: pg.Client, tenantId: string): Promise<number> {
  const now = Date.now();
  const { seconds } = await timed(async () => {
    await db.query('BEGIN');
    await db.query(
      `INSERT INTO secured_objects (tenant_id, id, channels, local_name, uuid, created_at)
       SELECT $1, 'bare-l' || n, '{btlespp}', 'B' || n, '7d8a0c1e-4b7f-4d5e-9a41-3c2b1f0e9d8c', $2::bigint FROM generate_series(1, $3::int) n`,
      [tenantId, now, LOCKS],
    );
    await db.query(`INSERT INTO lock_groups (tenant_id, id, name, created_at) VALUES ($1, gen_random_uuid(), 'bare group', $2)`, [tenantId, now]);
    await db.query(
      `INSERT INTO lock_group_objects (tenant_id, lock_group_id, secured_object_id)
       SELECT $1, g.id, 'bare-l' || n FROM lock_groups g, generate_series(1, $2::int) n WHERE g.tenant_id = $1 AND g.name = 'bare group'`,
      [tenantId, LOCKS],
    );
    await db.query(
      `INSERT INTO mobile_devices (tenant_id, id, name, created_at)
       SELECT $1, 'bare-d' || n, 'phone ' || n, $2::bigint FROM generate_series(1, $3::int) n`,
      [tenantId, now, RESIDENTS * 2],
    );
    await db.query(
      `INSERT INTO residents (tenant_id, id, name, created_at)
       SELECT $1, gen_random_uuid(), 'bare resident ' || n, $2::bigint FROM generate_series(1, $3::int) n`,
      [tenantId, now, RESIDENTS],
    );
    await db.query(
      `INSERT INTO resident_devices (tenant_id, resident_id, mobile_device_id)
       SELECT $1, r.id, 'bare-d' || (2 * substring(r.name FROM 15)::int - k)
         FROM residents r, generate_series(0, 1) k WHERE r.tenant_id = $1 AND r.name LIKE 'bare resident %'`,
      [tenantId],
    );
    await db.query(
      `INSERT INTO access_permissions (tenant_id, id, resident_id, lock_group_id, begin_date, end_date, commands, channels, created_at)
       SELECT $1, gen_random_uuid(), r.id, g.id, 0, $2::bigint, '{open}', '{btlespp}', $3::bigint
         FROM residents r, lock_groups g WHERE r.tenant_id = $1 AND r.name LIKE 'bare resident %' AND g.tenant_id = $1 AND g.name = 'bare group'`,
      [tenantId, END, now],
    );
    await db.query(
      `INSERT INTO tickets (id, tenant_id, secured_object_id, mobile_device_id, begin_date, end_date, created_at, commands, channels,
                            access_permission_id, change_seq)
       SELECT gen_random_uuid(), $1, lgo.secured_object_id, rd.mobile_device_id, 0, $2::bigint, $3::bigint, '{open}', '{btlespp}', p.id, 0
         FROM access_permissions p
         JOIN resident_devices rd ON rd.tenant_id = p.tenant_id AND rd.resident_id = p.resident_id
         JOIN lock_group_objects lgo ON lgo.tenant_id = p.tenant_id AND lgo.lock_group_id = p.lock_group_id
         JOIN lock_groups g ON g.tenant_id = p.tenant_id AND g.id = p.lock_group_id AND g.name = 'bare group'
        WHERE p.tenant_id = $1`,
      [tenantId, END, now],
    );
    await db.query('COMMIT');
  });
  // Removed again, so the service's rows are the only ones its reads meet.
  await db.query('BEGIN');
  await db.query(`DELETE FROM tickets WHERE tenant_id = $1 AND secured_object_id LIKE 'bare-l%'`, [tenantId]);
  await db.query(`DELETE FROM access_permissions p USING lock_groups g WHERE p.tenant_id = $1 AND g.tenant_id = $1 AND g.id = p.lock_group_id AND g.name = 'bare group'`, [tenantId]);
  await db.query(`DELETE FROM resident_devices WHERE tenant_id = $1 AND mobile_device_id LIKE 'bare-d%'`, [tenantId]);
  await db.query(`DELETE FROM residents WHERE tenant_id = $1 AND name LIKE 'bare resident %'`, [tenantId]);
  await db.query(`DELETE FROM mobile_devices WHERE tenant_id = $1 AND id LIKE 'bare-d%'`, [tenantId]);
  await db.query(`DELETE FROM lock_group_objects WHERE tenant_id = $1 AND secured_object_id LIKE 'bare-l%'`, [tenantId]);
  await db.query(`DELETE FROM lock_groups WHERE tenant_id = $1 AND name = 'bare group'`, [tenantId]);
  await db.query(`DELETE FROM secured_objects WHERE tenant_id = $1 AND id LIKE 'bare-l%'`, [tenantId]);
  await db.query('COMMIT');
  return seconds;
}

async function bulkImport(context: ScaleContext, db: pg.Client): Promise<ScaleResult[]> {
  const tenantName = `scale-bulk-${process.pid}`;
  const tenant = await scaleTenant(context, db, tenantName);
  const client = JSON.parse(
    await context.cli(['client', 'create', '--tenant', tenantName, '--scopes', 'devices:write devices:read device-groups:write access-permissions:write tokens:create tokens:read', '--json']),
  ) as { clientId: string; clientSecret: string };
  const headers = { authorization: `Bearer ${await clientToken(context, client.clientId, client.clientSecret)}` };

  // One ticket to read beside the job, and its read's latency without any job.
  await expectOk(context, { method: 'POST', path: '/operatorapi/securedobjects', headers, body: { id: 'probe-lock', channels: ['btlespp'], localName: 'P', uuid: '7d8a0c1e-4b7f-4d5e-9a41-3c2b1f0e9d8c' } }, 201);
  await expectOk(context, { method: 'POST', path: '/operatorapi/mobiledevices', headers, body: { id: 'probe-phone' } }, 201);
  const probe = (
    await expectOk(
      context,
      { method: 'POST', path: '/operatorapi/tickets', headers, body: { securedObjectId: 'probe-lock', mobileDeviceId: 'probe-phone', beginDate: 0, endDate: END, commands: ['open'], channels: ['btlespp'] } },
      201,
    )
  ).body as { id: string };
  const quiet = await ticketReads(context, headers, probe.id, null);

  const started = performance.now();
  const lockItems = Array.from({ length: LOCKS }, (_, n) => ({ id: `lock-${n}`, channels: ['btlespp'], localName: `L${n}`, uuid: '7d8a0c1e-4b7f-4d5e-9a41-3c2b1f0e9d8c' }));
  await runJob(context, headers, 'secured-objects', lockItems);
  const groupJob = await runJob(context, headers, 'lock-groups', [{ name: 'Building', securedObjectIds: lockItems.map((lock) => lock.id) }]);
  const [groupId] = await resultIds(context, headers, groupJob.id);
  const phases: Record<string, number> = {};
  const phase = () => {
    const at = performance.now();
    return () => (performance.now() - at) / 1000;
  };
  phases.locksAndGroupSeconds = (performance.now() - started) / 1000;
  let end = phase();
  await runJob(context, headers, 'mobile-devices', Array.from({ length: RESIDENTS * 2 }, (_, n) => ({ id: `phone-${n}`, name: `Phone ${n}` })));
  phases.devicesSeconds = end();
  end = phase();
  const residentJob = await runJob(
    context,
    headers,
    'residents',
    Array.from({ length: RESIDENTS }, (_, n) => ({ name: `Resident ${n}`, mobileDeviceIds: [`phone-${2 * n}`, `phone-${2 * n + 1}`] })),
  );
  const residentIds = await resultIds(context, headers, residentJob.id);
  phases.residentsSeconds = end();
  end = phase();
  const permissions = runJob(
    context,
    headers,
    'access-permissions',
    residentIds.map((residentId) => ({ residentId, lockGroupId: groupId, beginDate: 0, endDate: END, commands: ['open'], channels: ['btlespp'] })),
  );
  const beside = await ticketReads(context, headers, probe.id, permissions);
  await permissions;
  phases.permissionsSeconds = end();
  const serviceSeconds = (performance.now() - started) / 1000;

  const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM tickets WHERE tenant_id = $1 AND access_permission_id IS NOT NULL', [tenant.tenantId]);
  const baselineSeconds = await bareImport(db, tenant.tenantId);
  const quietP99 = percentile(quiet, 99);
  const besideP99 = percentile(beside, 99);
  return [
    {
      name: `bulk import: ${RESIDENTS} residents, 2 phones each, 1 permission each over ${LOCKS} locks`,
      description: `jobs of locks, a lock group, phones, residents and permissions, sent and awaited in turn (goal ≤ ${GOAL_SECONDS} s)`,
      serviceSeconds: round(serviceSeconds, 2),
      baselineSeconds: round(baselineSeconds, 2),
      reference: 'the same rows by bare INSERT … SELECT in one transaction',
      ratio: round(serviceSeconds / baselineSeconds, 1),
      goalRatio: null,
      goalMet: serviceSeconds <= GOAL_SECONDS,
      details: {
        items: LOCKS + 1 + RESIDENTS * 4,
        ...Object.fromEntries(Object.entries(phases).map(([name, seconds]) => [name, round(seconds, 1)])),
        ticketsMade: rows[0]!.n,
        itemsPerSecond: round((LOCKS + 1 + RESIDENTS * 4) / serviceSeconds, 0),
        ticketReadP99MsQuiet: round(quietP99, 1),
        ticketReadP99MsBesideJob: round(besideP99, 1),
        ticketReadP99Ratio: round(besideP99 / quietP99, 2),
        ticketReadP50MsQuiet: round(median(quiet), 1),
        ticketReadP50MsBesideJob: round(median(beside), 1),
        ticketReadsBesideJob: beside.length,
      },
    },
  ];
}

export const bulkImportScaleRuns: ScaleRun[] = [{ name: 'bulk import', run: bulkImport }];
