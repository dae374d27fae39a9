// The suite on a Citus coordinator (CITUS_URL): a test file's own database, made on the coordinator and on every worker,
// migrated and distributed by tenant (docs/scaling.md). A distributed database cannot be cloned from a template.
import pg from 'pg';
import { distribute } from '../../src/db/distribute.js';
import { migrate, type Migration } from '../../src/db/migrate.js';
import { createPostgresDatabase } from '../../src/db/postgres.js';
import { createLogger } from '../../src/logger.js';

/** The coordinator's maintenance database, when the suite runs on Citus. */
export function citusTestUrl(): string | undefined {
  return process.env.CITUS_URL || undefined;
}

/**
 * Shards per distributed table in the tests' databases: few, so that a file's database is ready in seconds; more than
 * one per worker, so a statement that fans out still shows more than one task.
 */
export const TEST_SHARD_COUNT = Number(process.env.CITUS_SHARD_COUNT ?? 4);

interface Node {
  host: string;
  port: number;
}

function urlAt(url: string, node: Node | undefined, database: string): string {
  const parsed = new URL(url);
  if (node) {
    parsed.hostname = node.host;
    parsed.port = String(node.port);
  }
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** The coordinator as the cluster knows it, and the primary workers, read from the maintenance database. */
async function clusterNodes(url: string): Promise<{ coordinator: Node; workers: Node[] }> {
  return withClient(url, async (client) => {
    const extension = await client.query("SELECT 1 FROM pg_extension WHERE extname = 'citus'");
    if (extension.rowCount === 0) {
      throw new Error(`CITUS_URL (${new URL(url).host}${new URL(url).pathname}) has no Citus extension: it is not a Citus coordinator.`);
    }
    const { rows } = await client.query<{ host: string; port: number; group: number }>(
      "SELECT nodename AS host, nodeport AS port, groupid AS group FROM pg_dist_node WHERE noderole = 'primary' AND isactive ORDER BY groupid",
    );
    const parsed = new URL(url);
    const coordinator = rows.find((row) => row.group === 0) ?? { host: parsed.hostname, port: Number(parsed.port || 5432) };
    const workers = rows.filter((row) => row.group !== 0).map((row) => ({ host: row.host, port: row.port }));
    if (workers.length === 0) throw new Error('The Citus coordinator at CITUS_URL has no workers (citus_add_node).');
    return { coordinator: { host: coordinator.host, port: coordinator.port }, workers };
  });
}

const maintenanceDatabase = (url: string) => decodeURIComponent(new URL(url).pathname.slice(1)) || 'postgres';

/** Checks once per run that CITUS_URL is a coordinator with workers; throws saying what is missing. */
export async function checkCitusCluster(url: string): Promise<number> {
  return (await clusterNodes(url)).workers.length;
}

/**
 * Creates `name` on every worker and on the coordinator, each with the Citus extension, registers the nodes in it,
 * applies the migrations (all, or `migrations`: a database as an earlier release left it) and (unless told not to)
 * distributes the tables. Returns the coordinator URL of the new database.
 */
export async function createCitusDatabase(
  url: string,
  name: string,
  options: { distribute?: boolean; shardCount?: number; migrations?: Migration[] } = {},
): Promise<string> {
  try {
    return await makeCitusDatabase(url, name, options.distribute ?? true, options.shardCount ?? TEST_SHARD_COUNT, options.migrations);
  } catch (error) {
    await dropCitusDatabase(url, name);
    throw error;
  }
}

async function makeCitusDatabase(
  url: string,
  name: string,
  distributed: boolean,
  shardCount: number,
  migrations: Migration[] | undefined,
): Promise<string> {
  const { coordinator, workers } = await clusterNodes(url);
  const maintenance = maintenanceDatabase(url);
  for (const worker of workers) {
    await withClient(urlAt(url, worker, maintenance), (client) => client.query(`CREATE DATABASE ${name}`));
    await withClient(urlAt(url, worker, name), (client) => client.query('CREATE EXTENSION citus'));
  }
  await withClient(url, (client) => client.query(`CREATE DATABASE ${name}`));
  const databaseUrl = urlAt(url, undefined, name);
  await withClient(databaseUrl, (client) => client.query('CREATE EXTENSION citus'));
  await oneFileAtATime(url, () =>
    withClient(databaseUrl, async (client) => {
      await client.query('SELECT citus_set_coordinator_host($1, $2)', [coordinator.host, coordinator.port]);
      for (const worker of workers) await client.query('SELECT citus_add_node($1, $2)', [worker.host, worker.port]);
    }),
  );
  const db = createPostgresDatabase({
    connectionString: databaseUrl,
    poolMax: 2,
    connectTimeoutMs: 5000,
    statementTimeoutMs: 300_000,
    log: createLogger('silent'),
  });
  try {
    await migrate(db, migrations);
    if (distributed) await distribute(db, { shardCount });
  } finally {
    await db.close();
  }
  return databaseUrl;
}

/**
 * Registering a worker makes Citus create or alter the connecting role there (`worker_create_or_alter_role`). A role
 * belongs to the whole server, not to one database, so two files registering their nodes at the same moment, each in
 * its own database, fail with "tuple concurrently updated" (seen in a whole run of the suite). One file at a time does
 * it: a session advisory lock in the coordinator's maintenance database, which every file of the run shares, released
 * when its connection ends.
 */
const NODE_REGISTRATION_LOCK = 0x61637331; // 'acs1'

async function oneFileAtATime<T>(url: string, work: () => Promise<T>): Promise<T> {
  return withClient(url, async (client) => {
    await client.query('SELECT pg_advisory_lock($1)', [NODE_REGISTRATION_LOCK]);
    return work();
  });
}

/** Drops `name` on the coordinator and on every worker; what is already gone is no error. */
export async function dropCitusDatabase(url: string, name: string): Promise<void> {
  const { workers } = await clusterNodes(url);
  const maintenance = maintenanceDatabase(url);
  await withClient(url, (client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).catch(() => undefined);
  for (const worker of workers) {
    await withClient(urlAt(url, worker, maintenance), (client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).catch(
      () => undefined,
    );
  }
}
