// A private, throwaway PostgreSQL 15 cluster (initdb into a temp directory) for tests that stop and start the database.
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../test/helpers/process.js';

const BIN = process.env.PG_BIN_DIR ?? '/usr/lib/postgresql/15/bin';

/** True when this machine can run a private cluster: the PostgreSQL binaries and a `postgres` OS user to own it. */
export function privateClusterAvailable(): boolean {
  if (!existsSync(join(BIN, 'initdb')) || !existsSync(join(BIN, 'pg_ctl'))) return false;
  return spawnSync('id', ['-u', 'postgres']).status === 0;
}

export interface PrivateCluster {
  port: number;
  directory: string;
  /** postgres://postgres@127.0.0.1:PORT/DATABASE */
  url(database?: string): string;
  start(): void;
  /** `-m fast` by default: what an operator's restart does; `immediate` is a crash. */
  stop(mode?: 'fast' | 'immediate'): void;
  /** Stops it however it can and removes its directory. Never throws. */
  destroy(): void;
}

/** Runs a PostgreSQL binary as the `postgres` OS user (initdb and pg_ctl refuse root); bounded. */
function asPostgres(binary: string, args: string[], timeoutMs: number): string {
  const runAs = process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', join(BIN, binary), ...args]] as const : [join(BIN, binary), args] as const;
  return execFileSync(runAs[0], [...runAs[1]], { timeout: timeoutMs, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

export async function createPrivateCluster(): Promise<PrivateCluster> {
  // The parent stays root-owned; the data directory inside it belongs to postgres (initdb insists on 0700).
  const parent = mkdtempSync(join(tmpdir(), 'acs-pgcluster-'));
  chmodSync(parent, 0o755);
  const directory = join(parent, 'data');
  const socketDirectory = parent;
  const log = join(parent, 'postgres.log');
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(parent, uid, gid);
  }
  asPostgres('initdb', ['-D', directory, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8'], 120_000);
  const port = await freePort();
  const options = `-p ${port} -k ${socketDirectory} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100`;
  let destroyed = false;

  const cluster: PrivateCluster = {
    port,
    directory,
    url: (database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`,
    start() {
      asPostgres('pg_ctl', ['-D', directory, '-o', options, '-l', log, '-w', '-t', '60', 'start'], 90_000);
    },
    stop(mode = 'fast') {
      asPostgres('pg_ctl', ['-D', directory, '-m', mode, '-w', '-t', '60', 'stop'], 90_000);
    },
    destroy() {
      if (destroyed) return;
      destroyed = true;
      try {
        if (existsSync(join(directory, 'postmaster.pid'))) cluster.stop('immediate');
      } catch {
        // Already stopped, or stopping failed: the directory goes anyway.
      }
      rmSync(parent, { recursive: true, force: true });
    },
  };
  try {
    cluster.start();
  } catch (error) {
    cluster.destroy();
    throw error;
  }
  return cluster;
}
