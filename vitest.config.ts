// Test runner configuration: one fresh database per test file, seeded from a template migrated once per run.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/helpers/global-setup.ts'],
    pool: 'forks',
    // Three files at a time. Vitest's default on two cores is one, but most files spend much of their time waiting
    // (on PostgreSQL in its own processes, on spawned servers and CLI runs), and a third file fills those waits. Whole
    // suite on the 2-core reference machine: PGlite 319 s one at a time, 222 s three at a time; PostgreSQL 245 s and
    // 146 s. Files share no state: each has its own database and temporary directories and takes free ports.
    maxWorkers: 3,
    // Generous, and one for every test and hook (no test sets a shorter one): a timeout only stops a test that hangs.
    // Tests wait for events with deadlines of their own (PATIENCE_MS in test/helpers/process.ts), which end first and
    // say what did not happen; a test that starts a server twice needs two of them. Under load (12-35 on 2 cores) a
    // hook that builds an app or spawns a server took over the 60 s this used to allow.
    testTimeout: 900_000,
    hookTimeout: 900_000,
    teardownTimeout: 60_000,
  },
});
