/**
 * Top-ups over real PostgreSQL and the real local payment provider (Razorpay's API subset and its
 * signed webhooks): packages and billing profiles with who may do what, the purchase's order and
 * checkout block, and exactly one ledger credit and one tax document per top-up whatever payment
 * signals arrive — callback and webhooks together and repeated, forged or re-serialised webhooks,
 * events out of order (a UPI failure before the capture), and an order paid twice (the second
 * payment refunded).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { testPostgresUrl } from '@gateway/testkit';
import { startAdminHarness } from './test-support/admin-harness.ts';
import { billingProfileEnvelope, packageListResponse, purchaseResponse, topUpListResponse, topUpResponse } from './billing/http/billing-schemas.ts';
import { errorResponse } from './common/http/response-schemas.ts';
import {
  entriesInto, expectStatus, organisationReadyToBuy, postWebhook, purchase, readTopUp, startTopUpsHarness, testPaymentKeys, topUpCredits,
  waitForState, webhookSignature, type TopUpsHarness,
} from './test-support/topups-harness.ts';

const serverUrl = testPostgresUrl();
const describePg = describe.skipIf(!serverUrl);

let harness: TopUpsHarness;

beforeAll(async () => {
  if (!serverUrl) return;
  // Reconciliation effectively off: every outcome here comes from the callback and webhooks.
  harness = await startTopUpsHarness(serverUrl, { PAYMENT_RECONCILE_INTERVAL_MS: '3600000' });
});

afterAll(async () => {
  await harness?.close();
});

/** An organisation token (an owner of its organisation only). */
async function organisationToken(organisationId: string): Promise<string> {
  const response = expectStatus(await harness.admin.request('POST', `/admin/v1/organisations/${organisationId}/tokens`, { name: 'billing' }), 201);
  return response.json.secret as string;
}

/** Exactly one credit of the package's µ₹ under `topup:<id>`, one document, and each forward state entered once. */
async function expectSettledOnce(organisationId: string, topUpId: string, creditMicros: string) {
  const { admin } = harness;
  const topUp = await waitForState(admin, organisationId, topUpId, 'invoiced');
  // Signals still in flight could only add transitions; wait for the provider's webhooks to be done.
  await harness.payments.webhooksIdle();
  const final = await readTopUp(admin, organisationId, topUpId);
  expect(topUpResponse.parse(final).state).toBe('invoiced');
  expect(topUpCredits(admin, organisationId)).toEqual({ credits: new Map([[`topup:${topUpId}`, BigInt(creditMicros)]]), creditedMicros: BigInt(creditMicros) });
  expect(final.documents).toHaveLength(1);
  expect(final.documents[0].kind).toBe('tax_invoice');
  for (const state of ['paid', 'credited', 'invoiced']) expect(entriesInto(final, state)).toHaveLength(1);
  return { first: topUp, final };
}

