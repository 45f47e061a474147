import { ledgerV1 } from '@gateway/contracts';
import { createTestDatabase, testPostgresUrl, type TestDatabase } from '@gateway/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { credit } from './domain/credit.ts';
import { acquireGrant } from './domain/grants.ts';
import { findBalanceDifferences } from './domain/find-balance-differences.ts';
import { createLedgerBatcher } from './domain/ledger-batcher.ts';
import { openAccount } from './domain/open-account.ts';
import { settle, type SettleInput } from './domain/settle.ts';
import { balancesOf, fundedOrganisation, startTestLedger, uniqueId, type TestLedger } from './testing/start-test-ledger.ts';
import { useLedgerDatabase } from './testing/ledger-test-setup.ts';

const serverUrl = testPostgresUrl();
const { AcquireGrantResult, AdjustGrantResult, ReserveResult, SettleResult } = ledgerV1;

/** Counts how often each result occurs. */
function tally<T extends { result: number }>(responses: T[]): Map<number, number> {
  const counts = new Map<number, number>();
  for (const { result } of responses) counts.set(result, (counts.get(result) ?? 0) + 1);
  return counts;
}

/**
 * Two ledger replicas (two apps, each with its own pool, batcher and gRPC server) on one
 * PostgreSQL database, hammering one organisation's grants at once: correctness is the
 * database's (locks, constraints), so the counts and the money are exact whatever the interleaving.
 */
