/**
 * `node services/ledger/src/migrate-cli.ts` (or `pnpm --filter @gateway/ledger migrate`): brings
 * the ledger's schema in DATABASE_URL up to this build (migrations, then SQL function sources),
 * prints what it applied and exits. In Kubernetes it is the release's migration Job, and the
 * ledger pods run with LEDGER_MIGRATIONS=verify (docs/deploy.md, "Upgrades").
 * Exit 0: the schema is current; 1: a migration failed or was refused (nothing applied: one
 * transaction); 2: no DATABASE_URL.
 */
import { runMigrateCli } from '@gateway/db';
import { prepareLedgerSchema } from './ledger-schema.ts';

await runMigrateCli({
  service: 'ledger',
  schema: 'ledger',
  apply: async (database) => {
    const { applied, superseded, functions } = await prepareLedgerSchema(database, 'apply');
    return [
      { label: 'migrations applied', names: applied, printWhenEmpty: true },
      { label: 'superseded checksums recorded', names: superseded, printWhenEmpty: false },
      { label: 'SQL function sources applied', names: functions, printWhenEmpty: true },
    ];
  },
});
