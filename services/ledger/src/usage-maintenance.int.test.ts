import { openDatabase, type Database } from '@gateway/db';
import { createLogger } from '@gateway/logger';
import { createServiceMetrics } from '@gateway/telemetry';
import { createTestDatabase, testPostgresUrl, type TestDatabase } from '@gateway/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepareLedgerSchema } from './ledger-schema.ts';
import { startUsageMaintenance } from './usage-maintenance.ts';
import { addMonths, usagePartitionName } from './usage-partitions.ts';

const serverUrl = testPostgresUrl();

describe.skipIf(!serverUrl)('usage maintenance metrics over PostgreSQL', () => {
  let testDatabase: TestDatabase;
  let db: Database;
  beforeAll(async () => {
    testDatabase = await createTestDatabase(serverUrl!);
    db = await openDatabase({ url: testDatabase.url, schema: 'ledger', poolSize: 2 });
    await prepareLedgerSchema(db);
  });
  afterAll(async () => {
    await db?.close();
    await testDatabase?.drop();
  });

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
