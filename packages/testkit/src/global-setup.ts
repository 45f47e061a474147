import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { testPkiRootEnv } from './test-pki.ts';
import { resolveTestInfrastructure } from './infrastructure.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    postgresUrl: string | undefined;
    redisUrl: string | undefined;
  }
}

/**
 * Vitest global setup: resolves PostgreSQL and Redis once for the whole run. Under CI=true a
 * missing piece fails the run before any test; elsewhere the tests that need it are skipped
 * and this says so loudly.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const infrastructure = await resolveTestInfrastructure();
  if (infrastructure.problems.length > 0) {
    const report = infrastructure.problems.map((p) => `  - ${p}`).join('\n');
    if (process.env.CI === 'true') {
      await infrastructure.stop();
      throw new Error(`CI=true and the integration tests' infrastructure is missing:\n${report}`);
    }
    console.warn(`\n!!! Integration tests that need the following will be SKIPPED:\n${report}\n`);
  }
  project.provide('postgresUrl', infrastructure.postgresUrl);
  project.provide('redisUrl', infrastructure.redisUrl);
  // Every test process makes its certificates under this one folder (testPkiRootEnv), removed
  // when the run ends: the workers are killed, not exited, so they cannot clean up themselves.
  const pkiRoot = await mkdtemp(join(tmpdir(), 'gateway-test-pki-'));
  process.env[testPkiRootEnv] = pkiRoot;
  return async () => {
    await rm(pkiRoot, { recursive: true, force: true });
    await infrastructure.stop();
  };
}
