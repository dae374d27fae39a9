// The reliability suite (`npm run test:reliability`): real servers, private PostgreSQL clusters, outages and crashes.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test-reliability/**/*.test.ts'],
    globalSetup: ['test-reliability/helpers/global-setup.ts'],
    pool: 'forks',
    // One file at a time: each runs servers and databases of its own, and timings are part of what is asserted.
    fileParallelism: false,
    testTimeout: 300_000,
    hookTimeout: 300_000,
    teardownTimeout: 60_000,
  },
});
