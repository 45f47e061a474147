/**
 * The set-up the ledger's integration tests share, stated once: a ledger started for a describe
 * block (fresh database, migrated, gRPC on port 0, proxy and admin clients) and closed after it,
 * or a fresh migrated database alone; each with the CONSERVATION check the block asks for.
 */
import { openDatabase, type Database } from '@gateway/db';
import { createTestDatabase, testPostgresUrl, type TestDatabase } from '@gateway/testkit';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { findBalanceDifferences } from '../domain/find-balance-differences.ts';
import { prepareLedgerSchema } from '../ledger-schema.ts';
import { startTestLedger, type TestBackend, type TestLedger, type TestLedgerOptions } from './start-test-ledger.ts';

/**
 * Longest a block's set-up may take, ms: a bound, not a timing assertion. PGlite runs every
 * migration and function file in WebAssembly, which on a machine busy with other test files can
 * take longer than the default hook timeout.
 */
const startTimeoutMs = 180_000;

/**
 * When a block checks that the books balance (CONSERVATION): `after-each`, after every test,
 * findBalanceDifferences over the ledger's database finds nothing; `after-all`, once the block's
 * tests are done, Verify answers no difference (blocks whose tests leave grants held between them).
 */
export type ConservationCheck = 'after-each' | 'after-all';

/** How a block's ledger is started and checked. */
export interface UseTestLedgerOptions extends TestLedgerOptions {
  /** The CONSERVATION check the block runs; none when absent. */
  conservation?: ConservationCheck;
  /** The block's tests are skipped (no server for this backend): nothing is started or checked. */
  skip?: boolean;
}

/**
 * A stand-in for a value a beforeAll hook creates, usable wherever the value is once the hook has
 * run: the block's code keeps one `const` instead of a `let` assigned in the hook.
 */
function lateView<T extends object>(what: string, current: () => object | undefined, extra: Record<string, () => unknown> = {}): T {
  return new Proxy({} as T, {
    get(_target, key) {
      // Not a promise: awaiting or returning the view from an async function must not reach for the value.
      if (key === 'then') return undefined;
      if (typeof key === 'string' && Object.hasOwn(extra, key)) return extra[key]!();
      const value = current();
      if (value === undefined) throw new Error(`${what} is not started yet: use it inside a test or a hook after its set-up`);
      const member: unknown = Reflect.get(value, key, value);
      return typeof member === 'function' ? (member as (...args: unknown[]) => unknown).bind(value) : member;
    },
  });
}

/**
 * Starts a test ledger before the current describe block's tests and closes it after them
 * (after the CONSERVATION check of `options.conservation`). Returns the ledger as the tests use it.
 */
export function useTestLedger(backend: TestBackend, options: UseTestLedgerOptions = {}): TestLedger {
  let ledger: TestLedger | undefined;
  beforeAll(async () => {
    if (!options.skip) ledger = await startTestLedger(backend, options);
  }, startTimeoutMs);
  afterAll(async () => {
    if (!ledger) return;
    try {
      if (options.conservation === 'after-all') expect((await ledger.verify()).differences).toEqual([]);
    } finally {
      await ledger.close();
    }
  });
  if (options.conservation === 'after-each') {
    afterEach(async () => {
      if (!options.skip) expect(await findBalanceDifferences(ledger!.database)).toEqual([]);
    });
  }
  return lateView<TestLedger>('the test ledger', () => ledger);
}

/** A fresh, migrated ledger database for a describe block; `url` is its PostgreSQL URL ('' over PGlite). */
export interface LedgerTestDatabase extends Database {
  readonly url: string;
}

/** How a block's database is made. */
export interface UseLedgerDatabaseOptions {
  /** Connections in the block's pool (PostgreSQL). Default 4. */
  poolSize?: number;
}

/**
 * Makes a fresh database before the current describe block's tests (a new PostgreSQL database on
 * the run's server, or an in-memory PGlite), brings it to the ledger's schema (prepareLedgerSchema),
 * and closes and drops it after them. Returns it as the tests use it.
 */
export function useLedgerDatabase(backend: TestBackend = 'postgres', options: UseLedgerDatabaseOptions = {}): LedgerTestDatabase {
  let testDatabase: TestDatabase | undefined;
  let db: Database | undefined;
  beforeAll(async () => {
    if (backend === 'postgres') {
      const serverUrl = testPostgresUrl();
      if (!serverUrl) throw new Error('a PostgreSQL test database needs TEST_DATABASE_URL (skip the block without it)');
      testDatabase = await createTestDatabase(serverUrl);
    }
    db = await openDatabase({ url: testDatabase?.url, schema: 'ledger', poolSize: options.poolSize ?? 4 });
    await prepareLedgerSchema(db);
  }, startTimeoutMs);
  afterAll(async () => {
    await db?.close();
    await testDatabase?.drop();
  });
  return lateView<LedgerTestDatabase>('the test database', () => db, { url: () => testDatabase?.url ?? '' });
}
