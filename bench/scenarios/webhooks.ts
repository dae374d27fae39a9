// Webhooks (docs/api-reference.md 10): what one subscription costs ticket creation, and how fast the worker delivers to a
// local receiver. Subscriptions are inserted by SQL (sealed under the run's SECRETS_KEY) until the subscription API exists.
import { randomUUID } from 'node:crypto';
import { spawn } from 'node:child_process';
import pg from 'pg';
import { newWebhookSecret, sealWebhookSecret } from '../../src/services/webhooks/signing-secrets.js';
import { cpuSeconds, runLoad, type PreparedRequest } from '../measure.js';
import { newTicketBody } from '../requests.js';
import { median, round, timed, type ScaleContext, type ScaleResult, type ScaleRun } from '../scale.js';
import type { Comparison, Scenario } from '../types.js';
import { createTenant, operatorFixture, type OperatorFixture } from './fixtures.js';
import { secretsKeyOf } from '../../src/shared/crypto.js';

const WITH_SUBSCRIPTION = 'POST /operatorapi/tickets (one webhook subscription)';
/** Its name holds the rows' request, so `BENCH_ONLY="POST /operatorapi/tickets"` runs it with them. */
const INTERLEAVED = 'POST /operatorapi/tickets with and without one webhook subscription, interleaved';
/** Events per throughput run. */
const EVENTS = 3000;

/**
 * A receiver in a process of its own (not the bench's, whose event loop drives autocannon): answers 204 to every POST
 * and its count to `GET /count`. Killed with the bench process at the latest.
 */
const RECEIVER = `
const http = require('node:http');
let received = 0;
const server = http.createServer((request, response) => {
  request.resume();
  request.on('end', () => {
    if (request.method === 'GET') return response.end(String(received));
    received++;
    response.statusCode = 204;
    response.end();
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'));
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
`;

async function startReceiver(): Promise<{ url: string; count(): Promise<number>; close(): void }> {
  const child = spawn(process.execPath, ['-e', RECEIVER], { stdio: ['pipe', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.setEncoding('utf8').once('data', (line: string) => resolve(Number(line.trim())));
    child.once('exit', (code) => reject(new Error(`the webhook receiver exited with ${code}`)));
  });
  // Gone with the bench: its standard input closes when the bench exits, however it exits.
  child.unref();
  const base = `http://127.0.0.1:${port}`;
  return {
    url: `${base}/hook`,
    count: async () => Number(await (await fetch(`${base}/count`)).text()),
    close: () => {
      child.stdin.end();
    },
  };
}

/** A subscription of the tenant to `ticket.created` at `url`, from the tenant's current last event on (its cursor). */
async function subscribe(db: pg.Client, secretsKeyHex: string, tenantId: string, url: string): Promise<string> {
  const id = randomUUID();
  const sealed = sealWebhookSecret(secretsKeyOf(Buffer.from(secretsKeyHex, 'hex')), tenantId, id, newWebhookSecret());
  await db.query(
    `INSERT INTO webhooks (tenant_id, id, url, event_types, secret_sealed, dispatched_through, created_at, updated_at)
     VALUES ($1, $2, $3, '{ticket.created}', $4, coalesce((SELECT last_seq FROM tenant_audit_counters WHERE tenant_id = $1), 0), $5, $5)`,
    [tenantId, id, url, sealed, Date.now()],
  );
  return id;
}

/**
 * Rows the webhook tables have had written so far (inserted, updated, deleted; the statistics views, read after
 * waiting out their flush interval): what delivery costs PostgreSQL, whatever else runs on the machine.
 */
async function webhookRowWrites(db: pg.Client): Promise<number> {
  await new Promise((resolve) => setTimeout(resolve, 1100));
  await db.query('SELECT pg_stat_clear_snapshot()');
  const { rows } = await db.query<{ writes: string }>(
    `SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0) AS writes FROM pg_stat_user_tables
      WHERE relname IN ('webhooks', 'webhook_deliveries', 'webhook_attempts')`,
  );
  return Number(rows[0]!.writes);
}

async function withDatabase<T>(url: string, work: (db: pg.Client) => Promise<T>): Promise<T> {
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    return await work(db);
  } finally {
    await db.end();
  }
}

