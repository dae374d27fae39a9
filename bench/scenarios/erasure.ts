// Erasure on request (docs/api-reference.md 16.2): a resident with 100,000 access-log entries erased through the API,
// from the request to `succeeded`, against a bare DELETE of the same rows in the same run; and what it costs the API
// meanwhile: the p99 of a ticket read, one after another, while the erasure runs against the same reads without it.
import { performance } from 'node:perf_hooks';
import type pg from 'pg';
import { expectOk, median, round, scaleTenant, seedDevicesAndLocks, type ScaleContext, type ScaleResult, type ScaleRun } from '../scale.js';

const ENTRIES = Number(process.env.BENCH_ERASURE_ENTRIES || 100_000);
/** How long the ticket reads without an erasure are sampled. */
const QUIET_MS = 3000;

const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((values.length * p) / 100))]!;

/** The person's access log: ENTRIES decisions of device `er-d1` at lock `er-l1`, straight into the table. */
async function seedEntries(db: pg.Client, tenantId: string, ticketId: string, registeredAt: number, now: number): Promise<void> {
  await db.query(
    `INSERT INTO access_log_entries (tenant_id, secured_object_id, lock_registered_at, entry_no, lock_time, token_id, mobile_device_id,
                                     command, channel, result, reason, received_at, via, clock_offset_ms, numbering, signed)
     SELECT $1, 'er-l1', $2::bigint, n, $3::bigint - n * 3000, $4, 'er-d1', 'open', 'btlespp', 'granted', 'ok', $3::bigint, 'lock', 0, 'lock', true
       FROM generate_series(1, $5) AS n`,
    [tenantId, registeredAt, now, ticketId, ENTRIES],
  );
}

async function erasure(context: ScaleContext, db: pg.Client): Promise<ScaleResult[]> {
  const tenant = await scaleTenant(context, db, `erasure-${process.pid}`);
  const tenantId = tenant.tenantId;
  const now = Date.now();
  await seedDevicesAndLocks(db, tenantId, 'er', 2, 1, now);
  const { rows: locks } = await db.query<{ created_at: string }>("SELECT created_at FROM secured_objects WHERE tenant_id = $1 AND id = 'er-l1'", [tenantId]);
  const registeredAt = Number(locks[0]!.created_at);
  const ticket = (
    await expectOk(
      context,
      {
        method: 'POST',
        path: '/operatorapi/tickets',
        headers: tenant.operator,
        body: { securedObjectId: 'er-l1', mobileDeviceId: 'er-d2', beginDate: now, endDate: now + 86_400_000, commands: ['open'], channels: ['btlespp'] },
      },
      201,
    )
  ).body as { id: string };
  const readTicket = async () => {
    const started = performance.now();
    await expectOk(context, { method: 'GET', path: `/operatorapi/tickets/${ticket.id}`, headers: tenant.operator }, 200);
    return performance.now() - started;
  };

  const service: number[] = [];
  const bare: number[] = [];
  const quietP99: number[] = [];
  const besideP99: number[] = [];
  for (let run = 0; run <= context.runs; run++) {
    // The bare side: the same rows, one DELETE.
    await seedEntries(db, tenantId, ticket.id, registeredAt, now);
    const bareStarted = performance.now();
    await db.query("DELETE FROM access_log_entries WHERE tenant_id = $1 AND mobile_device_id = 'er-d1'", [tenantId]);
    const bareSeconds = (performance.now() - bareStarted) / 1000;

    // The service: a fresh resident holding er-d1, whose 100,000 entries the erasure deletes, names replaced.
    await seedEntries(db, tenantId, ticket.id, registeredAt, now);
    await db.query("UPDATE mobile_devices SET name = 'Bench Person phone' WHERE tenant_id = $1 AND id = 'er-d1'", [tenantId]);
    const resident = (await expectOk(context, { method: 'POST', path: '/v1/residents', headers: tenant.access, body: { name: `Bench Person ${run}`, mobileDeviceIds: ['er-d1'] } }, 201))
      .body as { id: string };
    const quiet: number[] = [];
    for (const until = performance.now() + QUIET_MS; performance.now() < until; ) quiet.push(await readTicket());

    const started = performance.now();
    const erasureBody = (await expectOk(context, { method: 'POST', path: '/operatorapi/erasures', headers: tenant.operator, body: { residentId: resident.id } }, 202))
      .body as { id: string };
    const beside: number[] = [];
    let finished = false;
    let lastPoll = 0;
    while (!finished) {
      beside.push(await readTicket());
      if (performance.now() - lastPoll > 100) {
        lastPoll = performance.now();
        const state = (await expectOk(context, { method: 'GET', path: `/operatorapi/erasures/${erasureBody.id}`, headers: tenant.operator }, 200)).body as {
          state: string;
          rows: Record<string, number>;
        };
        if (state.state === 'succeeded') {
          if (state.rows.access_log_entries !== ENTRIES) throw new Error(`the erasure deleted ${state.rows.access_log_entries} entries, not ${ENTRIES}`);
          finished = true;
        }
      }
    }
    const seconds = (performance.now() - started) / 1000;
    if (run === 0) continue; // warm-up
    service.push(seconds);
    bare.push(bareSeconds);
    quietP99.push(percentile(quiet, 99));
    besideP99.push(percentile(beside, 99));
  }

  const serviceSeconds = median(service);
  const bareSeconds = median(bare);
  return [
    {
      name: `erasure: a resident with ${ENTRIES.toLocaleString('en')} access-log entries`,
      description:
        'POST /operatorapi/erasures for a resident with one device, to state succeeded (access logs deleted in batches of ' +
        '5,000, names replaced in rows and events), against one bare DELETE of the same rows',
      serviceSeconds: round(serviceSeconds, 3),
      baselineSeconds: round(bareSeconds, 3),
      reference: 'bare DELETE of the same rows',
      ratio: round(serviceSeconds / bareSeconds, 2),
      goalRatio: null,
      goalMet: null,
      details: {
        entries: ENTRIES,
        ticketReadP99QuietMs: round(median(quietP99), 1),
        ticketReadP99BesideMs: round(median(besideP99), 1),
        ticketReadP99Ratio: round(median(besideP99) / median(quietP99), 2),
      },
    },
  ];
}

export const erasureScaleRuns: ScaleRun[] = [{ name: 'erasure: a person with many access-log entries', run: erasure }];
