/**
 * Captures no webhook reports, over real PostgreSQL and the local provider with every webhook
 * lost: a capture after the top-up expired, a capture after a failure and the expiry, a second
 * capture of an order already invoiced, a payment only authorised (an account on manual capture)
 * and a capture without any order. Reconciliation (orders that can still be paid) and the payments
 * sweep (the provider's payments by time range) credit each top-up exactly once, refund the second
 * payment, capture the authorised one, and record the capture no order matches.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { testPostgresUrl } from '@gateway/testkit';
import {
  entriesInto, expectStatus, organisationReadyToBuy, purchase, readTopUp, startTopUpsHarness, topUpCredits, waitForState, type TopUpsHarness,
} from './test-support/topups-harness.ts';

const serverUrl = testPostgresUrl();
const describePg = describe.skipIf(!serverUrl);

let harness: TopUpsHarness;

beforeAll(async () => {
  if (!serverUrl) return;
  harness = await startTopUpsHarness(serverUrl, {
    // A reconciliation pass every 50 ms over top-ups untouched for 1 ms; unpaid ones expire after
    // 1.5 s; the payments sweep every 200 ms (also how often an expired top-up's order is asked).
    PAYMENT_RECONCILE_INTERVAL_MS: '50',
    PAYMENT_RECONCILE_AFTER_MS: '1',
    TOPUP_EXPIRY_MS: '1500',
    PAYMENT_SWEEP_INTERVAL_MS: '200',
  });
  // Every webhook is lost: only the admin's own questions to the provider can find these payments.
  harness.payments.pauseWebhooks();
});

afterAll(async () => {
  await harness?.close();
});

/** Exactly one credit of the package's µ₹ for this top-up, and nothing else credited to the organisation. */
function expectCreditedOnce(organisationId: string, topUpId: string, creditMicros: string) {
  expect(topUpCredits(harness.admin, organisationId)).toEqual({ credits: new Map([[`topup:${topUpId}`, BigInt(creditMicros)]]), creditedMicros: BigInt(creditMicros) });
}

describePg('captures no webhook reports', () => {
  it('a capture after the top-up expired is credited once', async () => {
    const { admin, payments } = harness;
    const { organisationId, packageId, creditMicros } = await organisationReadyToBuy(admin, 'Late');
    const { topUp, checkout } = await purchase(admin, organisationId, packageId);
    await waitForState(admin, organisationId, topUp.id, 'expired');
    payments.pay(checkout.order_id, 'pay');
    const settled = await waitForState(admin, organisationId, topUp.id, 'invoiced');
    expect(settled.transitions.map((transition: { from_state: string | null; to_state: string }) => `${transition.from_state}>${transition.to_state}`))
      .toEqual(['null>created', 'created>pending_payment', 'pending_payment>expired', 'expired>paid', 'paid>credited', 'credited>invoiced']);
    expectCreditedOnce(organisationId, topUp.id, creditMicros);
  });

  it('a capture after a failed attempt and the expiry is credited once', async () => {
    const { admin, payments } = harness;
    const { organisationId, packageId, creditMicros } = await organisationReadyToBuy(admin, 'Failed late');
    const { topUp, checkout } = await purchase(admin, organisationId, packageId);
    payments.pay(checkout.order_id, 'fail');
    const failed = await waitForState(admin, organisationId, topUp.id, 'failed');
    // Past its expiry the top-up stays failed; the capture comes after that.
    await vi.waitFor(() => { expect(Date.now()).toBeGreaterThan(new Date(failed.expires_at).getTime()); }, { timeout: 5_000, interval: 50 });
    payments.pay(checkout.order_id, 'pay');
    const settled = await waitForState(admin, organisationId, topUp.id, 'invoiced');
    expect(entriesInto(settled, 'paid')).toHaveLength(1);
    expectCreditedOnce(organisationId, topUp.id, creditMicros);
  });

  it('a second capture of an order already invoiced is refunded, never credited', async () => {
    const { admin, payments } = harness;
    const { organisationId, packageId, creditMicros } = await organisationReadyToBuy(admin, 'Second');
    const { topUp, checkout } = await purchase(admin, organisationId, packageId);
    const first = payments.pay(checkout.order_id, 'pay');
    const settled = await waitForState(admin, organisationId, topUp.id, 'invoiced');
    expect(settled.provider_payment_id).toBe(first.paymentIds[0]);
    // A slow attempt of the same order completes after the order was paid.
    const second = payments.pay(checkout.order_id, 'pay', { afterPaid: true });
    const secondId = second.paymentIds[0]!;
    await vi.waitFor(async () => {
      const current = await readTopUp(admin, organisationId, topUp.id);
      expect(current.transitions.filter((transition: { cause: string }) => transition.cause === 'duplicate_payment_refunded')).toHaveLength(1);
    }, { timeout: 15_000, interval: 50 });
    expect(payments.refunds().map((refund) => [refund.payment_id, refund.amount])).toEqual([[secondId, 59_000n]]);
    expectCreditedOnce(organisationId, topUp.id, creditMicros);
  });

  it('a payment only authorised (manual capture) is captured through the provider and credited once', async () => {
    const { admin, payments } = harness;
    const { organisationId, packageId, creditMicros } = await organisationReadyToBuy(admin, 'Manual');
    const { topUp, checkout } = await purchase(admin, organisationId, packageId);
    const authorised = payments.pay(checkout.order_id, 'authorize');
    const paymentId = authorised.paymentIds[0]!;
    expect(payments.payments().find((payment) => payment.id === paymentId)!.status).toBe('authorized');
    const settled = await waitForState(admin, organisationId, topUp.id, 'invoiced');
    expect(settled.provider_payment_id).toBe(paymentId);
    expect(payments.payments().find((payment) => payment.id === paymentId)!.status).toBe('captured');
    expectCreditedOnce(organisationId, topUp.id, creditMicros);
  });

  it('a capture without an order is found by the sweep, recorded once, and credited nowhere', async () => {
    const { admin, payments } = harness;
    const captured = payments.captureWithoutOrder({ amountPaise: 10_000n });
    const found = await vi.waitFor(async () => {
      const listed = expectStatus(await admin.request('GET', '/admin/v1/unmatched-payments?limit=100'), 200).json.data as Array<{ payment_id: string | null }>;
      const entries = listed.filter((entry) => entry.payment_id === captured.id);
      expect(entries).toHaveLength(1);
      return entries[0];
    }, { timeout: 15_000, interval: 50 });
    expect(found).toMatchObject({ reason: 'no_order', source: 'sweep', amount_paise: '10000', currency: 'INR' });
  });
});
