import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { migrate, openDatabase, type Database } from '@gateway/db';
import { createLogger } from '@gateway/logger';
import { createServiceMetrics } from '@gateway/telemetry';
import { createTestDatabase, testPostgresUrl, type TestDatabase } from '@gateway/testkit';
import { afterAll, describe, expect, it } from 'vitest';
import { applyLedgerOperations, type LedgerOperation, type LedgerOperationAnswer, type LedgerOperationRunner } from './domain/apply-ledger-operations.ts';
import { checkpoint } from './domain/checkpoint.ts';
import { credit } from './domain/credit.ts';
import { expireDueReservations } from './domain/expire-due-reservations.ts';
import { verifyLedger, type BalanceDifference } from './domain/find-balance-differences.ts';
import { acquireGrant } from './domain/grants.ts';
import { listUsage, type UsageRecordView } from './domain/list-usage.ts';
import { openAccount } from './domain/open-account.ts';
import { reserve, type ReserveInput } from './domain/reserve.ts';
import { setProjectBudget } from './domain/set-project-budget.ts';
import { settle, type SettleInput } from './domain/settle.ts';
import { summarizeUsage, type SummarizeUsageInput, type UsageSummaryRowView } from './domain/summarize-usage.ts';
import { ledgerMigrationsDir } from './ledger-schema-sources.ts';
import { prepareLedgerSchema } from './ledger-schema.ts';
import { seedUsageHistory } from './testing/seed-usage-history.ts';
import { periodicVerifyLockKey } from './periodic-verify-lock.ts';
import { maintainUsagePartitions } from './usage-maintenance-pass.ts';
import { startUsageMaintenance } from './usage-maintenance.ts';
import { addMonths, usagePartitionName } from './usage-partitions.ts';

const serverUrl = testPostgresUrl();
/** Embedded PGlite always (the `pnpm start` database); PostgreSQL when the run has one. */
const backends = ['pglite', ...(serverUrl ? ['postgres'] : [])] as const;

/** A Reserve of this file: 60 s, model 'm', the organisation's project 'p' unless named. */
function reserveInput(reservationId: string, organisationId: string, amountMicros: bigint, more: Partial<ReserveInput> = {}): ReserveInput {
  return {
    reservationId, organisationId, projectId: `${organisationId}-p`, billingMode: 'commercial', amountMicros, ttlMs: 60_000n,
    modelSlug: 'm', ...more,
  };
}

/** A Settle of this file; tokens follow from the cost so every record differs. */
function settleInput(reservationId: string, costMicros: bigint, more: Partial<SettleInput> = {}): SettleInput {
  return {
    reservationId, inputTokens: costMicros % 97n, outputTokens: costMicros % 13n, costMicros, providerCostMicros: costMicros / 3n,
    modelSlug: 'm', usageSource: 'upstream', requestId: `q-${reservationId}`, overrunOutputTokens: 0n, ...more,
  };
}

/**
 * A runner that holds operations until flush(), then applies them as one batch: the set-based
 * path when the batch has its shape (two or more Reserves or Settles of held reservations and
 * carves, no budget), else the per-operation loop, exactly as the group-commit batcher would.
 */
function heldBatch(db: Database): LedgerOperationRunner & { flush(): Promise<void> } {
  const pending: Array<{ operation: LedgerOperation; resolve(answer: LedgerOperationAnswer & { ok: true }): void; reject(error: Error): void }> = [];
  return {
    run: (operation) => new Promise((resolve, reject) => { pending.push({ operation, resolve, reject }); }),
    async flush() {
      const batch = pending.splice(0);
      const answers = await applyLedgerOperations(db, batch.map((entry) => entry.operation));
      answers.forEach((answer, index) => (answer.ok ? batch[index]!.resolve(answer) : batch[index]!.reject(answer.error)));
    },
  };
}

/** The daily roll-ups as stored, and as the raw usage records add up, in one comparable shape. */
async function rollupsAndRaw(db: Database): Promise<{ stored: unknown[]; raw: unknown[] }> {
  const columns = `organisation_id, project_id, model_slug, billing_mode, requests::text, input_tokens::text, output_tokens::text,
    cost_micros::text, provider_cost_micros::text, debited_micros::text`;
  const stored = await db.query(`SELECT to_char(day, 'YYYY-MM-DD') AS day, ${columns} FROM usage_daily WHERE requests > 0 ORDER BY 1, 2, 3, 4, 5`);
  const raw = await db.query(
    `SELECT to_char(day, 'YYYY-MM-DD') AS day, ${columns} FROM (
       SELECT (created_at AT TIME ZONE 'Asia/Kolkata')::date AS day, organisation_id, project_id, model_slug, billing_mode,
         count(*) AS requests, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens, sum(cost_micros) AS cost_micros,
         sum(provider_cost_micros) AS provider_cost_micros, sum(debited_micros) AS debited_micros
       FROM usage_records GROUP BY 1, 2, 3, 4, 5) AS r
     ORDER BY 1, 2, 3, 4, 5`,
  );
  return { stored: stored.rows, raw: raw.rows };
}

