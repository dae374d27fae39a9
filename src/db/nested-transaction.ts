// The database port over one open transaction: what a service does through it happens inside that transaction, and a
// `transaction()` of its own is a savepoint. A bulk job applies an item with the item's single-item service this way,
// so the item and its recorded outcome commit together (docs/api-reference.md 14).
import type { Database, TransactionScope } from './database.js';

let savepoints = 0;

type Announcement = [channel: string, payload: string];

/** A Database whose every statement runs in `tx`; LISTEN, stats and close belong to `outer`, which owns `tx`. */
export function withinTransaction(outer: Database, tx: TransactionScope): Database {
  // What a savepoint announces is handed on only when it is released: a change it rolled back announces nothing. The
  // savepoints open now, innermost last: an announcement made through this Database itself (a bulk job's item services
  // hold it, not the savepoint's scope) belongs to the innermost one, as the statement that made it does.
  const open: Announcement[][] = [];
  const announce = (channel: string, payload: string) => {
    const innermost = open.at(-1);
    if (innermost) innermost.push([channel, payload]);
    else tx.announceOnCommit?.(channel, payload);
  };
  const nested: Database = {
    kind: outer.kind,
    query: (text, params) => tx.query(text, params),
    ...(tx.announceOnCommit ? { announceOnCommit: announce } : {}),
    async transaction<T>(work: (scope: TransactionScope) => Promise<T>): Promise<T> {
      savepoints = (savepoints + 1) % 1_000_000;
      const name = `nested_${savepoints}`;
      await tx.query(`SAVEPOINT ${name}`);
      const announcements: Announcement[] = [];
      open.push(announcements);
      const scope: TransactionScope = {
        query: (text, params) => tx.query(text, params),
        execScript: (sql) => tx.execScript(sql),
        announceOnCommit: (channel, payload) => void announcements.push([channel, payload]),
      };
      let value: T;
      try {
        value = await work(scope);
      } catch (error) {
        open.splice(open.indexOf(announcements), 1);
        await tx.query(`ROLLBACK TO SAVEPOINT ${name}`);
        throw error;
      }
      open.splice(open.indexOf(announcements), 1);
      await tx.query(`RELEASE SAVEPOINT ${name}`);
      for (const [channel, payload] of announcements) announce(channel, payload);
      return value;
    },
    listen: (channel, onNotification, onState) => outer.listen(channel, onNotification, onState),
    stats: () => outer.stats(),
    close: () => Promise.reject(new Error('A nested transaction does not close the database.')),
  };
  return nested;
}
