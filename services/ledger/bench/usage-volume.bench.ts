/**
 * `pnpm bench usage`: whether the usage reads stay flat as the usage records grow (docs/ledger.md,
 * "Usage at volume"). One ledger holds 100 thousand usage records, another 10 million; the same
 * reads are timed on both, and the figure is the ratio of the two times (target: about 1). The records
 * spread over six past months, 1,000 organisations (two projects each; 20 of them send half of
 * all requests, and their reads are the ones timed), three models and both billing modes (every
 * tenth commercial, with its debit and movement), written set-based as the
 * settle paths would have left them, roll-ups and project spend included
 * (services/ledger/src/testing/seed-usage-history.ts). Timed, each the median of repeated calls
 * over the same organisations at both sizes:
 * - the month summary of one organisation (SummarizeUsage over a calendar month: roll-ups only),
 * - the month summary of every organisation (the platform analytics the dashboard reads),
 * - the first page of an organisation's listing (ListUsage, 50 records, newest first),
 * - a deep page by keyset (the page after a cursor three months back),
 * - for contrast, the month summaries as computed before migration 0012 (one aggregate over the
 *   raw records), which grow with the records.
 * The two sizes are two ledger databases, timed in alternating rounds (small, large, small, ...),
 * so a change in the machine's load touches both alike. Afterwards Verify must find no difference
 * in either, across the partitions; the process exits 1 otherwise. Writes
 * bench-results/usage-volume.json.
 *
 * Environment: TEST_DATABASE_URL or DATABASE_URL (a server URL; a fresh database is created and
 * dropped), BENCH_USAGE_RECORDS (the large size, default 10,000,000), BENCH_USAGE_SMALL (default
 * 100,000), BENCH_KEEP_DATABASES=1 (keep both databases and print their URLs, to look at plans).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openDatabase, type Database } from '@gateway/db';
import { createBenchDatabase } from './bench-database.ts';
import { credit } from '../src/domain/credit.ts';
import { verifyLedger } from '../src/domain/find-balance-differences.ts';
import { listUsage } from '../src/domain/list-usage.ts';
import { openAccount } from '../src/domain/open-account.ts';
import { encodePageToken } from '../src/domain/page-token.ts';
import { summarizeUsage } from '../src/domain/summarize-usage.ts';
import { prepareLedgerSchema } from '../src/ledger-schema.ts';
import { seedUsageHistory, type UsageHistoryPlan } from '../src/testing/seed-usage-history.ts';
import { maintainUsagePartitions } from '../src/usage-maintenance-pass.ts';
import { addMonths, createUsagePartition } from '../src/usage-partitions.ts';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const largeSize = Number(process.env.BENCH_USAGE_RECORDS ?? '10000000');
const smallSize = Number(process.env.BENCH_USAGE_SMALL ?? '100000');
if (!Number.isInteger(largeSize) || !Number.isInteger(smallSize) || smallSize <= 0 || largeSize <= smallSize) {
  process.stderr.write('BENCH_USAGE_SMALL and BENCH_USAGE_RECORDS must be integers with 0 < small < large\n');
  process.exit(2);
}
const organisations = Array.from({ length: 1_000 }, (_, index) => `usage-org-${String(index).padStart(4, '0')}`);
/** Organisations that send half of all requests between them (traffic is skewed); their reads are timed, the same ones at both sizes. */
const heavyOrganisations = 20;
const timedOrganisations = organisations.slice(0, heavyOrganisations);
const models = ['model-a', 'model-b', 'model-c'];
const monthsBack = 6;


/** One timed read at one size. */
interface Timing {
  read: string;
  records: number;
  /** Median over the calls of every round, ms. */
  medianMs: number;
  /** 95th percentile over the same calls, ms. */
  p95Ms: number;
  calls: number;
  /** Rows (summary) or records (listing) the last call answered. */
  answered: number;
}

/** A read the benchmark times: called once per argument in each round. */
interface TimedRead {
  name: string;
  args: readonly string[];
  /** Answers how many rows or records it got. */
  read(db: Database, arg: string): Promise<number>;
}

/** Samples of one read at one size, ms, and what its last call answered. */
interface Samples {
  ms: number[];
  answered: number;
}

/** The median and 95th percentile of samples, ms. */
function summarise(read: string, records: number, samples: Samples): Timing {
  const sorted = [...samples.ms].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return { read, records, medianMs: Number(at(0.5).toFixed(3)), p95Ms: Number(at(0.95).toFixed(3)), calls: sorted.length, answered: samples.answered };
}

