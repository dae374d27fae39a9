// The database port: one small interface over PostgreSQL (pg Pool) and the embedded PGlite, with the same SQL on both.
export interface QueryResult<Row> {
  rows: Row[];
  rowCount: number;
}

export interface Queryable {
  /** One parameterised statement. */
  query<Row = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<QueryResult<Row>>;
  /**
   * Announces `payload` on `channel` once what this queryable wrote is committed (at once outside a transaction, after
   * COMMIT inside one, never after a ROLLBACK): to this process's own listeners at once, so it never answers from
   * memory older than its own committed writes, and to every instance by a NOTIFY the adapter sends after the commit
   * (docs/lock-sync.md). The one way a change is announced: no trigger does it. Absent on test doubles.
   */
  announceOnCommit?(channel: string, payload: string): void;
}

export interface TransactionScope extends Queryable {
  /** Several statements without parameters (migrations). */
  execScript(sql: string): Promise<void>;
}

export interface PoolStats {
  total: number;
  idle: number;
  waiting: number;
}

/** A notification handler; `null` means notifications may have been missed (reconnect): drop every cached answer. */
export type NotificationHandler = (payload: string | null) => void;

/**
 * The listening connection's state, for a subscriber that trusts memory only while notifications flow
 * (docs/lock-sync.md): `listening` once LISTEN holds on a connection (every later commit is delivered), `lost` as soon
 * as that connection is gone (what commits from now on may never be delivered).
 */
export type ListenState = 'listening' | 'lost';

export interface Database extends Queryable {
  readonly kind: 'postgres' | 'pglite';
  /** Runs `work` in one transaction: COMMIT when it resolves, ROLLBACK when it throws. */
  transaction<T>(work: (tx: TransactionScope) => Promise<T>): Promise<T>;
  /** LISTEN on a channel; resolves to an unsubscribe function. `onState` follows the listening connection. */
  listen(channel: string, onNotification: NotificationHandler, onState?: (state: ListenState) => void): Promise<() => Promise<void>>;
  stats(): PoolStats;
  close(): Promise<void>;
}

/** PostgreSQL's 64-bit integers (ms timestamps, sequence values) fit a JS number well below 2^53. */
export const INT8_OID = 20;
export const parseInt8 = (value: string): number => Number(value);
