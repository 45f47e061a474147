import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** A database made for one test file, so tests never see each other's rows. */
export interface TestDatabase {
  url: string;
  /** Runs one read-only query on its own connection (tests that wait for a state the services keep in the database). */
  query<Row extends Record<string, unknown>>(sql: string, params?: unknown[]): Promise<Row[]>;
  drop(): Promise<void>;
}

/** Creates an empty database on the run's PostgreSQL server. */
export async function createTestDatabase(serverUrl: string): Promise<TestDatabase> {
  const name = `gw_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async query<Row extends Record<string, unknown>>(sql: string, params: unknown[] = []): Promise<Row[]> {
      const client = new pg.Client({ connectionString: url.toString() });
      await client.connect();
      try {
        return (await client.query<Row>(sql, params)).rows;
      } finally {
        await client.end();
      }
    },
    async drop() {
      const client = new pg.Client({ connectionString: serverUrl });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}

/** A Redis key prefix unique to one test, so parallel tests share a server without colliding. */
export function uniqueRedisPrefix(label: string): string {
  return `test:${label}:${randomBytes(4).toString('hex')}:`;
}
