// Webhook delivery across crashes (docs/api-reference.md 10): kill -9 between commit and delivery, two instances on one
// database, a database outage. A real receiver verifies every request with the standardwebhooks package.
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Queryable } from '../src/db/database.js';
import { secretsKeyOf } from '../src/shared/crypto.js';
import { PATIENCE_MS, freePort, killAll } from '../test/helpers/process.js';
import { insertWebhook, startReceiver, verify, type Receiver } from '../test/helpers/webhooks.js';
import { createPrivateCluster, privateClusterAvailable, type PrivateCluster } from './helpers/cluster.js';
import { SECRETS_KEY, call, cli, sleep, startServer, token, type Server } from './helpers/server.js';

/** Retries every second for half a minute: long enough for a restart, short enough for a test. */
const RETRY_SCHEDULE = Array.from({ length: 30 }, () => '1').join(',');
const LOCK_UUID = '6f2a2d7e-1c3b-4d5e-8f90-a1b2c3d4e5f6';

describe.skipIf(!privateClusterAvailable())('webhook delivery across crashes, instances and outages (private cluster)', () => {
  let cluster: PrivateCluster | undefined;
  let db: pg.Client;
  let queryable: Queryable;
  let env: Record<string, string>;
  let tenantId: string;
  let management: { clientId: string; clientSecret: string };
  let locks = 0;
  const receivers: Receiver[] = [];

  beforeAll(async () => {
    cluster = await createPrivateCluster();
    env = {
      DATABASE_URL: cluster.url(),
      SECRETS_KEY,
      PUBLIC_URL: 'https://acs.example.test',
      WEBHOOK_ALLOW_INSECURE: 'true',
      WEBHOOK_RETRY_SCHEDULE: RETRY_SCHEDULE,
      WEBHOOK_TIMEOUT_MS: '2000',
      WEBHOOK_WORKER_INTERVAL_MS: '100',
      DB_CONNECT_TIMEOUT_MS: '1000',
      API_RATE_LIMIT_PER_MINUTE: '1000000000',
    };
    // Migrates the database and makes the tenant.
    const tenant = await cli(['tenant', 'create', 'hooks'], env);
    management = { clientId: tenant.clientId!, clientSecret: tenant.clientSecret! };
    db = new pg.Client({ connectionString: cluster.url() });
    await db.connect();
    queryable = {
      async query<Row>(text: string, params?: readonly unknown[]) {
        const result = await db.query(text, params as unknown[] | undefined);
        return { rows: result.rows as Row[], rowCount: result.rowCount ?? 0 };
      },
    };
    tenantId = (await queryable.query<{ id: string }>(`SELECT id FROM tenants WHERE name = 'hooks'`)).rows[0]!.id;
  }, 180_000);

  afterEach(async () => {
    await killAll();
    for (const receiver of receivers.splice(0)) await receiver.close();
    await queryable?.query(`UPDATE webhooks SET enabled = false, disabled_reason = 'operator', disabled_at = 0 WHERE enabled`).catch(() => undefined);
  }, 60_000);

  afterAll(async () => {
    await killAll();
    await db?.end().catch(() => undefined);
    cluster?.destroy();
  }, 60_000);

  const receiver = async (port = 0) => {
    const started = await startReceiver(200, port);
    receivers.push(started);
    return started;
  };
  const subscribe = (url: string) => insertWebhook(queryable, secretsKeyOf(Buffer.from(SECRETS_KEY, 'hex')), tenantId, url, ['secured_object.created']);
  /** Registers a lock (a `secured_object.created` event); its event id once committed. */
  const change = async (server: Server, bearer: string): Promise<string> => {
    const id = `door-${++locks}`;
    const reply = await call(server.base, 'POST', '/operatorapi/securedobjects', bearer, { id, channels: ['btlespp'], localName: 'door', uuid: LOCK_UUID });
    expect(reply.status, JSON.stringify(reply.body)).toBe(201);
    const { rows } = await queryable.query<{ event_id: string }>(`SELECT event_id FROM audit_events WHERE tenant_id = $1 AND target = $2`, [
      tenantId,
      `secured_object:${id}`,
    ]);
    return rows[0]!.event_id;
  };
  const bearerOf = (server: Server) => token(server.base, management, { grant_type: 'client_credentials' });

  it('delivers an event committed just before a kill -9 once the server is back, under exactly one webhook-id', async () => {
    const port = await freePort(); // the receiver is down: nothing listens here yet
    const webhook = await subscribe(`http://127.0.0.1:${port}/hook`);
    let server = await startServer(env);
    const eventId = await change(server, await bearerOf(server));
    await server.child.kill(); // SIGKILL right after the commit
    expect(server.child.process.signalCode).toBe('SIGKILL');

    const hooks = await receiver(port);
    server = await startServer(env);
    const [request] = await hooks.waitFor(1, PATIENCE_MS);
    expect(request!.headers['webhook-id']).toBe(eventId);
    expect(verify(webhook.secret, request!)).toEqual(request!.json);
    await sleep(3000);
    expect(hooks.received.map((received) => received.headers['webhook-id'])).toEqual([eventId]);
    // Recorded: the cursor past the event (migration 018), and a delivery row only if an attempt before the kill
    // failed and was recorded as a retry, then delivered; the attempt log has the success.
    const { rows } = await queryable.query<{ state: string }>(`SELECT state FROM webhook_deliveries WHERE tenant_id = $1 AND webhook_id = $2`, [tenantId, webhook.id]);
    expect(rows.filter((row) => row.state !== 'delivered')).toEqual([]);
    const { rows: recorded } = await queryable.query<{ sent: boolean; delivered: boolean }>(
      `SELECT w.dispatched_through >= e.seq AS sent,
              EXISTS (SELECT 1 FROM webhook_attempts a WHERE a.tenant_id = w.tenant_id AND a.webhook_id = w.id AND a.event_id = e.event_id AND a.status_code = 200) AS delivered
         FROM webhooks w JOIN audit_events e ON e.tenant_id = w.tenant_id AND e.event_id = $3
        WHERE w.tenant_id = $1 AND w.id = $2`,
      [tenantId, webhook.id, eventId],
    );
    expect(recorded).toEqual([{ sent: true, delivered: true }]);
    process.stdout.write(`[webhook kill -9] delivered after restart; attempts logged: ${(await attemptsOf(webhook.id)).length}\n`);
  });

  it('never sends one attempt twice with two instances on one database', async () => {
    const hooks = await receiver();
    const webhook = await subscribe(hooks.url);
    const [a, b] = await Promise.all([startServer(env), startServer(env)]);
    const bearers = [await bearerOf(a), await bearerOf(b)];
    const EVENTS = 200;
    const eventIds: string[] = [];
    for (let index = 0; index < EVENTS; index++) eventIds.push(await change(index % 2 === 0 ? a : b, bearers[index % 2]!));
    await hooks.waitFor(EVENTS, 120_000);
    await sleep(2000);
    const ids = hooks.received.map((request) => request.headers['webhook-id']);
    expect(ids).toHaveLength(EVENTS);
    expect(new Set(ids)).toEqual(new Set(eventIds));
    for (const request of hooks.received.slice(0, 10)) expect(verify(webhook.secret, request)).toEqual(request.json);
    // Both instances took part (the attempts are logged by whichever sent them: one per event either way).
    expect(await attemptsOf(webhook.id)).toHaveLength(EVENTS);
    process.stdout.write(`[webhook two instances] ${EVENTS} events, ${ids.length} requests, ${new Set(ids).size} distinct webhook-ids\n`);
  });

  it('delivers an event committed before a database outage once the database is back, without a restart', async () => {
    const port = await freePort();
    const webhook = await subscribe(`http://127.0.0.1:${port}/hook`);
    const server = await startServer(env);
    const bearer = await bearerOf(server);
    const before = await change(server, bearer);
    await db.end();
    cluster!.stop('immediate');
    await sleep(3000);
    const hooks = await receiver(port);
    await sleep(1000);
    expect(hooks.received).toHaveLength(0); // the worker cannot claim anything while the database is down
    cluster!.start();
    db = new pg.Client({ connectionString: cluster!.url() });
    await db.connect();
    await hooks.waitFor(1, PATIENCE_MS).catch(async (error: unknown) => {
      const state = await queryable.query(`SELECT state, attempts, next_attempt_at FROM webhook_deliveries WHERE webhook_id = $1`, [webhook.id]);
      throw new Error(`${String(error)}; deliveries ${JSON.stringify(state.rows)}; server log:\n${server.child.stdout().slice(-4000)}`);
    });
    const after = await change(server, bearer);
    await hooks.waitFor(2, PATIENCE_MS);
    await sleep(2000);
    expect(hooks.received.map((request) => request.headers['webhook-id'])).toEqual([before, after]);
    for (const request of hooks.received) expect(verify(webhook.secret, request)).toEqual(request.json);
    expect(server.child.process.exitCode).toBeNull();
  });

  const attemptsOf = async (webhookId: string) =>
    (await queryable.query(`SELECT id FROM webhook_attempts WHERE tenant_id = $1 AND webhook_id = $2`, [tenantId, webhookId])).rows;
});
