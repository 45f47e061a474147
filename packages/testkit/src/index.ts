/** Test infrastructure: real PostgreSQL and Redis for integration tests, and per-test isolation. */
export { testPostgresUrl, testRedisUrl } from './provided-infrastructure.ts';
export { createTestDatabase, uniqueRedisPrefix, type TestDatabase } from './databases.ts';
export { resolveTestInfrastructure, type TestInfrastructure } from './infrastructure.ts';
export { freePort, runNodeScript, startServiceProcess, waitUntilReady, type ScriptOutcome, type ServiceProcess } from './service-processes.ts';
export {
  createTestPki, serviceTlsEnv, sharedTestPki, sharedTestPkiNow, testTransportSecurity, type TestIdentity, type TestPki, type TestTlsFiles,
} from './test-pki.ts';
export {
  ledgerScenarios, runLedgerScenario, type LedgerLaw, type LedgerScenario, type LedgerScenarioTarget, type ScenarioBalance,
  type ScenarioMoney, type ScenarioStep,
} from './ledger-scenarios.ts';
export { startOtlpReceiver, otlpSpanKind, type OtlpReceiver, type ReceivedSpan, type ReceivedAttribute } from './otlp-receiver.ts';
export { parsePrometheusText, scrapeMetrics, sumSamples, type PrometheusSample } from './prometheus-text.ts';
