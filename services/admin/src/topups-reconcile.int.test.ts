/**
 * Top-up reconciliation over real PostgreSQL and the real local payment provider: with no webhook
 * arriving at all (an outage), the job asks the provider for each pending order's payments and
 * credits exactly once; webhooks delivered late change nothing more; a settlement cut short by the
 * ledger is finished; an unpaid top-up expires once the provider confirms nothing was captured.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
    // A pass every 50 ms over top-ups untouched for 1 ms; unpaid top-ups expire after 3 s.
    PAYMENT_RECONCILE_INTERVAL_MS: '50',
    PAYMENT_RECONCILE_AFTER_MS: '1',
    TOPUP_EXPIRY_MS: '3000',
  });
  // Every test here is about signals that never come: the provider holds its webhooks.
  harness.payments.pauseWebhooks();
});

afterAll(async () => {
  await harness?.close();
});

describePg('reconciliation', () => {
  it('a webhook outage: the provider\'s answer credits once; the late webhooks change nothing', async () => {
    const { admin, payments } = harness;
    const { organisationId, packageId, creditMicros } = await organisationReadyToBuy(admin, 'Outage');
    const { topUp, checkout } = await purchase(admin, organisationId, packageId);
    payments.pay(checkout.order_id, 'pay');
    const settled = await waitForState(admin, organisationId, topUp.id, 'invoiced');
    expect(entriesInto(settled, 'paid')).toEqual(['reconciliation']);
    expect(entriesInto(settled, 'credited')).toEqual(['reconciliation']);
    expect(settled.documents).toHaveLength(1);
    expect(topUpCredits(admin, organisationId)).toEqual({ credits: new Map([[`topup:${topUp.id}`, BigInt(creditMicros)]]), creditedMicros: BigInt(creditMicros) });

    const late = await payments.deliverPending();
    expect(late.length).toBeGreaterThan(0);
    expect(late.every((delivery) => delivery.delivered)).toBe(true);
    const after = await readTopUp(admin, organisationId, topUp.id);
    expect(after.transitions).toEqual(settled.transitions);
    expect(after.documents).toEqual(settled.documents);
    expect(topUpCredits(admin, organisationId).creditedMicros).toBe(BigInt(creditMicros));
  });

  it('a credit refused by the ledger leaves the top-up paid, and a later pass finishes it once', async () => {
    const { admin, payments } = harness;
    const { organisationId, packageId, creditMicros } = await organisationReadyToBuy(admin, 'Repair');
    const { topUp, checkout } = await purchase(admin, organisationId, packageId);
    const creditCalls = () => admin.ledger.calls.filter((call) => call === 'credit').length;
    const before = creditCalls();
    admin.ledger.failNext('credit');
    payments.pay(checkout.order_id, 'pay');
    const settled = await waitForState(admin, organisationId, topUp.id, 'invoiced');
    expect(creditCalls()).toBeGreaterThanOrEqual(before + 2);
    expect(entriesInto(settled, 'paid')).toEqual(['reconciliation']);
    expect(entriesInto(settled, 'credited')).toEqual(['reconciliation']);
    expect(topUpCredits(admin, organisationId)).toEqual({ credits: new Map([[`topup:${topUp.id}`, BigInt(creditMicros)]]), creditedMicros: BigInt(creditMicros) });
    await payments.deliverPending();
  });

  it('a failed payment is recorded from the provider\'s answer; an unpaid top-up expires after expires_at, with nothing credited', async () => {
    const { admin, payments } = harness;
    const { organisationId, packageId } = await organisationReadyToBuy(admin, 'Expiry');
    const failing = await purchase(admin, organisationId, packageId);
    payments.pay(failing.checkout.order_id, 'fail');
    const failed = await waitForState(admin, organisationId, failing.topUp.id, 'failed');
    expect(entriesInto(failed, 'failed')).toEqual(['reconciliation']);

    const unpaid = await purchase(admin, organisationId, packageId);
    const expired = await waitForState(admin, organisationId, unpaid.topUp.id, 'expired');
    expect(entriesInto(expired, 'expired')).toEqual(['expiry']);
    expect(new Date(expired.transitions.at(-1).occurred_at).getTime()).toBeGreaterThanOrEqual(new Date(expired.expires_at).getTime());
    expect(topUpCredits(admin, organisationId).credits.size).toBe(0);
    await payments.deliverPending();
    expectStatus(await admin.request('GET', `/admin/v1/organisations/${organisationId}/topups/${unpaid.topUp.id}`), 200);
  });

  it('an order the provider no longer knows (the local provider restarted) expires at its deadline instead of failing every pass', async () => {
    const { admin, payments } = harness;
    const { organisationId, packageId } = await organisationReadyToBuy(admin, 'Forgotten');
    const { topUp } = await purchase(admin, organisationId, packageId);
    // What a restart of the in-memory local provider does: the order, and anything on it, is gone.
    payments.forgetEverything();
    const expired = await waitForState(admin, organisationId, topUp.id, 'expired');
    expect(entriesInto(expired, 'expired')).toEqual(['expiry']);
    expect(topUpCredits(admin, organisationId).credits.size).toBe(0);
  });
});
