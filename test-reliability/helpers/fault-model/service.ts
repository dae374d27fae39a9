// The service under test: two instances (child processes) on one private PostgreSQL cluster, requests that fail over
// between them, and the faults the model injects into the service side: kill -9 and restart of an instance, the
// database frozen (SIGSTOP of the postmaster and every backend) and thawed, the LISTEN connections cut.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { createPrivateCluster, type PrivateCluster } from '../cluster.js';
import { SECRETS_KEY, basic, call, sleep, startServer, type Reply, type Server } from '../server.js';

export type { Reply } from '../server.js';

export const PUBLIC_URL = 'https://acs.example.test';

export interface Instance {
  name: string;
  server: Server | undefined;
}

export interface Service {
  cluster: PrivateCluster;
  env: Record<string, string>;
  db: pg.Client;
  instances: Instance[];
  /** The instances up now. */
  live(): Instance[];
  kill(instance: Instance): Promise<void>;
  restart(instance: Instance): Promise<void>;
  /** SIGSTOP of the postmaster and all its children: the database stops answering without closing a connection. */
  freeze(): number[];
  thaw(pids: number[]): void;
  /** pg_terminate_backend of every session whose last statement was a LISTEN: the notification connections. */
  cutListeners(): Promise<number>;
  close(): Promise<void>;
}

export async function startService(): Promise<Service> {
  const cluster = await createPrivateCluster();
  const env = {
    DATABASE_URL: cluster.url(),
    SECRETS_KEY,
    PUBLIC_URL,
    WEBHOOK_ALLOW_INSECURE: 'true',
    WEBHOOK_RETRY_SCHEDULE: Array.from({ length: 30 }, () => '1').join(','),
    WEBHOOK_TIMEOUT_MS: '2000',
    WEBHOOK_WORKER_INTERVAL_MS: '100',
    DB_CONNECT_TIMEOUT_MS: '1000',
    API_RATE_LIMIT_PER_MINUTE: '1000000000',
    BCRYPT_COST: '4',
  };
  const instances: Instance[] = [
    { name: 'a', server: undefined },
    { name: 'b', server: undefined },
  ];
  const db = new pg.Client({ connectionString: cluster.url() });
  try {
    // One first, so that the migrations are not raced on every run (two-instances.test.ts covers that race).
    instances[0]!.server = await startServer(env);
    instances[1]!.server = await startServer(env);
    await db.connect();
  } catch (error) {
    for (const instance of instances) await instance.server?.child.kill();
    cluster.destroy();
    throw error;
  }
  return {
    cluster,
    env,
    db,
    instances,
    live: () => instances.filter((instance) => instance.server !== undefined),
    async kill(instance) {
      const server = instance.server;
      instance.server = undefined;
      await server?.child.kill();
    },
    async restart(instance) {
      if (instance.server) return;
      instance.server = await startServer(env);
    },
    freeze() {
      const postmaster = Number(readFileSync(join(cluster.directory, 'postmaster.pid'), 'utf8').split('\n')[0]);
      const children = execFileSync('ps', ['-o', 'pid=', '--ppid', String(postmaster)], { encoding: 'utf8' })
        .split('\n')
        .map((line) => Number(line.trim()))
        .filter((pid) => pid > 0);
      const pids = [postmaster, ...children];
      for (const pid of pids) process.kill(pid, 'SIGSTOP');
      return pids;
    },
    thaw(pids) {
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGCONT');
        } catch {
          // gone already
        }
      }
    },
    async cutListeners() {
      const { rows } = await db.query<{ cut: boolean }>(
        `SELECT pg_terminate_backend(pid) AS cut FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND query ILIKE 'LISTEN %'`,
      );
      return rows.filter((row) => row.cut).length;
    },
    async close() {
      for (const instance of instances) await instance.server?.child.kill();
      await db.end().catch(() => undefined);
      cluster.destroy();
    },
  };
}

/** A status the service answered on purpose; 0 (no answer), 500, 502, 503 and 504 leave the outcome unknown. */
export const definite = (reply: Reply) => reply.status !== 0 && reply.status < 500;

/**
 * One request to a live instance chosen by `choose`, retried on the other until a definite answer or `ms`: what a
 * client behind a load balancer does. The last reply when none was definite.
 */
export async function request(
  service: Service,
  choose: (live: Instance[]) => Instance,
  method: string,
  path: string,
  bearer: string,
  body?: unknown,
  headers: Record<string, string> = {},
  ms = 45_000,
): Promise<Reply> {
  const deadline = Date.now() + ms;
  let last: Reply = { status: 0, body: 'no live instance', ms: 0, contentType: null, link: null };
  for (let attempt = 0; Date.now() < deadline; attempt++) {
    const live = service.live();
    if (live.length === 0) {
      await sleep(200);
      continue;
    }
    const instance = attempt === 0 ? choose(live) : live[attempt % live.length]!;
    last = await call(instance.server!.base, method, path, bearer, body, headers, Math.max(1000, Math.min(15_000, deadline - Date.now())));
    if (definite(last)) return last;
    await sleep(100);
  }
  return last;
}

/** An access token by client credentials from any live instance, retried like `request`. */
export async function clientToken(service: Service, client: { clientId: string; clientSecret: string }, scope?: string): Promise<string> {
  return grantToken(service, client, '/oauth/token', { grant_type: 'client_credentials', ...(scope ? { scope } : {}) });
}

/** An Access API token by the password grant (docs/api-reference.md 3.2) for `login` (`user@tenant`), retried like `request`. */
export async function userToken(service: Service, client: { clientId: string; clientSecret: string }, login: string, password: string): Promise<string> {
  return grantToken(service, client, '/oauth2/token', { grant_type: 'password', username: login, password });
}

async function grantToken(service: Service, client: { clientId: string; clientSecret: string }, path: string, fields: Record<string, string>): Promise<string> {
  const deadline = Date.now() + 45_000;
  let last = '';
  while (Date.now() < deadline) {
    for (const instance of service.live()) {
      try {
        const response = await fetch(`${instance.server!.base}${path}`, {
          method: 'POST',
          headers: { authorization: basic(client.clientId, client.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams(fields).toString(),
          signal: AbortSignal.timeout(10_000),
        });
        const text = await response.text();
        if (response.status === 200) return (JSON.parse(text) as { access_token: string }).access_token;
        last = `${response.status} ${text}`;
        if (response.status < 500) throw new Error(`token refused: ${last}`);
      } catch (error) {
        if (String(error).includes('token refused')) throw error;
        last = String(error);
      }
    }
    await sleep(200);
  }
  throw new Error(`no token within 45 s: ${last}`);
}
