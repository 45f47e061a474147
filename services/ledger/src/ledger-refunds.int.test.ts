import { ledgerV1 } from '@gateway/contracts';
import { testPostgresUrl } from '@gateway/testkit';
import { describe, expect, it } from 'vitest';
import { balancesOf, uniqueId, type TestBackend, type TestLedger } from './testing/start-test-ledger.ts';
import { useTestLedger } from './testing/ledger-test-setup.ts';

const { RefundCreditResult, ReserveResult, ReverseRefundResult } = ledgerV1;
const serverUrl = testPostgresUrl();

/** An organisation with an account and one credit of `amountMicros`, returning both ids. */
async function creditedOrganisation(ledger: TestLedger, amountMicros: bigint): Promise<{ organisationId: string; creditId: string }> {
  const organisationId = uniqueId('org');
  const creditId = uniqueId('topup');
  await ledger.openAccount(organisationId);
  // A top-up's credit: bought money, the only kind a refund may return.
  await ledger.credit({ organisationId, creditId, amountMicros, purchased: true });
  return { organisationId, creditId };
}

/** RefundCredit: money leaves available (never held) under NO_OVERSPEND, once per refund_id (IDEMPOTENCY), CONSERVATION (credits) kept. */
describe.each<TestBackend>(['postgres', 'pglite'])('RefundCredit over %s', (backend) => {
  const skip = backend === 'postgres' && !serverUrl;
  const ledger = useTestLedger(backend, { serverUrl, skip, conservation: 'after-each' });

  it.skipIf(skip)('CONSERVATION (credits): a refund takes the amount out of available and credited, with one refund movement', async () => {
    const { organisationId, creditId } = await creditedOrganisation(ledger, 10_000_000n);
    const refundId = uniqueId('rfd');
    expect(await ledger.refundCredit({ refundId, organisationId, creditId, amountMicros: 3_000_001n })).toEqual({
      result: RefundCreditResult.REFUND_CREDIT_RESULT_OK, availableMicros: 6_999_999n, detail: '', refundedMicros: 3_000_001n,
    });
    expect(await balancesOf(ledger, organisationId)).toEqual({
      creditedMicros: 6_999_999n, availableMicros: 6_999_999n, heldMicros: 0n, debitedMicros: 0n,
    });
    const movements = await ledger.database.query<{ kind: string; amount_micros: bigint; credited_delta_micros: bigint; available_delta_micros: bigint; refund_id: string }>(
      `SELECT kind, amount_micros, credited_delta_micros, available_delta_micros, refund_id FROM movements
       WHERE organisation_id = $1 AND kind = 'refund'`, [organisationId]);
    expect(movements.rows).toEqual([{
      kind: 'refund', amount_micros: 3_000_001n, credited_delta_micros: -3_000_001n, available_delta_micros: -3_000_001n, refund_id: refundId,
    }]);
    expect((await ledger.verify()).differences).toEqual([]);
  });

  it.skipIf(skip)('IDEMPOTENCY: the same refund_id and payload refunds once; another payload is IDEMPOTENCY_CONFLICT and changes nothing', async () => {
    const { organisationId, creditId } = await creditedOrganisation(ledger, 5_000_000n);
    const refundId = uniqueId('rfd');
    const request = { refundId, organisationId, creditId, amountMicros: 2_000_000n, reason: 'refund of a top-up' };
    expect((await ledger.refundCredit(request)).result).toBe(RefundCreditResult.REFUND_CREDIT_RESULT_OK);
    expect(await ledger.refundCredit(request)).toEqual({
      result: RefundCreditResult.REFUND_CREDIT_RESULT_OK, availableMicros: 3_000_000n, detail: 'replay: refund already applied', refundedMicros: 2_000_000n,
    });
    const before = await ledger.countRows();
    for (const changed of [{ amountMicros: 2_000_001n }, { reason: 'other' }, { creditId: uniqueId('other') }]) {
      expect(await ledger.refundCredit({ ...request, ...changed })).toEqual({
        result: RefundCreditResult.REFUND_CREDIT_RESULT_IDEMPOTENCY_CONFLICT, availableMicros: 0n, refundedMicros: 0n,
        detail: 'refund_id was already used with a different payload',
      });
    }
    // A conflict takes precedence over invalid input for an existing key.
    expect((await ledger.refundCredit({ ...request, amountMicros: -1n })).result).toBe(RefundCreditResult.REFUND_CREDIT_RESULT_IDEMPOTENCY_CONFLICT);
    expect(await ledger.countRows()).toEqual(before);
    expect((await balancesOf(ledger, organisationId)).availableMicros).toBe(3_000_000n);
  });

  it.skipIf(skip)('IDEMPOTENCY: concurrent calls with one new refund_id refund exactly once', async () => {
    const { organisationId, creditId } = await creditedOrganisation(ledger, 5_000_000n);
    const refundId = uniqueId('rfd');
    const answers = await Promise.all(Array.from({ length: 8 }, () =>
      ledger.refundCredit({ refundId, organisationId, creditId, amountMicros: 1_000_000n })));
    expect(answers.every((answer) => answer.result === RefundCreditResult.REFUND_CREDIT_RESULT_OK)).toBe(true);
    expect(answers.filter((answer) => answer.detail === '')).toHaveLength(1);
    expect((await balancesOf(ledger, organisationId)).availableMicros).toBe(4_000_000n);
  });

  it.skipIf(skip)('NO_OVERSPEND: a refund beyond available is INSUFFICIENT_BALANCE and never takes held money; it fits once the hold is released', async () => {
    const { organisationId, creditId } = await creditedOrganisation(ledger, 10_000_000n);
    const reservationId = uniqueId('res');
    expect((await ledger.reserve({ reservationId, organisationId, amountMicros: 7_000_000n })).result).toBe(ReserveResult.RESERVE_RESULT_OK);
    const refundId = uniqueId('rfd');
    const before = await ledger.countRows();
    expect(await ledger.refundCredit({ refundId, organisationId, creditId, amountMicros: 3_000_001n })).toEqual({
      result: RefundCreditResult.REFUND_CREDIT_RESULT_INSUFFICIENT_BALANCE, availableMicros: 3_000_000n, refundedMicros: 0n,
      detail: 'available balance 3000000 µ₹ is below the refund of 3000001 µ₹',
    });
    expect(await ledger.countRows()).toEqual(before);
    expect(await balancesOf(ledger, organisationId)).toEqual({
      creditedMicros: 10_000_000n, availableMicros: 3_000_000n, heldMicros: 7_000_000n, debitedMicros: 0n,
    });
    // A refused refund writes nothing, so the same refund_id is decided afresh once the hold returns.
    await ledger.release({ reservationId });
    expect(await ledger.refundCredit({ refundId, organisationId, creditId, amountMicros: 3_000_001n })).toMatchObject({
      result: RefundCreditResult.REFUND_CREDIT_RESULT_OK, availableMicros: 6_999_999n,
    });
  });

  it.skipIf(skip)('NO_OVERSPEND: spent money is not refundable', async () => {
    const { organisationId, creditId } = await creditedOrganisation(ledger, 10_000_000n);
    const reservationId = uniqueId('res');
    await ledger.reserve({ reservationId, organisationId, amountMicros: 4_000_000n });
    await ledger.settle({ reservationId, costMicros: 4_000_000n });
    expect((await ledger.refundCredit({ organisationId, creditId, amountMicros: 6_000_001n })).result)
      .toBe(RefundCreditResult.REFUND_CREDIT_RESULT_INSUFFICIENT_BALANCE);
    expect(await ledger.refundCredit({ organisationId, creditId, amountMicros: 6_000_000n })).toMatchObject({
      result: RefundCreditResult.REFUND_CREDIT_RESULT_OK, availableMicros: 0n,
    });
    expect(await balancesOf(ledger, organisationId)).toEqual({
      creditedMicros: 4_000_000n, availableMicros: 0n, heldMicros: 0n, debitedMicros: 4_000_000n,
    });
  });

  it.skipIf(skip)('only purchased, unspent credit is refundable: a manual credit keeps its money in the wallet, and spending uses purchased money first', async () => {
    const { organisationId, creditId } = await creditedOrganisation(ledger, 10_000_000n);
    // A manual (promotional) credit of 50,000,000 µ₹, then 8,000,000 µ₹ spent.
    await ledger.credit({ organisationId, amountMicros: 50_000_000n, reason: 'manual: welcome credit' });
    const reservationId = uniqueId('res');
    await ledger.reserve({ reservationId, organisationId, amountMicros: 8_000_000n });
    await ledger.settle({ reservationId, costMicros: 8_000_000n });
    const before = await ledger.countRows();
    // Available is 52,000,000 µ₹, but only 2,000,000 µ₹ of it is bought money not spent.
    expect(await ledger.refundCredit({ organisationId, creditId, amountMicros: 2_000_001n })).toEqual({
      result: RefundCreditResult.REFUND_CREDIT_RESULT_INSUFFICIENT_BALANCE, availableMicros: 52_000_000n, refundedMicros: 0n,
      detail: 'only purchased, unspent credit is refundable: 2000000 µ₹ of the available 52000000 µ₹ (50000000 µ₹ is credit not purchased); the refund is 2000001 µ₹',
    });
    expect(await ledger.countRows()).toEqual(before);
    expect(await ledger.refundCredit({ organisationId, creditId, amountMicros: 2_000_000n })).toMatchObject({
      result: RefundCreditResult.REFUND_CREDIT_RESULT_OK, availableMicros: 50_000_000n, refundedMicros: 2_000_000n,
    });
    expect(await balancesOf(ledger, organisationId)).toEqual({
      creditedMicros: 58_000_000n, availableMicros: 50_000_000n, heldMicros: 0n, debitedMicros: 8_000_000n,
    });
  });

  it.skipIf(skip)('ReverseRefund gives everything a refund took back to available and credited, once; the credit can then be refunded again', async () => {
    const { organisationId, creditId } = await creditedOrganisation(ledger, 10_000_000n);
    const refundId = uniqueId('rfd');
    expect((await ledger.refundCredit({ refundId, organisationId, creditId, amountMicros: 10_000_000n })).result).toBe(RefundCreditResult.REFUND_CREDIT_RESULT_OK);
    const reversalId = uniqueId('rev');
    const request = { reversalId, organisationId, refundId, reason: 'provider refused the refund' };
    expect(await ledger.reverseRefund(request)).toEqual({
      result: ReverseRefundResult.REVERSE_REFUND_RESULT_OK, reversedMicros: 10_000_000n, availableMicros: 10_000_000n, detail: '',
    });
    expect(await ledger.reverseRefund(request)).toEqual({
      result: ReverseRefundResult.REVERSE_REFUND_RESULT_OK, reversedMicros: 10_000_000n, availableMicros: 10_000_000n, detail: 'replay: reversal already applied',
    });
    const before = await ledger.countRows();
    expect((await ledger.reverseRefund({ ...request, reason: 'other' })).result).toBe(ReverseRefundResult.REVERSE_REFUND_RESULT_IDEMPOTENCY_CONFLICT);
    expect((await ledger.reverseRefund({ ...request, reversalId: uniqueId('rev') })).result).toBe(ReverseRefundResult.REVERSE_REFUND_RESULT_ALREADY_REVERSED);
    expect((await ledger.reverseRefund({ organisationId, refundId: uniqueId('none') })).result).toBe(ReverseRefundResult.REVERSE_REFUND_RESULT_REFUND_UNKNOWN);
    expect(await ledger.countRows()).toEqual(before);
    expect(await balancesOf(ledger, organisationId)).toEqual({
      creditedMicros: 10_000_000n, availableMicros: 10_000_000n, heldMicros: 0n, debitedMicros: 0n,
    });
    // The reversed refund no longer counts against the credit.
    expect((await ledger.refundCredit({ organisationId, creditId, amountMicros: 10_000_000n })).result).toBe(RefundCreditResult.REFUND_CREDIT_RESULT_OK);
  });

  it.skipIf(skip)('up_to_available takes what available allows (never below zero) and answers what it took; nothing available writes nothing', async () => {
    const { organisationId, creditId } = await creditedOrganisation(ledger, 10_000_000n);
    const reservationId = uniqueId('res');
    await ledger.reserve({ reservationId, organisationId, amountMicros: 7_000_000n });
    await ledger.settle({ reservationId, costMicros: 7_000_000n });
    expect(await ledger.refundCredit({ organisationId, creditId, amountMicros: 5_000_000n, upToAvailable: true })).toEqual({
      result: RefundCreditResult.REFUND_CREDIT_RESULT_OK, availableMicros: 0n, refundedMicros: 3_000_000n, detail: '',
    });
    const before = await ledger.countRows();
    expect(await ledger.refundCredit({ organisationId, creditId, amountMicros: 1_000_000n, upToAvailable: true })).toEqual({
      result: RefundCreditResult.REFUND_CREDIT_RESULT_OK, availableMicros: 0n, refundedMicros: 0n, detail: 'nothing available to take',
    });
    expect(await ledger.countRows()).toEqual(before);
    expect(await balancesOf(ledger, organisationId)).toEqual({
      creditedMicros: 7_000_000n, availableMicros: 0n, heldMicros: 0n, debitedMicros: 7_000_000n,
    });
  });

  it.skipIf(skip)('refunds of one credit never add up to more than it (EXCEEDS_CREDIT), even with money from other credits available', async () => {
    const { organisationId, creditId } = await creditedOrganisation(ledger, 2_000_000n);
    await ledger.credit({ organisationId, amountMicros: 50_000_000n });
    expect((await ledger.refundCredit({ organisationId, creditId, amountMicros: 1_500_000n })).result).toBe(RefundCreditResult.REFUND_CREDIT_RESULT_OK);
    const before = await ledger.countRows();
    expect(await ledger.refundCredit({ organisationId, creditId, amountMicros: 500_001n })).toEqual({
      result: RefundCreditResult.REFUND_CREDIT_RESULT_EXCEEDS_CREDIT, availableMicros: 50_500_000n, refundedMicros: 0n,
      detail: 'the credit of 2000000 µ₹ has 1500000 µ₹ refunded already; 500001 µ₹ more would exceed it',
    });
    expect(await ledger.countRows()).toEqual(before);
    expect((await ledger.refundCredit({ organisationId, creditId, amountMicros: 500_000n })).result).toBe(RefundCreditResult.REFUND_CREDIT_RESULT_OK);
  });

  it.skipIf(skip)('ORGANISATION_UNKNOWN, CREDIT_UNKNOWN (another organisation\'s credit) and INVALID_ARGUMENT write nothing', async () => {
    const { organisationId, creditId } = await creditedOrganisation(ledger, 2_000_000n);
    const other = await creditedOrganisation(ledger, 2_000_000n);
    const before = await ledger.countRows();
    expect(await ledger.refundCredit({ organisationId: uniqueId('nobody'), creditId, amountMicros: 1n })).toEqual({
      result: RefundCreditResult.REFUND_CREDIT_RESULT_ORGANISATION_UNKNOWN, availableMicros: 0n, refundedMicros: 0n, detail: 'organisation has no account',
    });
    expect(await ledger.refundCredit({ organisationId, creditId: other.creditId, amountMicros: 1n })).toEqual({
      result: RefundCreditResult.REFUND_CREDIT_RESULT_CREDIT_UNKNOWN, availableMicros: 2_000_000n, refundedMicros: 0n,
      detail: 'no credit of this organisation has this credit_id',
    });
    expect(await ledger.refundCredit({ refundId: 'has space', organisationId, creditId, amountMicros: 1n })).toEqual({
      result: RefundCreditResult.REFUND_CREDIT_RESULT_INVALID_ARGUMENT, availableMicros: 0n, refundedMicros: 0n, detail: 'refund_id must be printable ASCII without spaces',
    });
    expect(await ledger.refundCredit({ organisationId, creditId: '', amountMicros: 0n, reason: 'bad\u0000' })).toEqual({
      result: RefundCreditResult.REFUND_CREDIT_RESULT_INVALID_ARGUMENT, availableMicros: 0n, refundedMicros: 0n,
      detail: 'credit_id must not be empty; amount_micros must be positive; reason must not contain control characters',
    });
    expect(await ledger.countRows()).toEqual(before);
  });

  it.skipIf(skip)('is refused to the proxy identity (admin only)', async () => {
    const { organisationId, creditId } = await creditedOrganisation(ledger, 2_000_000n);
    const proxy = ledger.client;
    const refused = await new Promise<unknown>((resolve) => {
      proxy.refundCredit(ledgerV1.RefundCreditRequest.fromPartial({ refundId: uniqueId('rfd'), organisationId, creditId, amountMicros: 1n }),
        (error) => { resolve(error); });
    });
    expect(refused).toMatchObject({ code: 7 });
    expect((await balancesOf(ledger, organisationId)).availableMicros).toBe(2_000_000n);
  });
});
