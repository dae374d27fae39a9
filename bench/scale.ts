// Scale runs: one large operation timed on the service next to the bare SQL doing the same rows, in the same run.
// Access API grant fan-out and membership joins (docs/api-reference.md 5), lock full sync (docs/api-reference.md 6.2);
// the lock-trust runs are in bench/scenarios/lock-trust.ts and use the helpers exported here.
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { NEXT_CHANGE_SEQ_CTE } from '../src/db/repositories/change-log.repo.js';
import { basicAuthorization } from './requests.js';
import { createTenant, type TenantCredentials } from './scenarios/fixtures.js';
import type { ScenarioContext } from './types.js';

export interface ScaleResult {
  name: string;
  description: string;
  /** Median seconds of the service's operation. */
  serviceSeconds: number;
  /** Median seconds of the reference, when there is one. */
  baselineSeconds: number | null;
  /** What the reference is (default: the bare SQL doing the same rows). */
  reference?: string;
  ratio: number | null;
  goalRatio: number | null;
  goalMet: boolean | null;
  /** Anything else worth reporting (requests, rows, memory). */
  details: Record<string, number | string>;
}

export interface ScaleContext extends Omit<ScenarioContext, 'url'> {
  /** The service's process id, to read its memory from /proc. */
  appPid: number;
  runs: number;
}

/** One scale run: it seeds what it needs and reports one or more results. */
export interface ScaleRun {
  /** BENCH_ONLY selects it by a part of this name, or by a part of the word `scale` (every scale run). */
  name: string;
  run(context: ScaleContext, db: pg.Client): Promise<ScaleResult[]>;
  /** Run a second time on the service on Citus when BENCH_CITUS_URL is set, and set beside the run on PostgreSQL. */
  citus?: true;
}

/** How long one request of a scale run may take before the run fails. */
const SCALE_REQUEST_TIMEOUT_MS = 300_000;

export const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
export const round = (value: number, digits = 3) => Math.round(value * 10 ** digits) / 10 ** digits;

/** Resident set size and its peak (VmHWM) of a process, in MiB; Linux only, zero elsewhere. */
export function memoryOf(pid: number): { rssMb: number; peakMb: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const field = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0) / 1024;
    return { rssMb: round(field('VmRSS'), 1), peakMb: round(field('VmHWM'), 1) };
  } catch {
    return { rssMb: 0, peakMb: 0 };
  }
}

export async function timed<T>(work: () => Promise<T>): Promise<{ seconds: number; value: T }> {
  const started = performance.now();
  const value = await work();
  return { seconds: (performance.now() - started) / 1000, value };
}

export async function expectOk(
  context: ScaleContext,
  spec: Parameters<ScenarioContext['request']>[0],
  status: number,
): Promise<{ status: number; headers: Headers; body: unknown }> {
  // A scale operation (a 100,000-ticket grant) takes more than the set-up requests' 10 s on a loaded machine.
  const response = await context.request({ url: context.appUrl, timeoutMs: SCALE_REQUEST_TIMEOUT_MS, ...spec });
  if (response.status !== status) {
    throw new Error(`${spec.method} ${spec.path} answered ${response.status}, not ${status}: ${JSON.stringify(response.body).slice(0, 300)}`);
  }
  return response;
}

export async function clientToken(context: ScaleContext, id: string, secret: string, path = '/oauth/token', form = 'grant_type=client_credentials') {
  const response = await expectOk(
    context,
    {
      method: 'POST',
      path,
      headers: { authorization: basicAuthorization(id, secret), 'content-type': 'application/x-www-form-urlencoded' },
      body: form,
    },
    200,
  );
  return (response.body as { access_token: string }).access_token;
}

export interface ScaleTenant {
  credentials: TenantCredentials;
  tenantId: string;
  operator: Record<string, string>;
  access: Record<string, string>;
}

