import { fileURLToPath } from 'node:url';
import { migrate, verifySchemaCurrent, type Database } from '@gateway/db';

/** The folder of the admin's SQL migrations. */
const adminMigrationsDir = fileURLToPath(new URL('../migrations', import.meta.url));

/** What an operator runs to apply the admin's schema (the release's migration Job runs it). */
const adminMigrateCommand = 'node services/admin/src/migrate-cli.ts';

/**
 * Brings the admin's schema up to this build (`apply`: every start of `pnpm start`, the tests and
 * the migrate CLI), or only checks it is (`verify`: Kubernetes, where the release's migration
 * Job applied it): then nothing changes, and SchemaNotCurrentError names the pending migrations
 * unless the schema is current. Returns the migrations applied now.
 */
export async function prepareAdminSchema(db: Database, mode: 'apply' | 'verify' = 'apply'): Promise<{ applied: string[]; superseded: string[] }> {
  if (mode === 'verify') {
    await verifySchemaCurrent(db, { migrations: adminMigrationsDir, migrateCommand: adminMigrateCommand });
    return { applied: [], superseded: [] };
  }
  return migrate(db, adminMigrationsDir);
}
