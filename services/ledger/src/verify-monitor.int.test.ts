import { openDatabase, type Database } from '@gateway/db';
import { createLogger } from '@gateway/logger';
import { createServiceMetrics } from '@gateway/telemetry';
import { createTestDatabase, testPostgresUrl, type TestDatabase } from '@gateway/testkit';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { prepareLedgerSchema } from './ledger-schema.ts';
import { startVerifyMonitor } from './verify-monitor.ts';

const serverUrl = testPostgresUrl();
const logger = createLogger('ledger', 'silent');
/** Long enough that no scheduled run starts during a test: every run here is a runNow(). */
const hourMs = 3_600_000;

describe.skipIf(!serverUrl)('periodic verify monitor over PostgreSQL', () => {
  let testDatabase: TestDatabase;
  const opened: Database[] = [];
  const open = async () => {
    const database = await openDatabase({ url: testDatabase.url, schema: 'ledger', poolSize: 4 });
    opened.push(database);
    return database;
  };
  beforeAll(async () => {
    testDatabase = await createTestDatabase(serverUrl!);
    await prepareLedgerSchema(await open());
  });
  afterAll(async () => {
    await Promise.all(opened.map((database) => database.close()));
    await testDatabase?.drop();
  });

  it('runs once per interval across replicas: a second replica skips while the first run is recent', async () => {
    await testDatabase.query('DELETE FROM ledger.verify_runs');
    const first = startVerifyMonitor({ database: await open(), logger, metrics: createServiceMetrics('ledger'), intervalMs: hourMs, firstDelayMs: hourMs });
    const second = startVerifyMonitor({ database: await open(), logger, metrics: createServiceMetrics('ledger'), intervalMs: hourMs, firstDelayMs: hourMs });
    try {
      expect(await first.runNow()).toMatchObject({ outcome: 'verified', differences: 0 });
      expect(await second.runNow()).toEqual({ outcome: 'skipped', reason: 'recent' });
      expect(await first.runNow()).toEqual({ outcome: 'skipped', reason: 'recent' });
      // A run an interval ago no longer counts.
      await testDatabase.query("UPDATE ledger.verify_runs SET finished_at = now() - interval '2 hours'");
      expect(await second.runNow()).toMatchObject({ outcome: 'verified' });
    } finally {
      await Promise.all([first.stop(), second.stop()]);
    }
  });

  it('a completed run replaces every differences series, so a check no longer run does not keep its count', async () => {
    await testDatabase.query('DELETE FROM ledger.verify_runs');
    const metrics = createServiceMetrics('ledger');
    metrics.ledgerVerifyDifferences.set({ check: 'retired_check' }, 3);
    const monitor = startVerifyMonitor({ database: await open(), logger, metrics, intervalMs: hourMs, firstDelayMs: hourMs });
    try {
      expect(await monitor.runNow()).toMatchObject({ outcome: 'verified' });
      const text = await metrics.render();
      expect(text).not.toContain('retired_check');
      expect(text).toMatch(/gateway_ledger_verify_differences\{check="conservation",service="ledger"\} 0/);
    } finally {
      await monitor.stop();
    }
  });

  it('stop() cancels a run in progress instead of waiting for it', async () => {
    await testDatabase.query('DELETE FROM ledger.verify_runs');
    const blocker = await open();
    const database = await open();
    let releaseLock!: () => void;
    const lockReleased = new Promise<void>((resolve) => { releaseLock = resolve; });
    let lockTaken!: () => void;
    const lockHeld = new Promise<void>((resolve) => { lockTaken = resolve; });
    // Another transaction holds the accounts table, so the verify's first read waits as a long scan would.
    const holding = blocker.transaction(async (tx) => {
      await tx.query('LOCK TABLE accounts IN ACCESS EXCLUSIVE MODE');
      lockTaken();
      await lockReleased;
    });
    const monitor = startVerifyMonitor({ database, logger, metrics: createServiceMetrics('ledger'), intervalMs: hourMs, firstDelayMs: hourMs });
    try {
      await lockHeld;
      const run = monitor.runNow();
      await vi.waitFor(async () => {
        const waiting = await testDatabase.query<{ count: string }>(
          "SELECT count(*)::text AS count FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%FROM accounts%'",
        );
        expect(waiting[0]!.count).toBe('1');
      }, { timeout: 10_000, interval: 50 });
      await monitor.stop();
      expect(await run).toEqual({ outcome: 'cancelled' });
      // Nothing was recorded as a finished run.
      expect(await testDatabase.query('SELECT * FROM ledger.verify_runs')).toEqual([]);
    } finally {
      releaseLock();
      await holding;
    }
  });
});
