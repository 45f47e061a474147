/** Test infrastructure: real PostgreSQL and Redis for integration tests, and per-test isolation. */
export { createTestDatabase, testPostgresUrl, testRedisUrl, uniqueRedisPrefix, type TestDatabase } from './databases.ts';
export { resolveTestInfrastructure, type TestInfrastructure } from './infrastructure.ts';
