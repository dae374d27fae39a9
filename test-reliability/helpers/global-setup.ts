// Runs once per reliability run: the servers and CLI runs of this suite start from dist/ (test/helpers/process.ts), so
// it is compiled first when a source is newer than its last build (scripts/build-if-stale.mjs), as the main suite does.
// With RELIABILITY_CITUS=1 it also checks that Citus is installed, and says the private clusters are Citus clusters.
import { execFileSync } from 'node:child_process';
import { ROOT } from '../../test/helpers/process.js';
import { RELIABILITY_ON_CITUS, citusInstalled } from './cluster.js';

export default function setup(): void {
  execFileSync(process.execPath, ['scripts/build-if-stale.mjs'], { cwd: ROOT, stdio: 'inherit' });
  if (RELIABILITY_ON_CITUS) {
    if (!citusInstalled()) throw new Error('RELIABILITY_CITUS=1, but Citus is not installed into this PostgreSQL (no citus.so in pg_config --pkglibdir).');
    process.stderr.write('Reliability tests on Citus: each private cluster is a coordinator and 2 workers; "the database" stopped, crashed and frozen is the coordinator.\n');
  }
}
