// The embedded adapter of the database port: PGlite (PostgreSQL in WASM) in DATA_DIR, or in memory for tests.
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { PGlite, type Transaction } from '@electric-sql/pglite';
import { INT8_OID, parseInt8, type Database, type ListenState, type NotificationHandler, type TransactionScope } from './database.js';

export class DataDirInUseError extends Error {
  constructor(
    readonly dataDir: string,
    readonly pid: number,
  ) {
    super(
      `The embedded database in ${dataDir} is in use by process ${pid}. ` +
        'Stop that server first, or point DATABASE_URL at a PostgreSQL server to run several processes.',
    );
    this.name = 'DataDirInUseError';
  }
}

export interface PgliteOptions {
  /** A directory to persist in, or `undefined` for an in-memory database. */
  dataDir?: string;
  /** A dump of a data directory (`dumpDataDir`) to start from: a migrated template makes test databases cheap. */
  loadDataDir?: Blob;
}

/**
 * PGlite is single-connection and does not lock its directory: two processes on one directory would corrupt it.
 * A lock file with our pid guards it; a lock left by a dead process is taken over.
 */
export function acquireDataDirLock(dataDir: string): () => void {
  const absolute = resolve(dataDir);
  mkdirSync(absolute, { recursive: true });
  const lockPath = join(absolute, 'server.lock');
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(lockPath, 'wx', 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        rmSync(lockPath, { force: true });
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = Number.parseInt(readFileSafe(lockPath), 10);
      if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && isProcessAlive(holder)) {
        throw new DataDirInUseError(absolute, holder);
      }
      rmSync(lockPath, { force: true });
    }
  }
  throw new Error(`Could not take the lock ${lockPath}`);
}

function readFileSafe(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

/** Whether a process with this pid runs (EPERM: it does, as another user's). */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export interface PgliteDatabase extends Database {
  /** A dump of the data directory, to start other databases from (`loadDataDir`). */
  dump(): Promise<Blob>;
}

export async function createPgliteDatabase(options: PgliteOptions = {}): Promise<PgliteDatabase> {
  const releaseLock = options.dataDir ? acquireDataDirLock(options.dataDir) : () => undefined;
  let pglite: PGlite;
  try {
    pglite = await PGlite.create({
      ...(options.dataDir ? { dataDir: join(resolve(options.dataDir), 'pgdata') } : {}),
      ...(options.loadDataDir ? { loadDataDir: options.loadDataDir } : {}),
      parsers: { [INT8_OID]: parseInt8 },
    });
  } catch (error) {
    releaseLock();
    throw error;
  }
  let active = 0;
  let waiting = 0;
  // This process's own handlers, for announceOnCommit (database.ts). A PGlite database is one process's (its directory
  // lock), so they are every listener there is: no NOTIFY needs to be sent. PGlite delivers other NOTIFYs to them too.
  const localHandlers = new Map<string, Set<NotificationHandler>>();
  const announce = (channel: string, payload: string) => {
    for (const handler of localHandlers.get(channel) ?? []) handler(payload);
  };
  const announcements = new WeakMap<Transaction, [channel: string, payload: string][]>();

  const scopeOf = (tx: Transaction): TransactionScope => ({
    async query<Row>(text: string, params?: readonly unknown[]) {
      const result = await tx.query<Row>(text, params as unknown[] | undefined);
      return { rows: result.rows, rowCount: result.rowCount ?? result.affectedRows ?? 0 };
    },
    async execScript(sql: string) {
      await tx.exec(sql);
    },
    announceOnCommit(channel: string, payload: string) {
      announcements.get(tx)?.push([channel, payload]);
    },
  });

  return {
    kind: 'pglite',

    async query<Row>(text: string, params?: readonly unknown[]) {
      const result = await pglite.query<Row>(text, params as unknown[] | undefined);
      return { rows: result.rows, rowCount: result.rowCount ?? result.affectedRows ?? 0 };
    },

    announceOnCommit: announce,

    // PGlite is one connection: its transaction() holds a mutex, so transactions (and queries) run one at a time.
    async transaction<T>(work: (tx: TransactionScope) => Promise<T>): Promise<T> {
      waiting++;
      const pending: [channel: string, payload: string][] = [];
      const value = await pglite.transaction(async (tx) => {
        waiting--;
        active++;
        announcements.set(tx, pending);
        try {
          return await work(scopeOf(tx));
        } finally {
          active--;
        }
      });
      // Resolved: committed (a throw rolled back and announces nothing).
      for (const [channel, payload] of pending) announce(channel, payload);
      return value;
    },

    // One process, one in-memory connection: once LISTEN holds, it never drops.
    async listen(channel: string, onNotification: NotificationHandler, onState?: (state: ListenState) => void) {
      const unlisten = await pglite.listen(channel, (payload) => onNotification(payload));
      let handlers = localHandlers.get(channel);
      if (!handlers) localHandlers.set(channel, (handlers = new Set()));
      handlers.add(onNotification);
      onState?.('listening');
      return async () => {
        handlers.delete(onNotification);
        await unlisten();
      };
    },

    stats() {
      return { total: 1, idle: active === 0 ? 1 : 0, waiting };
    },

    async dump() {
      return pglite.dumpDataDir('none');
    },

    async close() {
      try {
        if (!pglite.closed) await pglite.close();
      } finally {
        releaseLock();
      }
    },
  };
}
