import { ledgerV1 } from '@gateway/contracts';
import { testPostgresUrl } from '@gateway/testkit';
import { describe, expect, it } from 'vitest';
import { applyLedgerOperations } from './domain/apply-ledger-operations.ts';
import { expireDueReservations } from './domain/expire-due-reservations.ts';
import { fingerprintOf } from './domain/fingerprint.ts';
import { balancesOf, fundedOrganisation, uniqueId } from './testing/start-test-ledger.ts';
import { useTestLedger } from './testing/ledger-test-setup.ts';

const { SettleResult, UsageSource } = ledgerV1;
const serverUrl = testPostgresUrl();

/**
 * BOUNDED_OVERRUN on usage records: output tokens the upstream produced beyond the Reserve are
 * stored, listed and part of the settle's idempotency payload, on every settle path; they never
 * change what the wallet pays.
 */
describe.skipIf(!serverUrl)('BOUNDED_OVERRUN: overrun output tokens on usage records', () => {
  const ledger = useTestLedger('postgres', { serverUrl, sweepIntervalMs: 600_000, conservation: 'after-each' });

  async function overrunTokensOf(reservationId: string) {
    const { rows } = await ledger.database.query<{ overrun_output_tokens: bigint; provisional: boolean }>(
      'SELECT overrun_output_tokens, provisional FROM usage_records WHERE reservation_id = $1', [reservationId]);
    return rows;
  }

  it('stores and lists them, bills only the cost, and treats a different overrun as an idempotency conflict', async () => {
    const organisationId = await fundedOrganisation(ledger, 1_000_000n);
    const reservationId = uniqueId('cut');
    await ledger.reserve({ reservationId, organisationId, amountMicros: 100_000n });
    // Cut to the Reserve: 100 output tokens delivered and billed, 1,900 more produced upstream.
    const usage = {
      reservationId, inputTokens: 10n, outputTokens: 100n, costMicros: 100_000n, providerCostMicros: 1_500_000n,
      overrunOutputTokens: 1_900n, requestId: 'req-cut',
    };
    const settled = await ledger.settle(usage);
    expect(settled).toMatchObject({ result: SettleResult.SETTLE_RESULT_OK, debitedMicros: 100_000n, overrunMicros: 0n, availableMicros: 900_000n });
    expect(await balancesOf(ledger, organisationId)).toEqual({
      creditedMicros: 1_000_000n, availableMicros: 900_000n, heldMicros: 0n, debitedMicros: 100_000n,
    });
    const listed = await ledger.listUsage({ organisationId });
    expect(listed.records).toEqual([expect.objectContaining({
      reservationId, outputTokens: 100n, costMicros: 100_000n, providerCostMicros: 1_500_000n, debitedMicros: 100_000n,
      overrunOutputTokens: 1_900n,
    })]);

    const before = await ledger.countRows();
    expect(await ledger.settle(usage)).toEqual(settled);
    for (const overrunOutputTokens of [0n, 1_899n]) {
      expect((await ledger.settle({ ...usage, overrunOutputTokens })).result).toBe(SettleResult.SETTLE_RESULT_IDEMPOTENCY_CONFLICT);
    }
    expect(await ledger.countRows()).toEqual(before);
    expect(await overrunTokensOf(reservationId)).toEqual([{ overrun_output_tokens: 1_900n, provisional: false }]);
  });

  it('refuses a negative overrun as INVALID_ARGUMENT and writes nothing', async () => {
    const organisationId = await fundedOrganisation(ledger, 1_000_000n);
    const reservationId = uniqueId('negative');
    await ledger.reserve({ reservationId, organisationId, amountMicros: 100_000n });
    const before = await ledger.countRows();
    const refused = await ledger.settle({ reservationId, costMicros: 1_000n, overrunOutputTokens: -1n });
    expect(refused).toMatchObject({ result: SettleResult.SETTLE_RESULT_INVALID_ARGUMENT });
    expect(refused.detail).toContain('overrun_output_tokens must not be negative');
    expect(await ledger.countRows()).toEqual(before);
    // Records written before the field existed, and settles that send none, read 0.
    expect((await ledger.settle({ reservationId, costMicros: 1_000n })).result).toBe(SettleResult.SETTLE_RESULT_OK);
    expect(await overrunTokensOf(reservationId)).toEqual([{ overrun_output_tokens: 0n, provisional: false }]);
  });

  it('late settles carry them: after a plain expiry, and finalising a provisional checkpoint record', async () => {
    const organisationId = await fundedOrganisation(ledger, 1_000_000n);
    const plain = uniqueId('late-plain');
    const checkpointed = uniqueId('late-checkpointed');
    await ledger.reserve({ reservationId: plain, organisationId, amountMicros: 100_000n });
    await ledger.reserve({ reservationId: checkpointed, organisationId, amountMicros: 100_000n });
    await ledger.checkpoint({ reservationId: checkpointed, sequence: 1n, outputTokens: 50n, costMicros: 50_000n });
    await ledger.database.query("UPDATE reservations SET expires_at = now() - interval '1 second' WHERE id = ANY($1)", [[plain, checkpointed]]);
    await expireDueReservations(ledger.database, 500);
    expect(await overrunTokensOf(checkpointed)).toEqual([{ overrun_output_tokens: 0n, provisional: true }]);

    for (const reservationId of [plain, checkpointed]) {
      expect(await ledger.settle({ reservationId, outputTokens: 100n, costMicros: 100_000n, overrunOutputTokens: 42n, usageSource: UsageSource.USAGE_SOURCE_UPSTREAM }))
        .toMatchObject({ result: SettleResult.SETTLE_RESULT_OK, detail: 'settled after expiry' });
      expect(await overrunTokensOf(reservationId)).toEqual([{ overrun_output_tokens: 42n, provisional: false }]);
      expect((await ledger.settle({ reservationId, outputTokens: 100n, costMicros: 100_000n, overrunOutputTokens: 43n })).result)
        .toBe(SettleResult.SETTLE_RESULT_IDEMPOTENCY_CONFLICT);
    }
    expect(await balancesOf(ledger, organisationId)).toEqual({
      creditedMicros: 1_000_000n, availableMicros: 800_000n, heldMicros: 0n, debitedMicros: 200_000n,
    });
  });

  it('set-based batches write them on every usage record', async () => {
    const organisationId = await fundedOrganisation(ledger, 1_000_000n);
    const ids = [uniqueId('batch-a'), uniqueId('batch-b')];
    for (const reservationId of ids) await ledger.reserve({ reservationId, organisationId, amountMicros: 100_000n });
    const answers = await applyLedgerOperations(ledger.database, ids.map((reservationId, index) => {
      const overrun = index === 0 ? 7n : 0n;
      const fields = {
        inputTokens: '1', outputTokens: '2', costMicros: '3', providerCostMicros: '4', modelSlug: 'model-a',
        usageSource: 'upstream', requestId: reservationId,
      };
      const fingerprint = fingerprintOf('settle', { ...fields, ...(overrun > 0n ? { overrunOutputTokens: overrun } : {}) });
      return { kind: 'settle' as const, reservationId, fingerprint, fields: { ...fields, overrunOutputTokens: String(overrun) } };
    }));
    expect(answers.map((answer) => answer.ok && answer.result)).toEqual(['ok', 'ok']);
    expect(await overrunTokensOf(ids[0]!)).toEqual([{ overrun_output_tokens: 7n, provisional: false }]);
    expect(await overrunTokensOf(ids[1]!)).toEqual([{ overrun_output_tokens: 0n, provisional: false }]);
  });
});
