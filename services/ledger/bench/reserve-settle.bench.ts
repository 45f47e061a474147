/**
 * `pnpm bench reserve-settle`: Reserve+Settle pairs per second through the ledger's domain
 * functions over PostgreSQL, on one hot organisation and spread over 1,000 organisations, at
 * concurrency 1 and 64. The baseline, measured in the same run and at the same concurrency, is
 * PostgreSQL's raw rate of single-statement autocommit UPDATEs (one hot row, or 1,000 rows).
 * Reserve and Settle go through a LedgerBatcher, as the gRPC handlers do: group commit, one
 * round trip and one commit per batch of queued operations (see docs/ledger.md).
 * Credit grants: carved settles per second (a Settle with grant_id and reserved_micros, the proxy's
 * common request since credit grants: its Reserve was carved from a grant in memory) through the same
 * batcher on the hot organisation, against four grants (four proxy replicas), with the same baseline.
 * Afterwards every grant is closed and every balance is verified from the rows; the process exits 1 if the ledger does
 * not agree to the micro-rupee or if the money does not add up. Run time is bounded (< 3 min).
 *
 * Environment: TEST_DATABASE_URL or DATABASE_URL (a server URL; a fresh database is created and
 * dropped), BENCH_SECONDS (per measurement, default 4), BENCH_BATCHES_IN_FLIGHT (the batcher's
 * maxBatchesInFlight; default: the batcher's default).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkBenchMoney, holdBenchGrants, openBenchLedger } from './bench-database.ts';
import { credit } from '../src/domain/credit.ts';
import { createLedgerBatcher } from '../src/domain/ledger-batcher.ts';
import { openAccount } from '../src/domain/open-account.ts';
import { reserve, type ReserveInput } from '../src/domain/reserve.ts';
import { settle, type SettleInput } from '../src/domain/settle.ts';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const secondsPerMeasurement = Number(process.env.BENCH_SECONDS ?? '4');
if (!Number.isFinite(secondsPerMeasurement) || secondsPerMeasurement <= 0 || secondsPerMeasurement > 15) {
  process.stderr.write('BENCH_SECONDS must be a number in (0, 15]\n');
  process.exit(2);
}
const spreadOrganisations = 1_000;
const reserveMicros = 1_000n;
const costMicros = 400n;

/** One measured row of the table. */
interface Measurement {
  scenario: string;
  /** Mean operations per batch (transaction) during the run. */
  meanBatchOperations: number;
  concurrency: number;
  /** Reserve+Settle pairs per second, or carved settles per second for the grant scenario. */
  pairsPerSecond: number;
  baselineUpdatesPerSecond: number;
  ratio: number;
  pairs: number;
}

/** Runs `worker` on `concurrency` loops until the deadline; resolves with how many iterations completed. */
async function runFor(concurrency: number, seconds: number, worker: (loop: number, iteration: number) => Promise<void>): Promise<{ count: number; elapsedS: number }> {
  const startedAt = performance.now();
  const deadline = startedAt + seconds * 1000;
  let count = 0;
  await Promise.all(Array.from({ length: concurrency }, async (_, loop) => {
    for (let iteration = 0; performance.now() < deadline; iteration++) {
      await worker(loop, iteration);
      count++;
    }
  }));
  return { count, elapsedS: (performance.now() - startedAt) / 1000 };
}