/** The month summary as SummarizeUsage computed it before migration 0012: one aggregate over the raw records of the window. */
async function rawMonthSummary(db: Database, organisationId: string | null, fromMs: bigint, toMs: bigint): Promise<number> {
  const { rowCount } = await db.query(
    `SELECT to_char(created_at AT TIME ZONE 'Asia/Kolkata', 'YYYY-MM-DD') AS day, model_slug, organisation_id, project_id, billing_mode,
       count(*), sum(input_tokens), sum(output_tokens), sum(cost_micros), sum(provider_cost_micros), sum(debited_micros)
     FROM usage_records
     WHERE ($1::text IS NULL OR organisation_id = $1)
       AND created_at >= timestamptz 'epoch' + $2::bigint * interval '1 millisecond'
       AND created_at < timestamptz 'epoch' + $3::bigint * interval '1 millisecond'
     GROUP BY 1, 2, 3, 4, 5`,
    [organisationId, fromMs, toMs],
  );
  return rowCount;
}

/** The reads timed at each size. */
function timedReads(window: { fromMs: bigint; toMs: bigint }, deepCursorMicros: bigint): TimedRead[] {
  const summaryOf = (organisationId: string) => ({
    organisationId, allOrganisations: organisationId === '', groupByProject: true, projectId: '', ...window,
  });
  const page = (db: Database, organisationId: string, pageToken: string) =>
    listUsage(db, { organisationId, projectId: '', modelSlug: '', fromMs: 0n, toMs: 0n, pageSize: 50, pageToken });
  const deepToken = encodePageToken({ createdAtMicros: deepCursorMicros, id: 2n ** 63n - 1n });
  return [
    { name: 'month summary, one organisation', args: timedOrganisations, read: async (db, organisationId) => (await summarizeUsage(db, summaryOf(organisationId))).length },
    { name: 'month summary, every organisation', args: [''], read: async (db) => (await summarizeUsage(db, summaryOf(''))).length },
    { name: 'listing, first page (50)', args: timedOrganisations, read: async (db, organisationId) => (await page(db, organisationId, '')).records.length },
    { name: 'listing, deep page by keyset (50)', args: timedOrganisations, read: async (db, organisationId) => (await page(db, organisationId, deepToken)).records.length },
    { name: 'before 0012: month summary from raw records, one organisation', args: timedOrganisations,
      read: (db, organisationId) => rawMonthSummary(db, organisationId, window.fromMs, window.toMs) },
    { name: 'before 0012: month summary from raw records, every organisation', args: [''], read: (db) => rawMonthSummary(db, null, window.fromMs, window.toMs) },
  ];
}

/** Calls every read once per argument on `db`, adding each call's time to `samples` (by read name). */
async function timeRound(db: Database, reads: readonly TimedRead[], samples: Map<string, Samples>, warmUp: boolean): Promise<void> {
  for (const read of reads) {
    const entry = samples.get(read.name) ?? { ms: [], answered: 0 };
    samples.set(read.name, entry);
    if (warmUp) for (const arg of read.args) await read.read(db, arg);
    for (const arg of read.args) {
      const started = performance.now();
      entry.answered = await read.read(db, arg);
      entry.ms.push(performance.now() - started);
    }
  }
}

/** A bench database made ready for a plan: schema, partitions (the six past months too), funded accounts. */
interface PreparedLedger {
  db: Database;
  months: string[];
  window: { fromMs: bigint; toMs: bigint };
  deepCursorMicros: bigint;
  partitionsCreatedAtStart: string[];
}

/** Migrates a bench database, creates its partitions and funds every organisation. */
async function prepareLedger(db: Database): Promise<PreparedLedger> {
  await prepareLedgerSchema(db);
  const partitions = await maintainUsagePartitions(db, { partitionsAhead: 3, retentionMonths: 0 });
  for (const organisationId of organisations) {
    await openAccount(db, organisationId);
    await credit(db, { creditId: `fund-${organisationId}`, organisationId, amountMicros: 1_000_000_000_000n, reason: 'bench funding' });
  }
  const { rows: [clock] } = await db.query<{ month: string }>('SELECT ledger_current_month() AS month');
  const months = Array.from({ length: monthsBack }, (_, index) => addMonths(clock!.month, index - monthsBack));
  // The past months' partitions, as maintenance created them when each month was ahead.
  for (const month of months) await createUsagePartition(db, month);
  // The timed month: the third of the six; the deep cursor: the start of the fourth.
  const bounds = await db.query<{ from_ms: string; to_ms: string; deep_micros: string }>(
    `SELECT (extract(epoch FROM ($1 || '-01')::date::timestamp AT TIME ZONE 'Asia/Kolkata') * 1000)::bigint::text AS from_ms,
       (extract(epoch FROM (($1 || '-01')::date + interval '1 month')::timestamp AT TIME ZONE 'Asia/Kolkata') * 1000)::bigint::text AS to_ms,
       (extract(epoch FROM ($2 || '-01')::date::timestamp AT TIME ZONE 'Asia/Kolkata') * 1000000)::bigint::text AS deep_micros`,
    [months[2], months[3]],
  );
  return {
    db, months, partitionsCreatedAtStart: partitions.created,
    window: { fromMs: BigInt(bounds.rows[0]!.from_ms), toMs: BigInt(bounds.rows[0]!.to_ms) },
    deepCursorMicros: BigInt(bounds.rows[0]!.deep_micros),
  };
}

