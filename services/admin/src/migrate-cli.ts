/**
 * `node services/admin/src/migrate-cli.ts` (or `pnpm --filter @gateway/admin migrate`): brings the
 * admin's schema in DATABASE_URL up to this build, prints what it applied and exits. In
 * Kubernetes it is the release's migration Job, and the admin pods run with
 * ADMIN_MIGRATIONS=verify (docs/deploy.md, "Upgrades").
 * Exit 0: the schema is current; 1: a migration failed or was refused (nothing applied: one
 * transaction); 2: no DATABASE_URL.
 */
import { openDatabase } from '@gateway/db';
import { prepareAdminSchema } from './admin-schema.ts';

const url = process.env.DATABASE_URL;
if (!url) {
  process.stderr.write('admin migrate: DATABASE_URL must name the admin\'s PostgreSQL database\n');
  process.exit(2);
}
let exitCode = 1;
try {
  const database = await openDatabase({ url, schema: 'admin', poolSize: 1 });
  try {
    const { applied, superseded } = await prepareAdminSchema(database, 'apply');
    process.stdout.write(`admin migrate: migrations applied: ${applied.length === 0 ? 'none' : applied.join(', ')}\n`);
    if (superseded.length > 0) process.stdout.write(`admin migrate: superseded checksums recorded: ${superseded.join(', ')}\n`);
    process.stdout.write('admin migrate: schema current\n');
    exitCode = 0;
  } finally {
    await database.close();
  }
} catch (error) {
  // Only the message: a connection error's text never carries the URL's password, but a stack might.
  process.stderr.write(`admin migrate: failed: ${(error as Error).message}\n`);
}
process.exit(exitCode);
