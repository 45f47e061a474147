import type { Database } from '@gateway/db';
import type { Logger } from '@gateway/logger';
import type { LedgerMetrics } from '@gateway/telemetry';
import { maintainUsagePartitions, type UsageMaintenanceReport, type UsagePartitionOptions } from './usage-maintenance-pass.ts';
import { countUsagePartitions, type UsagePartitionCounts } from './usage-partitions.ts';

/** Runs the usage partitions' maintenance passes (usage-maintenance-pass.ts) on a timer, and keeps their gauge current. */

/** How the periodic maintenance runs. */
export interface UsageMaintenanceOptions extends UsagePartitionOptions {
  database: Database;
  logger: Logger;
  /** Pause between passes, ms (default one hour: a month's partition is due weeks ahead). */
  intervalMs?: number;
  /**
   * Where the partitions gauge and the pruned-rows counter go. The gauge is read from the catalogue
   * at every scrape (onCollect), so it shows the partitions that exist even while passes fail.
   */
  metrics?: Pick<LedgerMetrics, 'ledgerUsagePartitions' | 'ledgerUsageRowsPruned' | 'onCollect'>;
}

/** A running maintenance. */
export interface UsageMaintenance {
  /** Runs one pass now (after a pass in progress, if any); resolves with its report, or undefined when it failed (logged). */
  runNow(): Promise<UsageMaintenanceReport | undefined>;
  /** Stops the timer and waits for a pass in progress. */
  stop(): Promise<void>;
}

/** Default pause between maintenance passes, ms. */
const defaultMaintenanceIntervalMs = 60 * 60 * 1000;

/**
 * Starts the usage maintenance: one pass at once and then every `intervalMs`. Passes never overlap
 * within a process; across replicas the advisory lock makes them take turns, and each step
 * re-checks under it, so two replicas never create or drop the same month.
 */
export function startUsageMaintenance(options: UsageMaintenanceOptions): UsageMaintenance {
  const { database, logger, metrics } = options;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<UsageMaintenanceReport | undefined> = Promise.resolve(undefined);

  const setPartitions = (counts: UsagePartitionCounts) => {
    for (const [state, count] of Object.entries(counts)) metrics?.ledgerUsagePartitions.set({ state }, count);
  };
  // A failing pass must not freeze the gauge at its last good value (GatewayUsagePartitionsAheadLow
  // could then never fire): each scrape counts the partitions that exist (the scrape bounds the wait).
  metrics?.onCollect(async () => {
    if (!stopped) setPartitions(await countUsagePartitions(database));
  });

  const pass = async (): Promise<UsageMaintenanceReport | undefined> => {
    try {
      const report = await maintainUsagePartitions(database, options);
      if (report.created.length > 0 || report.dropped.length > 0 || report.deferred.length > 0) {
        logger.info({
          created: report.created, movedFromDefault: report.movedFromDefault.toString(), dropped: report.dropped,
          rowsPruned: report.rowsPruned.toString(), deferredForVerify: report.deferred,
        }, 'usage partitions maintained');
      }
      if (metrics) {
        setPartitions(report.partitions);
        // A counter takes a JS number; observation only, never money.
        if (report.rowsPruned > 0n) metrics.ledgerUsageRowsPruned.inc(Number(report.rowsPruned));
      }
      return report;
    } catch (error) {
      logger.warn({ err: error }, 'usage partition maintenance failed; the next pass retries');
      return undefined;
    }
  };
  const runNow = () => {
    running = running.then(pass);
    return running;
  };
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => { void runNow().then(schedule); }, options.intervalMs ?? defaultMaintenanceIntervalMs);
    timer.unref();
  };
  void runNow().then(schedule);
  return {
    runNow,
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}
