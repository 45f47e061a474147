/**
 * ADMIN_MIGRATIONS=verify against real PostgreSQL: on a fresh database the admin refuses to
 * start and names the pending migrations; the migrate CLI (the release's Job in Kubernetes)
 * applies them; then the admin starts.
 */
import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createLogger } from '@gateway/logger';
import { SchemaNotCurrentError } from '@gateway/db';
import { createTestDatabase, runNodeScript, serviceTlsEnv, sharedTestPki, testPostgresUrl, type TestDatabase } from '@gateway/testkit';
import { afterAll, describe, expect, it } from 'vitest';
import { createAdminApp } from './app.ts';
import { loadAdminConfig } from './config.ts';
import { startFakeLedger } from './test-support/fake-ledger.ts';

const serverUrl = testPostgresUrl();
const databases: TestDatabase[] = [];
afterAll(async () => { await Promise.all(databases.map((database) => database.drop())); });

const migrateCli = fileURLToPath(new URL('./migrate-cli.ts', import.meta.url));
// The admin's migrations folder, read here rather than through an export kept only for this test.
const adminMigrationsDir = fileURLToPath(new URL('../migrations', import.meta.url));
const migrationNames = readdirSync(adminMigrationsDir).filter((file) => file.endsWith('.sql')).map((file) => file.replace(/\.sql$/, '')).sort();

/** Runs the migrate CLI as the Job does: its own process, only DATABASE_URL set. */
const runMigrateCli = (databaseUrl: string) => runNodeScript(migrateCli, { DATABASE_URL: databaseUrl });

describe.skipIf(!serverUrl)('ADMIN_MIGRATIONS=verify', () => {
  it('refuses a fresh database naming every pending migration, starts once the migrate CLI ran', async () => {
    const database = await createTestDatabase(serverUrl!);
    databases.push(database);
    const ledger = await startFakeLedger();
    const config = loadAdminConfig({
      ...serviceTlsEnv(await sharedTestPki(), 'admin'), DATABASE_URL: database.url, ADMIN_MIGRATIONS: 'verify',
      ADMIN_HTTP_PORT: '0', ADMIN_GRPC_PORT: '0', ADMIN_METRICS_PORT: '0', LEDGER_GRPC_URL: ledger.target,
      ADMIN_ENCRYPTION_KEY: randomBytes(32).toString('base64'), SHUTDOWN_GRACE_MS: '2000',
    });
    const logger = createLogger('admin', 'silent');
    try {
      const refusal = await createAdminApp(config, { logger }).then(() => undefined, (error: unknown) => error);
      expect(refusal).toBeInstanceOf(SchemaNotCurrentError);
      expect((refusal as SchemaNotCurrentError).pendingMigrations).toEqual(migrationNames);
      expect((refusal as Error).message).toContain(`pending migrations: ${migrationNames.join(', ')}`);
      expect((refusal as Error).message).toContain('node services/admin/src/migrate-cli.ts');
      expect(await database.query("SELECT to_regclass('admin.schema_migrations') AS found")).toEqual([{ found: null }]);

      const first = await runMigrateCli(database.url);
      expect(first.stderr).toBe('');
      expect(first.code).toBe(0);
      expect(first.stdout).toContain(`migrations applied: ${migrationNames.join(', ')}`);
      expect((await runMigrateCli(database.url)).stdout).toContain('migrations applied: none');

      const admin = await createAdminApp(config, { logger });
      try {
        expect(admin.isReady()).toBe(true);
      } finally {
        await admin.close();
      }
    } finally {
      await ledger.close();
    }
  });
});
