import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
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
 * A reviewed exception to "an applied migration never changes": the file of `version` was
 * rewritten on purpose (e.g. function bodies moved out of it) and databases that applied the old
 * text (`from`) are to accept the new one (`to`) without running anything again.
 */
export interface SupersededChecksum {
  version: number;
  /** SHA-256 hex of the migration text that databases recorded. */
  from: string;
  /** SHA-256 hex of the migration file that replaces it; any other text is still refused. */
  to: string;
  /** Why the file changed, for the reviewer and the log. */
  reason: string;
}

/** The file beside the migrations that lists their superseded checksums, if they have any. */
export const supersededChecksumsFile = 'superseded-checksums.json';

/** Reads `superseded-checksums.json` of a migrations folder (an empty list when there is none). */
export function readSupersededChecksums(directory: string): SupersededChecksum[] {
  const file = join(directory, supersededChecksumsFile);
  if (!existsSync(file)) return [];
  const parsed = JSON.parse(readFileSync(file, 'utf8')) as { superseded?: unknown };
  if (!Array.isArray(parsed.superseded)) throw new Error(`${file}: expected {"superseded": [...]}`);
  return parsed.superseded.map((entry: Partial<SupersededChecksum>, index) => {
    const { version, from, to, reason } = entry;
    if (typeof version !== 'number' || typeof from !== 'string' || typeof to !== 'string' || typeof reason !== 'string' || reason === '') {
      throw new Error(`${file}: entry ${index} needs version, from, to and a reason`);
    }
    return { version, from, to, reason };
  });
}

/** How the database's record of one applied migration compares with this build's file. */
type RecordedMigration = { version: number; checksum: string; name: string };

/**
 * Compares the recorded migrations with this build's files: a record this build does not know,
 * or whose file changed without a reviewed `superseded-checksums.json` entry, throws (the service
 * must not run on a schema it cannot vouch for). Returns the records whose reviewed new checksum
 * is still to be written.
 */
function checkRecordedMigrations(recorded: RecordedMigration[], migrations: Migration[], supersededChecksums: SupersededChecksum[]): Migration[] {
  const toReRecord: Migration[] = [];
  for (const row of recorded) {
    const migration = migrations.find((m) => m.version === row.version);
    if (!migration) throw new Error(`database has migration ${row.version} (${row.name}) that this build does not know: is it older than the database?`);
    if (migration.checksum === row.checksum) continue;
    const accepted = supersededChecksums.find((entry) => entry.version === row.version && entry.from === row.checksum && entry.to === migration.checksum);
    if (!accepted) throw new Error(`migration ${row.version} (${row.name}) was changed after it was applied`);
    toReRecord.push(migration);
  }
  return toReRecord;
}

/** A migration's label in logs and messages, e.g. `0012_usage_partitions`. */
function labelOf(migration: Pick<Migration, 'version' | 'name'>): string {
  return `${String(migration.version).padStart(4, '0')}_${migration.name}`;
}

/**
 * Applies the pending migrations of a folder, in order, in one transaction, and records each in
 * `schema_migrations`. An advisory lock makes concurrent replicas wait rather than race; a
 * recorded migration whose file has since changed stops the service instead of drifting, unless
 * `superseded-checksums.json` beside the files lists exactly that change (recorded checksum ->
 * the file's checksum): then the record takes the new checksum and nothing runs again.
 */
export async function migrate(db: Database, directory: string): Promise<{ applied: string[]; superseded: string[] }> {
  const migrations = readMigrations(directory);
  const supersededChecksums = readSupersededChecksums(directory);
  return db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [migrationLockKey(db)]);
    await tx.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY,
      name text NOT NULL,
      checksum text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
    const recorded = await tx.query<RecordedMigration>('SELECT version, checksum, name FROM schema_migrations ORDER BY version');
    const recordedVersions = new Set(recorded.rows.map((row) => row.version));
    const superseded: string[] = [];
    for (const migration of checkRecordedMigrations(recorded.rows, migrations, supersededChecksums)) {
      await tx.query('UPDATE schema_migrations SET checksum = $2 WHERE version = $1', [migration.version, migration.checksum]);
      superseded.push(labelOf(migration));
    }
    const applied: string[] = [];
    for (const migration of migrations) {
      if (recordedVersions.has(migration.version)) continue;
      await tx.exec(migration.sql);
      await tx.query('INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)', [migration.version, migration.name, migration.checksum]);
      applied.push(labelOf(migration));
    }
    return { applied, superseded };
  });
}

/** What `migrate()` would still do to a database, found without changing anything. */
export interface MigrationStatus {
  /** Migrations of this build the database has not applied, e.g. `0012_usage_partitions`. */
  pending: string[];
  /** Applied migrations whose reviewed new checksum (superseded-checksums.json) is not recorded yet. */
  superseded: string[];
  /**
   * Migrations the database has and this build does not know: a newer release's migration Job
   * ran (this pod is an old one restarting mid-rollout, or a rollback). Not a refusal: a release's
   * migrations only add what the previous release can run beside (docs/deploy.md, "Upgrades").
   */
  ahead: string[];
}

/**
 * Reads, without writing, which migrations of a folder a database lacks. A changed file throws
 * as `migrate()` does. Unlike `migrate()`, a database ahead of this build is reported, not
 * refused; then the recorded checksums are not compared either, since the newer release may have
 * re-recorded a reviewed superseded text this build does not list.
 */
export async function readMigrationStatus(db: Database, directory: string): Promise<MigrationStatus> {
  const migrations = readMigrations(directory);
  const table = await db.query<{ found: string | null }>('SELECT to_regclass($1)::text AS found', [`${db.schema}.schema_migrations`]);
  const recorded = table.rows[0]?.found == null ? [] : (await db.query<RecordedMigration>(`SELECT version, checksum, name FROM ${db.schema}.schema_migrations ORDER BY version`)).rows;
  const known = new Set(migrations.map((migration) => migration.version));
  const ahead = recorded.filter((row) => !known.has(row.version)).map((row) => labelOf({ version: row.version, name: row.name }));
  const recordedVersions = new Set(recorded.map((row) => row.version));
  return {
    pending: migrations.filter((migration) => !recordedVersions.has(migration.version)).map(labelOf),
    superseded: ahead.length > 0 ? [] : checkRecordedMigrations(recorded, migrations, readSupersededChecksums(directory)).map(labelOf),
    ahead,
  };
}

/** The advisory lock key that migrations and SQL sources of one schema share, so replicas take turns. */
export function migrationLockKey(db: Database): string {
  return `gateway-migrations:${db.schema}`;
}
