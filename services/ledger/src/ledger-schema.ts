import { applySqlSources, migrate, verifySchemaCurrent, type Database } from '@gateway/db';
import { ledgerMigrationsDir, ledgerSqlDir } from './ledger-schema-sources.ts';

/** What preparing the ledger's database did: migrations run (or re-recorded) and function files applied. */
export interface LedgerSchemaReport {
  /** Migrations applied now, e.g. `0008_drop_ledger_refuse_unheld`. */
  applied: string[];
  /** Applied migrations whose reviewed new text was accepted (superseded-checksums.json). */
  superseded: string[];
  /** Function source files applied now (new or changed), e.g. `ledger_reserve`. */
  functions: string[];
}

/** What an operator runs to apply the ledger's schema (the release's migration Job runs it). */
const ledgerMigrateCommand = 'node services/ledger/src/migrate-cli.ts';

/**
 * Brings a ledger database up to this build: the schema migrations, then the SQL function
 * sources (`services/ledger/sql`), each in one transaction under the same advisory lock, so
 * replicas starting together take turns. Migrations never call these functions (a new
 * database has none until the second step). Every start (LEDGER_MIGRATIONS=apply), every test,
 * the benchmark and the migrate CLI call this. With `verify` (Kubernetes: the release's migration
 * Job applied them) it changes nothing, and throws SchemaNotCurrentError naming the pending
 * migrations and function files unless the schema is already current.
 */
export async function prepareLedgerSchema(db: Database, mode: 'apply' | 'verify' = 'apply'): Promise<LedgerSchemaReport> {
  if (mode === 'verify') {
    await verifySchemaCurrent(db, { migrations: ledgerMigrationsDir, sqlSources: ledgerSqlDir, migrateCommand: ledgerMigrateCommand });
    return { applied: [], superseded: [], functions: [] };
  }
  const { applied, superseded } = await migrate(db, ledgerMigrationsDir);
  // After any migration, every file again: a migration may have dropped or changed what a function uses.
  const { applied: functions } = await applySqlSources(db, ledgerSqlDir, { reapply: applied.length > 0 || superseded.length > 0 });
  return { applied, superseded, functions };
}
