import { createHash } from 'node:crypto';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { migrate, openDatabase, readMigrations, readSupersededChecksums, readSqlSources, type Database } from '@gateway/db';
import { createTestDatabase, testPostgresUrl, type TestDatabase } from '@gateway/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyLedgerOperations, type LedgerOperation, type LedgerOperationAnswer } from './domain/apply-ledger-operations.ts';
import { checkpoint } from './domain/checkpoint.ts';
import { appendMovement } from './domain/append-movement.ts';
import { expireDueReservations } from './domain/expire-due-reservations.ts';
import { findBalanceDifferences } from './domain/find-balance-differences.ts';
import { fingerprintOf } from './domain/fingerprint.ts';
import { openAccount } from './domain/open-account.ts';
import { release } from './domain/release.ts';
import { reserve, type ReserveInput } from './domain/reserve.ts';
import { setProjectBudget } from './domain/set-project-budget.ts';
import { settle, type SettleInput } from './domain/settle.ts';
import { ledgerMigrationsDir, ledgerSqlDir } from './ledger-schema-sources.ts';
import { prepareLedgerSchema } from './ledger-schema.ts';

const serverUrl = testPostgresUrl();
const sha256 = (text: string | Buffer) => createHash('sha256').update(text).digest('hex');

/**
 * The migration files exactly as databases applied them before the function bodies moved to
 * sql/ (taken from commit 264d42a): history, kept as bytes so the upgrade is tested on any
 * checkout, shallow clones included.
 */
const migrationsBeforeSqlSources = fileURLToPath(new URL('./testing/migrations-before-issue-11/', import.meta.url));

/**
 * Writes the migrations as databases applied them before the function bodies moved to sql/:
 * each superseded version from the kept old files, checked against the entry's `from` (so the
 * reviewed list is checked against real history too); the other versions of that time as they are.
 */
function writeOldMigrations(directory: string): void {
  const superseded = readSupersededChecksums(ledgerMigrationsDir);
  const lastOldVersion = Math.max(...readdirSync(migrationsBeforeSqlSources).map((name) => Number(name.slice(0, 4))));
  for (const file of readdirSync(ledgerMigrationsDir).filter((name) => name.endsWith('.sql'))) {
    const version = Number(file.slice(0, 4));
    // Later migrations did not exist then.
    if (version > lastOldVersion) continue;
    const entry = superseded.find((e) => e.version === version);
    if (!entry) {
      copyFileSync(join(ledgerMigrationsDir, file), join(directory, file));
      continue;
    }
    const old = readFileSync(join(migrationsBeforeSqlSources, file));
    if (sha256(old) !== entry.from) throw new Error(`superseded-checksums.json: ${file} 'from' is not the checksum of the file databases applied`);
    writeFileSync(join(directory, file), old);
  }
}

/** A Reserve input of this scenario. */
function reserveInput(id: string, organisationId: string, amountMicros: bigint, options: { internal?: boolean; projectId?: string } = {}): ReserveInput {
  return {
    reservationId: id, organisationId, projectId: options.projectId ?? `${organisationId}-p`,
    billingMode: options.internal ? 'internal' : 'commercial', amountMicros, ttlMs: 600_000n, modelSlug: 'm',
  };
}

/** A Settle input of this scenario. */
function settleInput(id: string, costMicros: bigint, overrunOutputTokens = 0n): SettleInput {
  return {
    reservationId: id, inputTokens: 7n, outputTokens: 3n, costMicros, providerCostMicros: 1n, modelSlug: 'm',
    usageSource: 'upstream', requestId: `q-${id}`, overrunOutputTokens,
  };
}

/** A Reserve as one operation of a batch (what reserve() sends). */
function reserveOperation(id: string, organisationId: string, amountMicros: bigint): LedgerOperation {
  const fields = { organisationId, projectId: `${organisationId}-p`, billingMode: 'commercial', amountMicros: String(amountMicros), ttlMs: '600000', modelSlug: 'm' };
  return { kind: 'reserve', reservationId: id, fingerprint: fingerprintOf('reserve', fields), fields };
}

/** An answer with the deadline reduced to whether there is one (the two databases reserve at different instants). */
function comparable(answer: unknown): unknown {
  if (answer && typeof answer === 'object' && 'expiresAtMs' in answer) return { ...answer, expiresAtMs: (answer as { expiresAtMs: bigint }).expiresAtMs > 0n };
  if (answer && typeof answer === 'object' && 'error' in answer) return { ok: false, message: String((answer as { error: Error }).error.message) };
  return answer;
}

