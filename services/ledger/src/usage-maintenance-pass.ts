/**
 * One usage-maintenance pass over the monthly partitions (the primitives are usage-partitions.ts;
 * usage-maintenance.ts runs passes on a timer).
 */
import type { Database } from '@gateway/db';
import {
  addMonths, countUsagePartitions, createUsagePartition, deferredForVerify, dropMonthPartition, monthPartitions, usagePartitionName,
  type UsagePartitionCounts,
} from './usage-partitions.ts';

/** How a maintenance pass runs. */
export interface UsagePartitionOptions {
  /** Months after the current one that must have a partition (LEDGER_USAGE_PARTITIONS_AHEAD). */
  partitionsAhead: number;
  /** Whole months of raw records kept before the current one; 0 keeps every month (LEDGER_USAGE_RETENTION_MONTHS). */
  retentionMonths: number;
}

/** What one maintenance pass did. */
export interface UsageMaintenanceReport {
  /** Month partitions created, e.g. `usage_records_p2026_12`. */
  created: string[];
  /** Records moved out of the DEFAULT partition into the partition of their month. */
  movedFromDefault: bigint;
  /** Month partitions dropped by retention. */
  dropped: string[];
  /** Raw records in the dropped partitions (from their roll-ups' request counts, which Verify checks against them). */
  rowsPruned: bigint;
  /** Month partitions to create or drop left to the next pass because a periodic verify was running. */
  deferred: string[];
  /** The month partitions after the pass. */
  partitions: UsagePartitionCounts;
}
/**
 * One maintenance pass: partitions for the current month and `partitionsAhead` after it, and for
 * any month a record in the DEFAULT partition belongs to (moving those records there); then,
 * with `retentionMonths` > 0, drops the partitions of months before the current one by more than
 * that. Each step is its own short transaction; a step that cannot get its lock in time fails the
 * pass (the next pass retries) and leaves everything as it was; a step that finds a periodic
 * verify running is left to the next pass (report.deferred).
 */
export async function maintainUsagePartitions(db: Database, options: UsagePartitionOptions): Promise<UsageMaintenanceReport> {
  const { rows: [now] } = await db.query<{ month: string }>('SELECT ledger_current_month() AS month');
  const current = now!.month;
  const strayMonths = await db.query<{ month: string }>(
    `SELECT DISTINCT to_char(created_at AT TIME ZONE 'Asia/Kolkata', 'YYYY-MM') AS month FROM usage_records_default`,
  );
  const wanted = new Set([
    ...Array.from({ length: options.partitionsAhead + 1 }, (_, step) => addMonths(current, step)),
    ...strayMonths.rows.map((row) => row.month),
  ]);
  const report: UsageMaintenanceReport = {
    created: [], movedFromDefault: 0n, dropped: [], rowsPruned: 0n, deferred: [], partitions: { past: 0, current: 0, ahead: 0 },
  };
  const existing = new Set(await monthPartitions(db));
  for (const month of [...wanted].sort()) {
    if (existing.has(month)) continue;
    const moved = await createUsagePartition(db, month);
    if (moved === undefined) continue;
    if (moved === deferredForVerify) {
      report.deferred.push(usagePartitionName(month));
      continue;
    }
    report.created.push(usagePartitionName(month));
    report.movedFromDefault += moved;
  }
  if (options.retentionMonths > 0) {
    const oldestKept = addMonths(current, -options.retentionMonths);
    for (const month of await monthPartitions(db)) {
      if (month >= oldestKept) break;
      const pruned = await dropMonthPartition(db, month);
      if (pruned === undefined) continue;
      if (pruned === deferredForVerify) {
        report.deferred.push(usagePartitionName(month));
        continue;
      }
      report.dropped.push(usagePartitionName(month));
      report.rowsPruned += pruned;
    }
  }
  report.partitions = await countUsagePartitions(db);
  return report;
}
