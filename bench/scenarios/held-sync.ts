// Scale run for syncs held open (docs/lock-sync.md, docs/api-reference.md 15): many locks of one tenant each hold
// `GET …/sync?cursor=&wait=30` on one instance; then a lockdown of the tenant. Reported: the service's memory per held
// request and the time from the lockdown request to the last held sync answered (goal: 2 s), per round, median of
// BENCH_SCALE_RUNS. The nothing-new sync against hello is the lock-sync row (bench/scenarios/lock-sync.ts), unchanged.
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import type pg from 'pg';
import { median, memoryOf, round, scaleTenant, seedDevicesAndLocks, clientToken, type ScaleContext, type ScaleResult, type ScaleRun } from '../scale.js';

/** How many locks hold a sync (BENCH_HELD_LOCKS); the service's SYNC_WAIT_MAX_HELD (default 10,000) must allow them. */
const LOCKS = Number(process.env.BENCH_HELD_LOCKS || 10_000);
/** The goal of docs/api-reference.md 15: every held lock answered this soon after the lockdown was asked for. */
const GOAL_SECONDS = 2;
/** Full syncs in flight at once while the cursors are fetched (untimed set-up), below SYNC_MAX_WAITING. */
const SETUP_CONCURRENCY = 8;

/** Plain HTTP with an agent of unbounded sockets: one connection per held request, as 10,000 locks would have. */
const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });

/**
 * A connection reset before any answer (the service's listen backlog overflowing while 10,000 connect at once on a
 * loaded machine) is tried again after a pause: no request reached the service, so nothing is counted twice.
 */
async function get(url: string, headers: Record<string, string>): Promise<{ status: number; body: string; at: number }> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await getOnce(url, headers);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (attempt >= 20 || (code !== 'ECONNRESET' && code !== 'ECONNREFUSED')) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
    }
  }
}

function getOnce(url: string, headers: Record<string, string>): Promise<{ status: number; body: string; at: number }> {
  return new Promise((resolve, reject) => {
    const request = http.get(url, { agent, headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), at: performance.now() }));
      response.on('error', reject);
    });
    request.on('error', reject);
    request.setTimeout(120_000, () => request.destroy(new Error(`GET ${url} timed out`)));
  });
}

async function inBatches<T>(items: T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}

/** The service's `lock_syncs_held` gauge (docs/lock-sync.md). */
async function heldNow(context: ScaleContext): Promise<number> {
  const metrics = await get(`${context.appUrl}/metrics`, {});
  return Number(/^lock_syncs_held (\S+)/m.exec(metrics.body)?.[1] ?? NaN);
}

