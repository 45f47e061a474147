/**
 * `pnpm bench usage`: whether the usage reads stay flat as the usage records grow (docs/ledger.md,
 * "Usage at volume"). Loads 100 thousand usage records, times the reads, loads up to 10 million
 * and times them again; the figure is the ratio of the two times (target: about 1). The records
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
 * Afterwards Verify must find no difference across the partitions; the process exits 1 otherwise.
 * Writes bench-results/usage-volume.json.
 *
 * Environment: TEST_DATABASE_URL or DATABASE_URL (a server URL; a fresh database is created and
 * dropped), BENCH_USAGE_RECORDS (the large size, default 10,000,000), BENCH_USAGE_SMALL (default 100,000).
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openDatabase, type Database } from '@gateway/db';
import { credit } from '../src/domain/credit.ts';
import { verifyLedger } from '../src/domain/find-balance-differences.ts';
import { listUsage } from '../src/domain/list-usage.ts';
import { openAccount } from '../src/domain/open-account.ts';
import { encodePageToken } from '../src/domain/page-token.ts';
import { summarizeUsage } from '../src/domain/summarize-usage.ts';
import { prepareLedgerSchema } from '../src/ledger-schema.ts';
import { seedUsageHistory, type UsageHistoryPlan } from '../src/testing/seed-usage-history.ts';
import { addMonths, createUsagePartition, maintainUsagePartitions } from '../src/usage-maintenance.ts';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const serverUrl = process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
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

/** Creates a fresh database on the server; returns its URL and how to drop it. */
async function createBenchDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `gw_bench_${randomBytes(5).toString('hex')}`;
  const admin = await openDatabase({ url: serverUrl, schema: 'public', poolSize: 1 });
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      try {
        await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await admin.close();
      }
    },
  };
}

/** One timed read at one size. */
interface Timing {
  read: string;
  records: number;
  /** Median over the calls, ms. */
  medianMs: number;
  /** 95th percentile over the calls, ms. */
  p95Ms: number;
  calls: number;
  /** Rows (summary) or records (listing) the last call answered. */
  answered: number;
}

/** Times `read` once per argument after one warm-up pass; answers the median and p95 in ms. */
async function time<T>(name: string, records: number, args: readonly T[], read: (arg: T) => Promise<number>): Promise<Timing> {
  for (const arg of args) await read(arg);
  const samples: number[] = [];
  let answered = 0;
  for (const arg of args) {
    const started = performance.now();
    answered = await read(arg);
    samples.push(performance.now() - started);
  }
  samples.sort((a, b) => a - b);
  const at = (q: number) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))]!;
  return { read: name, records, medianMs: Number(at(0.5).toFixed(3)), p95Ms: Number(at(0.95).toFixed(3)), calls: samples.length, answered };
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

/** Every timed read at the current size. */
async function measure(db: Database, records: number, window: { fromMs: bigint; toMs: bigint }, deepCursorMicros: bigint): Promise<Timing[]> {
  await db.exec('ANALYZE usage_daily; ANALYZE usage_records; ANALYZE reservations; ANALYZE movements');
  const summaryOf = (organisationId: string) => ({
    organisationId, allOrganisations: false, groupByProject: true, projectId: '', ...window,
  });
  const deepToken = encodePageToken({ createdAtMicros: deepCursorMicros, id: 2n ** 63n - 1n });
  const timings = [
    await time('month summary, one organisation', records, timedOrganisations,
      async (organisationId) => (await summarizeUsage(db, summaryOf(organisationId))).length),
    await time('month summary, every organisation', records, [1, 2, 3, 4, 5],
      async () => (await summarizeUsage(db, { ...summaryOf(''), allOrganisations: true })).length),
    await time('listing, first page (50)', records, timedOrganisations,
      async (organisationId) => (await listUsage(db, { organisationId, projectId: '', modelSlug: '', fromMs: 0n, toMs: 0n, pageSize: 50, pageToken: '' })).records.length),
    await time('listing, deep page by keyset (50)', records, timedOrganisations,
      async (organisationId) => (await listUsage(db, { organisationId, projectId: '', modelSlug: '', fromMs: 0n, toMs: 0n, pageSize: 50, pageToken: deepToken })).records.length),
    await time('before 0012: month summary from raw records, one organisation', records, timedOrganisations,
      (organisationId) => rawMonthSummary(db, organisationId, window.fromMs, window.toMs)),
    await time('before 0012: month summary from raw records, every organisation', records, [1, 2, 3],
      () => rawMonthSummary(db, null, window.fromMs, window.toMs)),
  ];
  console.table(timings);
  return timings;
}