/**
 * A credit as the ledger made it before credits said whether they were purchased (migration
 * 0014): today's credit() writes that column, which the old schema lacks. The same statements on
 * both databases (the new column's default is what such a credit means: not purchased).
 */
async function creditAsBeforePurchased(db: Database, input: { creditId: string; organisationId: string; amountMicros: bigint }): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.query('UPDATE accounts SET credited_micros = credited_micros + $2, available_micros = available_micros + $2 WHERE organisation_id = $1',
      [input.organisationId, input.amountMicros]);
    const fingerprint = fingerprintOf('credit', { organisationId: input.organisationId, amountMicros: input.amountMicros, reason: '' });
    await tx.query('INSERT INTO credits (credit_id, organisation_id, amount_micros, reason, fingerprint) VALUES ($1, $2, $3, $4, $5)',
      [input.creditId, input.organisationId, input.amountMicros, '', fingerprint]);
    await appendMovement(tx, { organisationId: input.organisationId, kind: 'credit', amountMicros: input.amountMicros, creditId: input.creditId, detail: { reason: '' } });
  });
}

/** The first half of the scenario: run before the upgrade on the old database. */
async function scenarioBefore(db: Database): Promise<unknown[]> {
  const answers: unknown[] = [];
  for (const organisationId of ['up-a', 'up-b']) {
    await openAccount(db, organisationId);
    await creditAsBeforePurchased(db, { creditId: `fund-${organisationId}`, organisationId, amountMicros: 10_000n });
  }
  answers.push(await reserve(db, reserveInput('held-across', 'up-a', 4_000n)));
  answers.push(await reserve(db, reserveInput('expires-across', 'up-a', 1_000n)));
  answers.push(await checkpoint(db, { reservationId: 'expires-across', sequence: 1n, inputTokens: 5n, outputTokens: 5n, costMicros: 600n, providerCostMicros: 2n, extendTtlMs: 0n, requestId: 'q-expires-across' }));
  answers.push(await reserve(db, reserveInput('capped-1', 'up-b', 2_000n, { projectId: 'up-b-capped' })));
  answers.push(await release(db, { reservationId: 'released-first', reason: 'upstream_not_called' }));
  answers.push(await settle(db, settleInput('settled-before', 1n)));
  return answers.map(comparable);
}

/** The second half: after the upgrade (or on the fresh database), every path once more. */
async function scenarioAfter(db: Database): Promise<unknown[]> {
  const answers: unknown[] = [];
  // The cap is set after the upgrade: today's SetProjectBudget takes the budget-change lock and
  // recalls grants, both of the new schema. capped-1 (2,000 µ₹, held across the upgrade) counts under it.
  answers.push(await setProjectBudget(db, { requestId: 'budget-1', organisationId: 'up-b', projectId: 'up-b-capped', monthlyCapMicros: 3_000n, softAlertPercent: 50 }));
  answers.push(await settle(db, settleInput('held-across', 4_500n, 12n)));
  answers.push(await settle(db, settleInput('held-across', 4_500n, 12n)));
  answers.push(await settle(db, settleInput('held-across', 4_400n)));
  answers.push(await reserve(db, reserveInput('held-across', 'up-a', 4_000n)));
  answers.push(await reserve(db, reserveInput('held-across', 'up-a', 4_001n)));
  answers.push(await reserve(db, reserveInput('released-first', 'up-a', 10n)));
  answers.push(await reserve(db, reserveInput('too-much', 'up-a', 1_000_000n)));
  answers.push(await reserve(db, reserveInput('nobody', 'up-nobody', 10n)));
  answers.push(await reserve(db, { ...reserveInput('bad-ttl', 'up-a', 10n), ttlMs: 1n }));
  answers.push(await reserve(db, reserveInput('capped-2', 'up-b', 1_500n, { projectId: 'up-b-capped' })));
  answers.push(await reserve(db, reserveInput('capped-3', 'up-b', 900n, { projectId: 'up-b-capped', internal: true })));
  answers.push(await reserve(db, reserveInput('internal-1', 'up-b', 50n, { internal: true })));
  answers.push(await settle(db, settleInput('internal-1', 70n)));
  answers.push(await settle(db, settleInput('capped-1', 1_200n)));
  answers.push(await reserve(db, reserveInput('released-then-settled', 'up-a', 100n)));
  answers.push(await release(db, { reservationId: 'released-then-settled', reason: 'upstream_not_called' }));
  answers.push(await settle(db, settleInput('released-then-settled', 100n)));
  // EXPIRY: the checkpointed reservation expires (charged from its checkpoint), then settles late.
  await db.query("UPDATE reservations SET expires_at = now() - interval '1 second' WHERE id = 'expires-across'");
  answers.push(await expireDueReservations(db, 100));
  answers.push(await settle(db, settleInput('expires-across', 900n)));
  // The set-based batch (two or more of the common shape) and the loop it falls back to.
  answers.push(...(await applyLedgerOperations(db, [reserveOperation('batch-1', 'up-a', 300n), reserveOperation('batch-2', 'up-b', 200n)])).map(stripError));
  answers.push(...(await applyLedgerOperations(db, [reserveOperation('batch-3', 'up-a', 1_000_000n), reserveOperation('batch-1', 'up-a', 300n)])).map(stripError));
  return answers.map(comparable);
}

