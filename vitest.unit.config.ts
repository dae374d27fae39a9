// The fast tier (`npm run test:unit`): pure functions under test/unit, no app, no database, no build; seconds, not
// minutes. `npm test` runs these too, with everything else.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/unit/**/*.test.ts'],
  },
});
