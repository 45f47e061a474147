import { openDatabase, type Database } from '@gateway/db';
import { createServiceMetrics } from '@gateway/telemetry';
import { testPostgresUrl } from '@gateway/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyLedgerOperations, type LedgerOperation } from './apply-ledger-operations.ts';
import { LedgerOperationError } from './ledger-operation-error.ts';
import { credit } from './credit.ts';
import { findBalanceDifferences } from './find-balance-differences.ts';
import { fingerprintOf } from './fingerprint.ts';
import { createLedgerBatcher } from './ledger-batcher.ts';
import { openAccount } from './open-account.ts';
import { readBalances } from './read-balances.ts';
import { reserve, type ReserveInput } from './reserve.ts';
import { settle, type SettleInput } from './settle.ts';
import { useLedgerDatabase } from '../testing/ledger-test-setup.ts';

const serverUrl = testPostgresUrl();

/** A Reserve of one organisation's project, commercial, 10 minutes. */
function reserveInput(reservationId: string, organisationId: string, amountMicros: bigint): ReserveInput {
  return { reservationId, organisationId, projectId: `${organisationId}-p`, billingMode: 'commercial', amountMicros, ttlMs: 600_000n, modelSlug: 'm' };
}

/** A Settle reported by the upstream. */
function settleInput(reservationId: string, costMicros: bigint): SettleInput {
  return { reservationId, inputTokens: 10n, outputTokens: 5n, costMicros, providerCostMicros: 1n, modelSlug: 'm', usageSource: 'upstream', requestId: reservationId, overrunOutputTokens: 0n };
}

/** The operation `reserve()` would send for a valid input. */
function reserveOperation(input: ReserveInput): LedgerOperation {
  return {
    kind: 'reserve', reservationId: input.reservationId,
    fingerprint: fingerprintOf('reserve', {
      organisationId: input.organisationId, projectId: input.projectId, billingMode: input.billingMode,
      amountMicros: input.amountMicros, ttlMs: input.ttlMs, modelSlug: input.modelSlug,
    }),
    fields: {
      organisationId: input.organisationId, projectId: input.projectId, billingMode: input.billingMode!,
      amountMicros: String(input.amountMicros), ttlMs: String(input.ttlMs), modelSlug: input.modelSlug,
    },
  };
}

/** The operation `settle()` would send for a valid input. */
function settleOperation(input: SettleInput): LedgerOperation {
  return {
    kind: 'settle', reservationId: input.reservationId,
    fingerprint: fingerprintOf('settle', {
      inputTokens: input.inputTokens, outputTokens: input.outputTokens, costMicros: input.costMicros,
      providerCostMicros: input.providerCostMicros, modelSlug: input.modelSlug, usageSource: input.usageSource,
      requestId: input.requestId,
    }),
    fields: {
      inputTokens: String(input.inputTokens), outputTokens: String(input.outputTokens), costMicros: String(input.costMicros),
      providerCostMicros: String(input.providerCostMicros), modelSlug: input.modelSlug, usageSource: input.usageSource!,
      requestId: input.requestId,
    },
  };
}