function stripError(answer: LedgerOperationAnswer): unknown {
  return answer.ok ? answer : { ok: false, message: answer.error.message };
}

/** Every row that holds money or a rule, in a stable order, without clocks and serial ids. */
async function ledgerRows(db: Database): Promise<Record<string, unknown[]>> {
  const read = async (sql: string) => (await db.query<Record<string, unknown>>(sql)).rows;
  return {
    accounts: await read('SELECT organisation_id, credited_micros, available_micros, held_micros, debited_micros FROM accounts ORDER BY 1'),
    movements: await read(`SELECT organisation_id, kind, amount_micros, available_delta_micros, held_delta_micros, debited_delta_micros,
      reservation_id, credit_id, detail::text FROM movements ORDER BY id`),
    reservations: await read(`SELECT id, organisation_id, project_id, billing_mode, amount_micros, status, settle_debited_micros,
      settle_released_micros, settle_overrun_micros, settle_detail, expiry_charged_micros, request_id FROM reservations ORDER BY id`),
    usage: await read(`SELECT reservation_id, input_tokens, output_tokens, cost_micros, provider_cost_micros, debited_micros, billing_mode,
      usage_source, request_id, provisional, overrun_output_tokens FROM usage_records ORDER BY reservation_id`),
    spend: await read('SELECT project_id, month, organisation_id, settled_micros FROM project_month_spend ORDER BY 1, 2'),
    alerts: await read('SELECT organisation_id, project_id, month, spent_micros, monthly_cap_micros, soft_alert_percent FROM budget_alerts ORDER BY project_id'),
    tombstones: await read('SELECT reservation_id, reason FROM reservation_tombstones ORDER BY 1'),
  };
}

/** The schema as the catalogue describes it: columns, constraints, indexes, triggers, and every function's definition. */
async function schemaShape(db: Database): Promise<Record<string, unknown[]>> {
  const read = async (sql: string) => (await db.query<Record<string, unknown>>(sql)).rows;
  return {
    columns: await read(`SELECT table_name, column_name, data_type, is_nullable, column_default FROM information_schema.columns
      WHERE table_schema = 'ledger' ORDER BY table_name, ordinal_position`),
    constraints: await read(`SELECT conrelid::regclass::text AS owner, conname, pg_get_constraintdef(oid) AS def FROM pg_constraint
      WHERE connamespace = 'ledger'::regnamespace ORDER BY 1, 2`),
    indexes: await read("SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'ledger' ORDER BY 1, 2"),
    triggers: await read(`SELECT tgrelid::regclass::text AS owner, tgname, pg_get_triggerdef(oid) AS def FROM pg_trigger
      WHERE NOT tgisinternal AND tgrelid::regclass::text NOT LIKE 'pg_%' ORDER BY 1, 2`),
    functions: await read(`SELECT p.proname, pg_get_functiondef(p.oid) AS def FROM pg_proc p
      WHERE p.pronamespace = 'ledger'::regnamespace ORDER BY 1`),
  };
}