/** A tenant with an Operator API token and an Access API token (password grant), made through the CLI. */
export async function scaleTenant(context: ScaleContext, db: pg.Client, name: string): Promise<ScaleTenant> {
  const credentials = await createTenant({ ...context, url: context.appUrl }, name);
  const { rows } = await db.query<{ id: string }>('SELECT id FROM tenants WHERE name = $1', [name]);
  const accessClient = JSON.parse(
    await context.cli([
      'client',
      'create',
      '--tenant',
      name,
      '--scopes',
      'device-groups:write device-groups:read access-permissions:write access-permissions:read',
      '--json',
    ]),
  ) as { clientId: string; clientSecret: string };
  await context.cli(['user', 'create', `bench@${name}`, '--password-stdin'], 'bench password 1\n');
  const accessToken = await clientToken(
    context,
    accessClient.clientId,
    accessClient.clientSecret,
    '/oauth2/token',
    `grant_type=password&username=${encodeURIComponent(`bench@${name}`)}&password=${encodeURIComponent('bench password 1')}`,
  );
  return {
    credentials,
    tenantId: rows[0]!.id,
    operator: { authorization: `Bearer ${await clientToken(context, credentials.clientId, credentials.clientSecret)}` },
    access: { authorization: `Bearer ${accessToken}` },
  };
}

/** Devices and locks straight into their tables (set-up, not measured). */
export async function seedDevicesAndLocks(db: pg.Client, tenantId: string, prefix: string, devices: number, locks: number, now: number) {
  await db.query(
    `INSERT INTO mobile_devices (tenant_id, id, name, created_at)
     SELECT $1, $2 || '-d' || n, NULL, $3::bigint FROM generate_series(1, $4) AS n`,
    [tenantId, prefix, now, devices],
  );
  await db.query(
    `INSERT INTO secured_objects (tenant_id, id, channels, local_name, uuid, created_at)
     SELECT $1, $2 || '-l' || n, '{btlespp}', 'L' || n, '7d8a0c1e-4b7f-4d5e-9a41-3c2b1f0e9d8c', $3::bigint FROM generate_series(1, $4) AS n`,
    [tenantId, prefix, now, locks],
  );
}

const ids = (prefix: string, kind: 'd' | 'l', count: number) => Array.from({ length: count }, (_, i) => `${prefix}-${kind}${i + 1}`);

/** The reference: the same tickets by one bare INSERT … SELECT (same table, same indexes), in its own transaction. */
async function bareFanOut(db: pg.Client, tenantId: string, residentId: string, lockGroupId: string, deviceFilter: string | null) {
  const fakePermission = (await db.query<{ id: string }>('SELECT gen_random_uuid() AS id')).rows[0]!.id;
  const result = await timed(async () => {
    await db.query('BEGIN');
    const inserted = await db.query(
      `INSERT INTO tickets (id, tenant_id, secured_object_id, mobile_device_id, begin_date, end_date, created_at, commands,
                            channels, access_permission_id, change_seq)
       SELECT gen_random_uuid(), $1, lgo.secured_object_id, rd.mobile_device_id, 0, 4102444800000, $4::bigint, '{open}', '{btlespp}', $5, 0
         FROM resident_devices rd
         JOIN lock_group_objects lgo ON lgo.tenant_id = rd.tenant_id AND lgo.lock_group_id = $3
        WHERE rd.tenant_id = $1 AND rd.resident_id = $2 AND ($6::text IS NULL OR rd.mobile_device_id = $6)`,
      [tenantId, residentId, lockGroupId, Date.now(), fakePermission, deviceFilter],
    );
    await db.query('COMMIT');
    return inserted.rowCount ?? 0;
  });
  await db.query('DELETE FROM tickets WHERE access_permission_id = $1', [fakePermission]);
  return result;
}

