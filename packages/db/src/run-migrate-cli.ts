import { openDatabase, type Database } from './database.ts';

/** One line of a migrate CLI's report: what was applied (`migrations applied`), and whether it is printed when nothing was. */
interface MigrateReportLine {
  label: string;
  names: string[];
  printWhenEmpty: boolean;
}

/** What a service's migrate CLI needs: its name and schema, and how to bring the schema current. */
interface MigrateCliOptions {
  /** The service, first word of every line it prints (`ledger`, `admin`). */
  service: string;
  /** The database schema the service owns. */
  schema: string;
  /** Applies the service's migrations (and whatever else its schema needs) and reports what it did, line by line. */
  apply(database: Database): Promise<MigrateReportLine[]>;
}

/**
 * Runs a service's migrate CLI (the release's migration Job): applies its schema in DATABASE_URL,
 * prints what it applied, and exits 0 when the schema is current, 1 when a migration failed or was
 * refused, 2 without DATABASE_URL. Errors print their message only (a stack might carry more).
 */
export async function runMigrateCli(options: MigrateCliOptions): Promise<never> {
  const prefix = `${options.service} migrate`;
  const url = process.env.DATABASE_URL;
  if (!url) {
    process.stderr.write(`${prefix}: DATABASE_URL must name the ${options.service}'s PostgreSQL database\n`);
    process.exit(2);
  }
  let exitCode = 1;
  try {
    const database = await openDatabase({ url, schema: options.schema, poolSize: 1 });
    try {
      for (const line of await options.apply(database)) {
        if (line.names.length > 0 || line.printWhenEmpty) process.stdout.write(`${prefix}: ${line.label}: ${line.names.length === 0 ? 'none' : line.names.join(', ')}\n`);
      }
      process.stdout.write(`${prefix}: schema current\n`);
      exitCode = 0;
    } finally {
      await database.close();
    }
  } catch (error) {
    // Only the message: a connection error's text never carries the URL's password, but a stack might.
    process.stderr.write(`${prefix}: failed: ${(error as Error).message}\n`);
  }
  process.exit(exitCode);
}
