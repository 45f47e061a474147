import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { databaseBackends } from './test-support/database-backends.ts';
import { testPostgresUrl, type TestDatabase } from '@gateway/testkit';
import { migrate, supersededChecksumsFile } from './index.ts';

const serverUrl = testPostgresUrl();
const testDatabases: TestDatabase[] = [];
const tempDirs: string[] = [];
afterAll(async () => {
  await Promise.all(testDatabases.map((d) => d.drop()));
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const original = '-- the table and a function body\nCREATE TABLE items (id text PRIMARY KEY);\nCREATE FUNCTION item_count() RETURNS bigint LANGUAGE sql AS $$ SELECT count(*) FROM items $$;\n';
const schemaOnly = '-- the table (the function now lives elsewhere)\nCREATE TABLE items (id text PRIMARY KEY);\n';

const backends = databaseBackends(serverUrl, testDatabases);

describe.each(backends)('superseded migration checksums over %s', (kind, open) => {
  const skip = kind === 'postgres' && !serverUrl;

  it.skipIf(skip)('accept exactly the listed change of an applied migration, record the new checksum and run nothing again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gw-migrate-'));
    tempDirs.push(dir);
    const db = await open();
    try {
      writeFileSync(join(dir, '0001_items.sql'), original);
      expect(await migrate(db, dir)).toEqual({ applied: ['0001_items'], superseded: [] });
      await db.query("INSERT INTO items (id) VALUES ('kept')");

      writeFileSync(join(dir, '0001_items.sql'), schemaOnly);
      await expect(migrate(db, dir)).rejects.toThrow(/was changed after it was applied/);

      // An entry for another target text does not cover this file.
      const entry = { version: 1, from: sha256(original), to: sha256('something else'), reason: 'function bodies moved to sql/' };
      writeFileSync(join(dir, supersededChecksumsFile), JSON.stringify({ superseded: [entry] }));
      await expect(migrate(db, dir)).rejects.toThrow(/was changed after it was applied/);

      writeFileSync(join(dir, supersededChecksumsFile), JSON.stringify({ superseded: [{ ...entry, to: sha256(schemaOnly) }] }));
      expect(await migrate(db, dir)).toEqual({ applied: [], superseded: ['0001_items'] });
      expect(await migrate(db, dir)).toEqual({ applied: [], superseded: [] });
      const { rows } = await db.query<{ checksum: string }>('SELECT checksum FROM svc.schema_migrations WHERE version = 1');
      expect(rows[0]!.checksum).toBe(sha256(schemaOnly));
      // Nothing ran again: the row is still there, and the old function too.
      expect((await db.query<{ n: bigint }>('SELECT item_count() AS n')).rows[0]!.n).toBe(1n);

      // A later edit of the same file is refused again.
      writeFileSync(join(dir, '0001_items.sql'), `${schemaOnly}-- edited\n`);
      await expect(migrate(db, dir)).rejects.toThrow(/was changed after it was applied/);
    } finally {
      await db.close();
    }
  }, 120_000); // embedded PGlite starts slowly on a busy machine

  it.skipIf(skip)('refuses a superseded list without a reason', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gw-migrate-'));
    tempDirs.push(dir);
    const db = await open();
    try {
      writeFileSync(join(dir, '0001_items.sql'), schemaOnly);
      writeFileSync(join(dir, supersededChecksumsFile), JSON.stringify({ superseded: [{ version: 1, from: 'a', to: 'b', reason: '' }] }));
      await expect(migrate(db, dir)).rejects.toThrow(/needs version, from, to and a reason/);
    } finally {
      await db.close();
    }
  }, 120_000); // embedded PGlite starts slowly on a busy machine
});
