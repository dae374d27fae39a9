// A private, throwaway PostgreSQL 15 cluster (initdb into a temp directory) for tests that stop and start the database;
// with RELIABILITY_CITUS=1, a Citus coordinator and two workers, the service's database distributed by tenant.
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { distribute } from '../../src/db/distribute.js';
import { migrate } from '../../src/db/migrate.js';
import { createPostgresDatabase } from '../../src/db/postgres.js';
import { createLogger } from '../../src/logger.js';
import { TEST_SHARD_COUNT } from '../../test/helpers/citus.js';
import { freePort } from '../../test/helpers/process.js';

const BIN = process.env.PG_BIN_DIR ?? '/usr/lib/postgresql/15/bin';

/**
 * The reliability suite on Citus (docs/scaling.md, "Running on Citus"): every private cluster is a coordinator and two
 * workers, the service's database migrated and distributed by tenant before the servers start. "The database" the
 * tests stop, crash and freeze is the coordinator, the node the service connects to; the workers keep running.
 */
export const RELIABILITY_ON_CITUS = process.env.RELIABILITY_CITUS === '1';

/** Workers of a Citus private cluster: two, as on the cluster docs/scaling.md describes. */
const CITUS_WORKERS = 2;

/** True when this machine can run a private cluster: the PostgreSQL binaries and a `postgres` OS user to own it. */
export function privateClusterAvailable(): boolean {
  if (!existsSync(join(BIN, 'initdb')) || !existsSync(join(BIN, 'pg_ctl'))) return false;
  return spawnSync('id', ['-u', 'postgres']).status === 0;
}

/** True when the Citus extension is installed into this PostgreSQL (citus.so in its package library directory). */
export function citusInstalled(): boolean {
  if (!existsSync(join(BIN, 'pg_config'))) return false;
  const libraries = execFileSync(join(BIN, 'pg_config'), ['--pkglibdir'], { encoding: 'utf8' }).trim();
  return existsSync(join(libraries, 'citus.so'));
}

export interface PrivateCluster {
  /** The port of the node the service connects to (on Citus, the coordinator). */
  port: number;
  /** That node's data directory (its postmaster.pid names the process to freeze). */
  directory: string;
  /** True when this is a Citus coordinator with its workers. */
  citus: boolean;
  /** postgres://postgres@127.0.0.1:PORT/DATABASE */
  url(database?: string): string;
  /** Starts that node (on Citus, the coordinator; the workers keep running throughout). */
  start(): void;
  /** `-m fast` by default: what an operator's restart does; `immediate` is a crash. On Citus, of the coordinator. */
  stop(mode?: 'fast' | 'immediate'): void;
  /**
   * On Citus, distributes the database's tables as `db distribute` does (for a cluster made with `migrated: false`,
   * once the servers have migrated it); elsewhere nothing.
   */
  distribute(): Promise<void>;
  /** Stops it however it can and removes its directory. Never throws. */
  destroy(): void;
}

export interface ClusterOptions {
  /**
   * On Citus: whether the service's database is migrated and distributed before the cluster is handed over (default
   * true). False leaves it with the extension and the workers registered but no schema, for a test of the servers'
   * own migration race; it then calls `distribute()`. Without Citus the database is always left empty.
   */
  migrated?: boolean;
}

