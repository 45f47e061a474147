import type { Database, Queryable } from '@gateway/db';
import type { Logger } from '@gateway/logger';
import type { LedgerMetrics } from '@gateway/telemetry';
import { verifyLedger, type BalanceCheck, type BalanceDifference, type LedgerVerification } from './domain/find-balance-differences.ts';
import { periodicVerifyLockKey } from './periodic-verify-lock.ts';

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

/**
 * What one attempt did: verified (with how many differences); skipped, because another replica
 * was verifying (`running_elsewhere`) or a run finished less than an interval ago (`recent`);
 * cancelled by stop(); or failed.
 */
type VerifyRun =
  | { outcome: 'verified'; accountsChecked: bigint; differences: number }
  | { outcome: 'skipped'; reason: 'running_elsewhere' | 'recent' }
  | { outcome: 'cancelled' }
  | { outcome: 'failed' };

/** A running periodic verify. */
export interface VerifyMonitor {
  /** Runs one verify now (after a run in progress, if any), unless skipped as a scheduled run would be, and resolves with what it did. */
  runNow(): Promise<VerifyRun>;
  /**
   * Stops the timer and cancels a run in progress (the verify only reads: nothing is lost), so a
   * shutdown never waits for a scan of the whole ledger. Waits at most stopWaitMs for it to end.
   */
  stop(): Promise<void>;
}

/** How long stop() waits for the cancel to be sent and for the cancelled run to end, ms each. */
const stopWaitMs = 2_000;

/** The backend running the verify's transaction now, so stop() can cancel its statement. */
interface VerifyInProgress {
  /** pg_backend_pid() of the connection. */
  backendPid: number;
  /** The transaction's start (now()) as text: a cancel names it, so it never reaches the connection's next user. */
  transactionStart: string;
}

/** Thrown into the verify when stop() cancelled it (before its next query). */
class VerifyCancelled extends Error {}

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
    ...(difference.usageRollup ? {
      day: difference.usageRollup.day, projectId: difference.usageRollup.projectId, modelSlug: difference.usageRollup.modelSlug,
      billingMode: difference.usageRollup.billingMode, column: difference.usageRollup.column,
    } : {}),
    ...(difference.reservationId ? { reservationId: difference.reservationId } : {}),
  };
}

/** What verifyUnlessRunningElsewhere answers: the verification, or why it skipped this turn. */
type VerifyAttempt = { verification: LedgerVerification } | { skipped: 'running_elsewhere' | 'recent' };

/**
 * Runs `verifyLedger` (the checks of the `verify` CLI) unless another replica is running it now
 * or any replica finished a run less than `intervalMs` ago. PostgreSQL: one REPEATABLE READ
 * transaction takes `pg_try_advisory_xact_lock`, reads `verify_runs` (migration 0013) and, if
 * no recent run is recorded, runs every check inside itself (verifyLedger is handed a view of the
 * database bound to that transaction) and records its end there, so two replicas never scan the
 * ledger at the same time, the database sees about one run per interval however many replicas
 * there are, every check reads one snapshot, and the run needs one pooled connection
 * (LEDGER_DB_POOL_SIZE=1 cannot deadlock). PGlite has one process by construction and needs
 * neither lock nor record. `onStart` learns the backend (for stop()); `isCancelled` is checked
 * before every query of the run.
 */
async function verifyUnlessRunningElsewhere(
  database: Database, intervalMs: number, onStart: (inProgress: VerifyInProgress | undefined) => void, isCancelled: () => boolean,
): Promise<VerifyAttempt> {
  if (database.kind === 'pglite') return { verification: await verifyLedger(database) };
  try {
    return await database.transaction(async (tx): Promise<VerifyAttempt> => {
      // Before the first query, which takes the snapshot: a partition dropped by retention is then either gone from it or waits for the run's end.
      await tx.query('LOCK TABLE usage_records IN ACCESS SHARE MODE');
      const { rows } = await tx.query<{ locked: boolean; pid: number; started: string }>(
        'SELECT pg_try_advisory_xact_lock(hashtext($1)) AS locked, pg_backend_pid() AS pid, now()::text AS started',
        [periodicVerifyLockKey(database.schema)],
      );
      if (!rows[0]?.locked) return { skipped: 'running_elsewhere' };
      const recent = await tx.query<{ recent: boolean }>(
        `SELECT EXISTS (SELECT 1 FROM verify_runs WHERE finished_at > clock_timestamp() - make_interval(secs => $1::double precision / 1000)) AS recent`,
        [intervalMs],
      );
      if (recent.rows[0]?.recent) return { skipped: 'recent' };
      onStart({ backendPid: rows[0].pid, transactionStart: rows[0].started });
      const query: Queryable['query'] = (text, params) => {
        if (isCancelled()) return Promise.reject(new VerifyCancelled('periodic verify cancelled by stop()'));
        return tx.query(text, params);
      };
      const inThisTransaction: Database = {
        kind: database.kind, schema: database.schema, query,
        exec: (script) => tx.exec(script),
        transaction: (work) => work({ query, exec: (script) => tx.exec(script) }),
        close: async () => {},
      };
      const verification = await verifyLedger(inThisTransaction);
      await query(
        `INSERT INTO verify_runs (finished_at) VALUES (clock_timestamp())
         ON CONFLICT (only_row) DO UPDATE SET finished_at = EXCLUDED.finished_at`,
      );
      return { verification };
    }, { isolation: 'repeatable read', retries: 0 });
  } finally {
    onStart(undefined);
  }
}

