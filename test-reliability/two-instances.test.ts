// Two server processes on one PostgreSQL database: one migration run, shared revocations, one ticket per Idempotency-Key.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readMigrations } from '../src/db/migrate.js';
import { killAll } from '../test/helpers/process.js';
import { createPrivateCluster, privateClusterAvailable, type PrivateCluster } from './helpers/cluster.js';
import { SECRETS_KEY, call, cli, sleep, startServer, token, type Server } from './helpers/server.js';

const DAY = 86_400_000;

describe.skipIf(!privateClusterAvailable())('two instances on one PostgreSQL database (private cluster)', () => {
  let cluster: PrivateCluster | undefined;
  let db: pg.Client;
  let a: Server;
  let b: Server;
  let env: Record<string, string>;
  let management: { clientId: string; clientSecret: string };
  let bearer: string;

  beforeAll(async () => {
    // Empty, also on Citus: the servers race to migrate it (below), then it is distributed.
    cluster = await createPrivateCluster({ migrated: false });
    // One service behind a load balancer: one issuer (PUBLIC_URL), whichever instance signed the token.
    env = { DATABASE_URL: cluster.url(), SECRETS_KEY, PUBLIC_URL: 'https://acs.example.test' };
    db = new pg.Client({ connectionString: cluster.url() });
    await db.connect();
  }, 180_000);

  afterAll(async () => {
    await killAll();
    await db?.end().catch(() => undefined);
    cluster?.destroy();
  }, 60_000);

  it('start together on an empty database: each migration is applied once and both become ready', async () => {
    // Started in the same tick: both race for the migration lock on a database with no schema yet.
    [a, b] = await Promise.all([startServer({ ...env, LOG_LEVEL: 'info' }), startServer({ ...env, LOG_LEVEL: 'info' })]);

    const versions = readMigrations().map((migration) => migration.version);
    const { rows } = await db.query<{ version: number; n: string }>(
      'SELECT version, count(*) AS n FROM schema_migrations GROUP BY version ORDER BY version',
    );
    expect(rows.map((row) => row.version)).toEqual(versions);
    expect(rows.every((row) => Number(row.n) === 1)).toBe(true);
    // Between them the two applied every migration exactly once.
    const applied = [a, b].flatMap((server) =>
      server.child
        .stdout()
        .split('\n')
        .filter((line) => line.includes('"msg":"migrations applied"'))
        .flatMap((line) => (JSON.parse(line) as { applied: number[] }).applied),
    );
    expect(applied.sort((x, y) => x - y)).toEqual(versions);
    for (const server of [a, b]) expect((await fetch(`${server.base}/readyz`)).status).toBe(200);
    // On Citus, the operator's step after the first migration (docs/scaling.md): the tables distributed by tenant,
    // here while both instances serve. Nothing elsewhere.
    await cluster!.distribute();

    const tenant = await cli(['tenant', 'create', 'twins'], env);
    management = { clientId: tenant.clientId!, clientSecret: tenant.clientSecret! };
    bearer = await token(a.base, management, { grant_type: 'client_credentials' });
    expect(
      (await call(a.base, 'POST', '/operatorapi/securedobjects', bearer, { id: 'lock-1', channels: ['btlespp'], localName: 'door', uuid: '6f2a2d7e-1c3b-4d5e-8f90-a1b2c3d4e5f6' })).status,
    ).toBe(201);
    expect((await call(b.base, 'POST', '/operatorapi/mobiledevices', bearer, { id: 'phone-1' })).status).toBe(201);
  }, 240_000);

  const ticketBody = (beginDate = Date.now()) => ({
    securedObjectId: 'lock-1',
    mobileDeviceId: 'phone-1',
    beginDate,
    endDate: beginDate + DAY,
    commands: ['open'],
    channels: ['btlespp'],
  });

  it('a ticket revoked through A reads as REVOKED through B at once', async () => {
    for (let round = 0; round < 5; round++) {
      const created = await call(a.base, 'POST', '/operatorapi/tickets', bearer, ticketBody());
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const id = (created.body as { id: string }).id;
      expect((await call(b.base, 'GET', `/operatorapi/tickets/${id}`, bearer)).body).toMatchObject({ id, status: 'VALID' });

      const revoked = await call(a.base, 'DELETE', `/operatorapi/tickets/${id}`, bearer);
      expect(revoked.status).toBe(200);
      const read = await call(b.base, 'GET', `/operatorapi/tickets/${id}`, bearer);
      expect(read.status).toBe(200);
      expect(read.body).toMatchObject({ id, status: 'REVOKED', revocationDate: (revoked.body as { revocationDate: number }).revocationDate });
    }
  });

  it('a client deleted through A is refused by B within 5 s', async () => {
    const created = await call(a.base, 'POST', '/operatorapi/oauthclients', bearer, { name: 'doomed', scopes: ['devices:read'] });
    expect(created.status).toBe(201);
    const doomed = created.body as { clientId: string; clientSecret: string };
    const doomedBearer = await token(b.base, doomed, { grant_type: 'client_credentials' });
    expect((await call(b.base, 'GET', '/operatorapi/mobiledevices', doomedBearer)).status).toBe(200);

    expect((await call(a.base, 'DELETE', `/operatorapi/oauthclients/${doomed.clientId}`, bearer)).status).toBe(204);
    const deleted = Date.now();
    let refusedAfter: number | undefined;
    while (Date.now() - deleted < 8000) {
      const reply = await call(b.base, 'GET', '/operatorapi/mobiledevices', doomedBearer);
      if (reply.status === 401) {
        refusedAfter = Date.now() - deleted;
        break;
      }
      expect(reply.status).toBe(200);
      await sleep(50);
    }
    process.stdout.write(`[two instances] deleted client refused by the other instance after ${refusedAfter} ms\n`);
    expect(refusedAfter).toBeDefined();
    expect(refusedAfter!).toBeLessThan(5000);
    // And it stays refused on both.
    for (const server of [a, b]) expect((await call(server.base, 'GET', '/operatorapi/mobiledevices', doomedBearer)).status).toBe(401);
  }, 60_000);

  it('one Idempotency-Key sent to both instances at the same moment makes exactly one ticket', async () => {
    const outcomes: string[] = [];
    for (let round = 0; round < 10; round++) {
      const key = `race-${round}-${Date.now()}`;
      const body = ticketBody(Date.now() + round);
      const before = await countTickets();
      const replies = await Promise.all(
        [a, b].map((server) => call(server.base, 'POST', '/operatorapi/tickets', bearer, body, { 'idempotency-key': key })),
      );
      const statuses = replies.map((reply) => reply.status).sort();
      outcomes.push(statuses.join('/'));
      // One created it; the other either replayed that answer (201, same id) or saw it still running (409).
      expect([['201', '201'], ['201', '409']].map((pair) => pair.join(',')), JSON.stringify(replies)).toContain(statuses.map(String).join(','));
      const ids = replies.filter((reply) => reply.status === 201).map((reply) => (reply.body as { id: string }).id);
      expect(new Set(ids).size).toBe(1);
      expect(await countTickets()).toBe(before + 1);

      // Once settled, both instances replay the one ticket for that key.
      for (const server of [a, b]) {
        const again = await call(server.base, 'POST', '/operatorapi/tickets', bearer, body, { 'idempotency-key': key });
        expect(again.status).toBe(201);
        expect((again.body as { id: string }).id).toBe(ids[0]);
      }
      expect(await countTickets()).toBe(before + 1);
    }
    process.stdout.write(`[two instances] simultaneous idempotent pairs answered ${outcomes.join(', ')}\n`);
  }, 120_000);

  async function countTickets(): Promise<number> {
    const { rows } = await db.query<{ n: string }>('SELECT count(*) AS n FROM tickets');
    return Number(rows[0]!.n);
  }
});