describe.skipIf(!serverUrl)('the ledger schema: migrations, then the SQL sources', () => {
  const testDatabases: TestDatabase[] = [];
  const databases: Database[] = [];
  let oldMigrationsDir: string;

  beforeAll(() => {
    oldMigrationsDir = mkdtempSync(join(tmpdir(), 'ledger-old-migrations-'));
    writeOldMigrations(oldMigrationsDir);
  });

  afterAll(async () => {
    for (const db of databases) await db.close();
    for (const testDatabase of testDatabases) await testDatabase.drop();
    rmSync(oldMigrationsDir, { recursive: true, force: true });
  });

  const open = async () => {
    const testDatabase = await createTestDatabase(serverUrl!);
    testDatabases.push(testDatabase);
    const db = await openDatabase({ url: testDatabase.url, schema: 'ledger', poolSize: 4 });
    databases.push(db);
    return db;
  };

  it('a fresh database gets every migration and every function file, and a second start changes nothing', async () => {
    const db = await open();
    const first = await prepareLedgerSchema(db);
    expect(first.applied).toHaveLength(readdirSync(ledgerMigrationsDir).filter((f) => f.endsWith('.sql')).length);
    expect(first.superseded).toEqual([]);
    expect(first.functions).toEqual(readSqlSources(ledgerSqlDir).map((source) => source.name));
    expect(await prepareLedgerSchema(db)).toEqual({ applied: [], superseded: [], functions: [] });
    // Every function the ledger calls comes from a file of its own name (trigger functions are schema).
    const { rows } = await db.query<{ proname: string }>(`SELECT proname FROM pg_proc WHERE pronamespace = 'ledger'::regnamespace
      AND prorettype <> 'trigger'::regtype ORDER BY 1`);
    expect(rows.map((row) => row.proname)).toEqual(readSqlSources(ledgerSqlDir).map((source) => source.name).sort());
  });

  it('a database migrated with the old files (function bodies in migrations) upgrades cleanly, then has the same schema and behaves identically', async () => {
    const upgraded = await open();
    const fresh = await open();
    const oldApplied = await migrate(upgraded, oldMigrationsDir);
    expect(oldApplied.applied).toHaveLength(7);
    // The old ledger sent its Release and Checkpoint as statements from TypeScript; today's release()
    // and checkpoint() call these two functions, which use only tables and functions the old schema has.
    for (const name of ['ledger_release', 'ledger_checkpoint']) await upgraded.exec(readFileSync(join(ledgerSqlDir, `${name}.sql`), 'utf8'));
    await prepareLedgerSchema(fresh);

    const before = [await scenarioBefore(upgraded), await scenarioBefore(fresh)];
    expect(before[0]).toEqual(before[1]);

    const upgrade = await prepareLedgerSchema(upgraded);
    expect(upgrade.superseded).toEqual(readSupersededChecksums(ledgerMigrationsDir).map((e) => (oldApplied.applied.find((name) => Number(name.slice(0, 4)) === e.version))));
    // Every migration after the 7 old files, in order (0008_drop_ledger_refuse_unheld onwards).
    const laterMigrations = readMigrations(ledgerMigrationsDir).filter((migration) => migration.version > 7)
      .map((migration) => `${String(migration.version).padStart(4, '0')}_${migration.name}`);
    expect(laterMigrations[0]).toBe('0008_drop_ledger_refuse_unheld');
    expect(upgrade.applied).toEqual(laterMigrations);
    expect(upgrade.functions).toEqual(readSqlSources(ledgerSqlDir).map((source) => source.name));
    // The recorded checksums are the new files' now: the next start is a plain start.
    expect(await prepareLedgerSchema(upgraded)).toEqual({ applied: [], superseded: [], functions: [] });
    expect(await schemaShape(upgraded)).toEqual(await schemaShape(fresh));

    const after = [await scenarioAfter(upgraded), await scenarioAfter(fresh)];
    expect(after[0]).toEqual(after[1]);
    // The scenario reached what it means to: a late settle, a replay, a conflict, a budget refusal, a tombstone.
    const results = JSON.stringify(after[0], (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : value));
    for (const result of ['idempotency_conflict', 'released', 'insufficient_balance', 'organisation_unknown', 'invalid_argument', 'project_budget_exceeded', 'settled after expiry', 'already_resolved']) {
      expect(results).toContain(result);
    }
    expect(await ledgerRows(upgraded)).toEqual(await ledgerRows(fresh));
    expect(await findBalanceDifferences(upgraded)).toEqual([]);
  }, 60_000);

  it('refuses to start on a migration changed in a way the reviewed list does not name', async () => {
    const db = await open();
    const changedDir = mkdtempSync(join(tmpdir(), 'ledger-changed-migrations-'));
    try {
      for (const file of readdirSync(ledgerMigrationsDir)) copyFileSync(join(ledgerMigrationsDir, file), join(changedDir, file));
      await migrate(db, changedDir);
      writeFileSync(join(changedDir, '0003_operation_functions.sql'), 'SELECT 1;\n');
      await expect(migrate(db, changedDir)).rejects.toThrow(/0003.*changed after it was applied|migration 3 .*changed after it was applied/);
    } finally {
      rmSync(changedDir, { recursive: true, force: true });
    }
  });
});