async function grantFanOut(context: ScaleContext, db: pg.Client, runs: number): Promise<ScaleResult[]> {
  const devices = 100;
  const locks = 1000;
  const tenant = await scaleTenant(context, db, `scale-grant-${process.pid}`);
  await seedDevicesAndLocks(db, tenant.tenantId, 'g', devices + runs, locks, Date.now());
  const resident = (await expectOk(context, { method: 'POST', path: '/v1/residents', headers: tenant.access, body: { name: 'Scale', mobileDeviceIds: ids('g', 'd', devices) } }, 201)).body as { id: string };
  const group = (await expectOk(context, { method: 'POST', path: '/v1/lock-groups', headers: tenant.access, body: { name: 'Scale', securedObjectIds: ids('g', 'l', locks) } }, 201)).body as { id: string };
  await db.query('ANALYZE');
  /** The resident's permission for the lock group: devices × locks tickets; with a schedule, each ticket gets it. */
  const grant = (schedule?: object) =>
    expectOk(
      context,
      {
        method: 'POST',
        path: '/v1/access-permissions',
        headers: tenant.access,
        body: {
          residentId: resident.id,
          lockGroupId: group.id,
          beginDate: 0,
          endDate: 4102444800000,
          commands: ['open'],
          channels: ['btlespp'],
          ...(schedule ? { schedule } : {}),
        },
      },
      201,
    );
  // Office hours in the locks' zone (docs/api-reference.md 9): copied to every ticket by the same INSERT … SELECT.
  await db.query(`UPDATE secured_objects SET time_zone = 'Europe/Berlin' WHERE tenant_id = $1 AND id LIKE 'g-l%'`, [tenant.tenantId]);
  const schedule = { weekly: [{ days: ['MO', 'TU', 'WE', 'TH', 'FR'], from: '07:00', to: '19:00' }], except: ['2026-12-24', '2026-12-25'] };

  const memoryBefore = memoryOf(context.appPid);
  const service: number[] = [];
  const scheduled: number[] = [];
  const bare: number[] = [];
  let tokenCount = 0;
  let scheduledTokenCount = 0;
  let ticketEvents = 0;
  // Alternating, each run cleaned up after, so both sides meet a table of the same size.
  for (let run = 0; run < runs; run++) {
    const reference = await bareFanOut(db, tenant.tenantId, resident.id, group.id, null);
    bare.push(reference.seconds);
    const granted = await timed(grant);
    service.push(granted.seconds);
    const permission = granted.value.body as { id: string; tokenCount: number };
    tokenCount = permission.tokenCount;
    // docs/api-reference.md 10: the grant's events, its tickets' in chunks of 1,000, written by the measured transaction.
    const { rows: written } = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM audit_events WHERE tenant_id = $1 AND action = 'ticket.created' AND data ->> 'accessPermissionId' = $2`,
      [tenant.tenantId, permission.id],
    );
    ticketEvents = written[0]!.n;
    await db.query('DELETE FROM tickets WHERE access_permission_id = $1', [permission.id]);
    await db.query('DELETE FROM access_permissions WHERE id = $1', [permission.id]);
    const grantedWithSchedule = await timed(() => grant(schedule));
    scheduled.push(grantedWithSchedule.seconds);
    const scheduledPermission = grantedWithSchedule.value.body as { id: string; tokenCount: number };
    scheduledTokenCount = scheduledPermission.tokenCount;
    await db.query('DELETE FROM tickets WHERE access_permission_id = $1', [scheduledPermission.id]);
    await db.query('DELETE FROM access_permissions WHERE id = $1', [scheduledPermission.id]);
  }
  const memoryAfter = memoryOf(context.appPid);

  // One device joining a resident whose permission reaches 1,000 locks: 1,000 new tickets.
  const granted = (await grant()).body as { id: string };
  const joins: number[] = [];
  const bareJoins: number[] = [];
  for (let run = 0; run < runs; run++) {
    const deviceId = `g-d${devices + run + 1}`;
    const joined = await timed(() =>
      expectOk(context, { method: 'PUT', path: `/v1/residents/${resident.id}/mobiledevices/${deviceId}`, headers: tenant.access }, 200),
    );
    joins.push(joined.seconds);
    bareJoins.push((await bareFanOut(db, tenant.tenantId, resident.id, group.id, deviceId)).seconds);
  }
  const { rows } = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM tickets WHERE access_permission_id = $1 AND revoked_at IS NULL',
    [granted.id],
  );

  const fanOut = median(service);
  const fanOutScheduled = median(scheduled);
  const fanOutBare = median(bare);
  const join = median(joins);
  const joinBare = median(bareJoins);
  return [
    {
      name: 'grant 100 devices × 1,000 locks',
      description:
        'POST /v1/access-permissions making 100,000 tickets and their events (docs/api-reference.md 10: ticket.created in chunks ' +
        'of 1,000, found by ?target=ticket:ID) vs the bare INSERT … SELECT of the same rows',
      serviceSeconds: round(fanOut),
      baselineSeconds: round(fanOutBare),
      ratio: round(fanOut / fanOutBare, 2),
      goalRatio: 1.5,
      goalMet: fanOut / fanOutBare <= 1.5,
      details: {
        tickets: tokenCount,
        ticketCreatedEvents: ticketEvents,
        runs,
        samplesMs: service.map((value) => round(value * 1000, 1)).join('/'),
        bareSamplesMs: bare.map((value) => round(value * 1000, 1)).join('/'),
        serverRssBeforeMb: memoryBefore.rssMb,
        serverRssAfterMb: memoryAfter.rssMb,
        serverPeakRssMb: memoryAfter.peakMb,
      },
    },
    {
      name: 'grant 100 devices × 1,000 locks (with a schedule)',
      description:
        'the same grant with a schedule (docs/api-reference.md 9), copied to each of the 100,000 tickets by the same INSERT … SELECT, ' +
        'vs the grant without one (runs alternate)',
      serviceSeconds: round(fanOutScheduled),
      baselineSeconds: round(fanOut),
      reference: 'the grant without a schedule',
      ratio: round(fanOutScheduled / fanOut, 2),
      goalRatio: 1.1,
      goalMet: fanOutScheduled / fanOut <= 1.1,
      details: {
        tickets: scheduledTokenCount,
        runs,
        samplesMs: scheduled.map((value) => round(value * 1000, 1)).join('/'),
        withoutSamplesMs: service.map((value) => round(value * 1000, 1)).join('/'),
      },
    },
    {
      name: 'device joins a resident (1,000 locks)',
      description: 'PUT /v1/residents/{id}/mobiledevices/{id} making 1,000 tickets vs the bare INSERT … SELECT of those rows',
      serviceSeconds: round(join),
      baselineSeconds: round(joinBare),
      ratio: round(join / joinBare, 2),
      goalRatio: 1.5,
      goalMet: join / joinBare <= 1.5,
      details: { runs, liveTicketsAfter: rows[0]!.n },
    },
  ];
}

async function lockSync(context: ScaleContext, db: pg.Client): Promise<ScaleResult[]> {
  const tenant = await scaleTenant(context, db, `scale-sync-${process.pid}`);
  const now = Date.now();
  await seedDevicesAndLocks(db, tenant.tenantId, 's', 0, 1, now);
  // 100,000 live tickets for one lock (different devices), stamped as one change.
  const { rows: change } = await db.query<{ last_seq: string }>(NEXT_CHANGE_SEQ_CTE('$1'), [tenant.tenantId]);
  const seq = Number(change[0]!.last_seq);
  await db.query(
    `INSERT INTO tickets (id, tenant_id, secured_object_id, mobile_device_id, begin_date, end_date, created_at, commands, channels, change_seq)
     SELECT gen_random_uuid(), $1, 's-l1', 'other-' || n, 0, 4102444800000, $2::bigint, '{open}', '{btlespp}', $3::bigint FROM generate_series(1, 100000) AS n`,
    [tenant.tenantId, now, seq],
  );
  await db.query('ANALYZE tickets');

  const lockClient = JSON.parse(await context.cli(['client', 'create', '--tenant', tenant.credentials.tenant, '--scopes', 'sync', '--secured-object', 's-l1', '--json'])) as {
    clientId: string;
    clientSecret: string;
  };
  const lockHeaders = { authorization: `Bearer ${await clientToken(context, lockClient.clientId, lockClient.clientSecret)}` };

  const memoryBefore = memoryOf(context.appPid);
  let requests = 0;
  let tokens = 0;
  const sync = await timed(async () => {
    let cursor: string | undefined;
    for (;;) {
      const query = `?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const response = await expectOk(context, { method: 'GET', path: `/deviceapi/securedobjects/s-l1/sync${query}`, headers: lockHeaders }, 200);
      requests++;
      const body = response.body as { tokens: unknown[]; cursor: string };
      tokens += body.tokens.length;
      cursor = body.cursor;
      if (!(response.headers.get('link') ?? '').includes('rel="next"')) break;
    }
  });
  const memoryAfter = memoryOf(context.appPid);
  return [
    {
      name: 'full sync of a lock with 100,000 tickets',
      description: 'GET /deviceapi/securedobjects/{id}/sync without a cursor, then page by page (limit 1000) to the end',
      serviceSeconds: round(sync.seconds),
      baselineSeconds: null,
      ratio: null,
      goalRatio: null,
      goalMet: null,
      details: { requests, tokens, serverRssBeforeMb: memoryBefore.rssMb, serverRssAfterMb: memoryAfter.rssMb, serverPeakRssMb: memoryAfter.peakMb },
    },
  ];
}

