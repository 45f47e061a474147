import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Database } from './database.ts';

/** One versioned SQL migration file, e.g. `0001_accounts.sql`. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
  checksum: string;
}

const fileNamePattern = /^(\d{4})_([a-z0-9_]+)\.sql$/;

/** Reads the migrations of a folder in version order; refuses gaps, duplicates and stray files. */
export function readMigrations(directory: string): Migration[] {
  const migrations = readdirSync(directory)
    .filter((file) => file.endsWith('.sql'))
    .map((file) => {
      const match = fileNamePattern.exec(file);
      if (!match) throw new Error(`migration file name must look like 0001_name.sql: ${file}`);
      const sql = readFileSync(join(directory, file), 'utf8');
      return { version: Number(match[1]), name: match[2]!, sql, checksum: createHash('sha256').update(sql).digest('hex') };
    })
    .sort((a, b) => a.version - b.version);
  migrations.forEach((migration, index) => {
    if (migration.version !== index + 1) throw new Error(`migrations must be numbered 1, 2, 3...; found ${migration.version} at position ${index + 1}`);
  });
  return migrations;
}

/**
 * Applies the pending migrations of a folder, in order, in one transaction, and records each in
 * `schema_migrations`. An advisory lock makes concurrent replicas wait rather than race; a
 * recorded migration whose file has since changed stops the service instead of drifting.
 */
export async function migrate(db: Database, directory: string): Promise<{ applied: string[] }> {
  const migrations = readMigrations(directory);
  return db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`gateway-migrations:${db.schema}`]);
    await tx.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY,
      name text NOT NULL,
      checksum text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
    const recorded = await tx.query<{ version: number; checksum: string; name: string }>('SELECT version, checksum, name FROM schema_migrations');
    const recordedByVersion = new Map(recorded.rows.map((row) => [row.version, row]));
    for (const row of recorded.rows) {
      const migration = migrations.find((m) => m.version === row.version);
      if (!migration) throw new Error(`database has migration ${row.version} (${row.name}) that this build does not know: is it older than the database?`);
      if (migration.checksum !== row.checksum) throw new Error(`migration ${row.version} (${row.name}) was changed after it was applied`);
    }
    const applied: string[] = [];
    for (const migration of migrations) {
      if (recordedByVersion.has(migration.version)) continue;
      await tx.exec(migration.sql);
      await tx.query('INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)', [migration.version, migration.name, migration.checksum]);
      applied.push(`${String(migration.version).padStart(4, '0')}_${migration.name}`);
    }
    return { applied };
  });
}
