// kill -9 of the server in the middle of expanding an access permission into 100,000 tickets: all or nothing after.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import type { Queryable } from '../src/db/database.js';
import { createPgliteDatabase } from '../src/db/pglite.js';
import { PATIENCE_MS, killAll, temporaryDirectory } from '../test/helpers/process.js';
import { createPrivateCluster, privateClusterAvailable, type PrivateCluster } from './helpers/cluster.js';
import { SECRETS_KEY, call, cli, sleep, startServer, token, type Server } from './helpers/server.js';

const DEVICES = 100;
const LOCKS = 1000;
const TICKETS = DEVICES * LOCKS;
const DAY = 86_400_000;
const TENANT = 'crash';
/** Fixed, so tokens issued before the crash are still the issuer's after the restart on another port. */
const PUBLIC_URL = 'https://acs.example.test';
const ACCESS_SCOPES = 'access-permissions:write access-permissions:read device-groups:write device-groups:read';

/** Where the server keeps its data, and how the test reads it. */
interface Store {
  label: string;
  env: Record<string, string>;
  /** Runs SQL on the store: at any time (PostgreSQL), or only while no server holds it (embedded). */
  use<T>(work: (db: Queryable) => Promise<T>): Promise<T>;
  /** After a kill -9: waits until the database has finished with the dead server's connections. */
  settle(): Promise<void>;
  /**
   * Whether the expansion (expand_access_permissions, migration 036: it inserts the tickets and their events) is running
   * right now, where the database can tell (PostgreSQL).
   */
  expanding?(): Promise<boolean>;
  remove(): void;
}

const cleanups: (() => void)[] = [];
afterAll(async () => {
  await killAll();
  for (const cleanup of cleanups) {
    try {
      cleanup();
    } catch {
      // keep cleaning up the rest
    }
  }
}, 60_000);