/** Which partition each of a reservation's usage records is in. */
async function partitionsOf(db: Database, reservationId: string): Promise<string[]> {
  const { rows } = await db.query<{ partition: string }>(
    'SELECT tableoid::regclass::text AS partition FROM usage_records WHERE reservation_id = $1 ORDER BY 1', [reservationId]);
  return rows.map((row) => row.partition);
}

/** The current month of the database clock, Asia/Kolkata, e.g. '2026-11'. */
async function currentMonth(db: Database): Promise<string> {
  const { rows } = await db.query<{ month: string }>('SELECT ledger_current_month() AS month');
  return rows[0]!.month;
}

/** The first instant of a month (Asia/Kolkata) as the database has it, ms since the epoch. */
async function monthStartMs(db: Database, month: string): Promise<bigint> {
  const { rows } = await db.query<{ ms: string }>(
    `SELECT (extract(epoch FROM (($1 || '-01')::date::timestamp AT TIME ZONE 'Asia/Kolkata')) * 1000)::bigint::text AS ms`, [month]);
  return BigInt(rows[0]!.ms);
}

/** Inserts a usage record behind the ledger's back (no reservation, no roll-up): for the schema's own guards. */
async function insertRawRecord(db: Database, reservationId: string, createdAt: string): Promise<void> {
  await db.query(
    `INSERT INTO usage_records (reservation_id, organisation_id, project_id, model_slug, input_tokens, output_tokens, cost_micros,
       provider_cost_micros, debited_micros, billing_mode, usage_source, request_id, created_at)
     VALUES ($1, 'org-raw', 'org-raw-p', 'm', 1, 1, 5, 1, 0, 'internal', 'upstream', '', $2::timestamptz)`,
    [reservationId, createdAt],
  );
}

/** Opens a fresh ledger database of `backend`, migrated; closed and dropped after the file. */
function freshDatabases() {
  const opened: Array<{ db: Database; testDatabase?: TestDatabase }> = [];
  afterAll(async () => {
    for (const { db, testDatabase } of opened.reverse()) {
      await db.close();
      await testDatabase?.drop();
    }
  });
  return async (backend: (typeof backends)[number], options: { migrated?: boolean } = {}): Promise<Database> => {
    const testDatabase = backend === 'postgres' ? await createTestDatabase(serverUrl!) : undefined;
    const db = await openDatabase({ url: testDatabase?.url, schema: 'ledger', poolSize: 8 });
    opened.push({ db, testDatabase });
    if (options.migrated ?? true) await prepareLedgerSchema(db);
    return db;
  };
}

