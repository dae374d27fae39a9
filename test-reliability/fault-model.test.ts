// The randomized fault test of the whole chain (docs/fault-test.md): two instances on a private PostgreSQL cluster,
// reference locks and phones (src/simulator/), a seeded schedule of operations and faults, five invariants checked
// after every step. The short run: fixed seeds plus one random seed, printed. Then each invariant shown failing when
// its guarantee is broken on purpose in the model's own locks, phones or receiver.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAll } from '../test/helpers/process.js';
import { privateClusterAvailable } from './helpers/cluster.js';
import { CAUGHT_BY, describeFinding, runModel, type RunOptions } from './helpers/fault-model/run.js';
import { startService, type Service } from './helpers/fault-model/service.js';
import { BREAKAGES, type Breakage } from './helpers/fault-model/world.js';

const FIXED_SEEDS = [1, 20261128];
const RANDOM_SEED = Math.floor(Math.random() * 2 ** 31);
/** Steps of each short run: with the set-up of its tenant, locks and phones and the final drain, about 20 s each on 2 cores. */
const STEPS = 20;

/** What each broken run needs more of to reach its violation quickly. */
const FAVOUR: Record<Breakage, RunOptions['favour']> = {
  'sync-skips-revocations': { issue: 20, download: 20, revoke: 10, sync: 20 },
  'lock-ignores-phone-list': { issue: 15, download: 20, revoke: 5, 'rotate-key': 8, visit: 40 },
  'lock-ignores-lock-state': { issue: 15, download: 20, lockdown: 6, sync: 10, visit: 40 },
  'receipt-overclaims': { issue: 10, revoke: 10, download: 10, visit: 20, relay: 20 },
  'receiver-drops': { issue: 20 },
  'lose-committed-event': {},
};

describe.skipIf(!privateClusterAvailable())('the fault model: no lock opens for a revocation it should know, whatever fails (private cluster)', () => {
  let service: Service;

  beforeAll(async () => {
    service = await startService();
  }, 180_000);

  afterAll(async () => {
    await service?.close();
    await killAll();
  }, 60_000);

  it.each([...FIXED_SEEDS, RANDOM_SEED])('seed %i: every invariant holds after every step', async (seed) => {
    if (seed === RANDOM_SEED) process.stdout.write(`[fault model] random seed ${seed}: repeat with npm run test:faults -- --seed ${seed} --steps ${STEPS}\n`);
    const report = await runModel(service, { seed, steps: STEPS, locks: 3, phones: 3, verbose: true });
    expect(report.findings.map(describeFinding)).toEqual([]);
    expect(report.errors).toEqual([]);
    expect(report.steps).toBe(STEPS);
    // The fixed seeds are chosen to do what the test is for (doors decided, revocations made); a random schedule of
    // this length may draw no revocation, and then has only its invariants to prove.
    if (seed !== RANDOM_SEED) {
      expect(Object.keys(report.counts).filter((name) => name.startsWith('decision-')).length).toBeGreaterThan(0);
      expect(report.counts.revoke ?? 0).toBeGreaterThan(0);
    }
  });

  it.each(BREAKAGES.map((breakage) => [breakage, CAUGHT_BY[breakage]] as const))('broken on purpose (%s): %s reports it with the seed and the step', async (breakage, invariant) => {
    const seed = 7;
    // Two locks (one online, one offline) and two phones: the broken behaviour shows within a few dozen steps.
    const report = await runModel(service, { seed, steps: 150, breakage, stopAt: invariant, locks: 2, phones: 2, faultRate: 0, favour: FAVOUR[breakage] });
    const caught = report.findings.find((finding) => finding.invariant === invariant);
    expect(caught, `no ${invariant} violation in ${report.steps} steps: ${JSON.stringify(report.findings)}`).toBeDefined();
    expect(describeFinding(caught!)).toMatch(new RegExp(`^\\[fault model\\] seed ${seed} step ${caught!.step} ${invariant}: `));
  });
});