describe.skipIf(!serverUrl)('credit grants across two ledger replicas', () => {
  let testDatabase: TestDatabase;
  let replicas: TestLedger[];
  beforeAll(async () => {
    testDatabase = await createTestDatabase(serverUrl!);
    // One after the other: each applies the schema at start.
    replicas = [];
    for (let index = 0; index < 2; index++) replicas.push(await startTestLedger('postgres', { databaseUrl: testDatabase.url, sweepIntervalMs: 600_000 }));
  }, 60_000);
  afterAll(async () => {
    for (const replica of replicas ?? []) await replica.close();
    await testDatabase?.drop();
  });

  it('acquires, carved settles (each twice, once on each replica), returns and closes race to exact money; Verify clean', async () => {
    const [a, b] = replicas as [TestLedger, TestLedger];
    const organisationId = await fundedOrganisation(a, 1_000_000n);
    // 20 grants, 10 per replica, at once: 10 % of available is at least 100,000 until 900,000 is
    // held, so every one gets its want of 10,000 (NO_OVERSPEND sizing under the account lock).
    const grantIds = Array.from({ length: 20 }, () => uniqueId('race-grant'));
    const acquired = await Promise.all(grantIds.map((grantId, index) =>
      replicas[index % 2]!.acquireGrant({ grantId, organisationId, minMicros: 1_000n, wantMicros: 10_000n, ownerId: `proxy-${index % 2}` })));
    expect(acquired.map((response) => [response.result, response.grantedMicros])).toEqual(grantIds.map(() => [AcquireGrantResult.ACQUIRE_GRANT_RESULT_OK, 10_000n]));
    expect(await balancesOf(a, organisationId)).toEqual({ creditedMicros: 1_000_000n, availableMicros: 800_000n, heldMicros: 200_000n, debitedMicros: 0n });

    // Per grant: 20 carves of 400 µ₹ costing 0, 200, 400 (at the carve) or 450 (above it), 5,250 in
    // all, so each grant's 10,000 always covers them; every Settle is sent to both replicas
    // (IDEMPOTENCY across replicas: one applies, the other replays). Meanwhile the owner returns
    // 2,000 of what it has not carved (10,000 − 20 × 400).
    const costs = [0n, 200n, 400n, 450n];
    const carves = grantIds.flatMap((grantId) => Array.from({ length: 20 }, (_, index) => ({
      reservationId: uniqueId('race-carve'), grantId, reservedMicros: 400n, costMicros: costs[index % 4]!, inputTokens: 5n, outputTokens: 5n,
    })));
    const [settled, returned] = await Promise.all([
      Promise.all(carves.flatMap((carve) => [a.settle(carve), b.settle(carve)])),
      Promise.all(grantIds.map((grantId, index) => replicas[index % 2]!.adjustGrant({ grantId, returnMicros: 2_000n, reason: 'idle' }))),
    ]);
    expect(tally(settled)).toEqual(new Map([[SettleResult.SETTLE_RESULT_OK, 800]]));
    for (let index = 0; index < carves.length; index++) {
      const cost = carves[index]!.costMicros;
      const expected = { debitedMicros: cost, releasedMicros: 0n, overrunMicros: cost > 400n ? cost - 400n : 0n };
      expect(settled[2 * index]).toMatchObject(expected);
      expect(settled[2 * index + 1]).toMatchObject(expected);
    }
    expect(returned.map((response) => [response.result, response.returnedMicros])).toEqual(grantIds.map(() => [AdjustGrantResult.ADJUST_GRANT_RESULT_OK, 2_000n]));
    // Each grant: 10,000 − 5,250 debited − 2,000 returned = 2,750 left.
    const { rows } = await a.database.query<{ remaining_micros: bigint; count: bigint }>(
      'SELECT remaining_micros, count(*) AS count FROM grants WHERE organisation_id = $1 GROUP BY remaining_micros', [organisationId]);
    expect(rows).toEqual([{ remaining_micros: 2_750n, count: 20n }]);
    expect(await balancesOf(b, organisationId)).toEqual({
      creditedMicros: 1_000_000n, availableMicros: 1_000_000n - 20n * 5_250n - 20n * 2_750n, heldMicros: 20n * 2_750n, debitedMicros: 20n * 5_250n,
    });

    // Each grant closed by both replicas at once (different adjustments): one closes it, the other finds it resolved.
    const closed = await Promise.all(grantIds.flatMap((grantId) => [a.adjustGrant({ grantId, close: true, reason: 'shutdown' }), b.adjustGrant({ grantId, close: true, reason: 'shutdown' })]));
    expect(tally(closed)).toEqual(new Map([[AdjustGrantResult.ADJUST_GRANT_RESULT_OK, 20], [AdjustGrantResult.ADJUST_GRANT_RESULT_ALREADY_RESOLVED, 20]]));
    expect(closed.filter((response) => response.result === AdjustGrantResult.ADJUST_GRANT_RESULT_OK).every((response) => response.returnedMicros === 2_750n)).toBe(true);
    expect(await balancesOf(a, organisationId)).toEqual({ creditedMicros: 1_000_000n, availableMicros: 895_000n, heldMicros: 0n, debitedMicros: 105_000n });
    const usage = await a.database.query<{ records: bigint; cost: bigint }>(
      'SELECT count(*) AS records, sum(cost_micros)::bigint AS cost FROM usage_records WHERE organisation_id = $1', [organisationId]);
    expect(usage.rows[0]).toEqual({ records: 400n, cost: 105_000n });
    expect((await b.verify()).differences).toEqual([]);
  }, 60_000);

  it('exact Reserves refused on one replica recall the grants held on both; after the owners close them the refused ones fit, exactly', async () => {
    const [a, b] = replicas as [TestLedger, TestLedger];
    const organisationId = await fundedOrganisation(a, 100_000n);
    // One grant per replica: 10 % of 100,000, then 10 % of 90,000 (which comes first is the database's call).
    const grantIds = [uniqueId('recall-grant'), uniqueId('recall-grant')];
    const acquired = await Promise.all(grantIds.map((grantId, index) =>
      replicas[index]!.acquireGrant({ grantId, organisationId, minMicros: 1_000n, wantMicros: 50_000n, ownerId: `recall-proxy-${index}` })));
    expect(acquired.map((response) => response.grantedMicros).sort()).toEqual([10_000n, 9_000n].sort());
    // 81,000 available: 12 Reserves of 9,000 from both replicas at once, 9 fit, 3 are refused and each says 2 grants are recalled.
    const reserveIds = Array.from({ length: 12 }, () => uniqueId('recall-res'));
    const reserved = await Promise.all(reserveIds.map((reservationId, index) => replicas[index % 2]!.reserve({ reservationId, organisationId, amountMicros: 9_000n })));
    expect(tally(reserved)).toEqual(new Map([[ReserveResult.RESERVE_RESULT_OK, 9], [ReserveResult.RESERVE_RESULT_INSUFFICIENT_BALANCE, 3]]));
    for (const response of reserved) if (response.result !== ReserveResult.RESERVE_RESULT_OK) expect(response.grantsRecalled).toBe(2);
    // The pull side on the other replica sees the recall; the owners close, and the refused Reserves now fit: 19,000 came back.
    const closed = await Promise.all(grantIds.map((grantId, index) => replicas[1 - index]!.adjustGrant({ grantId, close: true, reason: 'recalled' })));
    expect(closed.map((response) => [response.result, response.recalled])).toEqual([[AdjustGrantResult.ADJUST_GRANT_RESULT_OK, true], [AdjustGrantResult.ADJUST_GRANT_RESULT_OK, true]]);
    const retried = await Promise.all(reserveIds.flatMap((reservationId, index) => (reserved[index]!.result === ReserveResult.RESERVE_RESULT_OK ? []
      : [replicas[index % 2]!.reserve({ reservationId, organisationId, amountMicros: 9_000n })])));
    expect(tally(retried)).toEqual(new Map([[ReserveResult.RESERVE_RESULT_OK, 2], [ReserveResult.RESERVE_RESULT_INSUFFICIENT_BALANCE, 1]]));
    expect(await balancesOf(b, organisationId)).toEqual({ creditedMicros: 100_000n, availableMicros: 1_000n, heldMicros: 99_000n, debitedMicros: 0n });
    expect((await a.verify()).differences).toEqual([]);
  }, 60_000);
});

