/**
 * Correctly signed webhooks that match no top-up, over real PostgreSQL and the local provider: a
 * capture without an order (a payment link, a QR code, another integration on the account), a
 * capture of an order no top-up has, and a signed body the admin cannot read are each answered
 * 2xx (Razorpay retries anything else for 24 hours and then disables the endpoint), recorded once,
 * listed for platform admins only, and never credited.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testPostgresUrl } from '@gateway/testkit';
import {
  expectStatus, organisationReadyToBuy, postWebhook, startTopUpsHarness, testPaymentKeys, webhookSignature, type TopUpsHarness,
} from './test-support/topups-harness.ts';

const serverUrl = testPostgresUrl();
const describePg = describe.skipIf(!serverUrl);

let harness: TopUpsHarness;

beforeAll(async () => {
  if (!serverUrl) return;
  // Reconciliation and the payments sweep effectively off: the webhooks alone are under test.
  harness = await startTopUpsHarness(serverUrl, { PAYMENT_RECONCILE_INTERVAL_MS: '3600000', PAYMENT_SWEEP_INTERVAL_MS: '3600000' });
  harness.payments.pauseWebhooks();
});

afterAll(async () => {
  await harness?.close();
});

interface UnmatchedJson {
  reason: string;
  source: string;
  event_type: string;
  event_id: string | null;
  payment_id: string | null;
  order_id: string | null;
  amount_paise: string | null;
  currency: string | null;
  seen_count: number;
}

async function listUnmatched(): Promise<UnmatchedJson[]> {
  return expectStatus(await harness.admin.request('GET', '/admin/v1/unmatched-payments?limit=100'), 200).json.data as UnmatchedJson[];
}

describePg('signed webhooks that match nothing', () => {
  it('a capture without an order is acknowledged, recorded once with its amount, listed for platform admins and credited nowhere', async () => {
    const { admin, payments } = harness;
    const captured = payments.captureWithoutOrder({ amountPaise: 25_000n });
    const webhook = payments.pendingWebhooks().find((pending) => pending.event === 'payment.captured' && pending.body.includes(captured.id))!;
    const first = expectStatus(await postWebhook(admin, webhook.body, { signature: webhook.signature, eventId: webhook.eventId }), 200);
    expect(first.json).toEqual({ status: 'unmatched' });
    const again = expectStatus(await postWebhook(admin, webhook.body, { signature: webhook.signature, eventId: webhook.eventId }), 200);
    expect(again.json).toEqual({ status: 'repeated' });
    const found = (await listUnmatched()).filter((entry) => entry.payment_id === captured.id);
    expect(found).toEqual([expect.objectContaining({
      reason: 'no_order', source: 'webhook', event_type: 'payment.captured', event_id: webhook.eventId, order_id: null, amount_paise: '25000', currency: 'INR', seen_count: 1,
    })]);
    expect([...admin.ledger.credits.keys()].filter((creditId) => creditId.startsWith('topup:'))).toEqual([]);
  });

  it('a capture of an order no top-up has (another integration\'s order) is acknowledged and recorded', async () => {
    const { admin } = harness;
    const body = JSON.stringify({
      entity: 'event', event: 'payment.captured', contains: ['payment'], created_at: 1_700_000_000,
      payload: { payment: { entity: { id: 'pay_OtherIntegration01', entity: 'payment', amount: 49900, currency: 'INR', status: 'captured', order_id: 'order_NotATopUp00001', method: 'card' } } },
    });
    const answer = expectStatus(await postWebhook(admin, body, { signature: webhookSignature(testPaymentKeys.webhookSecret, body), eventId: 'evt_unknown_order_1' }), 200);
    expect(answer.json).toEqual({ status: 'unmatched' });
    expect((await listUnmatched()).filter((entry) => entry.payment_id === 'pay_OtherIntegration01')).toEqual([expect.objectContaining({
      reason: 'unknown_order', order_id: 'order_NotATopUp00001', amount_paise: '49900',
    })]);
  });

  it('a signed body that is not an event this admin reads, or comes without an event id, is still a 2xx and on the record', async () => {
    const { admin } = harness;
    const notAnEvent = '{"hello":"world"}';
    const unreadable = expectStatus(await postWebhook(admin, notAnEvent, { signature: webhookSignature(testPaymentKeys.webhookSecret, notAnEvent), eventId: 'evt_unreadable_1' }), 200);
    expect(unreadable.json).toEqual({ status: 'unmatched' });
    expect((await listUnmatched()).filter((entry) => entry.event_id === 'evt_unreadable_1')).toEqual([expect.objectContaining({ reason: 'unreadable_event', payment_id: null })]);
    const body = JSON.stringify({ entity: 'event', event: 'subscription.charged', payload: {}, created_at: 1 });
    const noId = expectStatus(await postWebhook(admin, body, { signature: webhookSignature(testPaymentKeys.webhookSecret, body) }), 200);
    expect(noId.json).toEqual({ status: 'ignored' });
    // A forged one is still refused.
    expectStatus(await postWebhook(admin, notAnEvent, { signature: webhookSignature('not-the-secret', notAnEvent), eventId: 'evt_forged_1' }), 400);
  });

  it('only platform admins list them', async () => {
    const { admin } = harness;
    const { organisationId } = await organisationReadyToBuy(admin, 'Unmatched reader');
    const token = expectStatus(await admin.request('POST', `/admin/v1/organisations/${organisationId}/tokens`, { name: 'billing' }), 201).json.secret as string;
    expectStatus(await admin.request('GET', '/admin/v1/unmatched-payments', undefined, { authorization: `Bearer ${token}` }), 403);
  });
});
