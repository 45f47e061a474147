import { createHmac } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { startLocalPayments, type LocalPayments } from './index.ts';

const keys = { keyId: 'rzp_test_LocalUnitKey01', keySecret: 'local-key-secret-1', webhookSecret: 'local-webhook-secret-1' };
const basic = `Basic ${Buffer.from(`${keys.keyId}:${keys.keySecret}`).toString('base64')}`;

/** A webhook receiver on port 0 that records what arrives and answers 500 to the first `failures` POSTs. */
async function startReceiver(failures = 0): Promise<{ url: string; received: Array<{ headers: Record<string, string | string[] | undefined>; body: string }>; server: Server }> {
  const received: Array<{ headers: Record<string, string | string[] | undefined>; body: string }> = [];
  let remainingFailures = failures;
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received.push({ headers: request.headers, body: Buffer.concat(chunks).toString('utf8') });
      if (remainingFailures > 0) {
        remainingFailures -= 1;
        response.writeHead(500).end();
      } else {
        response.writeHead(200).end('ok');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks/razorpay`, received, server };
}

async function api(provider: LocalPayments, method: string, path: string, body?: string, authorization = basic): Promise<{ status: number; json: Record<string, unknown>; text: string }> {
  const answer = await fetch(`${provider.url}${path}`, {
    method, headers: { authorization, 'content-type': 'application/json' }, ...(body === undefined ? {} : { body }),
  });
  const text = await answer.text();
  return { status: answer.status, json: JSON.parse(text) as Record<string, unknown>, text };
}

let provider: LocalPayments;
const servers: Server[] = [];

beforeEach(async () => {
  provider = await startLocalPayments({ ...keys, webhookRetry: { baseDelayMs: 10 } });
});

afterEach(async () => {
  await provider.close();
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
});

async function receiver(failures = 0): ReturnType<typeof startReceiver> {
  const started = await startReceiver(failures);
  servers.push(started.server);
  return started;
}

describe('the local payment provider API', () => {
  it('creates and fetches orders in Razorpay\'s shape, with amounts as JSON integers', async () => {
    const created = await api(provider, 'POST', '/v1/orders', '{"amount":118000,"currency":"INR","receipt":"top_1","notes":{"organisation":"org_1"},"payment_capture":true}');
    expect(created.status).toBe(200);
    expect(created.text).toContain('"amount":118000');
    expect(created.json).toMatchObject({ entity: 'order', amount: 118000, amount_paid: 0, amount_due: 118000, currency: 'INR', receipt: 'top_1', status: 'created', attempts: 0, notes: { organisation: 'org_1' } });
    expect(created.json.id).toMatch(/^order_[A-Za-z0-9]{14}$/);
    const fetched = await api(provider, 'GET', `/v1/orders/${String(created.json.id)}`);
    expect(fetched.json).toEqual(created.json);
    expect((await api(provider, 'GET', `/v1/orders/${String(created.json.id)}/payments`)).json).toEqual({ entity: 'collection', count: 0, items: [] });
  });

  it('refuses a wrong key with 401 and bad input with 400, in Razorpay\'s error shape', async () => {
    const unauthenticated = await api(provider, 'POST', '/v1/orders', '{"amount":100,"currency":"INR"}', `Basic ${Buffer.from(`${keys.keyId}:wrong`).toString('base64')}`);
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.json).toMatchObject({ error: { code: 'BAD_REQUEST_ERROR', description: 'Authentication failed' } });
    const tooSmall = await api(provider, 'POST', '/v1/orders', '{"amount":99,"currency":"INR"}');
    expect(tooSmall.status).toBe(400);
    expect(tooSmall.json).toMatchObject({ error: { code: 'BAD_REQUEST_ERROR', field: 'amount' } });
    expect((await api(provider, 'POST', '/v1/orders', '{"amount":100.5,"currency":"INR"}')).status).toBe(400);
    expect((await api(provider, 'POST', '/v1/orders', '{"amount":100,"currency":"USD"}')).json).toMatchObject({ error: { field: 'currency' } });
    expect((await api(provider, 'GET', '/v1/orders/order_doesnotexist00')).json).toMatchObject({ error: { description: 'The id provided does not exist' } });
    expect((await api(provider, 'GET', '/v1/nothing')).status).toBe(404);
    expect(provider.orders()).toEqual([]);
  });

  it('answers injected faults: a status for the next calls, then normally again', async () => {
    provider.injectApiFault({ status: 503 }, 2);
    expect((await api(provider, 'GET', '/v1/orders/order_x')).status).toBe(503);
    expect((await api(provider, 'GET', '/v1/orders/order_x')).json).toMatchObject({ error: { code: 'SERVER_ERROR' } });
    expect((await api(provider, 'GET', '/v1/orders/order_x')).status).toBe(400);
  });
});

describe('the controls for captures no order or webhook reports', () => {
  async function newOrder(): Promise<string> {
    return String((await api(provider, 'POST', '/v1/orders', '{"amount":118000,"currency":"INR","receipt":"top_1"}')).json.id);
  }

  it('leaves an authorised payment uncaptured until POST /v1/payments/{id}/capture with its amount, which pays the order', async () => {
    provider.pauseWebhooks();
    const orderId = await newOrder();
    const authorised = provider.pay(orderId, 'authorize');
    const paymentId = authorised.paymentIds[0]!;
    expect(provider.payments()[0]).toMatchObject({ id: paymentId, status: 'authorized', captured: false });
    expect(provider.pendingWebhooks().map((webhook) => webhook.event)).toEqual(['payment.authorized']);
    const wrong = await api(provider, 'POST', `/v1/payments/${paymentId}/capture`, '{"amount":100,"currency":"INR"}');
    expect(wrong.status).toBe(400);
    const captured = await api(provider, 'POST', `/v1/payments/${paymentId}/capture`, '{"amount":118000,"currency":"INR"}');
    expect(captured.json).toMatchObject({ id: paymentId, status: 'captured', captured: true });
    expect(provider.orders()[0]).toMatchObject({ status: 'paid', amount_paid: 118_000n });
    expect(provider.pendingWebhooks().map((webhook) => webhook.event)).toEqual(['payment.authorized', 'payment.captured', 'order.paid']);
    expect((await api(provider, 'POST', `/v1/payments/${paymentId}/capture`, '{"amount":118000,"currency":"INR"}')).status).toBe(400);
  });

  it('captures without an order, captures again after the order was paid, and lists payments by time range newest first', async () => {
    provider.pauseWebhooks();
    const orderId = await newOrder();
    const first = provider.pay(orderId, 'pay');
    expect(() => provider.pay(orderId, 'pay')).toThrow(/already paid/);
    const late = provider.pay(orderId, 'pay', { afterPaid: true });
    const loose = provider.captureWithoutOrder({ amountPaise: 25_000n });
    expect(loose).toMatchObject({ order_id: null, status: 'captured', amount: 25_000n });
    const webhook = provider.pendingWebhooks().find((pending) => pending.body.includes(loose.id))!;
    expect(webhook.event).toBe('payment.captured');
    expect(JSON.parse(webhook.body).payload.payment.entity.order_id).toBeNull();
    const now = Math.floor(Date.now() / 1000);
    const listed = await api(provider, 'GET', `/v1/payments?from=${now - 60}&to=${now + 60}&count=2&skip=0`);
    expect((listed.json.items as Array<{ id: string }>).map((payment) => payment.id)).toEqual([loose.id, late.paymentIds[0]]);
    const next = await api(provider, 'GET', `/v1/payments?from=${now - 60}&to=${now + 60}&count=2&skip=2`);
    expect((next.json.items as Array<{ id: string }>).map((payment) => payment.id)).toEqual([first.paymentIds[0]]);
    expect(((await api(provider, 'GET', `/v1/payments?from=0&to=${now - 3600}`)).json.items as unknown[])).toEqual([]);
    expect((await api(provider, 'GET', '/v1/payments?count=101')).status).toBe(400);
  });

  it('holds the API calls that match until released, then answers them', async () => {
    const orderId = await newOrder();
    provider.holdApiCalls({ method: 'GET', path: /^\/v1\/orders\// });
    const held = api(provider, 'GET', `/v1/orders/${orderId}`);
    await vi.waitFor(() => { expect(provider.heldApiCalls()).toBe(1); });
    expect((await api(provider, 'POST', '/v1/orders', '{"amount":100,"currency":"INR"}')).status).toBe(200);
    provider.releaseHeldCalls();
    expect((await held).json).toMatchObject({ id: orderId });
    expect(provider.heldApiCalls()).toBe(0);
  });
});

describe('the pay page and webhooks', () => {
  async function newOrder(amount = 118_000): Promise<string> {
    return String((await api(provider, 'POST', '/v1/orders', `{"amount":${amount},"currency":"INR","receipt":"top_1"}`)).json.id);
  }

  async function press(orderId: string, action: string, returnUrl: string, scenario?: string): Promise<Response> {
    const form = new URLSearchParams({ action, return_url: returnUrl, ...(scenario === undefined ? {} : { scenario }) });
    return fetch(`${provider.url}/pay/${orderId}`, { method: 'POST', body: form, redirect: 'manual' });
  }

  function webhookEvents(received: Array<{ body: string }>): string[] {
    return received.map((delivery) => (JSON.parse(delivery.body) as { event: string }).event);
  }

  it('serves a page with the three buttons, and "Pay" returns signed Checkout fields in the fragment and sends signed webhooks', async () => {
    const hook = await receiver();
    provider.setWebhookUrl(hook.url);
    const orderId = await newOrder();
    const page = await fetch(`${provider.url}/pay/${orderId}?return_url=${encodeURIComponent('http://dash.test/#/topups/top_1')}`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('>Pay ₹1,180.00</button>');

    const answer = await press(orderId, 'pay', 'http://dash.test/#/topups/top_1');
    expect(answer.status).toBe(303);
    const location = answer.headers.get('location')!;
    expect(location.startsWith('http://dash.test/#/topups/top_1?')).toBe(true);
    const fields = new URLSearchParams(location.slice(location.indexOf('?') + 1));
    const paymentId = fields.get('razorpay_payment_id')!;
    expect(fields.get('razorpay_order_id')).toBe(orderId);
    expect(fields.get('razorpay_signature')).toBe(createHmac('sha256', keys.keySecret).update(`${orderId}|${paymentId}`).digest('hex'));

    await expect.poll(() => webhookEvents(hook.received)).toEqual(['payment.captured', 'order.paid']);
    for (const delivery of hook.received) {
      expect(delivery.headers['x-razorpay-signature']).toBe(createHmac('sha256', keys.webhookSecret).update(delivery.body).digest('hex'));
      expect(delivery.headers['x-razorpay-event-id']).toMatch(/^[A-Za-z0-9]{14}$/);
    }
    const orderPaid = JSON.parse(hook.received[1]!.body) as Record<string, unknown>;
    expect(orderPaid).toMatchObject({
      entity: 'event', event: 'order.paid', contains: ['payment', 'order'],
      payload: { payment: { entity: { id: paymentId, order_id: orderId, status: 'captured', method: 'upi', amount: 118000 } }, order: { entity: { id: orderId, status: 'paid', amount_paid: 118000 } } },
    });
    expect(orderPaid.account_id).toMatch(/^acc_/);
    const again = await press(orderId, 'pay', 'http://dash.test/');
    expect(again.status).toBe(409);
    expect(await again.text()).toContain('already paid');
  });

  it('"Fail payment" sends payment.failed and returns with error=payment_failed; fail_then_pay fails one attempt before capturing', async () => {
    const hook = await receiver();
    provider.setWebhookUrl(hook.url);
    const orderId = await newOrder();
    const failed = await press(orderId, 'fail', 'http://dash.test/back');
    expect(failed.headers.get('location')).toBe('http://dash.test/back?error=payment_failed');
    await expect.poll(() => webhookEvents(hook.received)).toEqual(['payment.failed']);
    expect(provider.orders()[0]).toMatchObject({ status: 'attempted', attempts: 1 });

    const paid = await press(orderId, 'pay', 'http://dash.test/back', 'fail_then_pay');
    expect(paid.headers.get('location')).toContain('razorpay_signature=');
    await expect.poll(() => webhookEvents(hook.received)).toEqual(['payment.failed', 'payment.failed', 'payment.captured', 'order.paid']);
    expect(provider.payments().map((payment) => payment.status)).toEqual(['failed', 'failed', 'captured']);
  });

  it('"Pay twice" captures two payments on one order: two payment.captured, one order.paid', async () => {
    const hook = await receiver();
    provider.setWebhookUrl(hook.url);
    const orderId = await newOrder();
    expect((await press(orderId, 'pay_twice', 'http://dash.test/')).status).toBe(303);
    await expect.poll(() => webhookEvents(hook.received)).toEqual(['payment.captured', 'order.paid', 'payment.captured']);
    expect(provider.payments().map((payment) => payment.status)).toEqual(['captured', 'captured']);
    expect(provider.orders()[0]).toMatchObject({ status: 'paid', amount_paid: 236_000n, amount_due: 0n });
  });

  it('captures another amount or currency when a test asks: a smaller capture leaves the order attempted (no order.paid), the full amount pays it', async () => {
    const hook = await receiver();
    provider.setWebhookUrl(hook.url);
    const orderId = await newOrder();
    const short = provider.pay(orderId, 'pay', { capture: { amountPaise: 1_000n } });
    expect(short.outcome).toBe('paid');
    await expect.poll(() => webhookEvents(hook.received)).toEqual(['payment.captured']);
    expect(JSON.parse(hook.received[0]!.body).payload.payment.entity).toMatchObject({ id: short.paymentIds[0], amount: 1000, currency: 'INR', status: 'captured' });
    expect(provider.orders()[0]).toMatchObject({ status: 'attempted', amount_paid: 1_000n, amount_due: 117_000n });

    const dollars = provider.pay(orderId, 'pay', { capture: { currency: 'USD' } });
    await expect.poll(() => webhookEvents(hook.received)).toEqual(['payment.captured', 'payment.captured', 'order.paid']);
    expect(provider.payments().map((payment) => [payment.id, payment.amount, payment.currency])).toEqual([
      [short.paymentIds[0], 1_000n, 'INR'], [dollars.paymentIds[0], 118_000n, 'USD'],
    ]);
    expect(provider.orders()[0]).toMatchObject({ status: 'paid', amount_due: 0n });
  });

  it('retries a webhook the receiver refuses, with the same bytes and event id, until it is accepted', async () => {
    const hook = await receiver(2);
    provider.setWebhookUrl(hook.url);
    provider.pay(await newOrder(), 'fail');
    await expect.poll(() => provider.webhookDeliveries()).toEqual([expect.objectContaining({ event: 'payment.failed', delivered: true, attempts: 3, lastStatus: 200 })]);
    expect(hook.received).toHaveLength(3);
    expect(new Set(hook.received.map((delivery) => delivery.body)).size).toBe(1);
    expect(new Set(hook.received.map((delivery) => delivery.headers['x-razorpay-event-id'])).size).toBe(1);
  });

  it('gives a webhook up after its attempts when the receiver keeps failing', async () => {
    await provider.close();
    provider = await startLocalPayments({ ...keys, webhookRetry: { attempts: 3, baseDelayMs: 5 } });
    const hook = await receiver(100);
    provider.setWebhookUrl(hook.url);
    provider.pay(await newOrder(), 'fail');
    await expect.poll(() => provider.webhookDeliveries()).toEqual([expect.objectContaining({ delivered: false, attempts: 3, lastStatus: 500 })]);
    expect(hook.received).toHaveLength(3);
  });

  it('holds webhooks while paused and delivers them on demand in reverse order', async () => {
    const hook = await receiver();
    provider.setWebhookUrl(hook.url);
    provider.pauseWebhooks();
    const orderId = await newOrder();
    provider.pay(orderId, 'pay', { scenario: 'fail_then_pay' });
    expect(provider.pendingWebhooks().map((webhook) => webhook.event)).toEqual(['payment.failed', 'payment.captured', 'order.paid']);
    expect(hook.received).toEqual([]);
    const deliveries = await provider.deliverPending({ order: 'reversed' });
    expect(deliveries.map((delivery) => [delivery.event, delivery.delivered])).toEqual([['order.paid', true], ['payment.captured', true], ['payment.failed', true]]);
    expect(webhookEvents(hook.received)).toEqual(['order.paid', 'payment.captured', 'payment.failed']);
    expect(provider.pendingWebhooks()).toEqual([]);

    provider.pay(await newOrder(), 'fail');
    expect(provider.pendingWebhooks()).toHaveLength(1);
    provider.resumeWebhooks();
    await expect.poll(() => hook.received.length).toBe(4);
  });

  it('holds webhooks until a URL is set', async () => {
    provider.pay(await newOrder(), 'fail');
    expect(provider.pendingWebhooks().map((webhook) => webhook.event)).toEqual(['payment.failed']);
    const hook = await receiver();
    provider.setWebhookUrl(hook.url);
    await expect.poll(() => webhookEvents(hook.received)).toEqual(['payment.failed']);
  });

  it('refunds part of a captured payment, then the rest, and sends refund.processed; refuses more than is left', async () => {
    const hook = await receiver();
    provider.setWebhookUrl(hook.url);
    const outcome = provider.pay(await newOrder(), 'pay');
    if (outcome.outcome !== 'paid') throw new Error('expected a payment');
    const paymentId = outcome.checkout.razorpay_payment_id;
    const partial = await api(provider, 'POST', `/v1/payments/${paymentId}/refund`, '{"amount":18000,"receipt":"rfd_1","notes":{"refund":"rfd_1"}}');
    expect(partial.json).toMatchObject({ entity: 'refund', amount: 18000, payment_id: paymentId, receipt: 'rfd_1', status: 'processed' });
    expect(partial.json.id).toMatch(/^rfnd_/);
    expect((await api(provider, 'GET', `/v1/payments/${paymentId}`)).json).toMatchObject({ status: 'captured', amount_refunded: 18000, refund_status: 'partial' });
    const tooMuch = await api(provider, 'POST', `/v1/payments/${paymentId}/refund`, '{"amount":100001}');
    expect(tooMuch.status).toBe(400);
    expect(tooMuch.json).toMatchObject({ error: { field: 'amount' } });
    expect((await api(provider, 'POST', `/v1/payments/${paymentId}/refund`, '{}')).json).toMatchObject({ amount: 100000 });
    expect((await api(provider, 'GET', `/v1/payments/${paymentId}`)).json).toMatchObject({ status: 'refunded', amount_refunded: 118000, refund_status: 'full' });
    await expect.poll(() => webhookEvents(hook.received)).toEqual(['payment.captured', 'order.paid', 'refund.processed', 'refund.processed']);
    expect(JSON.parse(hook.received[2]!.body)).toMatchObject({ contains: ['refund', 'payment'], payload: { refund: { entity: { amount: 18000, payment_id: paymentId } } } });
  });

  it('honours X-Refund-Idempotency: the same request returns the first refund, a different one is refused', async () => {
    const hook = await receiver();
    provider.setWebhookUrl(hook.url);
    const outcome = provider.pay(await newOrder(), 'pay');
    if (outcome.outcome !== 'paid') throw new Error('expected a payment');
    const path = `/v1/payments/${outcome.checkout.razorpay_payment_id}/refund`;
    const refundOnce = (body: string) => fetch(`${provider.url}${path}`, {
      method: 'POST', headers: { authorization: basic, 'content-type': 'application/json', 'x-refund-idempotency': 'rfd_idem_key_1' }, body,
    }).then(async (answer) => ({ status: answer.status, json: await answer.json() as Record<string, unknown> }));
    const first = await refundOnce('{"amount":10000,"receipt":"rfd_idem_key_1"}');
    const retried = await refundOnce('{"amount":10000,"receipt":"rfd_idem_key_1"}');
    expect(first.status).toBe(200);
    expect(retried.json).toEqual(first.json);
    expect(provider.refunds()).toHaveLength(1);
    const different = await refundOnce('{"amount":20000,"receipt":"rfd_idem_key_1"}');
    expect(different.status).toBe(400);
    expect(different.json).toMatchObject({ error: { description: 'Different request with the same idempotency key has already been processed.' } });
    await expect.poll(() => provider.webhookDeliveries().filter((delivery) => delivery.event === 'refund.processed')).toHaveLength(1);
    await provider.webhooksIdle();
    expect(webhookEvents(hook.received).filter((event) => event === 'refund.processed')).toHaveLength(1);
  });

  it('answers the pay page for an unknown order with 404 and without a return URL with 400', async () => {
    expect((await fetch(`${provider.url}/pay/order_unknown000000?return_url=http%3A%2F%2Fx%2F`)).status).toBe(404);
    const orderId = await newOrder();
    expect((await fetch(`${provider.url}/pay/${orderId}`)).status).toBe(400);
    expect((await fetch(`${provider.url}/pay/${orderId}?return_url=javascript%3Aalert(1)`)).status).toBe(400);
  });
});

describe('the controls that act out refunds and disputes', () => {
  async function capturedPayment(): Promise<string> {
    const order = await api(provider, 'POST', '/v1/orders', '{"amount":118000,"currency":"INR","receipt":"top_1"}');
    const outcome = provider.pay(order.json.id as string, 'pay');
    return outcome.paymentIds.at(-1)!;
  }

  it('refuseRefunds answers the next refund 400 with the reason and refunds nothing; the one after goes through', async () => {
    const paymentId = await capturedPayment();
    provider.refuseRefunds('The payment is older than 6 months and cannot be refunded.');
    const refused = await api(provider, 'POST', `/v1/payments/${paymentId}/refund`, '{"amount":1000}');
    expect(refused.status).toBe(400);
    expect(refused.json.error).toMatchObject({ code: 'BAD_REQUEST_ERROR', description: 'The payment is older than 6 months and cannot be refunded.' });
    expect(provider.refunds()).toEqual([]);
    expect((await api(provider, 'POST', `/v1/payments/${paymentId}/refund`, '{"amount":1000}')).json.status).toBe('processed');
  });

  it('holdRefunds keeps new refunds pending (refund.created) until settleRefund processes or fails them; the refund can be fetched', async () => {
    const paymentId = await capturedPayment();
    provider.holdRefunds();
    const created = await api(provider, 'POST', `/v1/payments/${paymentId}/refund`, '{"amount":1000}');
    expect(created.json.status).toBe('pending');
    const refundId = created.json.id as string;
    expect((await api(provider, 'GET', `/v1/payments/${paymentId}/refunds/${refundId}`)).json.status).toBe('pending');
    provider.settleRefund(refundId, 'failed', 'The beneficiary account is closed.');
    expect((await api(provider, 'GET', `/v1/payments/${paymentId}/refunds/${refundId}`)).json.status).toBe('failed');
    expect(provider.payments().find((payment) => payment.id === paymentId)!.amount_refunded).toBe(0n);
    expect(provider.pendingWebhooks().map((webhook) => webhook.event).filter((event) => event.startsWith('refund.'))).toEqual(['refund.created', 'refund.failed']);
    expect(provider.pendingWebhooks().at(-1)!.body).toContain('"error_description":"The beneficiary account is closed."');
  });

  it('dashboardRefund refunds without a receipt and sends refund.processed; openDispute and resolveDispute send the dispute events', async () => {
    const paymentId = await capturedPayment();
    const refund = provider.dashboardRefund(paymentId, 18_000n);
    expect(refund).toMatchObject({ receipt: null, amount: 18_000n, status: 'processed' });
    const dispute = provider.openDispute(paymentId);
    expect(dispute).toMatchObject({ status: 'open', amount: 118_000n, amount_deducted: 0n });
    expect(provider.resolveDispute(dispute.id, 'lost')).toMatchObject({ status: 'lost', amount_deducted: 118_000n });
    expect(() => provider.resolveDispute(dispute.id, 'won')).toThrow(/lost already/);
    expect(provider.pendingWebhooks().map((webhook) => webhook.event).slice(-4))
      .toEqual(['refund.processed', 'payment.dispute.created', 'payment.dispute.lost', 'payment.dispute.closed']);
    expect(provider.pendingWebhooks().at(-1)!.body).toContain('"amount_deducted":118000');
  });
});
