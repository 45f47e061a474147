/** PostgreSQL access for the services (pg or embedded PGlite) and versioned SQL migrations. */
export { openDatabase, type Database, type DatabaseOptions, type Queryable, type QueryResult, type TransactionOptions } from './database.ts';
export { migrate, readMigrations, type Migration } from './migrate.ts';