const ledger = await openBenchLedger(16);
let failed = false;
const measurements: Measurement[] = [];
try {
  const { db } = ledger;
  const hot = 'bench-hot';
  const spread = Array.from({ length: spreadOrganisations }, (_, index) => `bench-org-${index}`);
  for (const organisationId of [hot, ...spread]) {
    await openAccount(db, organisationId);
    await credit(db, { creditId: `fund-${organisationId}`, organisationId, amountMicros: 1_000_000_000_000n, reason: 'bench funding' });
  }
  await db.exec(`CREATE TABLE bench_counter (id integer PRIMARY KEY, n bigint NOT NULL);
    INSERT INTO bench_counter SELECT g, 0 FROM generate_series(0, ${spreadOrganisations - 1}) g;`);

  const batchSizes: number[] = [];
  const batchesInFlight = process.env.BENCH_BATCHES_IN_FLIGHT === undefined ? undefined : Number(process.env.BENCH_BATCHES_IN_FLIGHT);
  const minExtra = process.env.BENCH_MIN_EXTRA_BATCH === undefined ? undefined : Number(process.env.BENCH_MIN_EXTRA_BATCH);
  const batcher = createLedgerBatcher(db, { maxBatchesInFlight: batchesInFlight, minExtraBatchOperations: minExtra, onBatch: (operations) => batchSizes.push(operations) });
  let pairSerial = 0;
  const pair = async (organisationId: string) => {
    const reservationId = `bench-${process.pid}-${pairSerial++}`;
    const reserveInput: ReserveInput = {
      reservationId, organisationId, projectId: `${organisationId}-project`, billingMode: 'commercial',
      amountMicros: reserveMicros, ttlMs: 600_000n, modelSlug: 'bench-model',
    };
    const settleInput: SettleInput = {
      reservationId, inputTokens: 100n, outputTokens: 20n, costMicros, providerCostMicros: 100n, modelSlug: 'bench-model',
      usageSource: 'upstream', requestId: reservationId, overrunOutputTokens: 0n,
    };
    const reserved = await reserve(batcher, reserveInput);
    if (reserved.result !== 'ok') throw new Error(`bench reserve refused: ${reserved.result} ${reserved.detail}`);
    const settled = await settle(batcher, settleInput);
    if (settled.result !== 'ok' || settled.debitedMicros !== costMicros) throw new Error(`bench settle failed: ${settled.result} ${settled.detail}`);
  };

  for (const [scenario, pick] of [
    ['one hot organisation', () => hot],
    [`${spreadOrganisations} organisations`, () => spread[Math.floor(Math.random() * spread.length)]!],
  ] as const) {
    for (const concurrency of [1, 64]) {
      const hotRow = scenario.startsWith('one');
      const baseline = await runFor(concurrency, secondsPerMeasurement, async () => {
        const id = hotRow ? 0 : Math.floor(Math.random() * spreadOrganisations);
        await db.query('UPDATE bench_counter SET n = n + 1 WHERE id = $1', [id]);
      });
      const baselineRate = baseline.count / baseline.elapsedS;
      batchSizes.length = 0;
      const run = await runFor(concurrency, secondsPerMeasurement, () => pair(pick()));
      const rate = run.count / run.elapsedS;
      measurements.push({
        scenario, meanBatchOperations: Number((batchSizes.reduce((a, b) => a + b, 0) / Math.max(1, batchSizes.length)).toFixed(1)), concurrency, pairsPerSecond: Math.round(rate), baselineUpdatesPerSecond: Math.round(baselineRate),
        ratio: Number((rate / baselineRate).toFixed(3)), pairs: run.count,
      });
    }
  }

  // Credit grants: carved settles (one operation each, no Reserve call) on the hot organisation.
  const grantIds = ['bench-grant-0', 'bench-grant-1', 'bench-grant-2', 'bench-grant-3'];
  await holdBenchGrants(db, hot, grantIds, 10_000_000_000n, 10);
  let carveSerial = 0;
  const carvedSettle = async (loop: number) => {
    const reservationId = `bench-carve-${process.pid}-${carveSerial++}`;
    const settled = await settle(batcher, {
      reservationId, inputTokens: 100n, outputTokens: 20n, costMicros, providerCostMicros: 100n, modelSlug: 'bench-model',
      usageSource: 'upstream', requestId: reservationId, overrunOutputTokens: 0n, grantId: grantIds[loop % grantIds.length]!, reservedMicros: reserveMicros,
    });
    if (settled.result !== 'ok' || settled.debitedMicros !== costMicros) throw new Error(`bench carved settle failed: ${settled.result} ${settled.detail}`);
  };
  for (const concurrency of [1, 64]) {
    const baseline = await runFor(concurrency, secondsPerMeasurement, async () => {
      await db.query('UPDATE bench_counter SET n = n + 1 WHERE id = $1', [0]);
    });
    const baselineRate = baseline.count / baseline.elapsedS;
    batchSizes.length = 0;
    const run = await runFor(concurrency, secondsPerMeasurement, (loop) => carvedSettle(loop));
    const rate = run.count / run.elapsedS;
    measurements.push({
      scenario: 'carved settles, one hot organisation', meanBatchOperations: Number((batchSizes.reduce((a, b) => a + b, 0) / Math.max(1, batchSizes.length)).toFixed(1)),
      concurrency, pairsPerSecond: Math.round(rate), baselineUpdatesPerSecond: Math.round(baselineRate), ratio: Number((rate / baselineRate).toFixed(3)), pairs: run.count,
    });
  }

  console.table(measurements.map((m) => ({
    scenario: m.scenario, concurrency: m.concurrency, 'pairs (carves)/s': m.pairsPerSecond,
    'baseline UPDATE/s': m.baselineUpdatesPerSecond, 'rate ÷ baseline': m.ratio, 'ops/batch': m.meanBatchOperations,
  })));

  await batcher.close();
  // Correctness owned by this benchmark: every pair and every carve debited exactly its cost, nothing stays held,
  // and every balance agrees with the rows.
  const totalPairs = BigInt(measurements.reduce((sum, m) => sum + m.pairs, 0));
  const money = await checkBenchMoney(db, grantIds, totalPairs * costMicros, totalPairs, 'pairs and carves');
  failed = money.differences > 0 || !money.debitedExact || !money.heldZero;

  const hot64 = measurements.find((m) => m.scenario === 'one hot organisation' && m.concurrency === 64);
  console.log(`target: 5000 pairs/s on one hot organisation at concurrency 64; measured ${hot64?.pairsPerSecond ?? '?'} (group commit)`);
  mkdirSync(join(repoRoot, 'bench-results'), { recursive: true });
  writeFileSync(join(repoRoot, 'bench-results', 'reserve-settle.json'), JSON.stringify({
    measuredAt: new Date().toISOString(), secondsPerMeasurement, measurements,
    targetHotConcurrency64PairsPerSecond: 5_000, hotConcurrency64PairsPerSecond: hot64?.pairsPerSecond ?? null,
    verify: { accountsChecked: money.accountsChecked.toString(), differences: money.differences, debitedExact: money.debitedExact, heldZero: money.heldZero },
  }, null, 2));
} catch (error) {
  failed = true;
  console.error('benchmark failed:', error);
} finally {
  await ledger.close();
}
process.exit(failed ? 1 : 0);
