// A throw-away PostgreSQL database per bench run: created before the servers start, dropped (FORCE) at the end.
import pg from 'pg';
import { isProcessAlive } from '../src/db/pglite.js';

export interface BenchDatabase {
  name: string;
  /** Connection string of the new database (the admin URL with its database name replaced). */
  url: string;
  drop(): Promise<void>;
}

/** Quotes an identifier for SQL; the names are ours, but quoting keeps them safe whatever the pid. */
function identifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

async function withAdmin<T>(adminUrl: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * Drops `PREFIX<pid>` databases left by runs that were killed outright (SIGKILL skips every cleanup): those whose
 * pid is not a live process here and that nobody is connected to, so a run on another host is left alone. `drop`
 * removes one by name (default: on the server at `adminUrl` alone; a cluster drops it on every node, bench/citus.ts).
 */
export async function dropAbandonedBenchDatabases(
  adminUrl: string,
  prefix: string,
  drop: (name: string) => Promise<void> = (name) =>
    withAdmin(adminUrl, async (client) => void (await client.query(`DROP DATABASE IF EXISTS ${identifier(name)} WITH (FORCE)`))),
): Promise<string[]> {
  const { rows } = await withAdmin(adminUrl, (client) =>
    client.query<{ datname: string }>(
      `SELECT datname FROM pg_database d
        WHERE starts_with(datname, $1)
          AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.datid = d.oid)`,
      [prefix],
    ),
  );
  const dropped: string[] = [];
  for (const { datname } of rows) {
    const pid = Number(datname.slice(prefix.length));
    if (!Number.isInteger(pid) || pid <= 0 || isProcessAlive(pid)) continue;
    await drop(datname);
    dropped.push(datname);
  }
  return dropped;
}

export async function createBenchDatabase(adminUrl: string, name: string): Promise<BenchDatabase> {
  await withAdmin(adminUrl, async (client) => {
    // A previous run with the same pid that was killed with SIGKILL may have left it behind.
    await client.query(`DROP DATABASE IF EXISTS ${identifier(name)} WITH (FORCE)`);
    await client.query(`CREATE DATABASE ${identifier(name)}`);
  });
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  let dropped = false;
  return {
    name,
    url: url.toString(),
    async drop() {
      if (dropped) return;
      dropped = true;
      await withAdmin(adminUrl, (client) => client.query(`DROP DATABASE IF EXISTS ${identifier(name)} WITH (FORCE)`));
    },
  };
}
