/**
 * `pnpm bench batch-cost`: what one carved Settle costs PostgreSQL as a function of the size of
 * the batch it rides in (services/ledger/sql/ledger_apply_batch.sql). The proxy's common request
 * since credit grants is a carved Settle (its Reserve was carved from a grant in memory), and at
 * low concurrency the ledger's group commit sends them one or two at a time: a fixed cost per
 * batch (the commit, the statement's planning) then lands on each Settle. For batch sizes 1 to
 * 256 it applies batches of carved Settles on one connection, back to back (one hot
 * organisation, four grants: four proxy replicas), and reports per Settle: the wall time, and
 * the CPU the PostgreSQL backend used (its /proc stat: the server must run on this machine;
 * 10-ms clock ticks, so each size runs for BENCH_SECONDS), and the WAL written (the whole
 * server's: other work on it counts too). The baseline, in the same run, is a
 * single-row autocommit UPDATE's. Afterwards the grants are closed and the ledger verified; the
 * process exits 1 if a Settle was refused or the money does not add up.
 *
 * Environment: TEST_DATABASE_URL or DATABASE_URL (a server URL; a fresh database is created and
 * dropped), BENCH_SECONDS (per batch size, default 3), BENCH_BATCH_SIZES (comma-separated,
 * default 1,2,4,8,16,32,64,128,256), BENCH_TRACK_FUNCTIONS=1 (also prints, per batch size, the
 * ledger's SQL functions by their own time per Settle, from pg_stat_user_functions: where a
 * batch's fixed cost goes).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Database } from '@gateway/db';
import { processCpuMs } from '@gateway/testkit/outside-vitest';
import { checkBenchMoney, holdBenchGrants, openBenchLedger } from './bench-database.ts';
import { applyLedgerOperations, type LedgerOperation, type LedgerOperationRunner } from '../src/domain/apply-ledger-operations.ts';
import { credit } from '../src/domain/credit.ts';
import { openAccount } from '../src/domain/open-account.ts';
import { settle } from '../src/domain/settle.ts';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const secondsPerSize = Number(process.env.BENCH_SECONDS ?? '3');
const batchSizes = (process.env.BENCH_BATCH_SIZES ?? '1,2,4,8,16,32,64,128,256').split(',').map(Number);
const reserveMicros = 1_000n;
const costMicros = 400n;
const grantIds = ['bench-grant-0', 'bench-grant-1', 'bench-grant-2', 'bench-grant-3'];

/** One measured batch size. */
interface Row {
  batchSize: number;
  settles: number;
  /** Wall time per Settle, µs. */
  wallUsPerSettle: number;
  /** PostgreSQL backend CPU per Settle, µs. */
  pgCpuUsPerSettle: number;
  /** WAL written per Settle, bytes (the server's whole WAL: run it on a quiet server). */
  walBytesPerSettle: number;
}

/**
 * A runner that applies exactly the operations it is given as one batch: `settle()` builds and
 * validates each operation as the gRPC handler does, and `flush` sends the batch.
 */
function collectingRunner(): LedgerOperationRunner & { flush(db: Database): Promise<void> } {
  let pending: Array<{ operation: LedgerOperation; resolve: (value: never) => void; reject: (error: Error) => void }> = [];
  return {
    run(operation) {
      return new Promise((resolve, reject) => { pending.push({ operation, resolve: resolve as (value: never) => void, reject }); });
    },
    async flush(db) {
      const batch = pending;
      pending = [];
      const answers = await applyLedgerOperations(db, batch.map((entry) => entry.operation));
      batch.forEach((entry, index) => {
        const answer = answers[index]!;
        if (answer.ok) entry.resolve(answer as never);
        else entry.reject(answer.error);
      });
    },
  };
}

