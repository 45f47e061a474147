/**
 * `node services/ledger/src/migrate-cli.ts` (or `pnpm --filter @gateway/ledger migrate`): brings
 * the ledger's schema in DATABASE_URL up to this build (migrations, then SQL function sources),
 * prints what it applied and exits. In Kubernetes it is the release's migration Job, and the
 * ledger pods run with LEDGER_MIGRATIONS=verify (docs/deploy.md, "Upgrades").
 * Exit 0: the schema is current; 1: a migration failed or was refused (nothing applied: one
 * transaction); 2: no DATABASE_URL.
 */
import { openDatabase } from '@gateway/db';
import { prepareLedgerSchema } from './ledger-schema.ts';

const url = process.env.DATABASE_URL;
if (!url) {
  process.stderr.write('ledger migrate: DATABASE_URL must name the ledger\'s PostgreSQL database\n');
  process.exit(2);
}
let exitCode = 1;
try {
  const database = await openDatabase({ url, schema: 'ledger', poolSize: 1 });
  try {
    const { applied, superseded, functions } = await prepareLedgerSchema(database, 'apply');
    const list = (names: string[]) => (names.length === 0 ? 'none' : names.join(', '));
    process.stdout.write(`ledger migrate: migrations applied: ${list(applied)}\n`);
    if (superseded.length > 0) process.stdout.write(`ledger migrate: superseded checksums recorded: ${list(superseded)}\n`);
    process.stdout.write(`ledger migrate: SQL function sources applied: ${list(functions)}\n`);
    process.stdout.write('ledger migrate: schema current\n');
    exitCode = 0;
  } finally {
    await database.close();
  }
} catch (error) {
  // Only the message: a connection error's text never carries the URL's password, but a stack might.
  process.stderr.write(`ledger migrate: failed: ${(error as Error).message}\n`);
}
process.exit(exitCode);