/** A carve's Settle as the proxy sends it. */
function carveInput(reservationId: string, grantId: string, reservedMicros: bigint, costMicros: bigint): SettleInput {
  return {
    reservationId, inputTokens: 3n, outputTokens: 2n, costMicros, providerCostMicros: 1n, modelSlug: 'm', usageSource: 'upstream',
    requestId: reservationId, overrunOutputTokens: 0n, grantId, reservedMicros,
  };
}

/**
 * The hot path of carved settles must stay set-based: a batch of carves through the batcher
 * runs ledger_apply_batch_set and never the operation-by-operation loop. Counted in the
 * database by wrappers around the two functions (sequences: a call is counted even if its
 * transaction rolls back, so a failed set-based attempt followed by the loop shows too).
 */
describe.skipIf(!serverUrl)('carved settles in a batch', () => {
  const db = useLedgerDatabase('postgres', { poolSize: 4 });
  beforeAll(async () => {
    await db.exec(`
      CREATE SEQUENCE ledger.test_set_calls;
      CREATE SEQUENCE ledger.test_each_calls;
      ALTER FUNCTION ledger.ledger_apply_batch_each(jsonb, boolean) RENAME TO test_apply_batch_each_inner;
      CREATE FUNCTION ledger.ledger_apply_batch_each(ops jsonb, p_isolate boolean)
      RETURNS TABLE (ordinal integer, result text, available_micros bigint, expires_at_ms bigint, debited_micros bigint,
        released_micros bigint, overrun_micros bigint, detail text, error_state text, error_message text)
      LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM nextval('ledger.test_each_calls');
        RETURN QUERY SELECT * FROM ledger.test_apply_batch_each_inner(ops, p_isolate);
      END $$;
      ALTER FUNCTION ledger.ledger_apply_batch_set(jsonb) RENAME TO test_apply_batch_set_inner;
      CREATE FUNCTION ledger.ledger_apply_batch_set(ops jsonb)
      RETURNS TABLE (ordinal integer, result text, available_micros bigint, expires_at_ms bigint, debited_micros bigint,
        released_micros bigint, overrun_micros bigint, detail text, error_state text, error_message text)
      LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM nextval('ledger.test_set_calls');
        RETURN QUERY SELECT * FROM ledger.test_apply_batch_set_inner(ops);
      END $$;
    `);
  }, 60_000);

  /** Calls of the two paths so far (a sequence's last_value counts from 1 once called). */
  async function calls(): Promise<{ set: bigint; each: bigint }> {
    const { rows } = await db.query<{ set: bigint; each: bigint }>(
      `SELECT (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM ledger.test_set_calls) AS set,
         (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM ledger.test_each_calls) AS each`);
    return rows[0]!;
  }

  it('takes the set-based path for every batch of carves (none falls back to the loop), with exact money', async () => {
    const organisationId = 'carve-batch-org';
    await openAccount(db, organisationId);
    await credit(db, { creditId: 'fund-carve-batch', organisationId, amountMicros: 10_000_000n, reason: '' });
    const grants = await Promise.all(['g-0', 'g-1'].map(async (grantId) => {
      const outcome = await acquireGrant(db, {
        grantId, organisationId, projectId: 'p', billingMode: 'commercial', minMicros: 1n, wantMicros: 100_000n, ttlMs: 600_000n, ownerId: 'proxy-0',
      }, 10);
      expect(outcome.result).toBe('ok');
      return grantId;
    }));
    const batchSizes: number[] = [];
    const batcher = createLedgerBatcher(db, { onBatch: (size) => batchSizes.push(size) });
    // 400 carves of 100 µ₹ over two grants of 100,000, costing 0..119 (some above the carve).
    const outcomes = await Promise.all(Array.from({ length: 400 }, (_, index) =>
      settle(batcher, carveInput(`carve-${index}`, grants[index % 2]!, 100n, BigInt(index % 120)))));
    await batcher.close();
    expect(outcomes.every((outcome) => outcome.result === 'ok' && outcome.releasedMicros === 0n)).toBe(true);
    const totalCost = Array.from({ length: 400 }, (_, index) => BigInt(index % 120)).reduce((sum, cost) => sum + cost, 0n);
    const totalOverrun = Array.from({ length: 400 }, (_, index) => BigInt(Math.max(0, (index % 120) - 100))).reduce((sum, cost) => sum + cost, 0n);
    expect(outcomes.reduce((sum, outcome) => sum + outcome.overrunMicros, 0n)).toBe(totalOverrun);
    // Every batch of two or more went set-based once, and the loop never ran.
    const grouped = batchSizes.filter((size) => size > 1).length;
    expect(grouped).toBeGreaterThan(0);
    expect(batchSizes.reduce((sum, size) => sum + size, 0)).toBe(400);
    expect(await calls()).toEqual({ set: BigInt(grouped), each: 0n });
    const { rows } = await db.query<{ remaining: bigint }>('SELECT sum(remaining_micros)::bigint AS remaining FROM grants WHERE organisation_id = $1', [organisationId]);
    expect(rows[0]!.remaining).toBe(200_000n - totalCost);
    expect(await findBalanceDifferences(db)).toEqual([]);
  }, 60_000);
});