describePg('top-up packages', () => {
  it('platform admins create, change and list them; owners see the active ones only and cannot change them', async () => {
    const { admin } = harness;
    const created = expectStatus(await admin.request('POST', '/admin/v1/topup-packages', {
      name: 'Starter', price_paise: '118000', credit_micros: '1000000000', sort_order: -5,
    }), 201).json;
    expect(created).toMatchObject({ name: 'Starter', price_paise: '118000', credit_micros: '1000000000', active: true, sort_order: -5 });
    const hidden = expectStatus(await admin.request('POST', '/admin/v1/topup-packages', {
      name: 'Retired', price_paise: 5000, credit_micros: 1, active: false,
    }), 201).json;

    const organisationId = expectStatus(await admin.request('POST', '/admin/v1/organisations', { name: 'Package buyer' }), 201).json.id as string;
    const token = await organisationToken(organisationId);
    const asOwner = { authorization: `Bearer ${token}` };
    const seen = packageListResponse.parse(expectStatus(await admin.request('GET', '/admin/v1/topup-packages', undefined, asOwner), 200).json);
    expect(seen.data.map((found) => found.id)).toContain(created.id);
    expect(seen.data.map((found) => found.id)).not.toContain(hidden.id);
    expect(seen.data[0]!.id).toBe(created.id);
    expectStatus(await admin.request('GET', '/admin/v1/topup-packages?include_inactive=true', undefined, asOwner), 403);
    const all = expectStatus(await admin.request('GET', '/admin/v1/topup-packages?include_inactive=true'), 200).json;
    expect(all.data.map((found: { id: string }) => found.id)).toContain(hidden.id);

    expectStatus(await admin.request('POST', '/admin/v1/topup-packages', { name: 'Mine', price_paise: '100', credit_micros: '1' }, asOwner), 403);
    expectStatus(await admin.request('PATCH', `/admin/v1/topup-packages/${created.id}`, { active: false }, asOwner), 403);
    const changed = expectStatus(await admin.request('PATCH', `/admin/v1/topup-packages/${created.id}`, { price_paise: '236000' }), 200).json;
    expect(changed).toMatchObject({ id: created.id, price_paise: '236000', credit_micros: '1000000000' });

    const audit = expectStatus(await admin.request('GET', '/admin/v1/audit-events?limit=100'), 200).json.data as Array<{ action: string; resource_id: string; changes: object }>;
    expect(audit.filter((event) => event.resource_id === created.id).map((event) => event.action)).toEqual(['topup_package.create', 'topup_package.update']);
    expect(audit.find((event) => event.action === 'topup_package.update' && event.resource_id === created.id)!.changes)
      .toEqual({ price_paise: { before: '118000', after: '236000' } });
  });

  it('refuses prices and credits that are not whole positive amounts in range', async () => {
    const response = expectStatus(await harness.admin.request('POST', '/admin/v1/topup-packages', {
      name: 'Bad', price_paise: '99', credit_micros: '12.5',
    }), 400);
    expect(errorResponse.parse(response.json).error.message).toMatch(/price_paise.*at least 100/s);
    expect(response.json.error.message).toMatch(/credit_micros/);
    expectStatus(await harness.admin.request('PATCH', '/admin/v1/topup-packages/pkg_000000000000000000000000', { active: false }), 404);
  });
});

describePg('billing profiles', () => {
  it('owners set it, viewers read it, a GSTIN must have its check character and the profile\'s state; purchases need one', async () => {
    const { admin } = harness;
    const organisationId = expectStatus(await admin.request('POST', '/admin/v1/organisations', { name: 'Profile org' }), 201).json.id as string;
    const path = `/admin/v1/organisations/${organisationId}/billing-profile`;
    expect(billingProfileEnvelope.parse(expectStatus(await admin.request('GET', path), 200).json)).toEqual({ billing_profile: null });

    const packageId = expectStatus(await admin.request('POST', '/admin/v1/topup-packages', { name: 'P', price_paise: '10000', credit_micros: '1' }), 201).json.id;
    const noProfile = expectStatus(await admin.request('POST', `/admin/v1/organisations/${organisationId}/topups`, { package_id: packageId }), 409);
    expect(noProfile.json.error.code).toBe('conflict');

    const base = { legal_name: 'Profile Org LLP', address: 'Bengaluru', state_code: '29' };
    const wrongCheck = expectStatus(await admin.request('PUT', path, { ...base, gstin: '29AAGCB7383J1Z5' }), 400);
    expect(wrongCheck.json.error).toMatchObject({ code: 'invalid_request', param: 'gstin' });
    expect(wrongCheck.json.error.message).toMatch(/check character/);
    const otherState = expectStatus(await admin.request('PUT', path, { ...base, state_code: '27', gstin: '29AAGCB7383J1Z4' }), 400);
    expect(otherState.json.error.message).toMatch(/registered in state 29/);
    expectStatus(await admin.request('PUT', path, { ...base, state_code: '00' }), 400);

    // Lower case is accepted and stored upper case; no GSTIN (unregistered) is allowed too.
    const set = billingProfileEnvelope.parse(expectStatus(await admin.request('PUT', path, { ...base, gstin: '29aagcb7383j1z4', email: 'accounts@example.test' }), 200).json);
    expect(set.billing_profile).toMatchObject({ gstin: '29AAGCB7383J1Z4', email: 'accounts@example.test', state_code: '29' });
    const unregistered = expectStatus(await admin.request('PUT', path, { ...base, address: 'Mysuru', gstin: null }), 200).json;
    expect(unregistered.billing_profile).toMatchObject({ gstin: null, email: null, address: 'Mysuru' });

    const token = await organisationToken(organisationId);
    expectStatus(await admin.request('GET', path, undefined, { authorization: `Bearer ${token}` }), 200);
    const otherOrg = expectStatus(await admin.request('POST', '/admin/v1/organisations', { name: 'Someone else' }), 201).json.id as string;
    expectStatus(await admin.request('GET', `/admin/v1/organisations/${otherOrg}/billing-profile`, undefined, { authorization: `Bearer ${token}` }), 404);

    const audit = expectStatus(await admin.request('GET', `/admin/v1/audit-events?organisation_id=${organisationId}&limit=100`), 200).json.data as Array<{ action: string }>;
    expect(audit.map((event) => event.action).filter((action) => action.startsWith('billing_profile.'))).toEqual(['billing_profile.create', 'billing_profile.update']);
  });
});

