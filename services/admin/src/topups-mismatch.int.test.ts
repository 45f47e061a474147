/**
 * A captured payment whose amount or currency is not the top-up's, over real PostgreSQL and the
 * real local payment provider: never credited, never refunded automatically, recorded once per
 * payment (cause payment_amount_mismatch) and warned about once, whichever signals bring it —
 * the reconciliation job, the webhooks, a webhook under another event id, the Checkout callback.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { openDatabase, type Database } from '@gateway/db';
import { createLogger } from '@gateway/logger';
import { testPostgresUrl } from '@gateway/testkit';
import { listTransitions } from './billing/domain/topup-store.ts';
import {
  expectStatus, organisationReadyToBuy, postWebhook, purchase, readTopUp, startTopUpsHarness, testPaymentKeys, topUpCredits, waitForState,
  type TopUpsHarness,
} from './test-support/topups-harness.ts';

const serverUrl = testPostgresUrl();
const describePg = describe.skipIf(!serverUrl);

const mismatchMessage = 'top-up: captured payment does not match the order\'s amount or currency; not credited, not refunded (a person decides)';

let harness: TopUpsHarness;
/** The admin's database, read directly: the API shows transitions without their details. */
let database: Database;
/** The admin's log lines at warn and above, parsed. */
const logLines: Array<Record<string, unknown>> = [];
const rawLog: string[] = [];

beforeAll(async () => {
  if (!serverUrl) return;
  harness = await startTopUpsHarness(serverUrl, {
    // A pass every 50 ms over top-ups untouched for 1 ms: the job meets the mismatch again and again.
    PAYMENT_RECONCILE_INTERVAL_MS: '50',
    PAYMENT_RECONCILE_AFTER_MS: '1',
  }, {
    adminLogger: createLogger('admin', 'warn', {
      write(line: string) {
        rawLog.push(line);
        logLines.push(JSON.parse(line) as Record<string, unknown>);
      },
    }),
  });
  // Webhooks held: the reconciliation job sees the capture first; the tests deliver them by hand.
  harness.payments.pauseWebhooks();
  database = await openDatabase({ url: harness.databaseUrl, schema: 'admin', poolSize: 2 });
});

afterAll(async () => {
  await database?.close();
  await harness?.close();
});

type Transition = { from_state: string | null; to_state: string; cause: string };

/** The top-up's payment_amount_mismatch transitions, as the API shows them. */
function mismatchesOf(topUp: { transitions: Transition[] }): Transition[] {
  return topUp.transitions.filter((transition) => transition.cause === 'payment_amount_mismatch');
}

/** The details of the top-up's payment_amount_mismatch transitions, from the database. */
async function mismatchDetailsOf(topUpId: string): Promise<Array<Record<string, string | null>>> {
  return (await listTransitions(database, topUpId)).filter((transition) => transition.cause === 'payment_amount_mismatch').map((transition) => transition.details);
}

