/**
 * `node services/ledger/src/verify-cli.ts` (or `pnpm --filter @gateway/ledger verify`):
 * recomputes every balance from the ledger's rows in DATABASE_URL and prints each difference.
 * Exit 0: the ledger agrees to the micro-rupee; 1: differences (printed); 2: could not run.
 */
import { openDatabase } from '@gateway/db';
import { verifyLedger } from './domain/find-balance-differences.ts';

/** The line printed for one difference, µ₹. */
function describe(difference: Awaited<ReturnType<typeof verifyLedger>>['differences'][number]): string {
  const rollup = difference.usageRollup;
  const where = difference.projectMonth ? ` project=${difference.projectMonth.projectId} month=${difference.projectMonth.month}`
    : difference.orphan ? ` table=${difference.orphan.table} row=${difference.orphan.rowId} missing=${difference.orphan.missing}`
    : rollup ? ` day=${rollup.day} project=${rollup.projectId} model=${rollup.modelSlug} billing_mode=${rollup.billingMode} column=${rollup.column}`
    : difference.reservationId ? ` reservation=${difference.reservationId}` : '';
  return `DIFFERENCE organisation=${difference.organisationId} check=${difference.check} balance=${difference.balance}${where} ` +
    `stored=${difference.accountMicros} recomputed=${difference.recomputedMicros} delta=${difference.recomputedMicros - difference.accountMicros}`;
}

const url = process.env.DATABASE_URL;
if (!url) {
  process.stderr.write('verify: DATABASE_URL must name the ledger\'s PostgreSQL database\n');
  process.exit(2);
}
let exitCode = 2;
const database = await openDatabase({ url, schema: 'ledger', poolSize: 1 });
try {
  const { accountsChecked, differences } = await verifyLedger(database);
  for (const difference of differences) process.stdout.write(`${describe(difference)}\n`);
  process.stdout.write(`verify: ${accountsChecked} accounts checked, ${differences.length} difference(s)\n`);
  exitCode = differences.length === 0 ? 0 : 1;
} catch (error) {
  // Only the message: a connection error's text never carries the URL's password, but a stack might.
  process.stderr.write(`verify: could not run: ${(error as Error).message}\n`);
} finally {
  await database.close();
}
process.exit(exitCode);
