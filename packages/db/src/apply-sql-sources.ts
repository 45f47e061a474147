import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Database } from './database.ts';
import { migrationLockKey } from './migrate.ts';

/** One SQL source file, e.g. `ledger_reserve.sql`: the whole definition of one database function. */
export interface SqlSource {
  /** The file name without `.sql`: the name of the function it defines. */
  name: string;
  sql: string;
  /** SHA-256 hex of the file's text. */
  checksum: string;
}

const sourceNamePattern = /^([a-z_][a-z0-9_]*)\.sql$/;

/** Reads the `.sql` files of a folder, sorted by name; refuses names that are not a function's. */
export function readSqlSources(directory: string): SqlSource[] {
  return readdirSync(directory)
    .filter((file) => file.endsWith('.sql'))
    .sort()
    .map((file) => {
      const match = sourceNamePattern.exec(file);
      if (!match) throw new Error(`SQL source file name must be a function name, e.g. my_function.sql: ${file}`);
      const sql = readFileSync(join(directory, file), 'utf8');
      return { name: match[1]!, sql, checksum: createHash('sha256').update(sql).digest('hex') };
    });
}

/**
 * Applies a folder of SQL sources (one function per file, written `CREATE OR REPLACE FUNCTION`,
 * after a `DROP FUNCTION IF EXISTS` when its signature or return type changed) after the
 * migrations: in one transaction, under the migrations' advisory lock (replicas starting together
 * take turns), with function bodies checked only when called (so files may reference functions of
 * later files, whatever the order), skipping each file whose checksum `schema_functions`
 * already records (unless `reapply`: pass it when migrations just ran, as a migration may have
 * dropped or changed what a function depends on). A failing file rolls the whole set back.
 * Migrations hold the schema (tables, types, triggers); these files hold the rules, so a change to
 * a rule is a diff of one file.
 */
export async function applySqlSources(db: Database, directory: string, options: { reapply?: boolean } = {}): Promise<{ applied: string[] }> {
  const sources = readSqlSources(directory);
  return db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [migrationLockKey(db)]);
    await tx.query(`CREATE TABLE IF NOT EXISTS schema_functions (
      name text PRIMARY KEY,
      checksum text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
    // LANGUAGE sql bodies are otherwise resolved at CREATE time, which would tie the files to an order.
    await tx.query('SET LOCAL check_function_bodies = off');
    const recorded = await tx.query<{ name: string; checksum: string }>('SELECT name, checksum FROM schema_functions');
    const recordedChecksums = new Map(recorded.rows.map((row) => [row.name, row.checksum]));
    const applied: string[] = [];
    for (const source of sources) {
      if (!options.reapply && recordedChecksums.get(source.name) === source.checksum) continue;
      await tx.exec(source.sql);
      await tx.query(
        `INSERT INTO schema_functions (name, checksum) VALUES ($1, $2)
         ON CONFLICT (name) DO UPDATE SET checksum = EXCLUDED.checksum, applied_at = now()`,
        [source.name, source.checksum],
      );
      applied.push(source.name);
    }
    return { applied };
  });
}

/**
 * Reads, without writing, the SQL sources of a folder whose current text the database has not
 * applied (no `schema_functions` record, or another checksum): what `applySqlSources` would run.
 */
export async function pendingSqlSources(db: Database, directory: string): Promise<string[]> {
  const sources = readSqlSources(directory);
  const table = await db.query<{ found: string | null }>('SELECT to_regclass($1)::text AS found', [`${db.schema}.schema_functions`]);
  if (table.rows[0]?.found == null) return sources.map((source) => source.name);
  const recorded = await db.query<{ name: string; checksum: string }>(`SELECT name, checksum FROM ${db.schema}.schema_functions`);
  const recordedChecksums = new Map(recorded.rows.map((row) => [row.name, row.checksum]));
  return sources.filter((source) => recordedChecksums.get(source.name) !== source.checksum).map((source) => source.name);
}
