import { createHash } from 'node:crypto';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { databaseBackends } from './test-support/database-backends.ts';
import { createTestDatabase, testPostgresUrl, type TestDatabase } from '@gateway/testkit';
import { applySqlSources, migrate, openDatabase } from './index.ts';

const migrationsDir = fileURLToPath(new URL('./test-migrations', import.meta.url));
const sourcesDir = fileURLToPath(new URL('./test-sql-sources', import.meta.url));
const serverUrl = testPostgresUrl();
const testDatabases: TestDatabase[] = [];
const tempDirs: string[] = [];
afterAll(async () => {
  await Promise.all(testDatabases.map((d) => d.drop()));
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});

/** A scratch copy of a fixture folder that a test may change. */
function copyOf(directory: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'gw-db-'));
  tempDirs.push(dir);
  cpSync(directory, dir, { recursive: true });
  return dir;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

const backends = databaseBackends(serverUrl, testDatabases);

describe.each(backends)('SQL sources over %s', (kind, open) => {
  const skip = kind === 'postgres' && !serverUrl;

  it.skipIf(skip)('applies every file once, in any order of reference, and again only the file that changed', async () => {
    const db = await open();
    try {
      await migrate(db, migrationsDir);
      // An older build left b_double(integer): the file's DROP makes room for the new signature.
      await db.exec('CREATE FUNCTION b_double(p integer) RETURNS integer LANGUAGE sql AS $$ SELECT p * 20 $$');
      expect(await applySqlSources(db, sourcesDir)).toEqual({ applied: ['a_total', 'b_double'] });
      expect((await db.query<{ total: bigint }>('SELECT a_total(3) AS total')).rows[0]!.total).toBe(7n);
      expect((await db.query("SELECT 1 FROM pg_proc WHERE proname = 'b_double'")).rowCount).toBe(1);
      expect(await applySqlSources(db, sourcesDir)).toEqual({ applied: [] });

      const changed = copyOf(sourcesDir);
      const tripled = 'CREATE OR REPLACE FUNCTION b_double(p bigint) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$ SELECT p * 3 $$;\n';
      writeFileSync(join(changed, 'b_double.sql'), tripled);
      expect(await applySqlSources(db, changed)).toEqual({ applied: ['b_double'] });
      expect((await db.query<{ total: bigint }>('SELECT a_total(3) AS total')).rows[0]!.total).toBe(10n);
      const { rows } = await db.query<{ name: string; checksum: string }>('SELECT name, checksum FROM svc.schema_functions ORDER BY name');
      expect(rows.find((row) => row.name === 'b_double')!.checksum).toBe(sha256(tripled));

      // A function dropped behind the record's back (as a migration might) comes back only when asked to reapply.
      await db.exec('DROP FUNCTION a_total(bigint)');
      expect(await applySqlSources(db, changed)).toEqual({ applied: [] });
      expect(await applySqlSources(db, changed, { reapply: true })).toEqual({ applied: ['a_total', 'b_double'] });
      expect((await db.query<{ total: bigint }>('SELECT a_total(3) AS total')).rows[0]!.total).toBe(10n);
    } finally {
      await db.close();
    }
  }, 120_000); // embedded PGlite starts slowly on a busy machine

  it.skipIf(skip)('rolls every file back when one fails, and records nothing', async () => {
    const db = await open();
    try {
      await migrate(db, migrationsDir);
      const broken = copyOf(sourcesDir);
      writeFileSync(join(broken, 'c_broken.sql'), 'CREATE OR REPLACE FUNCTION c_broken() RETURNS bigint LANGUAGE plpgsql AS $$ BEGIN RETURN; END $$ oops;\n');
      await expect(applySqlSources(db, broken)).rejects.toThrow();
      expect((await db.query("SELECT 1 FROM pg_proc WHERE proname IN ('a_total', 'b_double')")).rowCount).toBe(0);
      // Not even the record table stayed.
      expect((await db.query<{ t: string | null }>("SELECT to_regclass('svc.schema_functions')::text AS t")).rows[0]!.t).toBeNull();
    } finally {
      await db.close();
    }
  }, 120_000); // embedded PGlite starts slowly on a busy machine
});

describe('SQL sources over postgres, replicas starting together', () => {
  it.skipIf(!serverUrl)('take turns under the migration lock: one applies, the other finds it done', async () => {
    const testDatabase = await createTestDatabase(serverUrl!);
    testDatabases.push(testDatabase);
    const db = await openDatabase({ url: testDatabase.url, schema: 'svc', poolSize: 4 });
    try {
      await migrate(db, migrationsDir);
      const results = await Promise.all([applySqlSources(db, sourcesDir), applySqlSources(db, sourcesDir)]);
      expect(results.map((r) => r.applied.length).sort()).toEqual([0, 2]);
    } finally {
      await db.close();
    }
  }, 120_000); // embedded PGlite starts slowly on a busy machine
});
