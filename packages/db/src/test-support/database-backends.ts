import { createTestDatabase, type TestDatabase } from '@gateway/testkit';
import { openDatabase, type Database } from '../index.ts';

/**
 * The two databases a @gateway/db test runs on, for `describe.each`: embedded PGlite, and a fresh
 * PostgreSQL database on `serverUrl` (pushed to `created`, for the test file to drop afterwards).
 */
export function databaseBackends(serverUrl: string | undefined, created: TestDatabase[]): Array<[string, () => Promise<Database>]> {
  return [
    ['pglite', () => openDatabase({ schema: 'svc' })],
    ['postgres', async () => {
      const testDatabase = await createTestDatabase(serverUrl!);
      created.push(testDatabase);
      return openDatabase({ url: testDatabase.url, schema: 'svc', poolSize: 4 });
    }],
  ];
}