const ledger = await openBenchLedger(1);
let failed = false;
const rows: Row[] = [];
try {
  // One connection: every batch goes through the same backend, whose CPU is read from /proc.
  const { db } = ledger;
  const organisationId = 'bench-hot';
  await openAccount(db, organisationId);
  await credit(db, { creditId: 'fund', organisationId, amountMicros: 10n ** 13n, reason: 'bench funding' });
  await holdBenchGrants(db, organisationId, grantIds, 10n ** 12n, 25);
  await db.exec('CREATE TABLE bench_counter (id integer PRIMARY KEY, n bigint NOT NULL); INSERT INTO bench_counter VALUES (0, 0);');
  const trackFunctions = process.env.BENCH_TRACK_FUNCTIONS === '1';
  if (trackFunctions) await db.exec("SET track_functions = 'all'");
  /** Each function's own time so far, ms (this backend's, flushed first). */
  const functionTimes = async (): Promise<Map<string, number>> => {
    await db.query('SELECT pg_stat_force_next_flush()');
    await db.query('SELECT pg_stat_clear_snapshot()');
    const { rows: stats } = await db.query<{ name: string; self: number }>('SELECT funcname AS name, self_time AS self FROM pg_stat_user_functions');
    return new Map(stats.map((row) => [row.name, Number(row.self)]));
  };
  const backendPid = Number((await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid);

  const walLsn = async () => (await db.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')).rows[0]!.lsn;
  const timed = async (work: () => Promise<number>): Promise<{ count: number; wallMs: number; cpuMs: number; walBytes: number }> => {
    const walBefore = await walLsn();
    const cpuBefore = processCpuMs(backendPid);
    const startedAt = performance.now();
    let count = 0;
    while (performance.now() - startedAt < secondsPerSize * 1000) count += await work();
    const wallMs = performance.now() - startedAt;
    const cpuMs = processCpuMs(backendPid) - cpuBefore;
    const walBytes = Number((await db.query<{ bytes: string }>('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1)::text AS bytes', [walBefore])).rows[0]!.bytes);
    return { count, wallMs, cpuMs, walBytes };
  };

  const baseline = await timed(async () => { await db.query('UPDATE bench_counter SET n = n + 1 WHERE id = 0'); return 1; });
  const baselineRow = { wallUs: (baseline.wallMs * 1000) / baseline.count, cpuUs: (baseline.cpuMs * 1000) / baseline.count };

  let serial = 0;
  for (const batchSize of batchSizes) {
    const runner = collectingRunner();
    const functionsBefore = trackFunctions ? await functionTimes() : undefined;
    const run = await timed(async () => {
      const settled = Array.from({ length: batchSize }, (_, index) => {
        const reservationId = `bench-carve-${serial++}`;
        return settle(runner, {
          reservationId, inputTokens: 100n, outputTokens: 20n, costMicros, providerCostMicros: 100n, modelSlug: 'bench-model',
          usageSource: 'upstream', requestId: reservationId, overrunOutputTokens: 0n, grantId: grantIds[index % grantIds.length]!, reservedMicros: reserveMicros,
        });
      });
      // settle() validates before it queues: let every operation reach the runner, then send the batch.
      await new Promise<void>((resolve) => { setImmediate(resolve); });
      await runner.flush(db);
      for (const outcome of await Promise.all(settled)) {
        if (outcome.result !== 'ok' || outcome.debitedMicros !== costMicros) throw new Error(`carved settle failed: ${outcome.result} ${outcome.detail}`);
      }
      return batchSize;
    });
    if (functionsBefore !== undefined) {
      const after = await functionTimes();
      const top = [...after].map(([name, ms]) => [name, ((ms - (functionsBefore.get(name) ?? 0)) * 1000) / run.count] as const)
        .filter(([, us]) => us >= 1).sort((a, b) => b[1] - a[1]).slice(0, 8);
      console.log(`batch ${batchSize}: own time per Settle ${top.map(([name, us]) => `${name} ${us.toFixed(0)} µs`).join(', ')}`);
    }
    rows.push({
      batchSize, settles: run.count,
      wallUsPerSettle: Math.round((run.wallMs * 1000) / run.count), pgCpuUsPerSettle: Math.round((run.cpuMs * 1000) / run.count),
      walBytesPerSettle: Math.round(run.walBytes / run.count),
    });
  }

  console.table(rows.map((row) => ({
    'batch size': row.batchSize, settles: row.settles, 'wall µs/Settle': row.wallUsPerSettle, 'PostgreSQL CPU µs/Settle': row.pgCpuUsPerSettle,
    'CPU ÷ baseline UPDATE': Number((row.pgCpuUsPerSettle / Math.max(1, baselineRow.cpuUs)).toFixed(2)), 'WAL bytes/Settle': row.walBytesPerSettle,
  })));
  console.log(`baseline: single-row autocommit UPDATE ${Math.round(baselineRow.wallUs)} µs wall, ${Math.round(baselineRow.cpuUs)} µs PostgreSQL CPU`);

  const settles = BigInt(rows.reduce((sum, row) => sum + row.settles, 0));
  const money = await checkBenchMoney(db, grantIds, settles * costMicros, settles, 'Settles');
  failed = money.differences > 0 || !money.debitedExact || !money.heldZero;
  mkdirSync(join(repoRoot, 'bench-results'), { recursive: true });
  writeFileSync(join(repoRoot, 'bench-results', 'batch-cost.json'), `${JSON.stringify({ measuredAt: new Date().toISOString(), secondsPerSize, baseline: baselineRow, rows }, null, 2)}\n`);
} catch (error) {
  failed = true;
  console.error('benchmark failed:', error);
} finally {
  await ledger.close();
}
process.exit(failed ? 1 : 0);
