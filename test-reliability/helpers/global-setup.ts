// Runs once per reliability run: the servers and CLI runs of this suite start from dist/ (test/helpers/process.ts), so
// it is compiled first when a source is newer than its last build (scripts/build-if-stale.mjs), as the main suite does.
import { execFileSync } from 'node:child_process';
import { ROOT } from '../../test/helpers/process.js';

export default function setup(): void {
  execFileSync(process.execPath, ['scripts/build-if-stale.mjs'], { cwd: ROOT, stdio: 'inherit' });
}
