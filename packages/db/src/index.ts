/** PostgreSQL access for the services (pg or embedded PGlite), versioned SQL migrations, and SQL function sources. */
export { openDatabase, assertOutsideTransaction, type Database, type DatabaseOptions, type Queryable, type QueryResult, type TransactionOptions } from './database.ts';
export { migrate, readMigrationStatus, readMigrations, readSupersededChecksums, supersededChecksumsFile, type Migration, type MigrationStatus, type SupersededChecksum } from './migrate.ts';
export { applySqlSources, pendingSqlSources, readSqlSources, type SqlSource } from './apply-sql-sources.ts';
export { SchemaNotCurrentError, verifySchemaCurrent, type SchemaSources } from './verify-schema.ts';
export { runMigrateCli } from './run-migrate-cli.ts';
