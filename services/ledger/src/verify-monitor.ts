import type { Database } from '@gateway/db';
import type { Logger } from '@gateway/logger';
import type { LedgerMetrics } from '@gateway/telemetry';
import { verifyLedger, type BalanceCheck, type BalanceDifference, type LedgerVerification } from './domain/find-balance-differences.ts';

/** The metrics the periodic verify sets. */
type VerifyMetrics = Pick<LedgerMetrics, 'ledgerVerifyDifferences' | 'ledgerVerifyLastSuccess' | 'ledgerVerifyDuration'>;

/** How the periodic verify runs. */
export interface VerifyMonitorOptions {
  database: Database;
  logger: Logger;
  metrics: VerifyMetrics;
  /** Pause between runs, ms (LEDGER_VERIFY_INTERVAL_MS). */
  intervalMs: number;
  /** Wait before the first run, ms. Default: the interval, at most 30 s (a scrape soon after start shows a result). */
  firstDelayMs?: number;
}

/** What one attempt did: verified (with how many differences), skipped (another replica was verifying), or failed. */
type VerifyRun =
  | { outcome: 'verified'; accountsChecked: bigint; differences: number }
  | { outcome: 'skipped' }
  | { outcome: 'failed' };

/** A running periodic verify. */
export interface VerifyMonitor {
  /** Runs one verify now (after a run in progress, if any) and resolves with what it did. */
  runNow(): Promise<VerifyRun>;
  /** Stops the timer and waits for a run in progress. */
  stop(): Promise<void>;
}

/**
 * Every check verifyLedger runs (find-balance-differences.ts, BalanceCheck): each gets a series,
 * 0 when clean, so an alert on the gauge sees a check recover (a check missing from the text
 * would look the same as a check never run). A check not listed still gets a series once it
 * finds a difference.
 */
const everyCheck: readonly string[] = [
  'conservation', 'movements', 'credits', 'holds', 'usage', 'usage_rollups', 'duplicates', 'project_spend', 'orphans', 'grants',
] satisfies readonly (BalanceCheck | 'usage_rollups' | 'duplicates')[];

/** Differences logged one per line at most; the rest are summed up in the summary line. */
const loggedDifferencesMax = 50;

/** One difference as a log line's fields: ids, the check and the amounts (µ₹), nothing secret. */
function differenceFields(difference: BalanceDifference): Record<string, string> {
  return {
    organisationId: difference.organisationId, check: difference.check, balance: difference.balance,
    storedMicros: difference.accountMicros.toString(), recomputedMicros: difference.recomputedMicros.toString(),
    ...(difference.projectMonth ? { projectId: difference.projectMonth.projectId, month: difference.projectMonth.month } : {}),
    ...(difference.orphan ? { table: difference.orphan.table, rowId: difference.orphan.rowId, missing: difference.orphan.missing } : {}),
    ...(difference.grantId ? { grantId: difference.grantId } : {}),
  };
}

/**
 * Runs `verifyLedger` (the checks of the `verify` CLI) unless another replica is running it now.
 * PostgreSQL: one REPEATABLE READ transaction takes `pg_try_advisory_xact_lock` and, if it got
 * it, runs every check inside itself (verifyLedger is handed a view of the database bound to
 * that transaction), so two replicas never scan the ledger at the same time, every check reads
 * one snapshot, and the run needs one pooled connection (LEDGER_DB_POOL_SIZE=1 cannot deadlock).
 * A replica that finds the lock taken skips this turn. PGlite has one process by construction
 * and needs no lock.
 */
async function verifyUnlessRunningElsewhere(database: Database): Promise<LedgerVerification | undefined> {
  if (database.kind === 'pglite') return verifyLedger(database);
  return database.transaction(async (tx) => {
    const { rows } = await tx.query<{ locked: boolean }>(
      'SELECT pg_try_advisory_xact_lock(hashtext($1)) AS locked', [`gateway-ledger:${database.schema}:periodic-verify`],
    );
    if (!rows[0]?.locked) return undefined;
    const inThisTransaction: Database = {
      kind: database.kind, schema: database.schema,
      query: (text, params) => tx.query(text, params),
      exec: (script) => tx.exec(script),
      transaction: (work) => work(tx),
      close: async () => {},
    };
    return verifyLedger(inThisTransaction);
  }, { isolation: 'repeatable read', retries: 0 });
}

/**
 * Starts the periodic verify (CONSERVATION, watched): every `intervalMs` it runs the same checks
 * as `pnpm --filter @gateway/ledger verify` and sets `ledgerVerifyDifferences{check}` (every
 * check, 0 when clean), `ledgerVerifyLastSuccess` and `ledgerVerifyDuration`, and logs each
 * difference at error level. Runs never overlap within a process, nor across replicas (an
 * advisory lock): with R replicas the database sees up to R runs per interval, one at a time.
 * A replica that skipped or failed keeps its last values; alert on the maximum across replicas.
 */
export function startVerifyMonitor(options: VerifyMonitorOptions): VerifyMonitor {
  const { database, logger, metrics, intervalMs } = options;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<VerifyRun> | undefined;

  const run = async (): Promise<VerifyRun> => {
    const startedAt = performance.now();
    let verification: LedgerVerification | undefined;
    try {
      verification = await verifyUnlessRunningElsewhere(database);
    } catch (error) {
      // Only the message: a connection error's stack might carry more than it should.
      logger.error({ error: (error as Error).message }, 'periodic verify could not run; retried at the next interval');
      return { outcome: 'failed' };
    }
    if (verification === undefined) {
      logger.debug('periodic verify skipped: another ledger replica is running it');
      return { outcome: 'skipped' };
    }
    const seconds = (performance.now() - startedAt) / 1000;
    const { accountsChecked, differences } = verification;
    const byCheck = new Map<string, number>(everyCheck.map((check) => [check, 0]));
    for (const difference of differences) byCheck.set(difference.check, (byCheck.get(difference.check) ?? 0) + 1);
    for (const [check, count] of byCheck) metrics.ledgerVerifyDifferences.set({ check }, count);
    metrics.ledgerVerifyDuration.set(seconds);
    metrics.ledgerVerifyLastSuccess.set(Date.now() / 1000);
    for (const difference of differences.slice(0, loggedDifferencesMax)) logger.error(differenceFields(difference), 'ledger verify difference');
    const summary = { accountsChecked: accountsChecked.toString(), differences: differences.length, durationMs: Math.round(seconds * 1000) };
    if (differences.length > 0) {
      logger.error({ ...summary, byCheck: Object.fromEntries([...byCheck].filter(([, count]) => count > 0)) },
        'periodic verify found differences (CONSERVATION): see docs/operations.md');
    } else {
      logger.info(summary, 'periodic verify clean');
    }
    return { outcome: 'verified', accountsChecked, differences: differences.length };
  };

  const runNow = (): Promise<VerifyRun> => {
    const current = (running ?? Promise.resolve(undefined)).then(run);
    running = current;
    void current.finally(() => { if (running === current) running = undefined; });
    return current;
  };

  const schedule = (delayMs: number) => {
    if (stopped) return;
    timer = setTimeout(() => { void runNow().finally(() => schedule(intervalMs)); }, delayMs);
    timer.unref();
  };
  schedule(options.firstDelayMs ?? Math.min(intervalMs, 30_000));

  return {
    runNow,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
