import { existsSync } from 'node:fs';
import pg from 'pg';
import { Redis } from 'ioredis';

/** Where the integration tests' PostgreSQL and Redis are, as resolved once per test run. */
export interface TestInfrastructure {
  /** A superuser URL of a server the tests may create databases on; undefined when there is none. */
  postgresUrl: string | undefined;
  redisUrl: string | undefined;
  /** Why an item is missing, printed and (under CI) failing the run. */
  problems: string[];
  /** Stops what testcontainers started. */
  stop(): Promise<void>;
}

function dockerAvailable(): boolean {
  return Boolean(process.env.DOCKER_HOST) || existsSync('/var/run/docker.sock');
}

async function postgresAnswers(url: string): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return undefined;
  } catch (error) {
    return `PostgreSQL at ${new URL(url).host} did not answer: ${(error as Error).message}`;
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function redisAnswers(url: string): Promise<string | undefined> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 3000, retryStrategy: () => null });
  try {
    await redis.connect();
    await redis.ping();
    return undefined;
  } catch (error) {
    return `Redis at ${new URL(url).host} did not answer: ${(error as Error).message}`;
  } finally {
    redis.disconnect();
  }
}

/** Where a developer's machine usually runs them; tried last, and only when they answer. */
const conventionalPostgresUrl = 'postgres://postgres@127.0.0.1:5432/postgres';
const conventionalRedisUrl = 'redis://127.0.0.1:6379';

/**
 * Finds the tests' PostgreSQL and Redis: TEST_DATABASE_URL / DATABASE_URL and TEST_REDIS_URL /
 * REDIS_URL first; where unset and a Docker engine is reachable, containers from testcontainers;
 * otherwise servers answering at the conventional local addresses.
 */
export async function resolveTestInfrastructure(env: NodeJS.ProcessEnv = process.env): Promise<TestInfrastructure> {
  const problems: string[] = [];
  const stops: Array<() => Promise<unknown>> = [];
  let postgresUrl = env.TEST_DATABASE_URL || env.DATABASE_URL;
  let redisUrl = env.TEST_REDIS_URL || env.REDIS_URL;

  if ((!postgresUrl || !redisUrl) && dockerAvailable()) {
    if (!postgresUrl) {
      const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
      const container = await new PostgreSqlContainer('postgres:16-alpine').start();
      stops.push(() => container.stop());
      postgresUrl = container.getConnectionUri();
    }
    if (!redisUrl) {
      const { RedisContainer } = await import('@testcontainers/redis');
      const container = await new RedisContainer('redis:7-alpine').start();
      stops.push(() => container.stop());
      redisUrl = container.getConnectionUrl();
    }
  }

  if (!postgresUrl && !(await postgresAnswers(conventionalPostgresUrl))) postgresUrl = conventionalPostgresUrl;
  if (!redisUrl && !(await redisAnswers(conventionalRedisUrl))) redisUrl = conventionalRedisUrl;

  if (postgresUrl) {
    const problem = await postgresAnswers(postgresUrl);
    if (problem) { problems.push(problem); postgresUrl = undefined; }
  } else {
    problems.push(`no PostgreSQL: set TEST_DATABASE_URL or DATABASE_URL, make a Docker engine reachable, or run one at ${new URL(conventionalPostgresUrl).host}`);
  }
  if (redisUrl) {
    const problem = await redisAnswers(redisUrl);
    if (problem) { problems.push(problem); redisUrl = undefined; }
  } else {
    problems.push(`no Redis: set TEST_REDIS_URL or REDIS_URL, make a Docker engine reachable, or run one at ${new URL(conventionalRedisUrl).host}`);
  }

  return {
    postgresUrl, redisUrl, problems,
    stop: async () => { await Promise.all(stops.map((stop) => stop())); },
  };
}
