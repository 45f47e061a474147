import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { databaseBackends } from './test-support/database-backends.ts';
import { createTestDatabase, testPostgresUrl, type TestDatabase } from '@gateway/testkit';
import { assertOutsideTransaction, migrate, openDatabase } from './index.ts';

const migrationsDir = fileURLToPath(new URL('./test-migrations', import.meta.url));
const serverUrl = testPostgresUrl();
const testDatabases: TestDatabase[] = [];
afterAll(async () => { await Promise.all(testDatabases.map((d) => d.drop())); });

const backends = databaseBackends(serverUrl, testDatabases);

describe.each(backends)('database over %s', (kind, open) => {
  const skip = kind === 'postgres' && !serverUrl;

  it.skipIf(skip)('refuses a network call inside a transaction (and in what it awaits), and allows it before and after', async () => {
    const db = await open();
    try {
      const networkCall = async () => { await Promise.resolve(); assertOutsideTransaction('a test call'); };
      await networkCall();
      await expect(db.transaction(async (tx) => {
        await tx.query('SELECT 1');
        await networkCall();
      })).rejects.toThrow(/a test call was called inside a database transaction/);
      await db.transaction(async (tx) => { await tx.query('SELECT 1'); });
      await networkCall();
    } finally {
      await db.close();
    }
  });

  it.skipIf(skip)('migrates once, records versions, and returns int8 as bigint', async () => {
    const db = await open();
    try {
      expect(await migrate(db, migrationsDir)).toEqual({ applied: ['0001_things', '0002_more'], superseded: [] });
      expect(await migrate(db, migrationsDir)).toEqual({ applied: [], superseded: [] });
      const big = 9_007_199_254_740_993n; // 2^53 + 1: a float would lose it
      await db.query('INSERT INTO things (id, amount_micros, note) VALUES ($1, $2, $3)', ['a', big, 'n']);
      const { rows } = await db.query<{ amount_micros: bigint }>('SELECT amount_micros FROM things WHERE id = $1', ['a']);
      expect(rows[0]!.amount_micros).toBe(big);
      const versions = await db.query<{ version: number }>('SELECT version FROM svc.schema_migrations ORDER BY version');
      expect(versions.rows.map((r) => r.version)).toEqual([1, 2]);
    } finally {
      await db.close();
    }
  });

  it.skipIf(skip)('rolls a failed transaction back completely', async () => {
    const db = await open();
    try {
      await migrate(db, migrationsDir);
      await expect(db.transaction(async (tx) => {
        await tx.query('INSERT INTO things (id, amount_micros) VALUES ($1, $2)', ['b', 5n]);
        await tx.query('INSERT INTO things (id, amount_micros) VALUES ($1, $2)', ['c', -1n]); // violates CHECK
      })).rejects.toThrow();
      const { rowCount } = await db.query('SELECT 1 FROM things WHERE id = $1', ['b']);
      expect(rowCount).toBe(0);
    } finally {
      await db.close();
    }
  });
});

describe('database over postgres when the server goes away', () => {
  it.skipIf(!serverUrl)('a transaction whose connection dies between two queries rejects, and the process lives on', async () => {
    const testDatabase = await createTestDatabase(serverUrl!);
    testDatabases.push(testDatabase);
    const db = await openDatabase({ url: testDatabase.url, schema: 'svc', poolSize: 4 });
    try {
      const outcome = db.transaction(async (tx) => {
        const { rows } = await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
        const pid = rows[0]!.pid;
        // The server ends this transaction's connection while the client is between queries
        // (as a PostgreSQL restart does); wait until the server has let the backend go.
        await db.query('SELECT pg_terminate_backend($1)', [pid]);
        for (let i = 0; i < 200; i += 1) {
          const { rows: left } = await db.query<{ n: bigint }>('SELECT count(*) AS n FROM pg_stat_activity WHERE pid = $1', [pid]);
          if (left[0]!.n === 0n) break;
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        // The client sees the socket end on its next turn of the event loop.
        await new Promise((resolve) => setImmediate(resolve));
        await new Promise((resolve) => setTimeout(resolve, 50));
        await tx.query('SELECT 1');
      });
      await expect(outcome).rejects.toThrow();
      // The broken connection went back to the pool destroyed: the next work gets a live one.
      expect((await db.query<{ one: number }>('SELECT 1 AS one')).rows[0]!.one).toBe(1);
    } finally {
      await db.close();
    }
  });
});
