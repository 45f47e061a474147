/**
 * Top-up payment signals across an admin restart, over real PostgreSQL and the real local payment
 * provider: webhooks of a paid order that hit the admin while it is stopped are retried by the
 * provider and, once the admin is back on the same database, credit exactly once; webhooks the
 * provider gave up on while the admin was down are made good by the reconciliation job after the
 * restart, also exactly once.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { testPostgresUrl } from '@gateway/testkit';
import {
  entriesInto, organisationReadyToBuy, purchase, readTopUp, startTopUpsHarness, topUpCredits, waitForState, type TopUpsHarness,
} from './test-support/topups-harness.ts';

const serverUrl = testPostgresUrl();
const describePg = describe.skipIf(!serverUrl);

/** Exactly one `topup:<id>` credit of the package's µ₹, one tax invoice, each forward state entered once. */
async function expectSettledOnce(harness: TopUpsHarness, organisationId: string, topUpId: string, creditMicros: string) {
  await waitForState(harness.admin, organisationId, topUpId, 'invoiced');
  await harness.payments.webhooksIdle();
  const final = await readTopUp(harness.admin, organisationId, topUpId);
  expect(final.state).toBe('invoiced');
  expect(topUpCredits(harness.admin, organisationId)).toEqual({ credits: new Map([[`topup:${topUpId}`, BigInt(creditMicros)]]), creditedMicros: BigInt(creditMicros) });
  expect(final.documents).toHaveLength(1);
  expect(final.documents[0].kind).toBe('tax_invoice');
  for (const state of ['paid', 'credited', 'invoiced']) expect(entriesInto(final, state)).toHaveLength(1);
  return final;
}

describePg('webhooks retried across an admin restart', () => {
  let harness: TopUpsHarness;
  /** The provider's failed webhook attempts (event, attempt, status: null when nothing answered). */
  const refusedAttempts: Array<{ event: string; eventId: string; attempt: number; status: number | null }> = [];

  beforeAll(async () => {
    harness = await startTopUpsHarness(serverUrl!, {
      // Reconciliation off: the credit must come from the retried webhook.
      PAYMENT_RECONCILE_INTERVAL_MS: '3600000',
    }, {
      // Enough attempts (the waits double from 50 ms) to outlast an admin restart.
      webhookRetry: { attempts: 9, baseDelayMs: 50 },
      paymentsLogger: {
        info: () => undefined,
        warn: (details) => { refusedAttempts.push(details as (typeof refusedAttempts)[number]); },
      },
    });
  });

  afterAll(async () => {
    await harness?.close();
  });

  it('the capture\'s webhooks find the admin stopped, are retried, and credit once after it starts again on the same database', async () => {
    const { organisationId, packageId, creditMicros } = await organisationReadyToBuy(harness.admin, 'Restart');
    const { topUp, checkout } = await purchase(harness.admin, organisationId, packageId);

    await harness.stopAdmin();
    const paid = harness.payments.pay(checkout.order_id, 'pay');
    if (paid.outcome !== 'paid') throw new Error('the local provider did not capture');
    // The provider's first POST of payment.captured reaches nobody.
    const refused = await vi.waitFor(() => {
      const attempt = refusedAttempts.find((found) => found.event === 'payment.captured');
      expect(attempt).toMatchObject({ attempt: 1, status: null });
      return attempt!;
    }, { timeout: 10_000, interval: 10 });
    expect(harness.payments.webhookDeliveries()).toEqual([]);

    await harness.startAdmin();
    const final = await expectSettledOnce(harness, organisationId, topUp.id, creditMicros);
    expect(entriesInto(final, 'paid')).toEqual(['webhook:payment.captured']);
    expect(final.provider_payment_id).toBe(paid.checkout.razorpay_payment_id);
    const deliveries = harness.payments.webhookDeliveries();
    expect(deliveries.map((delivery) => [delivery.event, delivery.delivered, delivery.lastStatus])).toEqual([['payment.captured', true, 200], ['order.paid', true, 200]]);
    expect(deliveries.find((delivery) => delivery.eventId === refused.eventId)!.attempts).toBeGreaterThanOrEqual(2);
  });
});

describePg('webhooks given up while the admin was down', () => {
  let harness: TopUpsHarness;

  beforeAll(async () => {
    harness = await startTopUpsHarness(serverUrl!, {
      // A pass every 50 ms over top-ups untouched for 1 ms.
      PAYMENT_RECONCILE_INTERVAL_MS: '50',
      PAYMENT_RECONCILE_AFTER_MS: '1',
    }, {
      // Three quick attempts: the provider gives up well before the admin is back.
      webhookRetry: { attempts: 3, baseDelayMs: 20 },
    });
  });

  afterAll(async () => {
    await harness?.close();
  });

  it('the reconciliation job of the restarted admin credits the capture once', async () => {
    const { organisationId, packageId, creditMicros } = await organisationReadyToBuy(harness.admin, 'Given up');
    const { topUp, checkout } = await purchase(harness.admin, organisationId, packageId);

    await harness.stopAdmin();
    harness.payments.pay(checkout.order_id, 'pay');
    const givenUp = await vi.waitFor(() => {
      const deliveries = harness.payments.webhookDeliveries();
      expect(deliveries.map((delivery) => [delivery.event, delivery.delivered, delivery.attempts, delivery.lastStatus]))
        .toEqual([['payment.captured', false, 3, null], ['order.paid', false, 3, null]]);
      return deliveries;
    }, { timeout: 10_000, interval: 10 });
    expect(harness.payments.pendingWebhooks()).toEqual([]);

    await harness.startAdmin();
    const final = await expectSettledOnce(harness, organisationId, topUp.id, creditMicros);
    expect(entriesInto(final, 'paid')).toEqual(['reconciliation']);
    expect(entriesInto(final, 'credited')).toEqual(['reconciliation']);
    // Nothing else was sent: the credit came from the provider's answer, not a late webhook.
    expect(harness.payments.webhookDeliveries()).toEqual(givenUp);
  });
});