export const webhookScenarios: Scenario[] = [
  {
    // The same request as `POST /operatorapi/tickets`, in a tenant with one subscription to ticket.created whose
    // receiver is up: the worker sends every ticket's event while the row is measured.
    name: WITH_SUBSCRIPTION,
    method: 'POST',
    path: '/operatorapi/tickets',
    baseline: 'insert',
    async setup(context) {
      const fixture = await operatorFixture(context, 'bench-post-ticket-webhook');
      const receiver = await startReceiver();
      await withDatabase(context.databaseUrl, (db) => subscribe(db, context.secretsKey, fixture.tenantId, receiver.url));
      return { headers: fixture.headers, body: newTicketBody(fixture.securedObjectId, fixture.mobileDeviceId) };
    },
  },
];

/**
 * The webhook row's goal (bench/README.md, *The rows and their goals*; docs/api-reference.md 10): ticket creation with
 * one subscription keeps at least 0.85× its throughput, p50 ≤ 1/0.85.
 */
export const webhookComparisons: Comparison[] = [
  {
    name: 'ticket create, p50 with one webhook subscription / without',
    numerator: WITH_SUBSCRIPTION,
    denominator: 'POST /operatorapi/tickets',
    goalAtMost: round(1 / 0.85, 2),
  },
];

/**
 * Delivery throughput: EVENTS `ticket.created` events seeded in one statement (the tenant's next sequence numbers, as
 * the audit append takes them) for a new subscription, timed from their commit until the local receiver has them
 * all: claims, signing, the POSTs and their outcome transactions. Each run a fresh subscription and events;
 * the previous subscription is disabled first.
 */