describe.each(backends)('usage at volume over %s', (backend) => {
  const open = freshDatabases();

  it('routes each record to the partition of its month across a month boundary; a month without one waits in DEFAULT until maintenance moves it', async () => {
    const db = await open(backend);
    const first = await maintainUsagePartitions(db, { partitionsAhead: 2, retentionMonths: 0 });
    const current = await currentMonth(db);
    // The migration made this month and the next; the pass adds the second month ahead.
    expect(first.created).toEqual([usagePartitionName(addMonths(current, 2))]);
    expect(first.partitions).toEqual({ past: 0, current: 1, ahead: 2 });

    const next = addMonths(current, 1);
    const boundaryMs = await monthStartMs(db, next);
    await insertRawRecord(db, 'r-first-instant', new Date(Number(boundaryMs)).toISOString());
    await db.query(
      `INSERT INTO usage_records (reservation_id, organisation_id, project_id, model_slug, input_tokens, output_tokens, cost_micros,
         provider_cost_micros, debited_micros, billing_mode, usage_source, request_id, created_at)
       VALUES ('r-before-boundary', 'org-raw', 'org-raw-p', 'm', 1, 1, 5, 1, 0, 'internal', 'upstream', '',
         $1::timestamptz - interval '1 microsecond')`,
      [new Date(Number(boundaryMs)).toISOString()],
    );
    expect(await partitionsOf(db, 'r-before-boundary')).toEqual([usagePartitionName(current)]);
    expect(await partitionsOf(db, 'r-first-instant')).toEqual([usagePartitionName(next)]);

    // Five years on: no partition yet, so the DEFAULT partition takes it (a record is never refused for its month).
    const far = addMonths(current, 60);
    await insertRawRecord(db, 'r-far', `${far}-15T12:00:00+05:30`);
    expect(await partitionsOf(db, 'r-far')).toEqual(['usage_records_default']);
    const { rows: [before] } = await db.query<{ id: bigint }>("SELECT id FROM usage_records WHERE reservation_id = 'r-far'");

    const second = await maintainUsagePartitions(db, { partitionsAhead: 2, retentionMonths: 0 });
    expect(second).toMatchObject({ created: [usagePartitionName(far)], movedFromDefault: 1n, dropped: [] });
    expect(second.partitions).toEqual({ past: 0, current: 1, ahead: 3 });
    expect(await partitionsOf(db, 'r-far')).toEqual([usagePartitionName(far)]);
    const { rows: [after] } = await db.query<{ id: bigint }>("SELECT id FROM usage_records WHERE reservation_id = 'r-far'");
    expect(after!.id).toBe(before!.id);
    expect((await db.query('SELECT 1 FROM usage_records_default')).rowCount).toBe(0);
    // The move switched the append-only trigger off for its own DELETE only: it guards every partition again.
    await expect(db.query("DELETE FROM usage_records WHERE reservation_id = 'r-far'")).rejects.toThrow(/append-only/);
    await insertRawRecord(db, 'r-default-again', `${addMonths(current, 61)}-02T00:00:00+05:30`);
    await expect(db.query('DELETE FROM usage_records_default')).rejects.toThrow(/append-only/);

    // A pass with nothing to do changes nothing.
    const quiet = await maintainUsagePartitions(db, { partitionsAhead: 2, retentionMonths: 0 });
    expect(quiet).toMatchObject({ created: [usagePartitionName(addMonths(current, 61))], movedFromDefault: 1n, dropped: [] });
    expect(await maintainUsagePartitions(db, { partitionsAhead: 2, retentionMonths: 0 })).toMatchObject({ created: [], movedFromDefault: 0n, dropped: [] });

    // Every partition, the DEFAULT one included, refuses a second record of a reservation within it.
    const { rows: unguarded } = await db.query<{ partition: string }>(
      `SELECT c.relname AS partition FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
       WHERE i.inhparent = 'usage_records'::regclass AND NOT EXISTS (
         SELECT 1 FROM pg_index x JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = x.indkey[0]
         WHERE x.indrelid = c.oid AND x.indisunique AND x.indnatts = 1 AND a.attname = 'reservation_id')`,
    );
    expect(unguarded).toEqual([]);
  }, 60_000);

  it('keeps every daily roll-up equal to its raw records on every settle path, and verify finds nothing', async () => {
    const db = await open(backend);
    await maintainUsagePartitions(db, { partitionsAhead: 1, retentionMonths: 0 });
    for (const organisationId of ['org-a', 'org-b', 'org-i']) {
      await openAccount(db, organisationId);
      await credit(db, { creditId: `fund-${organisationId}`, organisationId, amountMicros: 100_000_000n, reason: '' });
    }
    // Months of history written as the settle paths would have (also into the roll-ups).
    const current = await currentMonth(db);
    await seedUsageHistory(db, {
      organisations: ['org-a', 'org-b'], projectsPerOrganisation: 2, models: ['m', 'n'], months: [addMonths(current, -2), addMonths(current, -1)],
      firstIndex: 0, count: 400, commercialEvery: 3, idPrefix: 'hist',
    });

    // 1. The per-operation path: commercial, internal, an overrun.
    await reserve(db, reserveInput('one-1', 'org-a', 5_000n));
    expect((await settle(db, settleInput('one-1', 4_000n))).result).toBe('ok');
    await reserve(db, reserveInput('one-2', 'org-i', 5_000n, { billingMode: 'internal' }));
    expect((await settle(db, settleInput('one-2', 6_000n, { modelSlug: 'n' }))).result).toBe('ok');
    await reserve(db, reserveInput('one-3', 'org-b', 1_000n));
    expect((await settle(db, settleInput('one-3', 1_500n, { overrunOutputTokens: 4n }))).result).toBe('ok');

    // 2. The set-based batch: Reserves, then Settles (three organisations, two models, both billing modes) in one batch each.
    const ids = Array.from({ length: 8 }, (_, index) => `set-${index}`);
    const organisationOf = (index: number) => ['org-a', 'org-b', 'org-i'][index % 3]!;
    let batch = heldBatch(db);
    const reserved = ids.map((id, index) => reserve(batch, reserveInput(id, organisationOf(index), 3_000n,
      organisationOf(index) === 'org-i' ? { billingMode: 'internal' } : {})));
    await batch.flush();
    expect((await Promise.all(reserved)).map((answer) => answer.result)).toEqual(ids.map(() => 'ok'));
    batch = heldBatch(db);
    const settled = ids.map((id, index) => settle(batch, settleInput(id, BigInt(100 * (index + 1)), { modelSlug: index % 2 === 0 ? 'm' : 'n' })));
    await batch.flush();
    expect((await Promise.all(settled)).map((answer) => answer.result)).toEqual(ids.map(() => 'ok'));

    // 3. Carves: alone, and several in one set-based batch.
    const granted = await acquireGrant(db, {
      grantId: 'grant-1', organisationId: 'org-a', projectId: 'org-a-p', billingMode: 'commercial', minMicros: 1n, wantMicros: 50_000n,
      ttlMs: 60_000n, ownerId: 'proxy-1',
    }, 100);
    expect(granted.result).toBe('ok');
    const carve = (id: string, costMicros: bigint) => settleInput(id, costMicros, { grantId: 'grant-1', reservedMicros: 2_000n });
    expect((await settle(db, carve('carve-0', 700n))).result).toBe('ok');
    batch = heldBatch(db);
    const carved = [1, 2, 3].map((index) => settle(batch, carve(`carve-${index}`, BigInt(300 * index))));
    await batch.flush();
    expect((await Promise.all(carved)).map((answer) => answer.result)).toEqual(['ok', 'ok', 'ok']);

    // 4. A budgeted project takes the per-operation loop inside a batch.
    await setProjectBudget(db, { requestId: 'budget-b', organisationId: 'org-b', projectId: 'org-b-capped', monthlyCapMicros: 1_000_000n, softAlertPercent: 80 });
    for (const id of ['capped-1', 'capped-2']) await reserve(db, reserveInput(id, 'org-b', 2_000n, { projectId: 'org-b-capped' }));
    batch = heldBatch(db);
    const capped = ['capped-1', 'capped-2'].map((id) => settle(batch, settleInput(id, 1_234n)));
    await batch.flush();
    expect((await Promise.all(capped)).map((answer) => answer.result)).toEqual(['ok', 'ok']);

    // 5. Expiry from a checkpoint (a provisional record), then late settles that finalise it: one
    //    with higher actual figures and another model (the roll-up moves rows), one below what was charged.
    for (const [id, model] of [['late-1', 'm'], ['late-2', 'm']] as const) {
      await reserve(db, reserveInput(id, 'org-a', 3_000n, { modelSlug: model }));
      await checkpoint(db, { reservationId: id, sequence: 1n, inputTokens: 11n, outputTokens: 7n, costMicros: 900n, providerCostMicros: 300n, extendTtlMs: 0n, requestId: `q-${id}` });
    }
    await db.query("UPDATE reservations SET expires_at = now() - interval '1 second' WHERE id IN ('late-1', 'late-2')");
    expect((await expireDueReservations(db, 100)).expiredCount).toBe(2);
    const provisional = await rollupsAndRaw(db);
    expect(provisional.stored).toEqual(provisional.raw);
    expect((await settle(db, settleInput('late-1', 1_600n, { modelSlug: 'n' }))).detail).toBe('settled after expiry');
    expect((await settle(db, settleInput('late-2', 500n))).detail).toBe('settled after expiry');

    const { stored, raw } = await rollupsAndRaw(db);
    expect(stored).toEqual(raw);
    expect(raw.length).toBeGreaterThan(10);
    expect((await verifyLedger(db)).differences).toEqual([]);
  }, 120_000);

  it('answers the same summaries and listings after migration 0012 as before it, from month partitions and roll-ups', async () => {
    const db = await open(backend, { migrated: false });
    const before0012 = mkdtempSync(join(tmpdir(), 'ledger-before-0012-'));
    try {
      for (const file of readdirSync(ledgerMigrationsDir).filter((name) => /^00(0\d|1[01])_.*\.sql$/.test(name))) {
        copyFileSync(join(ledgerMigrationsDir, file), join(before0012, file));
      }
      expect((await migrate(db, before0012)).applied.at(-1)).toBe('0011_grant_recall_answers');
    } finally {
      rmSync(before0012, { recursive: true, force: true });
    }
    // Records as the old single table held them: three months, several days (some at a day's
    // first and last instant), two organisations, projects, models and both billing modes.
    const { rows: [clock] } = await db.query<{ month: string }>("SELECT to_char(now() AT TIME ZONE 'Asia/Kolkata', 'YYYY-MM') AS month");
    const months = [addMonths(clock!.month, -2), addMonths(clock!.month, -1), clock!.month];
    await db.query(
      `INSERT INTO usage_records (reservation_id, organisation_id, project_id, model_slug, input_tokens, output_tokens, cost_micros,
         provider_cost_micros, debited_micros, billing_mode, usage_source, request_id, created_at, provisional)
       SELECT 'old-' || i, CASE WHEN i % 3 = 0 THEN 'org-y' ELSE 'org-x' END, 'proj-' || (i % 2), CASE WHEN i % 5 = 0 THEN 'n' ELSE 'm' END,
         i, i * 2, 100 + i, 40 + i, CASE WHEN i % 4 = 0 THEN 0 ELSE 100 + i END, CASE WHEN i % 4 = 0 THEN 'internal' ELSE 'commercial' END,
         'upstream', 'q-' || i,
         (($1::text[])[1 + i % 3] || '-01')::date::timestamp AT TIME ZONE 'Asia/Kolkata'
           + ((i * 37) % 9) * interval '1 day' + CASE i % 7 WHEN 0 THEN interval '0' WHEN 1 THEN interval '1 day' - interval '1 microsecond'
             ELSE (i * 4111 % 86400) * interval '1 second' END,
         i % 11 = 0
       FROM generate_series(1, 300) AS i
       WHERE (($1::text[])[1 + i % 3] || '-01')::date::timestamp AT TIME ZONE 'Asia/Kolkata' + ((i * 37) % 9) * interval '1 day' < now()`,
      [months],
    );
    const starts = await Promise.all(months.map((month) => monthStartMs(db, month)));
    const windows: Array<Partial<SummarizeUsageInput>> = [
      {},
      { fromMs: starts[0]!, toMs: starts[1]! },
      { fromMs: starts[1]!, toMs: starts[2]! },
      { fromMs: starts[0]! + 5n * 3_600_000n + 17n, toMs: starts[1]! + 3n * 86_400_000n + 1n },
      { fromMs: starts[1]! + 86_400_000n - 1n, toMs: starts[1]! + 86_400_000n + 1n },
      { fromMs: starts[0]! + 3_600_000n, toMs: starts[0]! + 7_200_000n },
      { fromMs: starts[1]! + 123_456_789n },
      { toMs: starts[2]! - 1n },
    ];
    const inputs: SummarizeUsageInput[] = windows.flatMap((window) => [
      { organisationId: 'org-x', allOrganisations: false, groupByProject: false, projectId: '', fromMs: 0n, toMs: 0n, ...window },
      { organisationId: 'org-x', allOrganisations: false, groupByProject: true, projectId: 'proj-1', fromMs: 0n, toMs: 0n, ...window },
      { organisationId: '', allOrganisations: true, groupByProject: true, projectId: '', fromMs: 0n, toMs: 0n, ...window },
    ]);
    const oldSummaries = await Promise.all(inputs.map((input) => summaryBefore0012(db, input)));
    // This build's listing reads token_classes (migration 0015) and deployment (0018): the 0011
    // schema gets the columns for the read and loses them again, so the upgrade below runs on the
    // schema as it was.
    await db.query('ALTER TABLE usage_records ADD COLUMN token_classes jsonb, ADD COLUMN deployment text');
    const oldPages = await allPages(db, 'org-x');
    await db.query('ALTER TABLE usage_records DROP COLUMN token_classes, DROP COLUMN deployment');
    expect(oldPages.length).toBeGreaterThan(150);
    expect(oldSummaries.flat().length).toBeGreaterThan(100);

    const upgrade = await prepareLedgerSchema(db);
    expect(upgrade.applied).toContain('0012_usage_at_volume');
    expect(await Promise.all(inputs.map((input) => summarizeUsage(db, input)))).toEqual(oldSummaries);
    expect(await allPages(db, 'org-x')).toEqual(oldPages);
    // Every record is in its month's partition; the roll-ups add up the records; the ids kept their sequence.
    const { rows: placed } = await db.query<{ partition: string; month: string }>(
      `SELECT DISTINCT tableoid::regclass::text AS partition, to_char(created_at AT TIME ZONE 'Asia/Kolkata', 'YYYY-MM') AS month FROM usage_records`);
    expect(placed.every((row) => row.partition === usagePartitionName(row.month))).toBe(true);
    const { stored, raw } = await rollupsAndRaw(db);
    expect(stored).toEqual(raw);
    await insertRawRecord(db, 'new-after-0012', new Date().toISOString());
    const { rows: [ids] } = await db.query<{ newest: bigint; oldest_max: bigint }>(
      `SELECT (SELECT id FROM usage_records WHERE reservation_id = 'new-after-0012') AS newest,
         (SELECT max(id) FROM usage_records WHERE reservation_id LIKE 'old-%') AS oldest_max`);
    expect(ids!.newest).toBeGreaterThan(ids!.oldest_max);
  }, 60_000);

  it('drops only whole months older than the retention, keeps their roll-ups and movements, and verify still agrees', async () => {
    const db = await open(backend);
    await maintainUsagePartitions(db, { partitionsAhead: 1, retentionMonths: 0 });
    const organisations = ['org-r1', 'org-r2', 'org-r3'];
    for (const organisationId of organisations) {
      await openAccount(db, organisationId);
      await credit(db, { creditId: `fund-${organisationId}`, organisationId, amountMicros: 1_000_000_000n, reason: '' });
    }
    const current = await currentMonth(db);
    const months = [-4, -3, -2, -1].map((step) => addMonths(current, step));
    await seedUsageHistory(db, {
      organisations, projectsPerOrganisation: 2, models: ['m', 'n', 'o'], months, firstIndex: 0, count: 1_200, commercialEvery: 2,
      idPrefix: 'aged',
    });
    await reserve(db, reserveInput('today-1', 'org-r1', 9_000n));
    await settle(db, settleInput('today-1', 8_000n));
    expect((await verifyLedger(db)).differences).toEqual([]);

    const snapshot = async () => ({
      rollups: (await db.query('SELECT * FROM usage_daily ORDER BY day, organisation_id, project_id, model_slug, billing_mode')).rows,
      movements: (await db.query('SELECT count(*)::text AS count, sum(debited_delta_micros)::text AS debited FROM movements')).rows,
      accounts: (await db.query('SELECT * FROM accounts ORDER BY organisation_id')).rows,
      spend: (await db.query('SELECT * FROM project_month_spend ORDER BY project_id, month')).rows,
    });
    const monthSummaries = async () => {
      const starts = await Promise.all([...months, current].map((month) => monthStartMs(db, month)));
      return Promise.all(months.map((_, index) => summarizeUsage(db, {
        organisationId: '', allOrganisations: true, groupByProject: true, projectId: '', fromMs: starts[index]!, toMs: starts[index + 1]!,
      })));
    };
    const countIn = async (month: string) => (await db.query<{ count: bigint }>(
      `SELECT count(*) AS count FROM usage_records WHERE to_char(created_at AT TIME ZONE 'Asia/Kolkata', 'YYYY-MM') = $1`, [month])).rows[0]!.count;
    const kept = { before: await snapshot(), summaries: await monthSummaries() };
    const droppedRecords = (await countIn(months[0]!)) + (await countIn(months[1]!));
    const keptRecords = [await countIn(months[2]!), await countIn(months[3]!)];
    expect(droppedRecords).toBe(600n);

    // The seeded months wait in DEFAULT; a pass without retention gives them their partitions.
    expect((await maintainUsagePartitions(db, { partitionsAhead: 1, retentionMonths: 0 })).created).toEqual(months.map(usagePartitionName));
    if (backend === 'postgres') {
      // A CLI verify that has taken its snapshot (its first queries ran) and not yet read the raw
      // records: the drop must not commit under it (it would pair the old usage_retention with the
      // month's partition gone: every roll-up of the month a difference). The DROP waits for the
      // verify's lock for lock_timeout and the pass fails, changing nothing; the verify agrees.
      let reachedRollups!: () => void;
      const atRollups = new Promise<void>((resolve) => { reachedRollups = resolve; });
      let resume!: () => void;
      const resumed = new Promise<void>((resolve) => { resume = resolve; });
      const pausing: Database = {
        ...db,
        transaction: (work, options) => db.transaction((tx) => work({
          exec: (script) => tx.exec(script),
          query: async (text, params) => {
            if (text.includes('FROM usage_daily GROUP BY organisation_id')) {
              reachedRollups();
              await resumed;
            }
            return tx.query(text, params);
          },
        }), options),
      };
      const verifying = verifyLedger(pausing);
      await atRollups;
      await expect(maintainUsagePartitions(db, { partitionsAhead: 1, retentionMonths: 2 })).rejects.toThrow(/lock timeout/);
      resume();
      expect((await verifying).differences).toEqual([]);
      expect(await countIn(months[0]!)).toBe(300n);

      // A periodic verify holds its advisory lock for its whole run: the pass leaves the drops to the next pass.
      let release!: () => void;
      const released = new Promise<void>((resolve) => { release = resolve; });
      let holding!: () => void;
      const held = new Promise<void>((resolve) => { holding = resolve; });
      const periodicVerify = db.transaction(async (tx) => {
        await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [periodicVerifyLockKey(db.schema)]);
        holding();
        await released;
      });
      await held;
      expect(await maintainUsagePartitions(db, { partitionsAhead: 1, retentionMonths: 2 })).toMatchObject({
        dropped: [], rowsPruned: 0n, deferred: [usagePartitionName(months[0]!), usagePartitionName(months[1]!)],
      });
      release();
      await periodicVerify;
      expect(await countIn(months[0]!)).toBe(300n);
    }

    const report = await maintainUsagePartitions(db, { partitionsAhead: 1, retentionMonths: 2 });
    expect(report.deferred).toEqual([]);
    expect(report.dropped).toEqual([usagePartitionName(months[0]!), usagePartitionName(months[1]!)]);
    expect(report.rowsPruned).toBe(droppedRecords);
    expect(report.partitions).toEqual({ past: 2, current: 1, ahead: 1 });
    expect([await countIn(months[0]!), await countIn(months[1]!)]).toEqual([0n, 0n]);
    expect([await countIn(months[2]!), await countIn(months[3]!)]).toEqual(keptRecords);
    const { rows: [retention] } = await db.query<{ day: string }>("SELECT to_char(raw_from_day, 'YYYY-MM-DD') AS day FROM usage_retention");
    expect(retention!.day).toBe(`${months[2]}-01`);

    // Money movements, balances, spend and roll-ups are untouched; whole-month summaries of the
    // dropped months still answer from the roll-ups; verify checks roll-ups against raw records
    // where they are kept and finds nothing.
    expect(await snapshot()).toEqual(kept.before);
    expect(await monthSummaries()).toEqual(kept.summaries);
    // A window whose edge days are partial days of a dropped month widens to those whole days (from
    // their roll-ups) instead of counting them as 0: here, exactly the dropped month.
    const hourMs = 3_600_000n;
    expect(await summarizeUsage(db, {
      organisationId: '', allOrganisations: true, groupByProject: true, projectId: '',
      fromMs: (await monthStartMs(db, months[0]!)) + 12n * hourMs, toMs: (await monthStartMs(db, months[1]!)) - hourMs,
    })).toEqual(kept.summaries[0]);
    expect((await verifyLedger(db)).differences).toEqual([]);
    expect(await maintainUsagePartitions(db, { partitionsAhead: 1, retentionMonths: 2 })).toMatchObject({ dropped: [], rowsPruned: 0n });

    // The service's periodic maintenance (as app.ts starts it) exports what it did: one month less, its records counted.
    const metrics = createServiceMetrics('ledger');
    const maintenance = startUsageMaintenance({
      database: db, logger: createLogger('ledger', 'silent'), metrics, partitionsAhead: 1, retentionMonths: 1, intervalMs: 3_600_000,
    });
    try {
      // The pass at start drops the month; this one, queued behind it, finds nothing more to do.
      expect(await maintenance.runNow()).toMatchObject({ dropped: [], partitions: { past: 1, current: 1, ahead: 1 } });
      expect(await countIn(months[2]!)).toBe(0n);
      const text = await metrics.render();
      expect(text).toMatch(/gateway_ledger_usage_partitions\{state="past",service="ledger"\} 1\n/);
      expect(text).toMatch(/gateway_ledger_usage_partitions\{state="ahead",service="ledger"\} 1\n/);
      expect(text).toContain(`gateway_ledger_usage_rows_pruned_total{service="ledger"} ${keptRecords[0]}\n`);
    } finally {
      await maintenance.stop();
    }
    expect((await verifyLedger(db)).differences).toEqual([]);

    // Verify can still fail: a roll-up of a kept day that disagrees with its records, and one of a
    // dropped day, which the balances and the project spend still catch.
    for (const side of ['<', '>=']) {
      await db.query(`UPDATE usage_daily SET cost_micros = cost_micros + 1, debited_micros = debited_micros + 1
        WHERE (day, organisation_id, project_id, model_slug, billing_mode) = (
          SELECT day, organisation_id, project_id, model_slug, billing_mode FROM usage_daily
          WHERE billing_mode = 'commercial' AND day ${side} (SELECT raw_from_day FROM usage_retention) ORDER BY 1, 2, 3, 4 LIMIT 1)`);
    }
    const checks = (await verifyLedger(db)).differences.map((difference: BalanceDifference) => difference.check);
    expect(new Set(checks)).toEqual(new Set(['usage', 'usage_rollups', 'project_spend']));
  }, 120_000);

  it('bills a duplicate Settle once on every path; the schema refuses a second record in a month, and verify reports one in another month', async () => {
    const db = await open(backend);
    await maintainUsagePartitions(db, { partitionsAhead: 1, retentionMonths: 0 });
    await openAccount(db, 'org-d');
    await credit(db, { creditId: 'fund-d', organisationId: 'org-d', amountMicros: 10_000_000n, reason: '' });
    await reserve(db, reserveInput('dup-1', 'org-d', 5_000n));
    const first = await settle(db, settleInput('dup-1', 2_000n));
    expect(await settle(db, settleInput('dup-1', 2_000n))).toEqual(first);

    for (const id of ['dup-2', 'dup-3']) await reserve(db, reserveInput(id, 'org-d', 5_000n));
    for (let round = 0; round < 2; round++) {
      const batch = heldBatch(db);
      const answers = ['dup-2', 'dup-3'].map((id) => settle(batch, settleInput(id, 1_000n)));
      await batch.flush();
      expect((await Promise.all(answers)).map((answer) => [answer.result, answer.debitedMicros])).toEqual([['ok', 1_000n], ['ok', 1_000n]]);
    }
    await acquireGrant(db, {
      grantId: 'grant-d', organisationId: 'org-d', projectId: 'org-d-p', billingMode: 'commercial', minMicros: 1n, wantMicros: 10_000n,
      ttlMs: 60_000n, ownerId: 'proxy-d',
    }, 100);
    const carve = settleInput('dup-carve', 600n, { grantId: 'grant-d', reservedMicros: 1_000n });
    expect(await settle(db, carve)).toEqual(await settle(db, carve));
    // Concurrent copies of one Settle (PostgreSQL: separate connections).
    await reserve(db, reserveInput('dup-4', 'org-d', 5_000n));
    const copies = await Promise.all(Array.from({ length: 5 }, () => settle(db, settleInput('dup-4', 3_000n))));
    expect(new Set(copies.map((copy) => `${copy.result}:${copy.debitedMicros}`))).toEqual(new Set(['ok:3000']));

    const { rows: records } = await db.query<{ reservation_id: string; count: bigint }>(
      "SELECT reservation_id, count(*) AS count FROM usage_records WHERE organisation_id = 'org-d' GROUP BY 1 ORDER BY 1");
    expect(records).toEqual(['dup-1', 'dup-2', 'dup-3', 'dup-4', 'dup-carve'].map((id) => ({ reservation_id: id, count: 1n })));
    const { rows: [account] } = await db.query<{ debited_micros: bigint }>("SELECT debited_micros FROM accounts WHERE organisation_id = 'org-d'");
    expect(account!.debited_micros).toBe(2_000n + 1_000n + 1_000n + 600n + 3_000n);
    const { rows: [rollup] } = await db.query<{ requests: string }>("SELECT sum(requests)::text AS requests FROM usage_daily WHERE organisation_id = 'org-d'");
    expect(rollup!.requests).toBe('5');
    expect((await verifyLedger(db)).differences).toEqual([]);

    // Behind the ledger's back: a second record in the same month is refused by the month's unique
    // index; one in another month passes the schema, and verify names the reservation.
    await expect(insertRawRecord(db, 'dup-1', new Date().toISOString())).rejects.toThrow(/duplicate key|unique/i);
    const current = await currentMonth(db);
    await insertRawRecord(db, 'dup-1', `${addMonths(current, 1)}-10T10:00:00+05:30`);
    const duplicates = (await verifyLedger(db)).differences.filter((difference) => difference.check === 'duplicates');
    expect(duplicates).toEqual([{
      organisationId: 'org-d', check: 'duplicates', balance: 'usage_record', accountMicros: 1n, recomputedMicros: 2n, reservationId: 'dup-1',
    }]);
  }, 60_000);
});