describePg('purchases', () => {
  it('creates the top-up and the provider order, and returns the checkout block with the local pay page', async () => {
    const { admin, payments } = harness;
    const { organisationId, packageId, creditMicros } = await organisationReadyToBuy(admin, 'Buyer');
    const response = purchaseResponse.parse(expectStatus(await admin.request('POST', `/admin/v1/organisations/${organisationId}/topups`, { package_id: packageId }), 201).json);
    const { topup, checkout } = response;
    expect(topup).toMatchObject({ package_id: packageId, price_paise: '59000', credit_micros: creditMicros, state: 'pending_payment', provider: 'local', provider_payment_id: null });
    expect(topup.transitions.map((transition) => [transition.from_state, transition.to_state, transition.cause]))
      .toEqual([[null, 'created', 'purchase'], ['created', 'pending_payment', 'purchase']]);
    expect(checkout).toMatchObject({ provider: 'local', key_id: testPaymentKeys.keyId, order_id: topup.provider_order_id, amount_paise: '59000', currency: 'INR' });
    const payPage = new URL(checkout.pay_page_url!);
    expect(`${payPage.origin}/`).toBe(new URL('/', payments.url).href);
    expect(payPage.searchParams.get('return_url')).toBe(`${admin.baseUrl}/#/billing?topup=${topup.id}`);

    const order = payments.orders().find((found) => found.id === checkout.order_id)!;
    expect(order).toMatchObject({ amount: 59000n, currency: 'INR', receipt: topup.id, notes: { organisation_id: organisationId, topup_id: topup.id } });

    // A later change of the package does not change the purchase.
    expectStatus(await admin.request('PATCH', `/admin/v1/topup-packages/${packageId}`, { price_paise: '99900' }), 200);
    const listed = topUpListResponse.parse(expectStatus(await admin.request('GET', `/admin/v1/organisations/${organisationId}/topups`), 200).json);
    expect(listed.data.map((found) => [found.id, found.price_paise])).toEqual([[topup.id, '59000']]);
    expect(topUpCredits(admin, organisationId).credits.size).toBe(0);
  });

  it('answers 503 and records the top-up failed when the provider cannot create the order', async () => {
    const { admin, payments } = harness;
    const { organisationId, packageId } = await organisationReadyToBuy(admin, 'Outage');
    payments.injectApiFault({ status: 500 });
    expectStatus(await admin.request('POST', `/admin/v1/organisations/${organisationId}/topups`, { package_id: packageId }), 503);
    const listed = expectStatus(await admin.request('GET', `/admin/v1/organisations/${organisationId}/topups`), 200).json;
    expect(listed.data).toHaveLength(1);
    expect(listed.data[0]).toMatchObject({ state: 'failed', provider_order_id: null });
    expect(entriesInto(listed.data[0], 'failed')).toEqual(['provider_order_failed']);
  });

  it('pages the organisation\'s top-ups newest first', async () => {
    const { admin } = harness;
    const { organisationId, packageId } = await organisationReadyToBuy(admin, 'Pager');
    const ids: string[] = [];
    for (let index = 0; index < 3; index += 1) ids.push((await purchase(admin, organisationId, packageId)).topUp.id);
    const first = expectStatus(await admin.request('GET', `/admin/v1/organisations/${organisationId}/topups?limit=2`), 200).json;
    expect(first.data.map((found: { id: string }) => found.id)).toEqual([ids[2], ids[1]]);
    const second = expectStatus(await admin.request('GET', `/admin/v1/organisations/${organisationId}/topups?limit=2&cursor=${first.next_cursor}`), 200).json;
    expect(second).toMatchObject({ next_cursor: null });
    expect(second.data.map((found: { id: string }) => found.id)).toEqual([ids[0]]);
  });
});