/** The Access API and lock sync scale runs (bench/README.md, *Scale runs*); bench/scenarios/index.ts adds the lock-trust runs. */
export const baseScaleRuns: ScaleRun[] = [
  {
    name: 'grant 100 devices × 1,000 locks; device joins a resident',
    run: (context, db) => grantFanOut(context, db, context.runs),
    citus: true,
  },
  { name: 'full sync of a lock with 100,000 tickets', run: lockSync },
];

/** The selected runs one after another, each on its own tenant; a failing run is reported, the others still run. */
export async function runScaleBenchmarks(
  context: ScaleContext,
  runs: ScaleRun[],
  signal: AbortSignal,
): Promise<{ results: ScaleResult[]; failures: string[] }> {
  const db = new pg.Client({ connectionString: context.databaseUrl });
  await db.connect();
  const results: ScaleResult[] = [];
  const failures: string[] = [];
  try {
    for (const run of runs) {
      signal.throwIfAborted();
      process.stderr.write(`[bench] scale run: ${run.name} (${context.runs} runs)\n`);
      try {
        results.push(...(await run.run(context, db)));
      } catch (error) {
        signal.throwIfAborted();
        failures.push(`note: scale run ${run.name}: failed: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    return { results, failures };
  } finally {
    await db.end();
  }
}

export function formatScale(results: ScaleResult[]): string {
  const lines = ['scale runs (median of the runs; a reference is measured in the same run):'];
  for (const result of results) {
    const goal = result.goalRatio === null ? '' : ` (goal <= ${result.goalRatio}: ${result.goalMet ? 'met' : 'NOT met'})`;
    const ratio = result.ratio === null ? '' : `  vs ${result.reference ?? 'bare SQL'} ${result.baselineSeconds} s = ${result.ratio} x${goal}`;
    const details = Object.entries(result.details)
      .map(([key, value]) => `${key}=${value}`)
      .join(' ');
    lines.push(`  ${result.name}: ${result.serviceSeconds} s${ratio}`, `    ${details}`);
  }
  return lines.join('\n');
}
