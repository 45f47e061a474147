import { pendingSqlSources } from './apply-sql-sources.ts';
import type { Database } from './database.ts';
import { readMigrationStatus, type MigrationStatus } from './migrate.ts';

/** Thrown when a service started with `*_MIGRATIONS=verify` finds its schema behind this build; the message names what is missing. */
export class SchemaNotCurrentError extends Error {
  /** Migrations not applied yet, e.g. `0012_usage_partitions`. */
  readonly pendingMigrations: readonly string[];
  /** SQL function source files (by function name) not applied in this build's version. */
  readonly pendingFunctions: readonly string[];
  constructor(schema: string, status: MigrationStatus, pendingFunctions: readonly string[], migrateCommand: string) {
    const parts = [
      status.pending.length > 0 ? `pending migrations: ${status.pending.join(', ')}` : '',
      status.superseded.length > 0 ? `migrations to re-record (superseded checksums): ${status.superseded.join(', ')}` : '',
      pendingFunctions.length > 0 ? `SQL function sources not applied: ${pendingFunctions.join(', ')}` : '',
    ].filter((part) => part !== '');
    super(`schema "${schema}" is not current for this build, so the service does not start (migrations mode verify): ${parts.join('; ')}. `
      + `Run this release's migration Job (\`${migrateCommand}\`) first.`);
    this.name = 'SchemaNotCurrentError';
    this.pendingMigrations = [...status.pending, ...status.superseded];
    this.pendingFunctions = pendingFunctions;
  }
}

/** Where a service's schema comes from, and the command that applies it (named in the refusal). */
export interface SchemaSources {
  /** The folder of versioned migrations. */
  migrations: string;
  /** The folder of SQL function sources applied after them, if the service has one. */
  sqlSources?: string;
  /** What an operator runs to apply them, e.g. `node services/ledger/src/migrate-cli.ts`. */
  migrateCommand: string;
}

/**
 * The start of a service in `*_MIGRATIONS=verify` mode: reads (never writes) whether every
 * migration and SQL function source of this build is applied, and throws SchemaNotCurrentError
 * naming what is not. In Kubernetes the release's migration Job applies them once; a pod that
 * starts before the Job finished exits, and the kubelet restarts it until the schema is current.
 * A database ahead of this build (a newer release's Job ran: an old pod restarting mid-rollout,
 * or a rollback) passes, and its function sources, which are the newer release's, are not
 * compared. Returns the migrations the database has beyond this build.
 */
export async function verifySchemaCurrent(db: Database, sources: SchemaSources): Promise<{ ahead: string[] }> {
  const status = await readMigrationStatus(db, sources.migrations);
  // Pending migrations mean every function file is re-applied after them, whatever its checksum.
  const functions = sources.sqlSources === undefined || status.ahead.length > 0 ? [] : await pendingSqlSources(db, sources.sqlSources);
  if (status.pending.length > 0 || status.superseded.length > 0 || functions.length > 0) {
    throw new SchemaNotCurrentError(db.schema, status, functions, sources.migrateCommand);
  }
  return { ahead: status.ahead };
}