/** Runs a PostgreSQL binary as the `postgres` OS user (initdb and pg_ctl refuse root); bounded. */
function asPostgres(binary: string, args: string[], timeoutMs: number): string {
  const runAs = process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', join(BIN, binary), ...args]] as const : [join(BIN, binary), args] as const;
  return execFileSync(runAs[0], [...runAs[1]], { timeout: timeoutMs, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** One PostgreSQL server of a private cluster, in its own data directory under `parent`. */
interface PrivateNode {
  port: number;
  directory: string;
  start(): void;
  stop(mode: 'fast' | 'immediate'): void;
}

async function initNode(parent: string, name: string, settings: string): Promise<PrivateNode> {
  const directory = join(parent, name);
  const log = join(parent, `${name}.log`);
  asPostgres('initdb', ['-D', directory, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8'], 120_000);
  const port = await freePort();
  const options = `-p ${port} -k ${parent} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100${settings}`;
  return {
    port,
    directory,
    start() {
      asPostgres('pg_ctl', ['-D', directory, '-o', options, '-l', log, '-w', '-t', '60', 'start'], 90_000);
    },
    stop(mode) {
      asPostgres('pg_ctl', ['-D', directory, '-m', mode, '-w', '-t', '60', 'stop'], 90_000);
    },
  };
}

const nodeUrl = (port: number, database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`;

async function onNode(port: number, statements: [string, unknown[]?][]): Promise<void> {
  const client = new pg.Client({ connectionString: nodeUrl(port), connectionTimeoutMillis: 10_000 });
  await client.connect();
  try {
    for (const [text, params] of statements) await client.query(text, params);
  } finally {
    await client.end();
  }
}

/** Runs `work` on the coordinator's service database through the service's own database layer. */
async function withServiceDatabase(port: number, work: (db: ReturnType<typeof createPostgresDatabase>) => Promise<unknown>): Promise<void> {
  const db = createPostgresDatabase({
    connectionString: nodeUrl(port),
    poolMax: 2,
    connectTimeoutMs: 10_000,
    statementTimeoutMs: 300_000,
    log: createLogger('silent'),
  });
  try {
    await work(db);
  } finally {
    await db.close();
  }
}

export async function createPrivateCluster(options: ClusterOptions = {}): Promise<PrivateCluster> {
  const citus = RELIABILITY_ON_CITUS;
  // The parent stays root-owned; the data directories inside it belong to postgres (initdb insists on 0700).
  const parent = mkdtempSync(join(tmpdir(), citus ? 'acs-citus-' : 'acs-pgcluster-'));
  chmodSync(parent, 0o755);
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(parent, uid, gid);
  }
  // Citus commits a transaction that wrote on several nodes in two phases: prepared transactions on every node.
  const settings = citus ? ' -c shared_preload_libraries=citus -c max_prepared_transactions=100' : '';
  const nodes: PrivateNode[] = [];
  let destroyed = false;
  const destroy = () => {
    if (destroyed) return;
    destroyed = true;
    for (const node of nodes) {
      try {
        if (existsSync(join(node.directory, 'postmaster.pid'))) node.stop('immediate');
      } catch {
        // Already stopped, or stopping failed: the directory goes anyway.
      }
    }
    rmSync(parent, { recursive: true, force: true });
  };

  try {
    const main = await initNode(parent, citus ? 'coordinator' : 'data', settings);
    nodes.push(main);
    const workers: PrivateNode[] = [];
    for (let n = 1; citus && n <= CITUS_WORKERS; n++) {
      const worker = await initNode(parent, `worker${n}`, settings);
      nodes.push(worker);
      workers.push(worker);
    }
    for (const node of nodes) node.start();
    if (citus) {
      // The service's database is `postgres` on every node (Citus keeps its nodes per database: docs/scaling.md).
      for (const worker of workers) await onNode(worker.port, [['CREATE EXTENSION citus']]);
      await onNode(main.port, [
        ['CREATE EXTENSION citus'],
        ['SELECT citus_set_coordinator_host($1, $2)', ['127.0.0.1', main.port]],
        ...workers.map((worker): [string, unknown[]] => ['SELECT citus_add_node($1, $2)', ['127.0.0.1', worker.port]]),
      ]);
      if (options.migrated ?? true) {
        await withServiceDatabase(main.port, async (db) => {
          await migrate(db);
          await distribute(db, { shardCount: TEST_SHARD_COUNT });
        });
      }
    }
    return {
      port: main.port,
      directory: main.directory,
      citus,
      url: (database = 'postgres') => nodeUrl(main.port, database),
      start: () => main.start(),
      stop: (mode = 'fast') => main.stop(mode),
      async distribute() {
        if (citus) await withServiceDatabase(main.port, (db) => distribute(db, { shardCount: TEST_SHARD_COUNT }));
      },
      destroy,
    };
  } catch (error) {
    destroy();
    throw error;
  }
}
