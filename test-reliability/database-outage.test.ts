// PostgreSQL goes away under load and comes back: quick 503s meanwhile, recovery without a restart, no lost ticket.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAll } from '../test/helpers/process.js';
import { createPrivateCluster, privateClusterAvailable, type PrivateCluster } from './helpers/cluster.js';
import { SECRETS_KEY, call, cli, sleep, startServer, token, type Reply, type Server } from './helpers/server.js';

const CONNECT_TIMEOUT_MS = 1000;
const STATEMENT_TIMEOUT_MS = 5000;
const WORKERS = 4;
const DAY = 86_400_000;

interface Sample extends Reply {
  startedAt: number;
}

describe.skipIf(!privateClusterAvailable())('a PostgreSQL outage under load (private cluster)', () => {
  let cluster: PrivateCluster | undefined;
  let server: Server;
  let bearer: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    cluster = await createPrivateCluster();
    env = {
      DATABASE_URL: cluster.url(),
      SECRETS_KEY,
      DB_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS),
      DB_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS),
      // The load loop is one client: on a quiet machine it outruns the default per-client limit (6000/min).
      API_RATE_LIMIT_PER_MINUTE: '1000000000',
    };
    server = await startServer(env);
    const tenant = await cli(['tenant', 'create', 'outage'], env);
    bearer = await token(server.base, { clientId: tenant.clientId!, clientSecret: tenant.clientSecret! }, { grant_type: 'client_credentials' });
    const lock = await call(server.base, 'POST', '/operatorapi/securedobjects', bearer, {
      id: 'lock-1',
      channels: ['btlespp'],
      localName: 'door',
      uuid: '6f2a2d7e-1c3b-4d5e-8f90-a1b2c3d4e5f6',
    });
    expect(lock.status).toBe(201);
    const device = await call(server.base, 'POST', '/operatorapi/mobiledevices', bearer, { id: 'phone-1' });
    expect(device.status).toBe(201);
  }, 180_000);

  afterAll(async () => {
    await killAll();
    cluster?.destroy();
  }, 60_000);

  const ticketBody = () => ({
    securedObjectId: 'lock-1',
    mobileDeviceId: 'phone-1',
    beginDate: Date.now(),
    endDate: Date.now() + DAY,
    commands: ['open'],
    channels: ['btlespp'],
  });

  /** WORKERS loops issuing tickets until `stop()`: every answer with its timing, and the ids of those acknowledged. */
  function ticketLoad(timeoutMs: number) {
    const samples: Sample[] = [];
    const acknowledged: string[] = [];
    let running = true;
    const worker = async () => {
      while (running) {
        const startedAt = Date.now();
        const reply = await call(server.base, 'POST', '/operatorapi/tickets', bearer, ticketBody(), {}, timeoutMs);
        samples.push({ ...reply, startedAt });
        if (reply.status >= 200 && reply.status < 300) acknowledged.push((reply.body as { id: string }).id);
        // Outage answers come fast: a short pause keeps the loop from spinning.
        if (reply.status !== 201) await sleep(20);
      }
    };
    const workers = Array.from({ length: WORKERS }, () => worker());
    return {
      samples,
      acknowledged,
      async stop() {
        running = false;
        await Promise.all(workers);
      },
    };
  }

  it('answers 503 quickly while the database is down, recovers within 5 s of its return, and keeps every acknowledged ticket', async () => {
    const load = ticketLoad(15_000);
    const { samples, acknowledged } = load;
    try {
      // Two faults in a row: an operator's restart (fast: sessions told to end) and a crash (immediate: no goodbye).
      for (const mode of ['fast', 'immediate'] as const) {
        await sleep(2000);
        const acknowledgedSoFar = acknowledged.length;
        expect(acknowledgedSoFar).toBeGreaterThan(0);

        cluster!.stop(mode);
        const down = Date.now();
        await sleep(3000);
        const readyDuringOutage = await call(server.base, 'GET', '/readyz', bearer, undefined, {}, 10_000);
        const healthDuringOutage = await call(server.base, 'GET', '/healthz', bearer, undefined, {}, 10_000);

        cluster!.start();
        const up = Date.now();
        let recoveredReady: number | undefined;
        let recoveredWrite: number | undefined;
        while (Date.now() - up < 10_000 && (recoveredReady === undefined || recoveredWrite === undefined)) {
          if (recoveredReady === undefined) {
            const ready = await call(server.base, 'GET', '/readyz', bearer, undefined, {}, 5000);
            if (ready.status === 200) recoveredReady = Date.now() - up;
          }
          const written = samples.filter((sample) => sample.startedAt >= up && sample.status === 201);
          if (recoveredWrite === undefined && written.length > 0) {
            recoveredWrite = Math.min(...written.map((sample) => sample.startedAt + sample.ms)) - up;
          }
          await sleep(50);
        }

        const duringOutage = samples.filter((sample) => sample.startedAt >= down && sample.startedAt + sample.ms < up);
        const slowest = Math.max(...duringOutage.map((sample) => sample.ms));
        process.stdout.write(
          `[outage ${mode}] tickets acknowledged so far: ${acknowledgedSoFar}; during the outage: ${duringOutage.length} requests, ` +
            `statuses ${JSON.stringify(countBy(duringOutage.map((s) => s.status)))}, slowest ${slowest} ms; ` +
            `after the database's return: /readyz 200 in ${recoveredReady} ms, first 201 in ${recoveredWrite} ms\n`,
        );

        expect(server.child.process.exitCode).toBeNull();
        expect(readyDuringOutage.status).toBe(503);
        expect(healthDuringOutage.status).toBe(200); // alive, only not ready: no orchestrator should restart it
        expect(duringOutage.length).toBeGreaterThan(10);
        for (const sample of duringOutage) {
          expect(sample.status, JSON.stringify(sample.body)).toBe(503);
          expect(sample.contentType).toMatch(/^application\/problem\+json/);
          expect(sample.body).toMatchObject({ status: 503 });
          expect(sample.ms).toBeLessThan(2 * CONNECT_TIMEOUT_MS);
        }
        expect(recoveredReady).toBeDefined();
        expect(recoveredReady!).toBeLessThan(5000);
        expect(recoveredWrite).toBeDefined();
        expect(recoveredWrite!).toBeLessThan(5000);
      }
      await sleep(1000);
      await load.stop();

      process.stdout.write(`[outage] total: ${acknowledged.length} tickets acknowledged of ${samples.length} requests\n`);
      // Nothing but 201 and 503: no 500, no hang, no dropped connection.
      expect(new Set(samples.map((sample) => sample.status))).toEqual(new Set([201, 503]));
      expect(server.child.process.exitCode).toBeNull();

      // Every acknowledged ticket survived, once.
      expect(new Set(acknowledged).size).toBe(acknowledged.length);
      const db = new pg.Client({ connectionString: cluster!.url() });
      await db.connect();
      try {
        const { rows } = await db.query<{ id: string }>('SELECT id FROM tickets WHERE id = ANY($1::uuid[])', [acknowledged]);
        expect(rows.length).toBe(acknowledged.length);
      } finally {
        await db.end();
      }
      for (const id of acknowledged.filter((_, index) => index % 50 === 0)) {
        const read = await call(server.base, 'GET', `/operatorapi/tickets/${id}`, bearer);
        expect(read.status).toBe(200);
        expect(read.body).toMatchObject({ id, status: 'VALID' });
      }
    } finally {
      await load.stop();
    }
  }, 180_000);

  it('answers 503 within a bounded time while the database is frozen (answers nothing, closes nothing), then recovers', async () => {
    // SIGSTOP on every process of the cluster: connections stay open but nothing answers, as in a network partition.
    // statement_timeout cannot help (the server enforces it); the client-side limit must.
    const load = ticketLoad(30_000);
    const { samples, acknowledged } = load;
    const postmaster = readFileSync(join(cluster!.directory, 'postmaster.pid'), 'utf8').split('\n')[0]!;
    let processes: string[] = [];
    let frozen = false;
    try {
      await sleep(1500);
      // The postmaster first, so it forks no new backend; then every backend it has now.
      execFileSync('kill', ['-STOP', postmaster]);
      processes = [postmaster, ...execFileSync('pgrep', ['-P', postmaster], { encoding: 'utf8' }).trim().split('\n')];
      execFileSync('kill', ['-STOP', ...processes]);
      frozen = true;
      const frozenAt = Date.now();
      await sleep(12_000);
      const readyWhileFrozen = await call(server.base, 'GET', '/readyz', bearer, undefined, {}, 10_000);
      execFileSync('kill', ['-CONT', ...processes]);
      frozen = false;
      const thawedAt = Date.now();
      let recovered: number | undefined;
      while (Date.now() - thawedAt < 10_000 && recovered === undefined) {
        const ready = await call(server.base, 'GET', '/readyz', bearer, undefined, {}, 5000);
        const written = samples.filter((sample) => sample.startedAt >= thawedAt && sample.status === 201);
        if (ready.status === 200 && written.length > 0) recovered = Date.now() - thawedAt;
        else await sleep(50);
      }
      await sleep(500);
      await load.stop();

      // Started and answered while frozen (one waiting for a connection at the thaw may rightly succeed).
      const duringFreeze = samples.filter((sample) => sample.startedAt >= frozenAt && sample.startedAt + sample.ms < thawedAt);
      const bound = STATEMENT_TIMEOUT_MS + 3 * CONNECT_TIMEOUT_MS;
      process.stdout.write(
        `[freeze 12 s] ${duringFreeze.length} requests started and answered while frozen, statuses ` +
          `${JSON.stringify(countBy(duringFreeze.map((s) => s.status)))}, slowest ${Math.max(...duringFreeze.map((s) => s.ms))} ms ` +
          `(bound ${bound} ms); recovered ${recovered} ms after the thaw\n`,
      );
      expect(server.child.process.exitCode).toBeNull();
      expect(readyWhileFrozen.status).toBe(503);
      expect(duringFreeze.length).toBeGreaterThan(4);
      for (const sample of duringFreeze) {
        expect(sample.status, JSON.stringify(sample.body)).toBe(503);
        expect(sample.ms).toBeLessThan(bound);
      }
      // Whatever was in flight when it froze also ended within the bound, not with the thaw.
      for (const sample of samples) expect(sample.ms).toBeLessThan(bound);
      expect(new Set(samples.map((sample) => sample.status))).toEqual(new Set([201, 503]));
      expect(recovered).toBeDefined();
      expect(recovered!).toBeLessThan(5000);

      const db = new pg.Client({ connectionString: cluster!.url() });
      await db.connect();
      try {
        const { rows } = await db.query<{ id: string }>('SELECT id FROM tickets WHERE id = ANY($1::uuid[])', [acknowledged]);
        expect(rows.length).toBe(acknowledged.length);
      } finally {
        await db.end();
      }
    } finally {
      if (frozen) execFileSync('kill', ['-CONT', ...processes]);
      await load.stop();
    }
  }, 180_000);
});

function countBy(values: number[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
}
