/**
 * `node services/admin/src/migrate-cli.ts` (or `pnpm --filter @gateway/admin migrate`): brings the
 * admin's schema in DATABASE_URL up to this build, prints what it applied and exits. In
 * Kubernetes it is the release's migration Job, and the admin pods run with
 * ADMIN_MIGRATIONS=verify (docs/deploy.md, "Upgrades").
 * Exit 0: the schema is current; 1: a migration failed or was refused (nothing applied: one
 * transaction); 2: no DATABASE_URL.
 */
import { runMigrateCli } from '@gateway/db';
import { prepareAdminSchema } from './admin-schema.ts';

await runMigrateCli({
  service: 'admin',
  schema: 'admin',
  apply: async (database) => {
    const { applied, superseded } = await prepareAdminSchema(database, 'apply');
    return [
      { label: 'migrations applied', names: applied, printWhenEmpty: true },
      { label: 'superseded checksums recorded', names: superseded, printWhenEmpty: false },
    ];
  },
});
