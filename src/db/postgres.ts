// The PostgreSQL adapter of the database port: a pg Pool, plus one dedicated connection for LISTEN.
import { hash } from 'node:crypto';
import pg from 'pg';
import type { Logger } from 'pino';
import { INT8_OID, parseInt8, type Database, type ListenState, type NotificationHandler, type TransactionScope } from './database.js';

export interface PostgresOptions {
  connectionString: string;
  poolMax: number;
  connectTimeoutMs: number;
  statementTimeoutMs: number;
  log: Logger;
}

const typeParsers = {
  getTypeParser(oid: number, format?: string) {
    if (oid === INT8_OID) return parseInt8;
    return pg.types.getTypeParser(oid, format as 'text');
  },
} as pg.CustomTypesConfig;

const LISTEN_RETRY_MS = 1000;

/**
 * Sends a committed transaction's announcements to every instance (database.ts `announceOnCommit`), in one statement:
 * sent by this connection, after COMMIT, so on a cluster it runs on the node the service connects to (where every
 * instance listens), never inside a transaction that must prepare for a two-phase commit, and never for a change that
 * rolled back (docs/lock-sync.md).
 */
const NOTIFY_ALL = 'SELECT pg_notify(n.channel, n.payload) FROM unnest($1::text[], $2::text[]) AS n (channel, payload)';

/**
 * Parameterised statements run as named prepared statements: each connection parses and plans one the first time
 * and then only binds and executes it. The service's statements are a fixed set of texts (filters pick among a few
 * variants), and on a shared machine the server's parse and plan cost as much CPU as the query itself.
 */
const statementNames = new Map<string, string>();
function statement(text: string, params: readonly unknown[] | undefined): pg.QueryConfig | string {
  if (params === undefined || params.length === 0) return text;
  let name = statementNames.get(text);
  if (name === undefined) {
    name = `acs_${hash('sha256', text, 'base64url').slice(0, 22)}`;
    statementNames.set(text, name);
  }
  return { name, text, values: params as unknown[] };
}

