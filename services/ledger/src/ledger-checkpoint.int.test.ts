import { ledgerV1 } from '@gateway/contracts';
import { testPostgresUrl } from '@gateway/testkit';
import { describe, expect, it } from 'vitest';
import { expireDueReservations } from './domain/expire-due-reservations.ts';
import { balancesOf, fundedOrganisation, uniqueId } from './testing/start-test-ledger.ts';
import { useTestLedger } from './testing/ledger-test-setup.ts';

const { CheckpointResult, SettleResult, BillingMode, UsageSource } = ledgerV1;
const serverUrl = testPostgresUrl();

/** EXPIRY with checkpoints: an expired stream is charged what it delivered, and NOTHING_FREE still holds. */
describe.skipIf(!serverUrl)('EXPIRY and NOTHING_FREE: checkpoints, expiry and late settles', () => {
  // The app's sweeper is idle; tests sweep explicitly once the database clock passed the deadline.
  const ledger = useTestLedger('postgres', { serverUrl, sweepIntervalMs: 600_000, conservation: 'after-each' });

  /** Moves a reservation's deadline into the past (as if its ttl ran out) and runs one sweep. */
  async function expireNow(reservationId: string): Promise<void> {
    await ledger.database.query("UPDATE reservations SET expires_at = now() - interval '1 second' WHERE id = $1", [reservationId]);
    await expireDueReservations(ledger.database, 500);
  }

  async function usageOf(reservationId: string) {
    const { rows } = await ledger.database.query<Record<string, unknown>>(
      `SELECT input_tokens, output_tokens, cost_micros, provider_cost_micros, debited_micros, usage_source, provisional
       FROM usage_records WHERE reservation_id = $1`, [reservationId]);
    return rows;
  }

  it('records running totals by sequence, refuses decreasing totals, and extends the deadline by the database clock', async () => {
    const organisationId = await fundedOrganisation(ledger, 1_000_000n);
    const reservationId = uniqueId('stream');
    const reserved = await ledger.reserve({ reservationId, organisationId, amountMicros: 500_000n, ttlMs: 5_000n });
    const first = await ledger.checkpoint({ reservationId, sequence: 1n, outputTokens: 10n, costMicros: 1_000n, extendTtlMs: 60_000n });
    expect(first).toMatchObject({ result: CheckpointResult.CHECKPOINT_RESULT_OK, detail: '' });
    expect(first.expiresAtMs).toBeGreaterThan(reserved.expiresAtMs);

    const before = await ledger.countRows();
    expect(await ledger.checkpoint({ reservationId, sequence: 1n, outputTokens: 99n, costMicros: 9_999n })).toMatchObject({
      result: CheckpointResult.CHECKPOINT_RESULT_OK, expiresAtMs: first.expiresAtMs,
      detail: 'replay or out of order: sequence is not above the last recorded; nothing changed',
    });
    expect((await ledger.checkpoint({ reservationId, sequence: 2n, outputTokens: 9n, costMicros: 1_000n })).result)
      .toBe(CheckpointResult.CHECKPOINT_RESULT_INVALID_ARGUMENT);
    for (const bad of [{ sequence: 0n }, { sequence: -1n }, { costMicros: -5n }, { extendTtlMs: -1n }, { extendTtlMs: 10n }, { outputTokens: 2n ** 63n - 1n }]) {
      expect((await ledger.checkpoint({ reservationId, sequence: 5n, ...bad })).result).toBe(CheckpointResult.CHECKPOINT_RESULT_INVALID_ARGUMENT);
    }
    expect((await ledger.checkpoint({ reservationId: uniqueId('nobody'), sequence: 5n })).result)
      .toBe(CheckpointResult.CHECKPOINT_RESULT_RESERVATION_UNKNOWN);
    expect(await ledger.countRows()).toEqual(before);

    await ledger.settle({ reservationId, costMicros: 2_000n, outputTokens: 20n });
    expect((await ledger.checkpoint({ reservationId, sequence: 3n, outputTokens: 30n, costMicros: 3_000n })).result)
      .toBe(CheckpointResult.CHECKPOINT_RESULT_ALREADY_RESOLVED);
    // A settle is final: the checkpoint played no part in the money.
    expect(await balancesOf(ledger, organisationId)).toEqual({ creditedMicros: 1_000_000n, availableMicros: 998_000n, heldMicros: 0n, debitedMicros: 2_000n });
  });

  it('charges the last checkpoint at expiry, not zero, in one provisional usage record', async () => {
    const organisationId = await fundedOrganisation(ledger, 1_000_000n);
    const reservationId = uniqueId('stream');
    await ledger.reserve({ reservationId, organisationId, amountMicros: 400_000n });
    await ledger.checkpoint({ reservationId, sequence: 1n, inputTokens: 50n, outputTokens: 100n, costMicros: 120_000n, providerCostMicros: 60_000n });
    await ledger.checkpoint({ reservationId, sequence: 2n, inputTokens: 50n, outputTokens: 200n, costMicros: 250_001n, providerCostMicros: 90_000n });
    await expireNow(reservationId);

    expect(await balancesOf(ledger, organisationId)).toEqual({
      creditedMicros: 1_000_000n, availableMicros: 749_999n, heldMicros: 0n, debitedMicros: 250_001n,
    });
    expect(await usageOf(reservationId)).toEqual([{
      input_tokens: 50n, output_tokens: 200n, cost_micros: 250_001n, provider_cost_micros: 90_000n, debited_micros: 250_001n,
      usage_source: 'gateway_estimate', provisional: true,
    }]);
    const movements = await ledger.database.query<{ kind: string; amount_micros: bigint }>(
      'SELECT kind, amount_micros FROM movements WHERE reservation_id = $1 ORDER BY id', [reservationId]);
    expect(movements.rows).toEqual([
      { kind: 'reserve', amount_micros: 400_000n }, { kind: 'settle', amount_micros: 250_001n }, { kind: 'expire', amount_micros: 149_999n },
    ]);
    expect(await ledger.getProjectSpend('project-1')).toMatchObject({ heldMicros: 0n });
  });

  it('settles late after a checkpointed expiry: debits only the difference and finalises the one record', async () => {
    const organisationId = await fundedOrganisation(ledger, 1_000_000n);
    const reservationId = uniqueId('stream');
    await ledger.reserve({ reservationId, organisationId, amountMicros: 400_000n });
    await ledger.checkpoint({ reservationId, sequence: 1n, outputTokens: 100n, costMicros: 300_000n });
    await expireNow(reservationId);

    const late = await ledger.settle({
      reservationId, inputTokens: 40n, outputTokens: 140n, costMicros: 420_000n, providerCostMicros: 200_000n,
      usageSource: UsageSource.USAGE_SOURCE_UPSTREAM, requestId: 'req-late',
    });
    expect(late).toEqual({
      result: SettleResult.SETTLE_RESULT_OK, debitedMicros: 120_000n, releasedMicros: 0n, overrunMicros: 120_000n,
      availableMicros: 580_000n, detail: 'settled after expiry',
    });
    expect(await balancesOf(ledger, organisationId)).toEqual({
      creditedMicros: 1_000_000n, availableMicros: 580_000n, heldMicros: 0n, debitedMicros: 420_000n,
    });
    expect(await usageOf(reservationId)).toEqual([{
      input_tokens: 40n, output_tokens: 140n, cost_micros: 420_000n, provider_cost_micros: 200_000n, debited_micros: 420_000n,
      usage_source: 'upstream', provisional: false,
    }]);
    // A replay answers the first result and changes nothing; a different payload is a conflict.
    const before = await ledger.countRows();
    expect(await ledger.settle({
      reservationId, inputTokens: 40n, outputTokens: 140n, costMicros: 420_000n, providerCostMicros: 200_000n,
      usageSource: UsageSource.USAGE_SOURCE_UPSTREAM, requestId: 'req-late',
    })).toEqual(late);
    expect((await ledger.settle({ reservationId, costMicros: 1n })).result).toBe(SettleResult.SETTLE_RESULT_IDEMPOTENCY_CONFLICT);
    expect(await ledger.countRows()).toEqual(before);
    // The finalised record can no longer change, even behind the ledger's back.
    await expect(ledger.database.query('UPDATE usage_records SET cost_micros = 1 WHERE reservation_id = $1', [reservationId])).rejects.toThrow(/append-only/);
    await expect(ledger.database.query('DELETE FROM usage_records WHERE reservation_id = $1', [reservationId])).rejects.toThrow(/append-only/);
  });

  it('keeps the checkpointed charge when the late settle reports less, and records internal usage without debits', async () => {
    const organisationId = await fundedOrganisation(ledger, 1_000_000n);
    const lower = uniqueId('stream');
    await ledger.reserve({ reservationId: lower, organisationId, amountMicros: 400_000n });
    await ledger.checkpoint({ reservationId: lower, sequence: 7n, outputTokens: 100n, costMicros: 300_000n });
    await expireNow(lower);
    expect(await ledger.settle({ reservationId: lower, outputTokens: 90n, costMicros: 290_000n })).toMatchObject({
      result: SettleResult.SETTLE_RESULT_OK, debitedMicros: 0n, overrunMicros: 0n, detail: 'settled after expiry',
    });
    expect(await usageOf(lower)).toEqual([expect.objectContaining({ output_tokens: 100n, cost_micros: 300_000n, debited_micros: 300_000n, provisional: false })]);

    const internal = uniqueId('stream');
    await ledger.reserve({ reservationId: internal, organisationId, amountMicros: 400_000n, billingMode: BillingMode.BILLING_MODE_INTERNAL });
    await ledger.checkpoint({ reservationId: internal, sequence: 1n, outputTokens: 10n, costMicros: 5_000n });
    await expireNow(internal);
    expect(await usageOf(internal)).toEqual([expect.objectContaining({ cost_micros: 5_000n, debited_micros: 0n, provisional: true })]);
    expect(await balancesOf(ledger, organisationId)).toEqual({
      creditedMicros: 1_000_000n, availableMicros: 700_000n, heldMicros: 0n, debitedMicros: 300_000n,
    });
  });

  /** The request ids and states of a reservation's usage records. */
  async function requestIdsOf(reservationId: string) {
    const { rows } = await ledger.database.query<{ request_id: string; provisional: boolean; cost_micros: bigint }>(
      'SELECT request_id, provisional, cost_micros FROM usage_records WHERE reservation_id = $1', [reservationId]);
    return rows;
  }

  it('keeps the request id of the checkpoints on the expiry record and through a late settle that finalises it', async () => {
    const organisationId = await fundedOrganisation(ledger, 1_000_000n);
    // The first checkpoint may come without one; the first that carries one records it.
    const kept = uniqueId('stream');
    const requestId = uniqueId('req-killed');
    await ledger.reserve({ reservationId: kept, organisationId, amountMicros: 400_000n });
    await ledger.checkpoint({ reservationId: kept, sequence: 1n, outputTokens: 50n, costMicros: 100_000n });
    expect((await ledger.checkpoint({ reservationId: kept, sequence: 2n, outputTokens: 100n, costMicros: 300_000n, requestId })).result)
      .toBe(CheckpointResult.CHECKPOINT_RESULT_OK);
    // A different request id, or a malformed one, is refused and changes nothing (not even the totals).
    const before = await ledger.countRows();
    for (const bad of [uniqueId('req-other'), 'has space', 'x'.repeat(129), 'nul\u0000']) {
      expect(await ledger.checkpoint({ reservationId: kept, sequence: 3n, outputTokens: 120n, costMicros: 350_000n, requestId: bad }))
        .toMatchObject({ result: CheckpointResult.CHECKPOINT_RESULT_INVALID_ARGUMENT, detail: expect.stringContaining('request_id') });
    }
    expect(await ledger.countRows()).toEqual(before);
    await expireNow(kept);
    expect(await requestIdsOf(kept)).toEqual([{ request_id: requestId, provisional: true, cost_micros: 300_000n }]);
    // A late settle reporting less and without a request id keeps the checkpoint's.
    expect(await ledger.settle({ reservationId: kept, outputTokens: 90n, costMicros: 290_000n, requestId: '' })).toMatchObject({
      result: SettleResult.SETTLE_RESULT_OK, debitedMicros: 0n, detail: 'settled after expiry',
    });
    expect(await requestIdsOf(kept)).toEqual([{ request_id: requestId, provisional: false, cost_micros: 300_000n }]);

    // A late settle with its own request id sets it, whichever figures stand.
    for (const [name, settledMicros, standingMicros] of [['less', 200_000n, 250_000n], ['more', 260_000n, 260_000n]] as const) {
      const reservationId = uniqueId(`stream-${name}`);
      await ledger.reserve({ reservationId, organisationId, amountMicros: 300_000n });
      await ledger.checkpoint({ reservationId, sequence: 1n, outputTokens: 80n, costMicros: 250_000n, requestId: `${reservationId}-checkpointed` });
      await expireNow(reservationId);
      expect(await requestIdsOf(reservationId)).toEqual([{ request_id: `${reservationId}-checkpointed`, provisional: true, cost_micros: 250_000n }]);
      expect((await ledger.settle({ reservationId, outputTokens: 80n, costMicros: settledMicros, requestId: `${reservationId}-settled` })).result)
        .toBe(SettleResult.SETTLE_RESULT_OK);
      expect(await requestIdsOf(reservationId)).toEqual([{ request_id: `${reservationId}-settled`, provisional: false, cost_micros: standingMicros }]);
    }
    expect(await balancesOf(ledger, organisationId)).toEqual({
      creditedMicros: 1_000_000n, availableMicros: 1_000_000n - 300_000n - 250_000n - 260_000n, heldMicros: 0n,
      debitedMicros: 300_000n + 250_000n + 260_000n,
    });
  });

  it('lets exactly one of settle, release and expiry win on a checkpointed reservation, with one usage record', async () => {
    const organisationId = await fundedOrganisation(ledger, 100_000_000n);
    const outcomes = new Map<string, number>();
    for (let round = 0; round < 12; round++) {
      const reservationId = uniqueId('race');
      await ledger.reserve({ reservationId, organisationId, amountMicros: 1_000_000n });
      await ledger.checkpoint({ reservationId, sequence: 1n, outputTokens: 5n, costMicros: 200_000n });
      await ledger.database.query("UPDATE reservations SET expires_at = now() - interval '1 second' WHERE id = $1", [reservationId]);
      const [settled, released] = await Promise.all([
        ledger.settle({ reservationId, costMicros: 300_000n }),
        ledger.release({ reservationId }),
        expireDueReservations(ledger.database, 500),
      ]);
      const { rows } = await ledger.database.query<{ status: string }>('SELECT status FROM reservations WHERE id = $1', [reservationId]);
      const status = rows[0]!.status;
      outcomes.set(status, (outcomes.get(status) ?? 0) + 1);
      const usage = await usageOf(reservationId);
      if (status === 'released') {
        expect(settled.result).toBe(SettleResult.SETTLE_RESULT_ALREADY_RESOLVED);
        expect(usage).toEqual([]);
      } else {
        expect(released.result).toBe(ledgerV1.ReleaseResult.RELEASE_RESULT_ALREADY_RESOLVED);
        // Settled directly, or expired (charging the checkpoint) and then settled late: either way 300,000 in one record.
        expect(usage).toEqual([expect.objectContaining({ cost_micros: 300_000n, debited_micros: 300_000n, provisional: false })]);
      }
    }
    const settledOrExpired = (outcomes.get('settled') ?? 0) + (outcomes.get('expired') ?? 0);
    expect(await balancesOf(ledger, organisationId)).toEqual({
      creditedMicros: 100_000_000n, availableMicros: 100_000_000n - BigInt(settledOrExpired) * 300_000n, heldMicros: 0n,
      debitedMicros: BigInt(settledOrExpired) * 300_000n,
    });
  });
});
