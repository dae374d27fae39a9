// The database port over one open transaction: what a service does through it happens inside that transaction, and a
// `transaction()` of its own is a savepoint. A bulk job applies an item with the item's single-item service this way,
// so the item and its recorded outcome commit together (docs/api-reference.md 14).
import type { Database, TransactionScope } from './database.js';

let savepoints = 0;

/** A Database whose every statement runs in `tx`; LISTEN, stats and close belong to `outer`, which owns `tx`. */
export function withinTransaction(outer: Database, tx: TransactionScope): Database {
  const nested: Database = {
    kind: outer.kind,
    query: (text, params) => tx.query(text, params),
    ...(tx.announceOnCommit ? { announceOnCommit: (channel: string, payload: string) => tx.announceOnCommit!(channel, payload) } : {}),
    async transaction<T>(work: (scope: TransactionScope) => Promise<T>): Promise<T> {
      savepoints = (savepoints + 1) % 1_000_000;
      const name = `nested_${savepoints}`;
      await tx.query(`SAVEPOINT ${name}`);
      // What the savepoint announces is handed on only when it is released: a change it rolled back announces nothing.
      const announcements: [channel: string, payload: string][] = [];
      const scope: TransactionScope = {
        query: (text, params) => tx.query(text, params),
        execScript: (sql) => tx.execScript(sql),
        announceOnCommit: (channel, payload) => void announcements.push([channel, payload]),
      };
      let value: T;
      try {
        value = await work(scope);
      } catch (error) {
        await tx.query(`ROLLBACK TO SAVEPOINT ${name}`);
        throw error;
      }
      await tx.query(`RELEASE SAVEPOINT ${name}`);
      for (const [channel, payload] of announcements) tx.announceOnCommit?.(channel, payload);
      return value;
    },
    listen: (channel, onNotification, onState) => outer.listen(channel, onNotification, onState),
    stats: () => outer.stats(),
    close: () => Promise.reject(new Error('A nested transaction does not close the database.')),
  };
  return nested;
}