/** Group commit must not change what any operation does: exact, isolated results, exact counts across replicas. */
describe.skipIf(!serverUrl)('ledger batches (group commit) over PostgreSQL', () => {
  const db = useLedgerDatabase('postgres', { poolSize: 4 });
  let replica: Database;

  beforeAll(async () => {
    replica = await openDatabase({ url: db.url, schema: 'ledger', poolSize: 4 });
    // A stand-in for a bug or an unexpected failure inside one operation: these two ids fail in the database.
    await db.exec(`
      CREATE FUNCTION ledger.test_poison_usage() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.reservation_id = 'r-poison' THEN RAISE EXCEPTION 'poisoned by the test'; END IF;
        RETURN NEW;
      END $$;
      CREATE FUNCTION ledger.test_poison_reservation() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.id = 'r-poison-reserve' THEN RAISE EXCEPTION 'poisoned by the test'; END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER test_poison BEFORE INSERT ON ledger.usage_records FOR EACH ROW EXECUTE FUNCTION ledger.test_poison_usage();
      CREATE TRIGGER test_poison BEFORE INSERT ON ledger.reservations FOR EACH ROW EXECUTE FUNCTION ledger.test_poison_reservation();
    `);
  }, 60_000);
  afterAll(async () => { await replica?.close(); });

  it('answers each operation of a batch exactly as alone, and a failing operation changes nothing and no other answer', async () => {
    const org = 'org-isolated';
    await openAccount(db, org);
    await credit(db, { creditId: 'fund-isolated', organisationId: org, amountMicros: 10_000_000n, reason: '' });
    for (const id of ['r-1', 'r-poison', 'r-2']) expect((await reserve(db, reserveInput(id, org, 1_000_000n))).result).toBe('ok');

    const answers = await applyLedgerOperations(db, [
      settleOperation(settleInput('r-1', 400_000n)),
      settleOperation(settleInput('r-poison', 300_000n)), // fails at its usage record, after moving money
      reserveOperation(reserveInput('r-3', org, 2_000_000n)),
      reserveOperation(reserveInput('r-poison-reserve', org, 500_000n)), // fails after its hold
      settleOperation(settleInput('r-2', 1_500_000n)), // overrun of 500,000
      reserveOperation(reserveInput('r-4', org, 5_100_000n)), // fits only if the failed hold was undone
    ]);

    expect(answers[0]).toEqual({ ok: true, result: 'ok', availableMicros: 7_600_000n, expiresAtMs: 0n, debitedMicros: 400_000n, releasedMicros: 600_000n, overrunMicros: 0n, detail: '' });
    expect(answers[1]).toMatchObject({ ok: false });
    expect((answers[1] as { error: Error }).error).toBeInstanceOf(LedgerOperationError);
    expect(answers[2]).toMatchObject({ ok: true, result: 'ok', availableMicros: 5_600_000n, detail: '' });
    expect(answers[3]).toMatchObject({ ok: false });
    expect(answers[4]).toEqual({ ok: true, result: 'ok', availableMicros: 5_100_000n, expiresAtMs: 0n, debitedMicros: 1_500_000n, releasedMicros: 0n, overrunMicros: 500_000n, detail: '' });
    expect(answers[5]).toMatchObject({ ok: true, result: 'ok', availableMicros: 0n, detail: '' });

    // Held: r-poison (its settle rolled back), r-3 and r-4; debited: r-1 and r-2 only.
    expect(await readBalances(db, org)).toEqual({ creditedMicros: 10_000_000n, availableMicros: 0n, heldMicros: 8_100_000n, debitedMicros: 1_900_000n });
    const poison = await db.query<{ status: string; movements: bigint; usage: bigint }>(
      `SELECT status, (SELECT count(*) FROM movements WHERE reservation_id = 'r-poison') AS movements,
         (SELECT count(*) FROM usage_records WHERE reservation_id = 'r-poison') AS usage
       FROM reservations WHERE id = 'r-poison'`);
    expect(poison.rows[0]).toEqual({ status: 'held', movements: 1n, usage: 0n });
    expect((await db.query("SELECT 1 FROM reservations WHERE id = 'r-poison-reserve'")).rowCount).toBe(0);
    expect((await db.query("SELECT 1 FROM movements WHERE reservation_id = 'r-poison-reserve'")).rowCount).toBe(0);
    expect(await findBalanceDifferences(db)).toEqual([]);

    // Through the batcher the failing operation rejects its own caller only.
    const batcher = createLedgerBatcher(db);
    const [retried, next] = await Promise.allSettled([
      settle(batcher, settleInput('r-poison', 300_000n)),
      settle(batcher, settleInput('r-3', 2_000_000n)),
    ]);
    expect(retried.status).toBe('rejected');
    expect(next).toEqual({ status: 'fulfilled', value: { result: 'ok', debitedMicros: 2_000_000n, releasedMicros: 0n, overrunMicros: 0n, availableMicros: 0n, detail: '' } });
    await batcher.close();
    expect(await findBalanceDifferences(db)).toEqual([]);
  }, 60_000);

  it('keeps exact counts through two batchers (two replicas) on one database, with operations grouped into batches', async () => {
    const org = 'org-exact-batched';
    const amountMicros = 1_234_567n;
    await openAccount(db, org);
    await credit(db, { creditId: 'fund-exact-batched', organisationId: org, amountMicros: 100n * amountMicros, reason: '' });
    const batchSizes: number[] = [];
    const batchers = [db, replica].map((database) => createLedgerBatcher(database, { onBatch: (size) => batchSizes.push(size) }));

    const reserved = await Promise.all(Array.from({ length: 500 }, (_, index) =>
      reserve(batchers[index % 2]!, reserveInput(`exact-${index}`, org, amountMicros))));
    expect(reserved.filter((outcome) => outcome.result === 'ok')).toHaveLength(100);
    expect(reserved.filter((outcome) => outcome.result === 'insufficient_balance')).toHaveLength(400);
    expect(Math.max(...batchSizes)).toBeGreaterThan(1);
    expect(await readBalances(db, org)).toEqual({ creditedMicros: 100n * amountMicros, availableMicros: 0n, heldMicros: 100n * amountMicros, debitedMicros: 0n });

    // Settle every held one concurrently (and each twice: the second is a replay) at a cost of 1,000 µ₹.
    const held = reserved.flatMap((outcome, index) => (outcome.result === 'ok' ? [`exact-${index}`] : []));
    const settled = await Promise.all([...held, ...held].map((id, index) => settle(batchers[index % 2]!, settleInput(id, 1_000n))));
    expect(settled.every((outcome) => outcome.result === 'ok' && outcome.debitedMicros === 1_000n && outcome.releasedMicros === amountMicros - 1_000n)).toBe(true);
    expect(await readBalances(db, org)).toEqual({
      creditedMicros: 100n * amountMicros, availableMicros: 100n * (amountMicros - 1_000n), heldMicros: 0n, debitedMicros: 100_000n,
    });
    const usage = await db.query<{ records: bigint }>(`SELECT count(*) AS records FROM usage_records WHERE organisation_id = $1`, [org]);
    expect(usage.rows[0]!.records).toBe(100n);
    await Promise.all(batchers.map((batcher) => batcher.close()));
    expect(await findBalanceDifferences(db)).toEqual([]);
  }, 90_000);

  it('observes only committed transactions: a batch that rolled back as a whole is not counted, its operations retried alone are', async () => {
    const org = 'org-rolled-back-batch';
    await openAccount(db, org);
    await credit(db, { creditId: 'fund-rolled-back-batch', organisationId: org, amountMicros: 10_000_000n, reason: '' });
    // The database as the batcher sees it: the first batch waits until released, the second fails
    // as a whole (a stand-in for a connection lost mid-batch), the rest go through.
    let batchCalls = 0;
    let releaseFirst!: () => void;
    const firstReleased = new Promise<void>((resolve) => { releaseFirst = resolve; });
    const failingOnce: Database = {
      ...db,
      query: async (text, params) => {
        if (text.includes('ledger_apply_batch')) {
          batchCalls += 1;
          if (batchCalls === 1) await firstReleased;
          if (batchCalls === 2) throw new Error('connection lost (test)');
        }
        return db.query(text, params);
      },
    };
    const metrics = createServiceMetrics('ledger');
    const batcher = createLedgerBatcher(failingOnce, { metrics, maxBatchesInFlight: 1 });
    const first = reserve(batcher, reserveInput('r-rb-1', org, 100_000n));
    // Queued behind the first: one batch of two once it is released.
    const others = [reserve(batcher, reserveInput('r-rb-2', org, 100_000n)), reserve(batcher, reserveInput('r-rb-3', org, 100_000n))];
    releaseFirst();
    for (const outcome of await Promise.all([first, ...others])) expect(outcome.result).toBe('ok');
    await batcher.close();
    expect(batchCalls).toBe(4);
    const observed = async (metricName: string) => (await metrics.ledgerBatchSize.get()).values
      .find((value) => value.metricName === metricName && value.labels.operation === 'reserve')?.value;
    // Three commits of one Reserve each; the rolled-back batch of two is not among them.
    expect(await observed('gateway_ledger_batch_size_count')).toBe(3);
    expect(await observed('gateway_ledger_batch_size_sum')).toBe(3);
    const durations = (await metrics.ledgerCommitDuration.get()).values
      .find((value) => value.metricName === 'gateway_ledger_commit_duration_seconds_count' && value.labels.operation === 'reserve');
    expect(durations?.value).toBe(3);
  }, 60_000);
  it('lets Settles alone wait for company (settleLingerMs): they leave together, at once when a Reserve or close() comes, else when the linger ends', async () => {
    const org = 'org-linger';
    await openAccount(db, org);
    await credit(db, { creditId: 'fund-linger', organisationId: org, amountMicros: 10_000_000n, reason: '' });
    for (const id of ['r-l-1', 'r-l-2', 'r-l-3', 'r-l-4', 'r-l-5']) expect((await reserve(db, reserveInput(id, org, 100_000n))).result).toBe('ok');
    const batchSizes: number[] = [];
    let batchesSent = 0;
    const counting: Database = {
      ...db,
      query: (text, params) => {
        if (text.includes('ledger_apply_batch')) batchesSent += 1;
        return db.query(text, params);
      },
    };
    // A linger far longer than the test: only a Reserve or close() can end it here.
    const batcher = createLedgerBatcher(counting, { settleLingerMs: 600_000, onBatch: (size) => batchSizes.push(size) });
    const settled = [];
    for (const id of ['r-l-1', 'r-l-2', 'r-l-3']) {
      settled.push(settle(batcher, settleInput(id, 40_000n)));
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(batchesSent).toBe(0);
    // A Reserve has a client waiting: it leaves at once, with the Settles queued before it.
    const reserved = reserve(batcher, reserveInput('r-l-6', org, 100_000n));
    expect((await reserved).result).toBe('ok');
    for (const outcome of await Promise.all(settled)) expect(outcome.result).toBe('ok');
    expect(batchSizes).toEqual([4]);
    // Settles alone again: close() sends them rather than waiting out the linger.
    const last = [settle(batcher, settleInput('r-l-4', 40_000n)), settle(batcher, settleInput('r-l-5', 40_000n))];
    await new Promise((resolve) => setImmediate(resolve));
    expect(batchSizes).toEqual([4]);
    await batcher.close();
    for (const outcome of await Promise.all(last)) expect(outcome.result).toBe('ok');
    expect(batchSizes).toEqual([4, 2]);

    // A short linger ends by itself: the Settle is answered with no Reserve and no close().
    expect((await reserve(db, reserveInput('r-l-7', org, 100_000n))).result).toBe('ok');
    const shortLinger = createLedgerBatcher(db, { settleLingerMs: 5 });
    expect((await settle(shortLinger, settleInput('r-l-7', 40_000n))).result).toBe('ok');
    await shortLinger.close();
    const balance = await readBalances(db, org);
    expect(balance!.debitedMicros).toBe(6n * 40_000n);
    expect(balance!.heldMicros).toBe(100_000n);
    expect(await findBalanceDifferences(db)).toEqual([]);
  }, 60_000);
});