async function deliveryThroughput(context: ScaleContext, db: pg.Client): Promise<ScaleResult[]> {
  await createTenant({ ...context, url: context.appUrl }, 'bench-webhook-throughput');
  const { rows } = await db.query<{ id: string }>("SELECT id FROM tenants WHERE name = 'bench-webhook-throughput'");
  const tenantId = rows[0]!.id;
  const receiver = await startReceiver();
  const seconds: number[] = [];
  const cpuPerEvent: number[] = [];
  const writesPerEvent: number[] = [];
  let previous: string | null = null;
  for (let run = 0; run <= context.runs; run++) {
    if (previous) await db.query(`UPDATE webhooks SET enabled = false, disabled_reason = 'operator', disabled_at = 0 WHERE tenant_id = $1 AND id = $2`, [tenantId, previous]);
    previous = await subscribe(db, context.secretsKey, tenantId, receiver.url);
    const before = await receiver.count();
    const writesBefore = await webhookRowWrites(db);
    const cpuBefore = await cpuSeconds(context.appPid);
    const elapsed = await timed(async () => {
      await db.query(
        `WITH counter AS (
           INSERT INTO tenant_audit_counters AS c (tenant_id, last_seq) VALUES ($1, $2)
           ON CONFLICT (tenant_id) DO UPDATE SET last_seq = c.last_seq + EXCLUDED.last_seq
           RETURNING last_seq
         )
         INSERT INTO audit_events (tenant_id, seq, time, actor, action, target, request_id)
         SELECT $1, counter.last_seq - $2 + n, $3::bigint, 'bench', 'ticket.created', 'ticket:' || gen_random_uuid(), NULL
           FROM counter, generate_series(1, $2) AS n`,
        [tenantId, EVENTS, Date.now()],
      );
      const deadline = Date.now() + 300_000;
      for (;;) {
        const got = (await receiver.count()) - before;
        if (got >= EVENTS) break;
        if (Date.now() > deadline) throw new Error(`the receiver got ${got} of ${EVENTS} events within 300 s`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    });
    const cpuAfter = await cpuSeconds(context.appPid);
    // The last batch is recorded just after the receiver has it.
    await drained(db, tenantId, previous);
    const writes = (await webhookRowWrites(db)) - writesBefore;
    // The first run warms up (plans, the worker's keep-alive sockets) and is not counted.
    if (run > 0) {
      seconds.push(elapsed.seconds);
      if (cpuBefore !== null && cpuAfter !== null) cpuPerEvent.push(((cpuAfter - cpuBefore) * 1e6) / EVENTS);
      writesPerEvent.push(writes / EVENTS);
    }
  }
  receiver.close();
  const serviceSeconds = median(seconds);
  return [
    {
      name: `webhook delivery throughput (${EVENTS.toLocaleString('en')} events to a local receiver)`,
      description: 'seeded events until a local receiver has them all (claim, sign, POST, record); the service\'s CPU and the webhook tables\' row writes per event',
      serviceSeconds: round(serviceSeconds),
      baselineSeconds: null,
      reference: 'none',
      ratio: null,
      goalRatio: null,
      goalMet: null,
      details: {
        eventsPerSecond: round(EVENTS / serviceSeconds, 0),
        samplesMs: seconds.map((value) => round(value * 1000, 0)).join('/'),
        serviceCpuMicrosPerEvent: cpuPerEvent.length ? round(median(cpuPerEvent), 0) : 'n/a',
        webhookRowWritesPerEvent: round(median(writesPerEvent), 2),
      },
    },
  ];
}

/** Rounds of the interleaved comparison, each one measurement without the subscription and one with it. */
const ROUNDS = 3;
const ROUND_WARMUP_SECONDS = 1;
const ROUND_SECONDS = 5;
const ROUND_CONNECTIONS = 10;

/**
 * One measurement of a round: the load's req/s and p50, the service's CPU per request, and how many events a second
 * the receiver got meanwhile (the worker's share of the round: it sends at most WEBHOOK_DELIVERY_BUSY_PERCENT of wall
 * time, so a faster worker sends more of the round's events during it, and fewer after).
 */
async function measureRound(context: ScaleContext, request: PreparedRequest, receiver: { count(): Promise<number> }) {
  const signal = new AbortController().signal;
  await runLoad(context.appUrl, request, { connections: ROUND_CONNECTIONS, duration: ROUND_WARMUP_SECONDS }, signal);
  const receivedBefore = await receiver.count();
  const cpuBefore = await cpuSeconds(context.appPid);
  const measured = await runLoad(context.appUrl, request, { connections: ROUND_CONNECTIONS, duration: ROUND_SECONDS }, signal);
  const cpuAfter = await cpuSeconds(context.appPid);
  const received = (await receiver.count()) - receivedBefore;
  if (measured.status2xx === 0) throw new Error(`no 2xx answer to POST /operatorapi/tickets: ${JSON.stringify(measured.statusCodes)}`);
  return {
    requestsPerSecond: measured.requestsPerSecond,
    p50Ms: measured.latencyP50Ms,
    cpuMicrosPerRequest: cpuBefore === null || cpuAfter === null ? Number.NaN : ((cpuAfter - cpuBefore) * 1e6) / measured.responses,
    eventsSentPerSecond: received / measured.durationSeconds,
  };
}

/** Waits until the subscription has been sent every event of its tenant: nothing past its cursor, no delivery pending. */
async function drained(db: pg.Client, tenantId: string, webhookId: string): Promise<void> {
  const deadline = Date.now() + 300_000;
  for (;;) {
    const { rows } = await db.query<{ busy: boolean }>(
      `SELECT c.last_seq > w.dispatched_through
              OR EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.tenant_id = w.tenant_id AND d.webhook_id = w.id AND d.state = 'pending') AS busy
         FROM webhooks w JOIN tenant_audit_counters c ON c.tenant_id = w.tenant_id
        WHERE w.tenant_id = $1 AND w.id = $2`,
      [tenantId, webhookId],
    );
    if (rows[0] && !rows[0].busy) return;
    if (Date.now() > deadline) throw new Error('the subscription was not sent its events within 300 s');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * That goal measured against the machine's noise: on a shared machine two rows measured one after the other see
 * different loads, and their ratio swings with it. Here the two requests are measured in alternating rounds (without,
 * with, without, with, ...), each round's ratios are taken, and their medians reported. Before each round the
 * subscription's backlog from the previous one is drained, so neither side pays for the other's events.
 */
async function interleavedTicketCreate(context: ScaleContext, db: pg.Client): Promise<ScaleResult[]> {
  const scenarioContext = { ...context, url: context.appUrl };
  const plain = await operatorFixture(scenarioContext, 'bench-interleaved-plain');
  const subscribed = await operatorFixture(scenarioContext, 'bench-interleaved-webhook');
  const receiver = await startReceiver();
  try {
    const webhookId = await subscribe(db, context.secretsKey, subscribed.tenantId, receiver.url);
    const request = (fixture: OperatorFixture): PreparedRequest => ({
      method: 'POST',
      path: '/operatorapi/tickets',
      headers: { ...fixture.headers, 'content-type': 'application/json' },
      body: JSON.stringify(newTicketBody(fixture.securedObjectId, fixture.mobileDeviceId)),
      requests: undefined,
    });
    const rounds: { without: Awaited<ReturnType<typeof measureRound>>; with: Awaited<ReturnType<typeof measureRound>> }[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      await drained(db, subscribed.tenantId, webhookId);
      const without = await measureRound(context, request(plain), receiver);
      await drained(db, subscribed.tenantId, webhookId);
      rounds.push({ without, with: await measureRound(context, request(subscribed), receiver) });
    }
    const ratios = (pick: (measured: (typeof rounds)[number]['with']) => number) => rounds.map((r) => round(pick(r.with) / pick(r.without), 2));
    const p50 = ratios((m) => m.p50Ms);
    const requests = ratios((m) => m.requestsPerSecond);
    const cpu = ratios((m) => m.cpuMicrosPerRequest);
    const ratio = median(p50);
    const goal = round(1 / 0.85, 2);
    const list = (values: number[]) => values.map((value) => round(value, 0)).join('/');
    return [
      {
        name: `${INTERLEAVED} (${ROUNDS} rounds of ${ROUND_SECONDS} s each)`,
        description: 'p50 with one webhook subscription / without, median of the rounds\' ratios',
        serviceSeconds: round(median(rounds.map((r) => r.with.p50Ms)) / 1000, 5),
        baselineSeconds: round(median(rounds.map((r) => r.without.p50Ms)) / 1000, 5),
        reference: 'the same request without a subscription (p50)',
        ratio,
        goalRatio: goal,
        goalMet: ratio <= goal,
        details: {
          p50Ratios: p50.join('/'),
          reqPerSecondRatio: median(requests),
          reqPerSecondRatios: requests.join('/'),
          cpuPerRequestRatio: median(cpu),
          cpuPerRequestRatios: cpu.join('/'),
          reqPerSecondWithout: list(rounds.map((r) => r.without.requestsPerSecond)),
          reqPerSecondWith: list(rounds.map((r) => r.with.requestsPerSecond)),
          cpuMicrosWithout: list(rounds.map((r) => r.without.cpuMicrosPerRequest)),
          cpuMicrosWith: list(rounds.map((r) => r.with.cpuMicrosPerRequest)),
          eventsSentPerSecondWith: list(rounds.map((r) => r.with.eventsSentPerSecond)),
        },
      },
    ];
  } finally {
    receiver.close();
  }
}

export const webhookScaleRuns: ScaleRun[] = [
  { name: 'webhook delivery throughput', run: deliveryThroughput },
  { name: INTERLEAVED, run: interleavedTicketCreate },
];
