import { createLogger } from '@gateway/logger';
import { createServiceMetrics } from '@gateway/telemetry';
import { testPostgresUrl } from '@gateway/testkit';
import { describe, expect, it } from 'vitest';
import { startUsageMaintenance } from './usage-maintenance.ts';
import { addMonths, usagePartitionName } from './usage-partitions.ts';
import { useLedgerDatabase } from './testing/ledger-test-setup.ts';

const serverUrl = testPostgresUrl();

describe.skipIf(!serverUrl)('usage maintenance metrics over PostgreSQL', () => {
  const db = useLedgerDatabase('postgres', { poolSize: 2 });

  it('counts the partitions at every scrape, so the gauge shows a partition gone even with no pass since', async () => {
    const metrics = createServiceMetrics('ledger');
    const maintenance = startUsageMaintenance({
      database: db, logger: createLogger('ledger', 'silent'), metrics, partitionsAhead: 2, retentionMonths: 0, intervalMs: 3_600_000,
    });
    try {
      expect(await maintenance.runNow()).toMatchObject({ partitions: { current: 1, ahead: 2 } });
      expect(await metrics.render()).toMatch(/gateway_ledger_usage_partitions\{state="ahead",service="ledger"\} 2\n/);
      // The farthest month's partition disappears behind the maintenance's back (no pass runs until the next hour).
      const { rows: [now] } = await db.query<{ month: string }>('SELECT ledger_current_month() AS month');
      await db.query(`DROP TABLE ${usagePartitionName(addMonths(now!.month, 2))}`);
      expect(await metrics.render()).toMatch(/gateway_ledger_usage_partitions\{state="ahead",service="ledger"\} 1\n/);
    } finally {
      await maintenance.stop();
    }
  });
});
