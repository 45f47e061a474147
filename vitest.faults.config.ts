import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineConfig } from 'vitest/config';

// Rows of the fault table travel from the test workers to the reporter through this file.
process.env.FAULT_TABLE_FILE ??= join(tmpdir(), `gateway-fault-table-${process.pid}.jsonl`);

/** `pnpm test:faults`: the fault suite (tests/faults), one file at a time, with its table at the end. */
export default defineConfig({
  test: {
    include: ['tests/faults/**/*.faults.test.ts'],
    exclude: ['**/node_modules/**'],
    globalSetup: ['packages/testkit/src/global-setup.ts'],
    reporters: ['default', './packages/testkit/src/summary-reporter.ts', './tests/faults/support/fault-table-reporter.ts'],
    testTimeout: 180_000,
    hookTimeout: 120_000,
    pool: 'forks',
    fileParallelism: false,
  },
});
