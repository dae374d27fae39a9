// Webhooks (docs/contract.md 10): what one subscription costs ticket creation, and how fast the worker delivers to a
// local receiver. Subscriptions are inserted by SQL (sealed under the run's SECRETS_KEY) until the subscription API exists.
import { randomUUID } from 'node:crypto';
import { spawn } from 'node:child_process';
import pg from 'pg';
import { newWebhookSecret, sealWebhookSecret } from '../../src/services/webhook-secrets.js';
import { newTicketBody } from '../requests.js';
import { median, round, timed, type ScaleContext, type ScaleResult, type ScaleRun } from '../scale.js';
import type { Comparison, Scenario } from '../types.js';
import { createTenant, operatorFixture } from './fixtures.js';
import { secretsKeyOf } from '../../src/services/crypto.js';

const WITH_SUBSCRIPTION = 'POST /operatorapi/tickets (one webhook subscription)';
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

/** A subscription of the tenant to `ticket.created` at `url`, dispatched from the tenant's current last event on. */
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
    // receiver is up: the worker dispatches and sends every ticket's event while the row is measured.
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

/** docs/contract.md 10 issue goal: ticket creation with one subscription keeps at least 0.85× its throughput, p50 ≤ 1/0.85. */
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
 * all: dispatch, claims, signing, the POSTs and their outcome transactions. Each run a fresh subscription and events;
 * the previous subscription is disabled first.
 */
async function deliveryThroughput(context: ScaleContext, db: pg.Client): Promise<ScaleResult[]> {
  await createTenant({ ...context, url: context.appUrl }, 'bench-webhook-throughput');
  const { rows } = await db.query<{ id: string }>("SELECT id FROM tenants WHERE name = 'bench-webhook-throughput'");
  const tenantId = rows[0]!.id;
  const receiver = await startReceiver();
  const seconds: number[] = [];
  let previous: string | null = null;
  for (let run = 0; run <= context.runs; run++) {
    if (previous) await db.query(`UPDATE webhooks SET enabled = false, disabled_reason = 'operator', disabled_at = 0 WHERE tenant_id = $1 AND id = $2`, [tenantId, previous]);
    previous = await subscribe(db, context.secretsKey, tenantId, receiver.url);
    const before = await receiver.count();
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
    // The first run warms up (plans, the worker's keep-alive sockets) and is not counted.
    if (run > 0) seconds.push(elapsed.seconds);
  }
  receiver.close();
  const serviceSeconds = median(seconds);
  return [
    {
      name: `webhook delivery throughput (${EVENTS.toLocaleString('en')} events to a local receiver)`,
      description: 'seeded events until a local receiver has them all (dispatch, claim, sign, POST, record)',
      serviceSeconds: round(serviceSeconds),
      baselineSeconds: null,
      reference: 'none',
      ratio: null,
      goalRatio: null,
      goalMet: null,
      details: {
        eventsPerSecond: round(EVENTS / serviceSeconds, 0),
        samplesMs: seconds.map((value) => round(value * 1000, 0)).join('/'),
      },
    },
  ];
}

export const webhookScaleRuns: ScaleRun[] = [{ name: 'webhook delivery throughput', run: deliveryThroughput }];
