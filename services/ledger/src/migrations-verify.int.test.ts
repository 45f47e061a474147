/**
 * LEDGER_MIGRATIONS=verify against real PostgreSQL: on a fresh database the ledger refuses to
 * start and names what is pending; the migrate CLI (the release's Job in Kubernetes) applies the
 * migrations and the SQL function sources; then the ledger starts. A changed function file
 * that was not applied is refused the same way.
 */
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createLogger } from '@gateway/logger';
import { SchemaNotCurrentError } from '@gateway/db';
import { createTestDatabase, runNodeScript, serviceTlsEnv, sharedTestPki, testPostgresUrl, type TestDatabase } from '@gateway/testkit';
import { afterAll, describe, expect, it } from 'vitest';
import { createLedgerApp } from './app.ts';
import { loadLedgerConfig } from './config.ts';
import { ledgerMigrationsDir, ledgerSqlDir } from './ledger-schema-sources.ts';

const serverUrl = testPostgresUrl();
const databases: TestDatabase[] = [];
afterAll(async () => { await Promise.all(databases.map((database) => database.drop())); });

const migrateCli = fileURLToPath(new URL('./migrate-cli.ts', import.meta.url));
/** Every migration of this build, as the refusal and the CLI name them, e.g. `0001_ledger`. */
const migrationNames = readdirSync(ledgerMigrationsDir).filter((file) => file.endsWith('.sql')).map((file) => file.replace(/\.sql$/, '')).sort();
const functionNames = readdirSync(ledgerSqlDir).filter((file) => file.endsWith('.sql')).map((file) => file.replace(/\.sql$/, '')).sort();

/** Runs the migrate CLI as the Job does: its own process, only DATABASE_URL set. */
const runMigrateCli = (databaseUrl: string) => runNodeScript(migrateCli, { DATABASE_URL: databaseUrl });

describe.skipIf(!serverUrl)('LEDGER_MIGRATIONS=verify', async () => {
  const pki = await sharedTestPki();
  const startLedger = (databaseUrl: string) => createLedgerApp(loadLedgerConfig({
    ...serviceTlsEnv(pki, 'ledger'), DATABASE_URL: databaseUrl, LEDGER_MIGRATIONS: 'verify',
    LEDGER_GRPC_PORT: '0', LEDGER_HTTP_PORT: '0', LEDGER_METRICS_PORT: '0', SHUTDOWN_GRACE_MS: '2000',
  }), { logger: createLogger('ledger', 'silent') });

  it('refuses a fresh database naming every pending migration and function, starts once the migrate CLI ran', async () => {
    const database = await createTestDatabase(serverUrl!);
    databases.push(database);

    const refusal = await startLedger(database.url).then(() => undefined, (error: unknown) => error);
    expect(refusal).toBeInstanceOf(SchemaNotCurrentError);
    expect((refusal as SchemaNotCurrentError).pendingMigrations).toEqual(migrationNames);
    expect((refusal as SchemaNotCurrentError).pendingFunctions).toEqual(functionNames);
    expect((refusal as Error).message).toContain(`pending migrations: ${migrationNames.join(', ')}`);
    expect((refusal as Error).message).toContain('node services/ledger/src/migrate-cli.ts');
    // Verify wrote nothing: not even the bookkeeping tables.
    expect(await database.query("SELECT to_regclass('ledger.schema_migrations') AS found")).toEqual([{ found: null }]);

    const first = await runMigrateCli(database.url);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toContain(`migrations applied: ${migrationNames.join(', ')}`);
    expect(first.stdout).toContain(`SQL function sources applied: ${functionNames.join(', ')}`);
    const again = await runMigrateCli(database.url);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('migrations applied: none');
    expect(again.stdout).toContain('SQL function sources applied: none');

    const ledger = await startLedger(database.url);
    try {
      expect(ledger.isReady()).toBe(true);
    } finally {
      await ledger.close();
    }
  });

  it('refuses a database where one function source of this build is not applied, naming it', async () => {
    const database = await createTestDatabase(serverUrl!);
    databases.push(database);
    expect((await runMigrateCli(database.url)).code).toBe(0);
    const [changed] = functionNames;
    // As if this build changed the file after the database applied it.
    await database.query('UPDATE ledger.schema_functions SET checksum = $1 WHERE name = $2 RETURNING name', ['an-older-text', changed]);

    const refusal = await startLedger(database.url).then(() => undefined, (error: unknown) => error);
    expect(refusal).toBeInstanceOf(SchemaNotCurrentError);
    expect((refusal as SchemaNotCurrentError).pendingMigrations).toEqual([]);
    expect((refusal as SchemaNotCurrentError).pendingFunctions).toEqual([changed]);

    expect((await runMigrateCli(database.url)).stdout).toContain(`SQL function sources applied: ${changed}\n`);
    const ledger = await startLedger(database.url);
    await ledger.close();
  });

  it('starts on a database a newer release migrated (an old pod restarting mid-rollout, a rollback), whose function sources differ', async () => {
    const database = await createTestDatabase(serverUrl!);
    databases.push(database);
    expect((await runMigrateCli(database.url)).code).toBe(0);
    await database.query("INSERT INTO ledger.schema_migrations (version, name, checksum) VALUES (9999, 'from_a_newer_release', 'x') RETURNING version");
    await database.query('UPDATE ledger.schema_functions SET checksum = $1 WHERE name = $2 RETURNING name', ['the-newer-text', functionNames[0]]);
    const ledger = await startLedger(database.url);
    try {
      expect(ledger.isReady()).toBe(true);
    } finally {
      await ledger.close();
    }
    // Its migrate CLI (the old release's Job) still refuses to apply an older schema over it.
    const outcome = await runMigrateCli(database.url);
    expect(outcome.code).toBe(1);
    expect(outcome.stderr).toMatch(/migration 9999 \(from_a_newer_release\) that this build does not know/);
  });

  it('the migrate CLI without DATABASE_URL exits 2 and says why', async () => {
    const outcome = await runMigrateCli('');
    expect(outcome.code).toBe(2);
    expect(outcome.stderr).toMatch(/DATABASE_URL must name/);
  });
});
