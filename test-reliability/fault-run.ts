// The long run of the fault model on demand (docs/fault-test.md): `npm run test:faults -- --seed S --steps N`, with
// `--break NAME` to run it with a guarantee broken on purpose and `--quiet` to print only violations and the summary.
// Exits 0 when every invariant held, 1 when one did not (each violation printed with its seed and step).
import { parseArgs } from 'node:util';
import { killAll } from '../test/helpers/process.js';
import { privateClusterAvailable } from './helpers/cluster.js';
import { runModel } from './helpers/fault-model/run.js';
import { startService } from './helpers/fault-model/service.js';
import { BREAKAGES, type Breakage } from './helpers/fault-model/world.js';

const { values } = parseArgs({
  options: {
    seed: { type: 'string' },
    steps: { type: 'string', default: '500' },
    break: { type: 'string' },
    quiet: { type: 'boolean', default: false },
  },
});
const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed);
const steps = Number(values.steps);
if (!Number.isSafeInteger(seed) || seed < 0 || !Number.isSafeInteger(steps) || steps < 1) {
  process.stderr.write('usage: npm run test:faults -- [--seed S] [--steps N] [--break NAME] [--quiet]\n');
  process.exit(2);
}
if (values.break !== undefined && !BREAKAGES.includes(values.break as Breakage)) {
  process.stderr.write(`--break is one of ${BREAKAGES.join(', ')}\n`);
  process.exit(2);
}
if (!privateClusterAvailable()) {
  process.stderr.write('the fault model needs the PostgreSQL 15 binaries and a postgres OS user (test-reliability/helpers/cluster.ts)\n');
  process.exit(2);
}

process.stdout.write(`[fault model] seed ${seed}, ${steps} steps\n`);
const service = await startService();
let failed = true;
try {
  const report = await runModel(service, { seed, steps, verbose: !values.quiet, ...(values.break ? { breakage: values.break as Breakage } : {}) });
  failed = report.findings.length > 0 || report.errors.length > 0;
  for (const error of report.errors) process.stdout.write(`[fault model] error: ${error}\n`);
} finally {
  await service.close();
  await killAll();
}
process.exit(failed ? 1 : 0);
