// Test runner configuration: one fresh database per test file, seeded from a template migrated once per run.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/helpers/global-setup.ts'],
    pool: 'forks',
    // Generous: some files spawn the real server and CLI, which take seconds each on a loaded 2-core machine.
    testTimeout: 120_000,
    hookTimeout: 60_000,
    teardownTimeout: 30_000,
  },
});
