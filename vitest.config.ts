import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['packages/**/src/**/*.test.ts', 'services/**/src/**/*.test.ts', 'tests/**/*.test.ts', 'scripts/**/*.test.ts'],
    // The fault suite runs on its own after these (pnpm test:faults, vitest.faults.config.ts).
    exclude: ['**/node_modules/**', 'tests/faults/**'],
    globalSetup: ['packages/testkit/src/global-setup.ts'],
    reporters: ['default', './packages/testkit/src/summary-reporter.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
