import type { TestProject } from 'vitest/node';
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
  return () => infrastructure.stop();
}
