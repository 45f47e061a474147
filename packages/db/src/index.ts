/** PostgreSQL access for the services (pg or embedded PGlite), versioned SQL migrations, and SQL function sources. */
export { openDatabase, type Database, type DatabaseOptions, type Queryable, type QueryResult, type TransactionOptions } from './database.ts';
export { migrate, readMigrations, readSupersededChecksums, supersededChecksumsFile, type Migration, type SupersededChecksum } from './migrate.ts';
export { applySqlSources, readSqlSources, type SqlSource } from './apply-sql-sources.ts';