export function createPostgresDatabase(options: PostgresOptions): Database {
  const clientConfig: pg.ClientConfig = {
    connectionString: options.connectionString,
    types: typeParsers,
    connectionTimeoutMillis: options.connectTimeoutMs,
    statement_timeout: options.statementTimeoutMs,
    // statement_timeout is enforced by the server: a server that stops answering (frozen, or cut off without a reset)
    // enforces nothing, and a request would wait for it forever. The client gives up a little after the server would.
    query_timeout: options.statementTimeoutMs + options.connectTimeoutMs,
    keepAlive: true,
    application_name: 'access-credential-service',
  };
  const pool = new pg.Pool({ ...clientConfig, max: options.poolMax, idleTimeoutMillis: 30_000 });
  // An idle client losing its connection (database restart) must not crash the process; the pool replaces it.
  pool.on('error', (error) => options.log.warn({ err: error }, 'idle database connection lost'));

  const listeners = new Map<string, Set<NotificationHandler>>();
  const stateHandlers = new Set<(state: ListenState) => void>();
  let listenClient: pg.Client | null = null;
  let listenConnecting: Promise<void> | null = null;
  let closed = false;
  let closing: Promise<void> | null = null;
  let retryTimer: NodeJS.Timeout | null = null;

  const notifyAll = (payload: string | null, channel?: string) => {
    for (const [name, handlers] of listeners) {
      if (channel !== undefined && name !== channel) continue;
      for (const handler of handlers) handler(payload);
    }
  };

  /**
   * A NOTIFY that could not be sent after its commit: the other instances learn the change from their periodic re-read
   * of the numbers instead (services/change-watermark.ts), a few seconds late; the request that made it has succeeded.
   */
  const notifyFailed = (error: unknown) => options.log.warn({ err: error }, 'NOTIFY after commit failed; other instances learn of the change by their re-read');

  const tellState = (state: ListenState) => {
    for (const handler of stateHandlers) handler(state);
  };

  /** The listening connection is gone: whatever commits from now on may never be delivered. */
  const lost = (client: pg.Client) => {
    if (listenClient !== client) return;
    listenClient = null;
    tellState('lost');
  };

  const scheduleReconnect = () => {
    if (closed || retryTimer || listeners.size === 0) return;
    retryTimer = setTimeout(() => {
      retryTimer = null;
      void connectListener().catch(() => scheduleReconnect());
    }, LISTEN_RETRY_MS);
    retryTimer.unref();
  };

  const connectListener = async (): Promise<void> => {
    if (listenClient || closed) return;
    if (listenConnecting) return listenConnecting;
    listenConnecting = (async () => {
      const client = new pg.Client(clientConfig);
      client.on('error', (error) => {
        options.log.warn({ err: error }, 'LISTEN connection lost; reconnecting');
        lost(client);
        void client.end().catch(() => undefined);
        scheduleReconnect();
      });
      // A connection closed without an error first (the server ended it cleanly) is as lost.
      client.on('end', () => {
        if (listenClient !== client) return;
        lost(client);
        scheduleReconnect();
      });
      client.on('notification', (message) => notifyAll(message.payload ?? '', message.channel));
      try {
        await client.connect();
        for (const channel of listeners.keys()) await client.query(`LISTEN ${quoteIdentifier(channel)}`);
      } catch (error) {
        void client.end().catch(() => undefined);
        throw error;
      }
      listenClient = client;
      // Whatever was sent while we were not listening is lost: tell every handler to drop its cache.
      notifyAll(null);
      tellState('listening');
    })().finally(() => {
      listenConnecting = null;
    });
    return listenConnecting;
  };

  return {
    kind: 'postgres',

    async query<Row>(text: string, params?: readonly unknown[]) {
      const result = await pool.query(statement(text, params));
      return { rows: result.rows as Row[], rowCount: result.rowCount ?? 0 };
    },

    // Outside a transaction a statement has committed when it resolves: this process hears it at once, the others
    // when the NOTIFY sent behind it arrives.
    announceOnCommit(channel: string, payload: string) {
      notifyAll(payload, channel);
      void pool.query(statement(NOTIFY_ALL, [[channel], [payload]])).catch((error: unknown) => notifyFailed(error));
    },

    async transaction<T>(work: (tx: TransactionScope) => Promise<T>): Promise<T> {
      const client = await pool.connect();
      let broken: Error | undefined;
      // pg-pool removes its error listener from a client while it is checked out, and pg emits 'error' on a client
      // whose connection ends unexpectedly even when a query of it is failing too: without a listener here, a database
      // crash during any transaction is an uncaught exception that stops the process. The query that was running
      // rejects on its own; the connection is dropped below rather than handed back.
      const onError = (error: Error) => {
        broken = error;
      };
      client.on('error', onError);
      const release = () => {
        client.removeListener('error', onError);
        client.release(broken);
      };
      const announcements: [channel: string, payload: string][] = [];
      let committed = false;
      try {
        await client.query('BEGIN');
        const scope: TransactionScope = {
          async query<Row>(text: string, params?: readonly unknown[]) {
            const result = await client.query(statement(text, params));
            return { rows: result.rows as Row[], rowCount: result.rowCount ?? 0 };
          },
          async execScript(sql: string) {
            await client.query(sql);
          },
          announceOnCommit(channel: string, payload: string) {
            announcements.push([channel, payload]);
          },
        };
        const value = await work(scope);
        await client.query('COMMIT');
        committed = true;
        if (announcements.length === 0) release();
        else {
          // Committed: the caller has its answer now, and the NOTIFY follows on this connection, which goes back to the
          // pool once it is sent. Waiting for it would hold up the caller, and the next transaction of a tenant's
          // writes (services/batching.ts) behind one more round trip that changes nothing written: numbers only rise,
          // in whatever order notifications arrive (docs/lock-sync.md). A failure changes nothing written either, and
          // the other instances' re-read covers the loss.
          void client
            .query(statement(NOTIFY_ALL, [announcements.map(([channel]) => channel), announcements.map(([, payload]) => payload)]))
            .catch((error: unknown) => {
              if (isQueryReadTimeout(error)) broken = error as Error;
              notifyFailed(error);
            })
            .finally(release);
        }
        // This process hears its own commits at once (docs/lock-sync.md).
        for (const [channel, payload] of announcements) notifyAll(payload, channel);
        return value;
      } catch (error) {
        if (committed) throw error;
        try {
          if (isQueryReadTimeout(error)) {
            // The server never answered: a ROLLBACK would queue behind the lost query. Dropping the connection rolls back.
            broken = error as Error;
            throw error;
          }
          try {
            await client.query('ROLLBACK');
          } catch (rollbackError) {
            // The connection itself is gone: destroy it rather than hand it back to the pool.
            broken = rollbackError as Error;
          }
          throw error;
        } finally {
          release();
        }
      }
    },

    async listen(channel, onNotification, onState) {
      let handlers = listeners.get(channel);
      const isNewChannel = !handlers;
      if (!handlers) {
        handlers = new Set();
        listeners.set(channel, handlers);
      }
      handlers.add(onNotification);
      if (onState) stateHandlers.add(onState);
      try {
        if (!listenClient) await connectListener();
        else {
          const client = listenClient;
          if (isNewChannel) await client.query(`LISTEN ${quoteIdentifier(channel)}`);
          // Connected before this subscriber came: it hears the connection's state now that its channel is heard.
          if (listenClient === client) onState?.('listening');
        }
      } catch (error) {
        options.log.warn({ err: error }, 'LISTEN failed; retrying in the background');
        scheduleReconnect();
      }
      return async () => {
        handlers.delete(onNotification);
        if (onState) stateHandlers.delete(onState);
        if (handlers.size === 0) {
          listeners.delete(channel);
          await listenClient?.query(`UNLISTEN ${quoteIdentifier(channel)}`).catch(() => undefined);
        }
      };
    },

    stats() {
      return { total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount };
    },

    // Idempotent, like the PGlite adapter: the app closes its database on close even if someone closed it first.
    close() {
      closing ??= (async () => {
        closed = true;
        if (retryTimer) clearTimeout(retryTimer);
        const client = listenClient;
        listenClient = null;
        await client?.end().catch(() => undefined);
        await pool.end();
      })();
      return closing;
    },
  };
}

/** pg's client-side `query_timeout` error. */
function isQueryReadTimeout(error: unknown): boolean {
  return error instanceof Error && error.message === 'Query read timeout';
}

function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