describePg('a captured payment of the wrong amount or currency', () => {
  it('is recorded once and warned about once, whatever repeats it; the top-up stays unpaid, nothing is credited or refunded', async () => {
    const { admin, payments } = harness;
    const { organisationId, packageId, creditMicros } = await organisationReadyToBuy(admin, 'Short');
    const { topUp, checkout } = await purchase(admin, organisationId, packageId);
    const short = payments.pay(checkout.order_id, 'pay', { capture: { amountPaise: 1_000n } });
    if (short.outcome !== 'paid') throw new Error('the local provider did not capture');
    const paymentId = short.paymentIds[0]!;

    // The reconciliation job finds the capture first (webhooks are held).
    const recorded = await vi.waitFor(async () => {
      const current = await readTopUp(admin, organisationId, topUp.id);
      expect(mismatchesOf(current)).toHaveLength(1);
      return current;
    }, { timeout: 15_000, interval: 25 });
    expect(mismatchesOf(recorded)[0]).toMatchObject({ from_state: 'pending_payment', to_state: 'pending_payment' });
    expect(await mismatchDetailsOf(topUp.id)).toEqual([
      { payment_id: paymentId, expected_paise: '59000', expected_currency: 'INR', received_paise: '1000', received_currency: 'INR' },
    ]);

    // Then the webhook, the same body under another event id, and the Checkout callback: nothing more.
    const held = payments.pendingWebhooks();
    expect(held.map((webhook) => webhook.event)).toEqual(['payment.captured']);
    const deliveries = await payments.deliverPending();
    expect(deliveries.map((delivery) => [delivery.event, delivery.delivered])).toEqual([['payment.captured', true]]);
    const again = expectStatus(await postWebhook(admin, held[0]!.body, { signature: held[0]!.signature, eventId: `${held[0]!.eventId}-again` }), 200);
    expect(again.json).toEqual({ status: 'processed' });
    const callback = expectStatus(await admin.request('POST', `/admin/v1/organisations/${organisationId}/topups/${topUp.id}/checkout-callback`, short.checkout), 200);
    expect(callback.json.state).toBe('pending_payment');

    // A later top-up settled by the job shows passes ran after all that.
    const later = await purchase(admin, organisationId, packageId);
    payments.pay(later.checkout.order_id, 'pay');
    await waitForState(admin, organisationId, later.topUp.id, 'invoiced');

    const final = await readTopUp(admin, organisationId, topUp.id);
    expect(final).toMatchObject({ state: 'pending_payment', provider_payment_id: null });
    expect(final.documents).toEqual([]);
    expect(mismatchesOf(final)).toEqual(mismatchesOf(recorded));
    expect(await mismatchDetailsOf(topUp.id)).toHaveLength(1);
    expect(final.transitions.map((transition: Transition) => transition.cause)).toEqual(['purchase', 'purchase', 'payment_amount_mismatch']);
    // Only the later top-up was credited; no refund was asked of the provider.
    expect(topUpCredits(admin, organisationId)).toEqual({ credits: new Map([[`topup:${later.topUp.id}`, BigInt(creditMicros)]]), creditedMicros: BigInt(creditMicros) });
    expect(payments.refunds()).toEqual([]);
    expect(payments.payments().find((payment) => payment.id === paymentId)!.status).toBe('captured');

    const warnings = logLines.filter((line) => line.msg === mismatchMessage && line.paymentId === paymentId);
    expect(warnings).toEqual([expect.objectContaining({
      level: 40, topUpId: topUp.id, organisationId, paymentId, orderId: checkout.order_id,
      expectedPaise: '59000', expectedCurrency: 'INR', receivedPaise: '1000', receivedCurrency: 'INR',
    })]);
    for (const secret of Object.values(testPaymentKeys).filter((value) => !value.startsWith('rzp_'))) {
      expect(rawLog.join('\n')).not.toContain(secret);
    }
    await payments.deliverPending();
  });

  it('another currency at the right amount is a mismatch too', async () => {
    const { admin, payments } = harness;
    const { organisationId, packageId } = await organisationReadyToBuy(admin, 'Dollars');
    const { topUp, checkout } = await purchase(admin, organisationId, packageId);
    const dollars = payments.pay(checkout.order_id, 'pay', { capture: { currency: 'USD' } });
    const paymentId = dollars.paymentIds[0]!;
    expect(payments.pendingWebhooks().map((webhook) => webhook.event)).toEqual(['payment.captured', 'order.paid']);
    await payments.deliverPending();
    const current = await vi.waitFor(async () => {
      const found = await readTopUp(admin, organisationId, topUp.id);
      expect(mismatchesOf(found)).toHaveLength(1);
      return found;
    }, { timeout: 15_000, interval: 25 });
    expect(current.state).toBe('pending_payment');
    expect(await mismatchDetailsOf(topUp.id)).toEqual([
      { payment_id: paymentId, expected_paise: '59000', expected_currency: 'INR', received_paise: '59000', received_currency: 'USD' },
    ]);
    expect(topUpCredits(admin, organisationId).credits.size).toBe(0);
    expect(payments.refunds()).toEqual([]);
    expect(logLines.filter((line) => line.msg === mismatchMessage && line.paymentId === paymentId)).toHaveLength(1);
  });
});