const benchDatabase = await createBenchDatabase();
let failed = false;
let database: Database | undefined;
try {
  database = await openDatabase({ url: benchDatabase.url, schema: 'ledger', poolSize: 4 });
  const db = database;
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
  // The timed month: the third of the six; the deep cursor: the start of the fourth from now.
  const bounds = await db.query<{ from_ms: string; to_ms: string; deep_micros: string }>(
    `SELECT (extract(epoch FROM ($1 || '-01')::date::timestamp AT TIME ZONE 'Asia/Kolkata') * 1000)::bigint::text AS from_ms,
       (extract(epoch FROM (($1 || '-01')::date + interval '1 month')::timestamp AT TIME ZONE 'Asia/Kolkata') * 1000)::bigint::text AS to_ms,
       (extract(epoch FROM ($2 || '-01')::date::timestamp AT TIME ZONE 'Asia/Kolkata') * 1000000)::bigint::text AS deep_micros`,
    [months[2], months[3]],
  );
  const window = { fromMs: BigInt(bounds.rows[0]!.from_ms), toMs: BigInt(bounds.rows[0]!.to_ms) };
  const deepCursorMicros = BigInt(bounds.rows[0]!.deep_micros);
  const plan: Omit<UsageHistoryPlan, 'firstIndex' | 'count'> = {
    organisations, heavy: heavyOrganisations, projectsPerOrganisation: 2, models, months, commercialEvery: 10, idPrefix: 'bench',
  };

  const loads: Array<{ records: number; seconds: number }> = [];
  const load = async (firstIndex: number, count: number) => {
    const started = performance.now();
    await seedUsageHistory(db, { ...plan, firstIndex, count });
    loads.push({ records: firstIndex + count, seconds: Number(((performance.now() - started) / 1000).toFixed(1)) });
    console.log(`loaded ${count} usage records (now ${firstIndex + count}) in ${loads.at(-1)!.seconds} s`);
  };
  await load(0, smallSize);
  const small = await measure(db, smallSize, window, deepCursorMicros);
  await load(smallSize, largeSize - smallSize);
  const large = await measure(db, largeSize, window, deepCursorMicros);

  const ratios = small.map((timing, index) => ({
    read: timing.read, [`${smallSize} ms`]: timing.medianMs, [`${largeSize} ms`]: large[index]!.medianMs,
    ratio: Number((large[index]!.medianMs / timing.medianMs).toFixed(2)),
  }));
  console.table(ratios);

  const sizes = await db.query<{ usage_records: string; usage_daily: string; partitions: string; default_rows: string; bytes: string }>(
    `SELECT (SELECT count(*) FROM usage_records)::text AS usage_records, (SELECT count(*) FROM usage_daily)::text AS usage_daily,
       (SELECT count(*) FROM pg_inherits WHERE inhparent = 'usage_records'::regclass)::text AS partitions,
       (SELECT count(*) FROM usage_records_default)::text AS default_rows,
       (SELECT sum(pg_total_relation_size(inhrelid)) FROM pg_inherits WHERE inhparent = 'usage_records'::regclass)::text AS bytes`,
  );
  console.log('tables', sizes.rows[0]);
  const verifyStarted = performance.now();
  const { accountsChecked, differences } = await verifyLedger(db);
  const verifySeconds = Number(((performance.now() - verifyStarted) / 1000).toFixed(1));
  console.log(`verify: ${accountsChecked} accounts, ${differences.length} difference(s) across ${sizes.rows[0]!.partitions} partitions in ${verifySeconds} s`);
  for (const difference of differences.slice(0, 20)) console.log('DIFFERENCE', difference);
  failed = differences.length > 0 || BigInt(sizes.rows[0]!.usage_records) !== BigInt(largeSize) || sizes.rows[0]!.default_rows !== '0';

  mkdirSync(join(repoRoot, 'bench-results'), { recursive: true });
  writeFileSync(join(repoRoot, 'bench-results', 'usage-volume.json'), JSON.stringify({
    measuredAt: new Date().toISOString(), smallSize, largeSize, organisations: organisations.length, months,
    partitionsCreatedAtStart: partitions.created, loads, small, large, ratios, tables: sizes.rows[0],
    verify: { accountsChecked: accountsChecked.toString(), differences: differences.length, seconds: verifySeconds },
  }, null, 2));
} catch (error) {
  failed = true;
  console.error('benchmark failed:', error);
} finally {
  await database?.close();
  await benchDatabase.drop();
}
process.exit(failed ? 1 : 0);