describe.runIf(serverUrl)('usage maintenance over PostgreSQL with a non-ISO DateStyle', () => {
  it('bounds a new month partition at Asia/Kolkata midnight whatever the session DateStyle and time zone', async () => {
    const testDatabase = await createTestDatabase(serverUrl!);
    const migrating = await openDatabase({ url: testDatabase.url, schema: 'ledger', poolSize: 2 });
    let db: Database | undefined;
    try {
      await prepareLedgerSchema(migrating);
      // SQL style prints Asia/Kolkata as 'IST', which PostgreSQL reads back as Israel time (+02).
      const { rows: [name] } = await migrating.query<{ name: string }>('SELECT current_database() AS name');
      await migrating.query(`ALTER DATABASE "${name!.name}" SET datestyle = 'SQL, DMY'`);
      await migrating.query(`ALTER DATABASE "${name!.name}" SET timezone = 'Asia/Kolkata'`);
      db = await openDatabase({ url: testDatabase.url, schema: 'ledger', poolSize: 2 });
      const next = addMonths(await currentMonth(db), 1);
      await db.query(`DROP TABLE ${usagePartitionName(next)}`);
      expect((await maintainUsagePartitions(db, { partitionsAhead: 1, retentionMonths: 0 })).created).toEqual([usagePartitionName(next)]);
      await insertRawRecord(db, 'first-half-hour', `${next}-01T00:30:00+05:30`);
      expect(await partitionsOf(db, 'first-half-hour')).toEqual([usagePartitionName(next)]);
    } finally {
      await db?.close();
      await migrating.close();
      await testDatabase.drop();
    }
  }, 60_000);
});