async function postgresStore(): Promise<Store> {
  const cluster: PrivateCluster = await createPrivateCluster();
  cleanups.push(() => cluster.destroy());
  const use = async <T>(work: (db: Queryable) => Promise<T>): Promise<T> => {
    const client = new pg.Client({ connectionString: cluster.url() });
    await client.connect();
    try {
      return await work({
        async query<Row>(text: string, params?: readonly unknown[]) {
          const result = await client.query(text, params as unknown[] | undefined);
          return { rows: result.rows as Row[], rowCount: result.rowCount ?? 0 };
        },
      });
    } finally {
      await client.end();
    }
  };
  return {
    label: cluster.citus ? 'Citus' : 'PostgreSQL',
    env: { DATABASE_URL: cluster.url(), SECRETS_KEY, DB_STATEMENT_TIMEOUT_MS: '300000', PUBLIC_URL },
    use,
    async settle() {
      // The backend running the INSERT notices its client is gone only when the statement ends; until then it holds
      // the tenant's change counter. It then rolls back: nothing was committed.
      const deadline = Date.now() + 120_000;
      while (Date.now() < deadline) {
        const { rows } = await use((db) =>
          db.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'access-credential-service'"),
        );
        if (rows[0]!.n === 0) return;
        await sleep(200);
      }
      throw new Error('the dead server\'s database sessions did not end within 120 s');
    },
    async expanding() {
      const { rows } = await use((db) =>
        db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE application_name = 'access-credential-service' AND state = 'active'
              AND query LIKE '%expand_access_permissions(%' AND query NOT LIKE '%pg_stat_activity%'`,
        ),
      );
      return rows[0]!.n > 0;
    },
    remove: () => cluster.destroy(),
  };
}

function embeddedStore(): Store {
  const directory = temporaryDirectory('acs-crash-');
  cleanups.push(() => directory.remove());
  return {
    label: 'embedded PGlite',
    env: { DATA_DIR: directory.path, PUBLIC_URL },
    async use(work) {
      const db = await createPgliteDatabase({ dataDir: directory.path });
      try {
        return await work(db);
      } finally {
        await db.close();
      }
    },
    async settle() {
      // The database died with the process: recovery happens when the next one opens it.
    },
    remove: () => directory.remove(),
  };
}

async function stopGracefully(server: Server): Promise<void> {
  server.child.process.kill('SIGTERM');
  expect(await server.child.waitForExit(PATIENCE_MS)).toEqual({ code: 0, signal: null });
}

/** Devices, locks, one resident holding every device and one lock group holding every lock, straight in SQL. */
async function seed(store: Store): Promise<{ residentId: string; lockGroupId: string }> {
  const residentId = randomUUID();
  const lockGroupId = randomUUID();
  const now = Date.now();
  await store.use(async (db) => {
    const { rows } = await db.query<{ id: string }>('SELECT id FROM tenants WHERE name = $1', [TENANT]);
    const tenantId = rows[0]!.id;
    await db.query(
      `INSERT INTO mobile_devices (tenant_id, id, name, created_at)
       SELECT $1, 'phone-' || g, 'phone ' || g, $2 FROM generate_series(1, $3::int) g`,
      [tenantId, now, DEVICES],
    );
    await db.query(
      `INSERT INTO secured_objects (tenant_id, id, channels, local_name, uuid, created_at)
       SELECT $1, 'lock-' || g, ARRAY['btlespp'], 'door-' || g, gen_random_uuid(), $2 FROM generate_series(1, $3::int) g`,
      [tenantId, now, LOCKS],
    );
    await db.query('INSERT INTO residents (tenant_id, id, name, created_at) VALUES ($1, $2, $3, $4)', [tenantId, residentId, 'everyone', now]);
    await db.query(
      `INSERT INTO resident_devices (tenant_id, resident_id, mobile_device_id)
       SELECT $1, $2, 'phone-' || g FROM generate_series(1, $3::int) g`,
      [tenantId, residentId, DEVICES],
    );
    await db.query('INSERT INTO lock_groups (tenant_id, id, name, created_at) VALUES ($1, $2, $3, $4)', [tenantId, lockGroupId, 'every door', now]);
    await db.query(
      `INSERT INTO lock_group_objects (tenant_id, lock_group_id, secured_object_id)
       SELECT $1, $2, 'lock-' || g FROM generate_series(1, $3::int) g`,
      [tenantId, lockGroupId, LOCKS],
    );
  });
  return { residentId, lockGroupId };
}

interface PermissionTally {
  id: string;
  tickets: number;
  pairs: number;
}

/**
 * Every permission of the tenant with its tickets and distinct (device, lock) pairs, and the orphaned tickets. Joined
 * and grouped on tenant_id too, as Citus needs to join two distributed tables (reliability on Citus, docs/scaling.md).
 */
async function tally(db: Queryable): Promise<{ permissions: PermissionTally[]; orphans: number; tickets: number }> {
  const { rows } = await db.query<PermissionTally>(
    `SELECT p.id, count(t.id)::int AS tickets, count(DISTINCT (t.mobile_device_id, t.secured_object_id))::int AS pairs
       FROM access_permissions p LEFT JOIN tickets t ON t.tenant_id = p.tenant_id AND t.access_permission_id = p.id
      GROUP BY p.tenant_id, p.id ORDER BY min(p.created_at), p.id`,
  );
  const orphans = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM tickets t
      WHERE t.access_permission_id IS NOT NULL
        AND NOT EXISTS (SELECT 1 FROM access_permissions p WHERE p.tenant_id = t.tenant_id AND p.id = t.access_permission_id)`,
  );
  const tickets = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM tickets');
  return { permissions: rows, orphans: orphans.rows[0]!.n, tickets: tickets.rows[0]!.n };
}

async function crashDuringExpansion(store: Store): Promise<void> {
  // First start migrates; the CLI then works on either store (the embedded one only while no server holds it).
  await stopGracefully(await startServer(store.env));
  await cli(['tenant', 'create', TENANT], store.env);
  const client = await cli(['client', 'create', '--tenant', TENANT, '--scopes', ACCESS_SCOPES], store.env);
  await cli(['user', 'create', `manager@${TENANT}`, '--password-stdin'], store.env, 'a long enough password 1\n');
  const { residentId, lockGroupId } = await seed(store);

  let server = await startServer(store.env);
  const grant = {
    grant_type: 'password',
    username: `manager@${TENANT}`,
    password: 'a long enough password 1',
    scope: 'access-permissions:write access-permissions:read',
  };
  const bearer = await token(server.base, { clientId: client.clientId!, clientSecret: client.clientSecret! }, grant, '/oauth2/token');
  const permission = () => ({
    residentId,
    lockGroupId,
    beginDate: Date.now(),
    endDate: Date.now() + DAY,
    commands: ['open'],
    channels: ['btlespp'],
  });

  // Measured once: the whole expansion, committed.
  const full = await call(server.base, 'POST', '/v1/access-permissions', bearer, permission(), {}, 300_000);
  expect(full.status, JSON.stringify(full.body)).toBe(201);
  expect(full.body).toMatchObject({ tokenCount: TICKETS });
  const committedId = (full.body as { id: string }).id;

  // The same grant again, killed about halfway through.
  const inFlight = call(server.base, 'POST', '/v1/access-permissions', bearer, permission(), {}, 300_000);
  await sleep(Math.round(full.ms / 2));
  let midInsert: boolean | undefined;
  if (store.expanding) {
    // On a loaded machine the second run may be slower to start: make sure the kill lands inside the expansion.
    const deadline = Date.now() + 2 * full.ms;
    do midInsert = await store.expanding();
    while (!midInsert && Date.now() < deadline && (await Promise.race([inFlight.then(() => true), sleep(20).then(() => false)])) === false);
  }
  server.child.process.kill('SIGKILL');
  expect((await server.child.waitForExit(PATIENCE_MS)).signal).toBe('SIGKILL');
  const answer = await inFlight;
  await store.settle();

  server = await startServer(store.env);
  const ready = await fetch(`${server.base}/readyz`);
  expect(ready.status).toBe(200);
  const afterRestart = await call(server.base, 'GET', '/v1/access-permissions', bearer);
  expect(afterRestart.status).toBe(200);
  await stopGracefully(server);
  const result = await store.use(tally);

  const crashed = result.permissions.filter((row) => row.id !== committedId);
  const outcome = crashed.length === 0 ? 'nothing' : 'all';
  process.stdout.write(
    `[crash ${store.label}] full expansion of ${TICKETS} tickets took ${full.ms} ms; killed ` +
      `${Math.round(full.ms / 2)} ms into the second${midInsert ? ' (its expansion running)' : ''} with the request ${answer.status === 0 ? 'unanswered' : `answered ${answer.status}`}; ` +
      `after the restart: ${outcome} (${result.permissions.length} permissions, ${result.tickets} tickets, ${result.orphans} orphans)\n`,
  );

  // The committed one is whole.
  expect(result.permissions.find((row) => row.id === committedId)).toEqual({ id: committedId, tickets: TICKETS, pairs: TICKETS });
  // The killed one: all (it committed before the kill) or nothing; never part, never twice.
  expect(crashed.length).toBeLessThanOrEqual(1);
  for (const row of crashed) expect(row).toMatchObject({ tickets: TICKETS, pairs: TICKETS });
  expect(result.orphans).toBe(0);
  expect(result.tickets).toBe(TICKETS * result.permissions.length);
  // The API agrees with the database.
  expect(afterRestart.body as unknown[]).toHaveLength(result.permissions.length);
  // On PostgreSQL the kill provably landed inside the transaction, so nothing of it may remain.
  if (midInsert) expect(outcome).toBe('nothing');
  if (store.expanding) expect(midInsert).toBe(true);
  // A 201 means it committed: it must then be there.
  if (answer.status === 201) expect(outcome).toBe('all');
}

describe('kill -9 during the expansion of an access permission into 100,000 tickets', () => {
  it.skipIf(!privateClusterAvailable())('on PostgreSQL (private cluster): all or nothing after the restart', async () => {
    await crashDuringExpansion(await postgresStore());
  }, 600_000);
});

describe('kill -9 during the expansion, on the embedded database', () => {
  // The crash takes the database with it: the next start must recover the DATA_DIR to before or after the grant.
  it('on PGlite in DATA_DIR: all or nothing after the restart', async () => {
    await crashDuringExpansion(embeddedStore());
  }, 600_000);
});
