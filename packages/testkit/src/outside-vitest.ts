/**
 * The parts of the testkit that do not need a vitest run (benchmarks and scripts import this
 * entry: `@gateway/testkit/outside-vitest`).
 */
export { createTestDatabase, uniqueRedisPrefix, type TestDatabase } from './databases.ts';
export { resolveTestInfrastructure, type TestInfrastructure } from './infrastructure.ts';
export { freePort, startServiceProcess, waitUntilReady, type ServiceProcess } from './service-processes.ts';
export { createTestPki, serviceTlsEnv, type TestIdentity, type TestPki } from './test-pki.ts';
export { processCpuMs, processPeakRssMb, processRssMb } from './process-stats.ts';