/** The summary as SummarizeUsage computed it before migration 0012: one aggregate over the raw records. */
async function summaryBefore0012(db: Database, input: SummarizeUsageInput): Promise<UsageSummaryRowView[]> {
  const { rows } = await db.query<Record<string, string>>(
    `SELECT to_char(created_at AT TIME ZONE 'Asia/Kolkata', 'YYYY-MM-DD') AS day, model_slug,
       CASE WHEN $5::boolean THEN organisation_id ELSE '' END AS organisation_id,
       CASE WHEN $6::boolean THEN project_id ELSE '' END AS project_id,
       CASE WHEN $5::boolean THEN billing_mode ELSE '' END AS billing_mode,
       count(*)::text AS requests, sum(input_tokens)::text AS input_tokens, sum(output_tokens)::text AS output_tokens,
       sum(cost_micros)::text AS cost_micros, sum(provider_cost_micros)::text AS provider_cost_micros, sum(debited_micros)::text AS debited_micros
     FROM usage_records
     WHERE ($5::boolean OR organisation_id = $1) AND ($2::text = '' OR project_id = $2)
       AND ($3::bigint = 0 OR created_at >= timestamptz 'epoch' + $3::bigint * interval '1 millisecond')
       AND ($4::bigint = 0 OR created_at < timestamptz 'epoch' + $4::bigint * interval '1 millisecond')
     GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5`,
    [input.organisationId, input.projectId, input.fromMs, input.toMs, input.allOrganisations, input.groupByProject],
  );
  return rows.map((row) => ({
    organisationId: row.organisation_id!, projectId: row.project_id!, billingMode: row.billing_mode === '' ? null : row.billing_mode as 'commercial' | 'internal',
    day: row.day!, modelSlug: row.model_slug!, requests: BigInt(row.requests!), inputTokens: BigInt(row.input_tokens!),
    outputTokens: BigInt(row.output_tokens!), costMicros: BigInt(row.cost_micros!), providerCostMicros: BigInt(row.provider_cost_micros!),
    debitedMicros: BigInt(row.debited_micros!),
    // Before migration 0015 no record carried token classes: every record is unclassified.
    tokenClasses: [], unclassifiedRequests: BigInt(row.requests!),
  }));
}

/** Every usage record of an organisation, page by page (7 a page, so many keyset pages). */
async function allPages(db: Database, organisationId: string): Promise<UsageRecordView[]> {
  const records: UsageRecordView[] = [];
  let pageToken = '';
  do {
    const page = await listUsage(db, { organisationId, projectId: '', modelSlug: '', fromMs: 0n, toMs: 0n, pageSize: 7, pageToken });
    records.push(...page.records);
    pageToken = page.nextPageToken;
  } while (pageToken !== '');
  return records;
}
