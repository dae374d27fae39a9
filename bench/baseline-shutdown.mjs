// How every baseline server stops: the bench stops its children with SIGTERM, a terminal ctrl-c sends SIGINT to the
// whole group; `close` releases what the baseline holds, then the process exits (1 when closing failed).
import process from 'node:process';

export function exitOnSignals(close) {
  for (const signal of ['SIGTERM', 'SIGINT']) {
    process.once(signal, () => {
      close().then(
        () => process.exit(0),
        () => process.exit(1),
      );
    });
  }
}