/**
 * Starts the periodic verify (CONSERVATION, watched): every `intervalMs` it runs the same checks
 * as `pnpm --filter @gateway/ledger verify` and sets `ledgerVerifyDifferences{check}` (every
 * check, 0 when clean), `ledgerVerifyLastSuccess` and `ledgerVerifyDuration`, and logs each
 * difference at error level. Runs never overlap within a process, nor across replicas (an
 * advisory lock), and a replica skips its turn when any replica finished a run less than an
 * interval ago (verify_runs): the database sees about one run per interval, whatever the number
 * of replicas. A replica that skipped, failed or was stopped keeps its last values; alert on the
 * maximum across replicas.
 */
export function startVerifyMonitor(options: VerifyMonitorOptions): VerifyMonitor {
  const { database, logger, metrics, intervalMs } = options;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<VerifyRun> | undefined;
  let inProgress: VerifyInProgress | undefined;

  const run = async (): Promise<VerifyRun> => {
    if (stopped) return { outcome: 'cancelled' };
    const startedAt = performance.now();
    let attempt: VerifyAttempt;
    try {
      attempt = await verifyUnlessRunningElsewhere(database, intervalMs, (current) => { inProgress = current; }, () => stopped);
    } catch (error) {
      if (stopped) {
        logger.info('periodic verify cancelled: the ledger is stopping');
        return { outcome: 'cancelled' };
      }
      // Only the message: a connection error's stack might carry more than it should.
      logger.error({ error: (error as Error).message }, 'periodic verify could not run; retried at the next interval');
      return { outcome: 'failed' };
    }
    if ('skipped' in attempt) {
      logger.debug({ reason: attempt.skipped }, attempt.skipped === 'recent'
        ? 'periodic verify skipped: a ledger replica finished a run less than an interval ago'
        : 'periodic verify skipped: another ledger replica is running it');
      return { outcome: 'skipped', reason: attempt.skipped };
    }
    const { verification } = attempt;
    const seconds = (performance.now() - startedAt) / 1000;
    const { accountsChecked, differences } = verification;
    const byCheck = new Map<string, number>(everyCheck.map((check) => [check, 0]));
    for (const difference of differences) byCheck.set(difference.check, (byCheck.get(difference.check) ?? 0) + 1);
    // A completed run replaces every series: a check that is no longer run (or was renamed) must not keep its old count.
    metrics.ledgerVerifyDifferences.reset();
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
      // Taken now: the run clears `running` as soon as it ends, which the cancel below may cause.
      const current = running;
      if (current === undefined) return;
      const cancelling = inProgress;
      if (cancelling) {
        // A pooled connection sends the cancel; it names the verify's transaction, so a connection
        // already handed to someone else is left alone. With every connection busy (pool of 1) the
        // cancel cannot be sent: the run then ends at its next query, and the database's close waits for it.
        await withinMs(database.query(
          'SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE pid = $1 AND xact_start = $2::timestamptz',
          [cancelling.backendPid, cancelling.transactionStart],
        ).catch(() => undefined), stopWaitMs);
      }
      await withinMs(current, stopWaitMs);
    },
  };
}

/** Waits for `work`, at most `ms` milliseconds; what it resolves with does not matter. */
async function withinMs(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([work.then(() => undefined, () => undefined), new Promise<void>((resolve) => { timer = setTimeout(resolve, ms); })]);
  } finally {
    clearTimeout(timer);
  }
}
