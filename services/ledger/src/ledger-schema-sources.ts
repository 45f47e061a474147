import { fileURLToPath } from 'node:url';

/** The ledger's versioned schema migrations (tables, types, triggers): schema only. */
export const ledgerMigrationsDir = fileURLToPath(new URL('../migrations', import.meta.url));

/** The ledger's SQL functions, one per file named after it: where the money rules live. */
export const ledgerSqlDir = fileURLToPath(new URL('../sql', import.meta.url));
