import { inject } from 'vitest';

/** The run's PostgreSQL server URL, or undefined when the run has none (tests then skip). */
export function testPostgresUrl(): string | undefined {
  return inject('postgresUrl');
}

/** The run's Redis URL, or undefined when the run has none (tests then skip). */
export function testRedisUrl(): string | undefined {
  return inject('redisUrl');
}