async function heldSyncs(context: ScaleContext, db: pg.Client): Promise<ScaleResult[]> {
  const name = `held-${process.pid}`;
  const tenant = await scaleTenant(context, db, name);
  await seedDevicesAndLocks(db, tenant.tenantId, 'h', 1, LOCKS, Date.now());
  // One unbound client syncs every lock of the tenant (docs/api-reference.md 6.2) and starts the lockdown.
  const client = JSON.parse(await context.cli(['client', 'create', '--tenant', name, '--scopes', 'sync lockdown:manage', '--json'])) as {
    clientId: string;
    clientSecret: string;
  };
  const headers = { authorization: `Bearer ${await clientToken(context, client.clientId, client.clientSecret)}` };
  const locks = Array.from({ length: LOCKS }, (_, i) => `h-l${i + 1}`);
  const cursors = new Map<string, string>();
  await inBatches(locks, SETUP_CONCURRENCY, async (id) => {
    let answer = await get(`${context.appUrl}/deviceapi/securedobjects/${id}/sync`, headers);
    // A storm refusal (docs/lock-sync.md): asked again after its Retry-After's lower end.
    for (let attempt = 0; answer.status === 503 && attempt < 20; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      answer = await get(`${context.appUrl}/deviceapi/securedobjects/${id}/sync`, headers);
    }
    if (answer.status !== 200) throw new Error(`full sync of ${id} answered ${answer.status}: ${answer.body.slice(0, 200)}`);
    cursors.set(id, (JSON.parse(answer.body) as { cursor: string }).cursor);
  });

  const rounds: { lastSeconds: number; p50Seconds: number; postSeconds: number; perHeldBytes: number; holdSeconds: number }[] = [];
  for (let round_ = 0; round_ < context.runs; round_++) {
    const before = memoryOf(context.appPid).rssMb;
    const holdStarted = performance.now();
    const held = locks.map((id) => get(`${context.appUrl}/deviceapi/securedobjects/${id}/sync?cursor=${encodeURIComponent(cursors.get(id)!)}&wait=30`, headers));
    const deadline = Date.now() + 60_000;
    while ((await heldNow(context)) < LOCKS) {
      if (Date.now() > deadline) throw new Error(`only ${await heldNow(context)} of ${LOCKS} syncs were held after 60 s`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const holdSeconds = (performance.now() - holdStarted) / 1000;
    const after = memoryOf(context.appPid).rssMb;
    const mode = round_ % 2 === 0 ? 'lockdown' : 'normal';
    const started = performance.now();
    const posted = await fetch(`${context.appUrl}/operatorapi/lockdowns`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ scope: 'tenant', mode, reason: 'bench' }),
    });
    const postSeconds = (performance.now() - started) / 1000;
    if (posted.status !== 201) throw new Error(`POST /operatorapi/lockdowns answered ${posted.status}: ${await posted.text()}`);
    const answers = await Promise.all(held);
    const times: number[] = [];
    for (const [index, answer] of answers.entries()) {
      if (answer.status !== 200) throw new Error(`a held sync answered ${answer.status}: ${answer.body.slice(0, 200)}`);
      const body = JSON.parse(answer.body) as { cursor: string; lockState?: string };
      if (body.lockState === undefined) throw new Error(`held sync of ${locks[index]} answered without the lock state`);
      cursors.set(locks[index]!, body.cursor);
      times.push((answer.at - started) / 1000);
    }
    rounds.push({
      lastSeconds: Math.max(...times),
      p50Seconds: median(times),
      postSeconds,
      perHeldBytes: ((after - before) * 1024 * 1024) / LOCKS,
      holdSeconds,
    });
  }

  const last = median(rounds.map((r) => r.lastSeconds));
  return [
    {
      name: `held sync: ${LOCKS.toLocaleString('en')} locks holding ?wait=, then a lockdown`,
      description:
        'each lock of one tenant holds GET /deviceapi/securedobjects/{id}/sync?cursor=&wait=30 on one instance; then POST ' +
        '/operatorapi/lockdowns for the tenant: seconds from sending it to the last held sync answered (with its lockState)',
      serviceSeconds: round(last),
      baselineSeconds: null,
      ratio: null,
      goalRatio: null,
      goalMet: last <= GOAL_SECONDS,
      details: {
        locks: LOCKS,
        runs: context.runs,
        goalSeconds: GOAL_SECONDS,
        lastAnsweredMs: rounds.map((r) => round(r.lastSeconds * 1000, 0)).join('/'),
        p50AnsweredMs: rounds.map((r) => round(r.p50Seconds * 1000, 0)).join('/'),
        lockdownRequestMs: rounds.map((r) => round(r.postSeconds * 1000, 0)).join('/'),
        secondsToHoldAll: rounds.map((r) => round(r.holdSeconds, 1)).join('/'),
        // The service's resident memory growth while they were held, over their number: a rough upper bound.
        bytesPerHeldSync: rounds.map((r) => Math.round(r.perHeldBytes)).join('/'),
      },
    },
  ];
}

export const heldSyncScaleRuns: ScaleRun[] = [{ name: 'held sync: locks holding ?wait=, then a lockdown', run: heldSyncs }];
