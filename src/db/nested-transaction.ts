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
      let value: T;
      try {
        value = await work(tx);
      } catch (error) {
        await tx.query(`ROLLBACK TO SAVEPOINT ${name}`);
        throw error;
      }
      await tx.query(`RELEASE SAVEPOINT ${name}`);
      return value;
    },
    listen: (channel, onNotification, onState) => outer.listen(channel, onNotification, onState),
    stats: () => outer.stats(),
    close: () => Promise.reject(new Error('A nested transaction does not close the database.')),
  };
  return nested;
}