/** Rounds of timed reads; each round times the small ledger, then the large one, so drift in the machine's load touches both sizes alike. */
const rounds = 3;
const keepDatabases = process.env.BENCH_KEEP_DATABASES === '1';

const benchDatabases = [await createBenchDatabase(), await createBenchDatabase()];
const databases: Database[] = [];
let failed = false;
try {
  for (const bench of benchDatabases) databases.push(await openDatabase({ url: bench.url, schema: 'ledger', poolSize: 4 }));
  const [small, large] = [await prepareLedger(databases[0]!), await prepareLedger(databases[1]!)];
  const plan: Omit<UsageHistoryPlan, 'firstIndex' | 'count'> = {
    organisations, heavy: heavyOrganisations, projectsPerOrganisation: 2, models, months: small.months, commercialEvery: 10, idPrefix: 'bench',
  };
  const loads: Array<{ records: number; seconds: number }> = [];
  for (const [ledger, count] of [[small, smallSize], [large, largeSize]] as const) {
    const started = performance.now();
    await seedUsageHistory(ledger.db, { ...plan, firstIndex: 0, count });
    loads.push({ records: count, seconds: Number(((performance.now() - started) / 1000).toFixed(1)) });
    console.log(`loaded ${count} usage records in ${loads.at(-1)!.seconds} s`);
    await ledger.db.exec('ANALYZE usage_daily; ANALYZE usage_records; ANALYZE reservations; ANALYZE movements');
  }

  const reads = timedReads(small.window, small.deepCursorMicros);
  const samples = [new Map<string, Samples>(), new Map<string, Samples>()];
  for (let round = 0; round < rounds; round++) {
    await timeRound(small.db, reads, samples[0]!, round === 0);
    await timeRound(large.db, reads, samples[1]!, round === 0);
  }
  const [smallTimings, largeTimings] = [0, 1].map((size) =>
    reads.map((read) => summarise(read.name, size === 0 ? smallSize : largeSize, samples[size]!.get(read.name)!)));
  console.table([...smallTimings!, ...largeTimings!]);
  const ratios = smallTimings!.map((timing, index) => ({
    read: timing.read, [`${smallSize} ms`]: timing.medianMs, [`${largeSize} ms`]: largeTimings![index]!.medianMs,
    ratio: Number((largeTimings![index]!.medianMs / timing.medianMs).toFixed(2)),
  }));
  console.table(ratios);

  const sizes = await large.db.query<{ usage_records: string; usage_daily: string; partitions: string; default_rows: string; bytes: string }>(
    `SELECT (SELECT count(*) FROM usage_records)::text AS usage_records, (SELECT count(*) FROM usage_daily)::text AS usage_daily,
       (SELECT count(*) FROM pg_inherits WHERE inhparent = 'usage_records'::regclass)::text AS partitions,
       (SELECT count(*) FROM usage_records_default)::text AS default_rows,
       (SELECT sum(pg_total_relation_size(inhrelid)) FROM pg_inherits WHERE inhparent = 'usage_records'::regclass)::text AS bytes`,
  );
  console.log('large ledger tables', sizes.rows[0]);
  const verifications = [];
  for (const ledger of [small, large]) {
    const verifyStarted = performance.now();
    const { accountsChecked, differences } = await verifyLedger(ledger.db);
    const seconds = Number(((performance.now() - verifyStarted) / 1000).toFixed(1));
    console.log(`verify: ${accountsChecked} accounts, ${differences.length} difference(s) in ${seconds} s`);
    for (const difference of differences.slice(0, 20)) console.log('DIFFERENCE', difference);
    verifications.push({ accountsChecked: accountsChecked.toString(), differences: differences.length, seconds });
  }
  failed = verifications.some((verification) => verification.differences > 0)
    || BigInt(sizes.rows[0]!.usage_records) !== BigInt(largeSize) || sizes.rows[0]!.default_rows !== '0';

  mkdirSync(join(repoRoot, 'bench-results'), { recursive: true });
  writeFileSync(join(repoRoot, 'bench-results', 'usage-volume.json'), JSON.stringify({
    measuredAt: new Date().toISOString(), smallSize, largeSize, organisations: organisations.length, heavyOrganisations,
    months: small.months, rounds, partitionsCreatedAtStart: large.partitionsCreatedAtStart, loads, small: smallTimings,
    large: largeTimings, ratios, largeTables: sizes.rows[0], verify: { small: verifications[0], large: verifications[1] },
  }, null, 2));
} catch (error) {
  failed = true;
  console.error('benchmark failed:', error);
} finally {
  for (const db of databases) await db.close();
  for (const bench of benchDatabases) {
    if (keepDatabases) console.log(`kept ${bench.url}`);
    else await bench.drop();
  }
}
process.exit(failed ? 1 : 0);