describePg('payment signals: exactly one credit', () => {
  it('callback, both webhooks and a repeated webhook all at once: one credit, one invoice number', async () => {
    const { admin, payments } = harness;
    const { organisationId, packageId, creditMicros } = await organisationReadyToBuy(admin, 'Duplicates');
    const { topUp, checkout } = await purchase(admin, organisationId, packageId);
    payments.pauseWebhooks();
    const paid = payments.pay(checkout.order_id, 'pay');
    if (paid.outcome !== 'paid') throw new Error('the local provider did not capture');
    const held = payments.pendingWebhooks();
    expect(held.map((webhook) => webhook.event)).toEqual(['payment.captured', 'order.paid']);
    const captured = held[0]!;

    const [callback, , repeatA, repeatB] = await Promise.all([
      admin.request('POST', `/admin/v1/organisations/${organisationId}/topups/${topUp.id}/checkout-callback`, paid.checkout),
      payments.deliverPending(),
      postWebhook(admin, captured.body, { signature: captured.signature, eventId: captured.eventId }),
      postWebhook(admin, captured.body, { signature: captured.signature, eventId: captured.eventId }),
    ]);
    payments.resumeWebhooks();
    expectStatus(callback, 200);
    expect(['paid', 'credited', 'invoiced']).toContain(callback.json.state);
    expectStatus(repeatA, 200);
    expectStatus(repeatB, 200);
    expect(payments.webhookDeliveries().filter((delivery) => delivery.eventId === captured.eventId).every((delivery) => delivery.delivered)).toBe(true);

    const { final } = await expectSettledOnce(organisationId, topUp.id, creditMicros);
    expect(final.provider_payment_id).toBe(paid.checkout.razorpay_payment_id);

    // Once more, after the fact: the same event is a repeat; the callback changes nothing.
    const again = expectStatus(await postWebhook(admin, captured.body, { signature: captured.signature, eventId: captured.eventId }), 200);
    expect(again.json).toEqual({ status: 'repeated' });
    expectStatus(await admin.request('POST', `/admin/v1/organisations/${organisationId}/topups/${topUp.id}/checkout-callback`, paid.checkout), 200);
    const after = await readTopUp(admin, organisationId, topUp.id);
    expect(after.transitions).toEqual(final.transitions);
    expect(after.documents).toEqual(final.documents);
    expect(topUpCredits(admin, organisationId).creditedMicros).toBe(BigInt(creditMicros));
  });

  it('refuses a forged, re-serialised or unsigned webhook with 400 and changes nothing', async () => {
    const { admin, payments } = harness;
    const { organisationId, packageId } = await organisationReadyToBuy(admin, 'Forgery');
    const { topUp, checkout } = await purchase(admin, organisationId, packageId);
    payments.pauseWebhooks();
    try {
      payments.pay(checkout.order_id, 'pay');
      const captured = payments.pendingWebhooks().find((webhook) => webhook.event === 'payment.captured')!;
      const reserialised = JSON.stringify(JSON.parse(captured.body), null, 1);
      expect(reserialised).not.toBe(captured.body);
      const attempts = [
        postWebhook(admin, captured.body, { signature: webhookSignature('not-the-webhook-secret', captured.body), eventId: 'forged-1' }),
        postWebhook(admin, reserialised, { signature: captured.signature, eventId: captured.eventId }),
        postWebhook(admin, captured.body, { eventId: 'unsigned-1' }),
        postWebhook(admin, captured.body, { signature: captured.signature.slice(0, -1) + (captured.signature.endsWith('0') ? '1' : '0'), eventId: 'tampered-1' }),
        postWebhook(admin, captured.body, { signature: webhookSignature(testPaymentKeys.keySecret, captured.body), eventId: 'key-secret-1' }),
      ];
      for (const response of await Promise.all(attempts)) {
        expectStatus(response, 400);
        expect(errorResponse.parse(response.json).error.code).toBe('invalid_request');
        expect(response.text).not.toContain(testPaymentKeys.webhookSecret);
      }
      const unchanged = await readTopUp(admin, organisationId, topUp.id);
      expect(unchanged.state).toBe('pending_payment');
      expect(topUpCredits(admin, organisationId).credits.size).toBe(0);

      // The genuine delivery, with the id the refused copy carried, is still applied.
      const genuine = expectStatus(await postWebhook(admin, captured.body, { signature: captured.signature, eventId: captured.eventId }), 200);
      expect(genuine.json).toEqual({ status: 'processed' });
      await waitForState(admin, organisationId, topUp.id, 'invoiced');
    } finally {
      payments.resumeWebhooks();
    }
  });

  it('a UPI failure delivered before the capture of the next attempt: failed, then paid, credited once', async () => {
    const { admin, payments } = harness;
    const { organisationId, packageId, creditMicros } = await organisationReadyToBuy(admin, 'UPI');
    const { topUp, checkout } = await purchase(admin, organisationId, packageId);
    payments.pauseWebhooks();
    payments.pay(checkout.order_id, 'pay', { scenario: 'fail_then_pay' });
    expect(payments.pendingWebhooks().map((webhook) => webhook.event)).toEqual(['payment.failed', 'payment.captured', 'order.paid']);
    const [failedDelivery] = await payments.deliverPending().then((deliveries) => deliveries);
    expect(failedDelivery).toMatchObject({ event: 'payment.failed', delivered: true });
    payments.resumeWebhooks();
    const { final } = await expectSettledOnce(organisationId, topUp.id, creditMicros);
    expect(final.transitions.map((transition: { from_state: string | null; to_state: string }) => `${transition.from_state}>${transition.to_state}`))
      .toEqual(['null>created', 'created>pending_payment', 'pending_payment>failed', 'failed>paid', 'paid>credited', 'credited>invoiced']);
    expect(entriesInto(final, 'failed')).toEqual(['webhook:payment.failed']);
  });

  it('events in reverse order (order.paid, then payment.captured, then the earlier failure): credited once, the failure ignored', async () => {
    const { admin, payments } = harness;
    const { organisationId, packageId, creditMicros } = await organisationReadyToBuy(admin, 'Reversed');
    const { topUp, checkout } = await purchase(admin, organisationId, packageId);
    payments.pauseWebhooks();
    payments.pay(checkout.order_id, 'pay', { scenario: 'fail_then_pay' });
    const deliveries = await payments.deliverPending({ order: 'reversed' });
    payments.resumeWebhooks();
    expect(deliveries.map((delivery) => [delivery.event, delivery.delivered])).toEqual([['order.paid', true], ['payment.captured', true], ['payment.failed', true]]);
    const { final } = await expectSettledOnce(organisationId, topUp.id, creditMicros);
    expect(entriesInto(final, 'paid')).toEqual(['webhook:order.paid']);
    expect(entriesInto(final, 'failed')).toEqual([]);
  });

  it('an order paid twice: one credit, the second payment refunded through the provider and recorded', async () => {
    const { admin, payments } = harness;
    const { organisationId, packageId, creditMicros } = await organisationReadyToBuy(admin, 'Twice');
    const { topUp, checkout } = await purchase(admin, organisationId, packageId);
    const outcome = payments.pay(checkout.order_id, 'pay_twice');
    if (outcome.outcome !== 'paid') throw new Error('the local provider did not capture');
    const [firstPayment, secondPayment] = outcome.paymentIds;
    const { final } = await expectSettledOnce(organisationId, topUp.id, creditMicros);
    expect(final.provider_payment_id).toBe(firstPayment);
    const refunded = await vi.waitFor(async () => {
      const current = await readTopUp(admin, organisationId, topUp.id);
      const duplicates = current.transitions.filter((transition: { cause: string }) => transition.cause === 'duplicate_payment_refunded');
      expect(duplicates).toHaveLength(1);
      return duplicates[0];
    }, { timeout: 10_000, interval: 25 });
    expect(refunded).toMatchObject({ from_state: refunded.to_state });
    await payments.webhooksIdle();
    expect(payments.refunds().map((refund) => [refund.payment_id, refund.amount])).toEqual([[secondPayment, 59000n]]);
    expect(payments.payments().find((payment) => payment.id === secondPayment)!.status).toBe('refunded');
    expect(payments.payments().find((payment) => payment.id === firstPayment)!.status).toBe('captured');
    // The refund's own webhook (refund.processed) came back and was taken without another refund or credit.
    expect(payments.webhookDeliveries().filter((delivery) => delivery.event === 'refund.processed').map((delivery) => delivery.delivered)).toEqual([true]);
    expect(topUpCredits(admin, organisationId).creditedMicros).toBe(BigInt(creditMicros));
  });

  it('verifies the Checkout signature and reads the payment from the provider, not the browser', async () => {
    const { admin, payments } = harness;
    const { organisationId, packageId } = await organisationReadyToBuy(admin, 'Callback');
    const { topUp, checkout } = await purchase(admin, organisationId, packageId);
    const callbackPath = `/admin/v1/organisations/${organisationId}/topups/${topUp.id}/checkout-callback`;
    payments.pauseWebhooks();
    try {
      // A claim of payment that the provider has never seen, signed with the wrong key: refused.
      const forged = expectStatus(await admin.request('POST', callbackPath, {
        razorpay_order_id: checkout.order_id, razorpay_payment_id: 'pay_NotARealPayment', razorpay_signature: webhookSignature('guess', `${checkout.order_id}|pay_NotARealPayment`),
      }), 400);
      expect(forged.json.error.param).toBe('razorpay_signature');
      // A failed attempt, correctly signed: the provider says failed, so the top-up fails (no credit).
      const failed = payments.pay(checkout.order_id, 'fail');
      const failedId = failed.paymentIds[0]!;
      const failedCallback = expectStatus(await admin.request('POST', callbackPath, {
        razorpay_order_id: checkout.order_id, razorpay_payment_id: failedId,
        razorpay_signature: webhookSignature(testPaymentKeys.keySecret, `${checkout.order_id}|${failedId}`),
      }), 200);
      expect(failedCallback.json.state).toBe('failed');
      expect(entriesInto(failedCallback.json, 'failed')).toEqual(['checkout_callback']);
      // Another order's fields are refused for this top-up.
      const other = await purchase(admin, organisationId, packageId);
      const otherPaid = payments.pay(other.checkout.order_id, 'pay');
      if (otherPaid.outcome !== 'paid') throw new Error('the local provider did not capture');
      const mismatch = expectStatus(await admin.request('POST', callbackPath, otherPaid.checkout), 400);
      expect(mismatch.json.error.param).toBe('razorpay_order_id');
      expect(topUpCredits(admin, organisationId).credits.size).toBe(0);
    } finally {
      payments.resumeWebhooks();
    }
  });

  it('the ledger down when the capture arrives: the webhook is refused (503) after recording the payment, and its retry credits once', async () => {
    const { admin, payments } = harness;
    const { organisationId, packageId, creditMicros } = await organisationReadyToBuy(admin, 'Ledger down');
    const { topUp, checkout } = await purchase(admin, organisationId, packageId);
    admin.ledger.failNext('credit');
    payments.pauseWebhooks();
    payments.pay(checkout.order_id, 'pay');
    const capturedId = payments.pendingWebhooks().find((webhook) => webhook.event === 'payment.captured')!.eventId;
    payments.resumeWebhooks();
    const { final } = await expectSettledOnce(organisationId, topUp.id, creditMicros);
    const captured = payments.webhookDeliveries().find((delivery) => delivery.eventId === capturedId)!;
    expect(captured).toMatchObject({ delivered: true, lastStatus: 200 });
    expect(captured.attempts).toBeGreaterThanOrEqual(2);
    expect(entriesInto(final, 'paid')).toEqual(['webhook:payment.captured']);
  });

  it('answers 200 ignored to events top-ups do not act on, and 200 unmatched to a signed body that is not an event (a refusal would be retried and disable the webhook)', async () => {
    const { admin } = harness;
    const body = JSON.stringify({ entity: 'event', event: 'subscription.charged', payload: {}, created_at: 1 });
    const ignored = expectStatus(await postWebhook(admin, body, { signature: webhookSignature(testPaymentKeys.webhookSecret, body), eventId: 'evt_other_1' }), 200);
    expect(ignored.json).toEqual({ status: 'ignored' });
    const notAnEvent = '{"hello":"world"}';
    const unmatched = expectStatus(await postWebhook(admin, notAnEvent, { signature: webhookSignature(testPaymentKeys.webhookSecret, notAnEvent), eventId: 'evt_other_2' }), 200);
    expect(unmatched.json).toEqual({ status: 'unmatched' });
  });
});

describe('without a payment provider', () => {
  it('packages and billing profiles work; a purchase is 503 and a webhook changes nothing', async () => {
    const admin = await startAdminHarness();
    try {
      const organisationId = expectStatus(await admin.request('POST', '/admin/v1/organisations', { name: 'No provider' }), 201).json.id as string;
      expectStatus(await admin.request('PUT', `/admin/v1/organisations/${organisationId}/billing-profile`, { legal_name: 'N P', address: 'Pune', state_code: '27' }), 200);
      const packageId = expectStatus(await admin.request('POST', '/admin/v1/topup-packages', { name: 'P', price_paise: '10000', credit_micros: '1' }), 201).json.id as string;
      const refused = expectStatus(await admin.request('POST', `/admin/v1/organisations/${organisationId}/topups`, { package_id: packageId }), 503);
      expect(refused.json.error.message).toMatch(/PAYMENT_PROVIDER/);
      expectStatus(await postWebhook(admin, '{}', { signature: webhookSignature('x', '{}'), eventId: 'evt_1' }), 503);
      expect(expectStatus(await admin.request('GET', `/admin/v1/organisations/${organisationId}/topups`), 200).json.data).toEqual([]);
    } finally {
      await admin.close();
    }
  });
});
