import { openDatabase, type Database } from '@gateway/db';
import { createTestDatabase, type TestDatabase } from '@gateway/testkit';
import { startAdminHarness, type AdminHarness, type AdminHarnessOptions } from './admin-harness.ts';

/** A running admin on a fresh PostgreSQL database of its own, with a pool for reading and arranging rows directly. */
export interface PostgresAdmin {
  testDatabase: TestDatabase;
  admin: AdminHarness;
  /** A pool onto the admin's schema of the same database (the admin migrated it at start). */
  db: Database;
  /** Closes the pool and the admin (and its fake ledger), then drops the database. */
  close(): Promise<void>;
}

/** How a test wants its PostgreSQL admin: the harness's options (but its database) and the size of the test's own pool. */
export interface PostgresAdminOptions extends Omit<AdminHarnessOptions, 'databaseUrl' | 'database'> {
  /** Connections of the test's own pool (default 2). */
  poolSize?: number;
}

/**
 * The set-up most admin integration tests share: a fresh database on the test server, an admin
 * started on it against a fake ledger (migrating it), and a pool of the test's own; close()
 * undoes all three. A failed start drops what was made so far.
 */
export async function startPostgresAdmin(serverUrl: string, options: PostgresAdminOptions = {}): Promise<PostgresAdmin> {
  const { poolSize = 2, ...harnessOptions } = options;
  const testDatabase = await createTestDatabase(serverUrl);
  let admin: AdminHarness | undefined;
  try {
    admin = await startAdminHarness({ ...harnessOptions, databaseUrl: testDatabase.url });
    const db = await openDatabase({ url: testDatabase.url, schema: 'admin', poolSize });
    const started = admin;
    return {
      testDatabase, admin: started, db,
      async close() {
        await db.close();
        await started.close();
        await testDatabase.drop();
      },
    };
  } catch (error) {
    await admin?.close();
    await testDatabase.drop();
    throw error;
  }
}
