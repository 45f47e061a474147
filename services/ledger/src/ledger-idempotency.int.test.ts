import { ledgerV1 } from '@gateway/contracts';
import { testPostgresUrl } from '@gateway/testkit';
import { describe, expect, it } from 'vitest';
import { maxAmountMicros } from './domain/ledger-types.ts';
import { balancesOf, fundedOrganisation, uniqueId } from './testing/start-test-ledger.ts';
import { useTestLedger } from './testing/ledger-test-setup.ts';

const { ReserveResult, SettleResult, ReleaseResult, CreditResult } = ledgerV1;
const serverUrl = testPostgresUrl();

/** IDEMPOTENCY: the same id with the same payload returns the first result; with another payload it changes nothing. */
describe.skipIf(!serverUrl)('IDEMPOTENCY', () => {
  const ledger = useTestLedger('postgres', { serverUrl, conservation: 'after-each' });

  it('replays a Reserve with its original deadline and refuses another payload for the same id', async () => {
    const organisationId = await fundedOrganisation(ledger, 5_000_000n);
    const reservationId = uniqueId('res');
    const request = { reservationId, organisationId, amountMicros: 2_000_000n, ttlMs: 30_000n };
    const first = await ledger.reserve(request);
    expect(first).toMatchObject({ result: ReserveResult.RESERVE_RESULT_OK, availableMicros: 3_000_000n, detail: '' });
    const before = await ledger.countRows();

    const replay = await ledger.reserve(request);
    expect(replay).toMatchObject({ result: ReserveResult.RESERVE_RESULT_OK, availableMicros: 3_000_000n, expiresAtMs: first.expiresAtMs });
    for (const changed of [
      { amountMicros: 2_000_001n }, { ttlMs: 30_001n }, { projectId: 'project-2' }, { modelSlug: 'model-b' },
      { billingMode: ledgerV1.BillingMode.BILLING_MODE_INTERNAL }, { organisationId: uniqueId('org') },
      // Conflict comes before INVALID_ARGUMENT in the documented precedence.
      { amountMicros: -1n },
    ]) {
      const conflict = await ledger.reserve({ ...request, ...changed });
      expect(conflict.result, JSON.stringify(changed, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v)))
        .toBe(ReserveResult.RESERVE_RESULT_IDEMPOTENCY_CONFLICT);
      expect(conflict.detail).toContain('reservation_id');
    }
    expect(await ledger.countRows()).toEqual(before);
    expect(await balancesOf(ledger, organisationId)).toMatchObject({ availableMicros: 3_000_000n, heldMicros: 2_000_000n });
  });

  it('re-evaluates the replay of a refused Reserve, since a refusal writes nothing', async () => {
    const organisationId = await fundedOrganisation(ledger, 1_000_000n);
    const request = { reservationId: uniqueId('res'), organisationId, amountMicros: 1_500_000n };
    expect((await ledger.reserve(request)).result).toBe(ReserveResult.RESERVE_RESULT_INSUFFICIENT_BALANCE);
    await ledger.credit({ organisationId, amountMicros: 500_000n });
    expect(await ledger.reserve(request)).toMatchObject({ result: ReserveResult.RESERVE_RESULT_OK, availableMicros: 0n });
  });

  it('replays a Settle with its first result and refuses a different usage payload', async () => {
    const organisationId = await fundedOrganisation(ledger, 3_000_000n);
    const reservationId = uniqueId('res');
    await ledger.reserve({ reservationId, organisationId, amountMicros: 1_000_000n });
    const usage = { reservationId, inputTokens: 100n, outputTokens: 50n, costMicros: 400_000n, providerCostMicros: 200_000n };
    const first = await ledger.settle(usage);
    expect(first).toMatchObject({ result: SettleResult.SETTLE_RESULT_OK, debitedMicros: 400_000n, releasedMicros: 600_000n, availableMicros: 2_600_000n });
    const before = await ledger.countRows();

    expect(await ledger.settle(usage)).toEqual(first);
    for (const changed of [
      { costMicros: 400_001n }, { inputTokens: 101n }, { outputTokens: 49n }, { providerCostMicros: 0n }, { modelSlug: 'model-b' },
      { usageSource: ledgerV1.UsageSource.USAGE_SOURCE_GATEWAY_ESTIMATE }, { requestId: 'req-2' }, { costMicros: -1n },
    ]) {
      expect((await ledger.settle({ ...usage, ...changed })).result).toBe(SettleResult.SETTLE_RESULT_IDEMPOTENCY_CONFLICT);
    }
    expect(await ledger.countRows()).toEqual(before);
    expect((await ledger.release({ reservationId })).result).toBe(ReleaseResult.RELEASE_RESULT_ALREADY_RESOLVED);
    expect(await ledger.countRows()).toEqual(before);
    expect(await balancesOf(ledger, organisationId)).toEqual({
      creditedMicros: 3_000_000n, availableMicros: 2_600_000n, heldMicros: 0n, debitedMicros: 400_000n,
    });
  });

  it('answers a replayed Release with OK and refuses to settle a released Reserve', async () => {
    const organisationId = await fundedOrganisation(ledger, 1_000_000n);
    const reservationId = uniqueId('res');
    await ledger.reserve({ reservationId, organisationId, amountMicros: 700_000n });
    expect(await ledger.release({ reservationId, reason: 'client_disconnected_before_upstream' })).toEqual({
      result: ReleaseResult.RELEASE_RESULT_OK, releasedMicros: 700_000n, availableMicros: 1_000_000n, detail: '',
    });
    const before = await ledger.countRows();
    expect(await ledger.release({ reservationId, reason: 'retry' })).toMatchObject({
      result: ReleaseResult.RELEASE_RESULT_OK, releasedMicros: 700_000n, availableMicros: 1_000_000n,
    });
    expect(await ledger.settle({ reservationId, costMicros: 1n })).toMatchObject({
      result: SettleResult.SETTLE_RESULT_ALREADY_RESOLVED, debitedMicros: 0n,
    });
    expect(await ledger.countRows()).toEqual(before);
    const reason = await ledger.database.query<{ release_reason: string }>('SELECT release_reason FROM reservations WHERE id = $1', [reservationId]);
    expect(reason.rows[0]!.release_reason).toBe('client_disconnected_before_upstream');
  });

  it('answers an unknown reservation with RESERVATION_UNKNOWN and writes nothing', async () => {
    const before = await ledger.countRows();
    expect((await ledger.settle({ reservationId: uniqueId('ghost'), costMicros: 1n })).result).toBe(SettleResult.SETTLE_RESULT_RESERVATION_UNKNOWN);
    expect((await ledger.release({ reservationId: uniqueId('ghost') })).result).toBe(ReleaseResult.RELEASE_RESULT_RESERVATION_UNKNOWN);
    expect(await ledger.countRows()).toEqual(before);
  });

  it('credits once per credit_id and refuses a different payload for it', async () => {
    const organisationId = await fundedOrganisation(ledger, 0n);
    const request = { creditId: uniqueId('pay'), organisationId, amountMicros: 1_500_000n, reason: 'top-up: starter pack' };
    expect(await ledger.credit(request)).toEqual({ result: CreditResult.CREDIT_RESULT_OK, availableMicros: 1_500_000n, detail: '' });
    const before = await ledger.countRows();
    expect(await ledger.credit(request)).toMatchObject({ result: CreditResult.CREDIT_RESULT_OK, availableMicros: 1_500_000n });
    for (const changed of [{ amountMicros: 1_500_001n }, { reason: 'other' }, { organisationId: uniqueId('org') }, { amountMicros: 0n }]) {
      expect((await ledger.credit({ ...request, ...changed })).result).toBe(CreditResult.CREDIT_RESULT_IDEMPOTENCY_CONFLICT);
    }
    expect(await ledger.countRows()).toEqual(before);
    expect(await balancesOf(ledger, organisationId)).toMatchObject({ creditedMicros: 1_500_000n, availableMicros: 1_500_000n });

    expect((await ledger.credit({ organisationId: uniqueId('nobody'), amountMicros: 1n })).result).toBe(CreditResult.CREDIT_RESULT_ORGANISATION_UNKNOWN);
    expect(await ledger.countRows()).toEqual(before);
  });

  it('refuses a credit that would take the balance past int64, and changes nothing', async () => {
    const organisationId = await fundedOrganisation(ledger, maxAmountMicros);
    await ledger.credit({ organisationId, amountMicros: maxAmountMicros - 1n });
    const before = await ledger.countRows();
    const overflow = await ledger.credit({ organisationId, amountMicros: 2n });
    expect(overflow.result).toBe(CreditResult.CREDIT_RESULT_INVALID_ARGUMENT);
    expect(overflow.detail).toContain('amount_micros');
    expect(await ledger.countRows()).toEqual(before);
    expect((await balancesOf(ledger, organisationId)).creditedMicros).toBe(2n ** 63n - 1n);
  });
});
