import type { Database } from '@gateway/db';
import type { Logger } from '@gateway/logger';
import type { LedgerMetrics } from '@gateway/telemetry';
import { countHoldsPastDeadline } from './domain/count-holds-past-deadline.ts';
import { expireDueGrants } from './domain/expire-due-grants.ts';
import { expireDueReservations } from './domain/expire-due-reservations.ts';
import { pruneReservationTombstones, tombstoneRetentionMs } from './domain/prune-reservation-tombstones.ts';

/** How the sweeper runs. */
export interface ExpirySweeperOptions {
  database: Database;
  logger: Logger;
  /** Pause between passes, ms. */
  intervalMs: number;
  /** Reservations expired per transaction. */
  batchSize?: number;
  /** Batches per pass at most, so one pass cannot run unbounded after a long outage. */
  maxBatchesPerPass?: number;
  /** How long Release tombstones are kept, ms (default `tombstoneRetentionMs`, 25 h). */
  tombstoneRetentionMs?: number;
  /** Told after every pass whether the database answered (feeds readiness). */
  onPass?(databaseAnswered: boolean): void;
  /**
   * Where passes, expiries and the holds left past their deadline are recorded; none: not
   * recorded (and the overdue holds are not counted).
   */
  metrics?: SweeperMetrics;
}

/** The metrics the sweeper feeds. */
type SweeperMetrics = Pick<LedgerMetrics, 'ledgerSweeperPasses' | 'ledgerSweeperExpired' | 'ledgerSweeperPassDuration' | 'ledgerHoldsPastDeadline'>;

/** A running sweeper. */
export interface ExpirySweeper {
  /** Runs one pass now (waiting for a running one first); resolves with how many reservations and grants expired. */
  sweepNow(): Promise<number>;
  /** Stops the timer and waits for a pass in progress to finish. */
  stop(): Promise<void>;
}

/**
 * Starts the expiry sweeper: every `intervalMs` (and once at start) it expires held
 * reservations and credit grants past their database-clock deadline (EXPIRY) and prunes Release tombstones past
 * their retention. Passes never overlap within a
 * process; across replicas, SKIP LOCKED keeps them out of each other's way.
 */
export function startExpirySweeper(options: ExpirySweeperOptions): ExpirySweeper {
  const batchSize = options.batchSize ?? 500;
  const maxBatchesPerPass = options.maxBatchesPerPass ?? 20;
  const retentionMs = options.tombstoneRetentionMs ?? tombstoneRetentionMs;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<number> | undefined;

  const { metrics } = options;

  const pass = async (): Promise<number> => {
    let expired = 0;
    const startedAt = performance.now();
    let outcome: 'ok' | 'error' = 'ok';
    try {
      for (let batch = 0; batch < maxBatchesPerPass && !stopped; batch++) {
        const result = await expireDueReservations(options.database, batchSize);
        expired += result.expiredCount;
        metrics?.ledgerSweeperExpired.inc({ kind: 'reservation' }, result.expiredCount);
        if (result.expiredCount > 0) {
          options.logger.info({
            expiredCount: result.expiredCount, releasedMicros: result.releasedMicros.toString(),
            chargedMicros: result.chargedMicros.toString(),
          }, 'expired reservations');
        }
        if (result.expiredCount < batchSize) break;
      }
      // Credit grants past their deadline (a SIGKILLed proxy's): what they hold returns to the wallet.
      for (let batch = 0; batch < maxBatchesPerPass && !stopped; batch++) {
        const result = await expireDueGrants(options.database, batchSize);
        expired += result.expiredCount;
        metrics?.ledgerSweeperExpired.inc({ kind: 'grant' }, result.expiredCount);
        if (result.expiredCount > 0) {
          options.logger.info({ expiredCount: result.expiredCount, returnedMicros: result.returnedMicros.toString() }, 'expired credit grants');
        }
        if (result.expiredCount < batchSize) break;
      }
      // Tombstones past their retention, as many per pass as reservations may expire.
      const pruned = stopped ? 0 : await pruneReservationTombstones(options.database, retentionMs, batchSize * maxBatchesPerPass);
      if (pruned > 0) options.logger.info({ prunedCount: pruned }, 'pruned release tombstones');
      options.onPass?.(true);
    } catch (error) {
      outcome = 'error';
      options.logger.warn({ err: error }, 'expiry sweep failed; will retry');
      options.onPass?.(false);
    }
    if (metrics) {
      metrics.ledgerSweeperPassDuration.observe((performance.now() - startedAt) / 1000);
      // Once per pass, not per scrape: what is still held one interval past its deadline after
      // this pass is what the sweepers (every replica's) are not keeping up with.
      if (outcome === 'ok' && !stopped) await refreshHoldsPastDeadline(metrics);
      // Counted last, so a scrape that sees this pass also sees the gauge it left.
      metrics.ledgerSweeperPasses.inc({ outcome });
    }
    return expired;
  };

  const refreshHoldsPastDeadline = async (target: SweeperMetrics) => {
    try {
      const overdue = await countHoldsPastDeadline(options.database, options.intervalMs);
      target.ledgerHoldsPastDeadline.set({ kind: 'reservation' }, overdue.reservations);
      target.ledgerHoldsPastDeadline.set({ kind: 'grant' }, overdue.grants);
    } catch (error) {
      // The gauge keeps its last value; the next pass counts again.
      options.logger.warn({ err: error }, 'counting holds past their deadline failed; will retry');
    }
  };

  const runPass = (): Promise<number> => {
    const previous = running ?? Promise.resolve(0);
    const current = previous.then(pass);
    running = current;
    void current.finally(() => { if (running === current) running = undefined; });
    return current;
  };

  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => { void runPass().finally(schedule); }, options.intervalMs);
  };

  void runPass().finally(schedule);

  return {
    sweepNow: runPass,
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}
