import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GatewayError } from '@gateway/errors';
import { startLocalPayments, type LocalPayments } from '@gateway/local-payments';
import type { PaymentProvider } from '../domain/payment-provider.ts';
import { createRazorpayClient } from './razorpay-client.ts';

// The adapter against the local provider: the same wire format as Razorpay, over real HTTP.
const keys = { keyId: 'rzp_test_AdapterIntKey01', keySecret: 'adapter-key-secret-1', webhookSecret: 'adapter-webhook-secret-1' };

let local: LocalPayments;
let client: PaymentProvider;
let receiver: Server;
const webhooks: Array<{ body: Buffer; signature: string | undefined; eventId: string | undefined }> = [];

beforeAll(async () => {
  local = await startLocalPayments({ ...keys, webhookRetry: { baseDelayMs: 10 } });
  client = createRazorpayClient({ kind: 'local', baseUrl: local.url, ...keys });
  receiver = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const signature = request.headers['x-razorpay-signature'];
      const eventId = request.headers['x-razorpay-event-id'];
      webhooks.push({ body: Buffer.concat(chunks), signature: typeof signature === 'string' ? signature : undefined, eventId: typeof eventId === 'string' ? eventId : undefined });
      response.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  local.setWebhookUrl(`http://127.0.0.1:${(receiver.address() as AddressInfo).port}/webhooks/razorpay`);
});

afterAll(async () => {
  await local.close();
  await new Promise((resolve) => receiver.close(resolve));
});

/** Presses a button of the pay page the way a browser submits its form; the redirect's Location. */
async function pressPayPage(orderId: string, action: 'pay' | 'fail' | 'pay_twice', returnUrl: string): Promise<URL> {
  const pageUrl = client.payPageUrl!(orderId, returnUrl);
  const page = await fetch(pageUrl);
  expect(page.status).toBe(200);
  const answer = await fetch(new URL(`/pay/${orderId}`, local.url), {
    method: 'POST', body: new URLSearchParams({ action, return_url: returnUrl }), redirect: 'manual',
  });
  expect(answer.status).toBe(303);
  return new URL(answer.headers.get('location')!);
}

function errorOf(promise: Promise<unknown>): Promise<GatewayError> {
  return promise.then(() => { throw new Error('expected a GatewayError'); }, (error: unknown) => {
    expect(error).toBeInstanceOf(GatewayError);
    return error as GatewayError;
  });
}

describe('the Razorpay adapter against the local provider', () => {
  it('creates an order, is paid through the pay page, verifies the Checkout signature, fetches the order and payment, and refunds', async () => {
    const order = await client.createOrder({ amountPaise: 1_18_000n, receipt: 'top_int_1', notes: { topup_id: 'top_int_1' } });
    expect(order).toEqual({ id: expect.stringMatching(/^order_/), amountPaise: 1_18_000n, amountPaidPaise: 0n, currency: 'INR', receipt: 'top_int_1', status: 'created' });

    const back = await pressPayPage(order.id, 'pay', 'http://127.0.0.1:1/#/organisations/org_1/topups/top_int_1');
    const fields = new URLSearchParams(back.hash.slice(back.hash.indexOf('?') + 1));
    const paymentId = fields.get('razorpay_payment_id')!;
    expect(fields.get('razorpay_order_id')).toBe(order.id);
    expect(client.verifyCheckoutSignature({ orderId: order.id, paymentId, signature: fields.get('razorpay_signature')! })).toBe(true);
    const forged = `${fields.get('razorpay_signature')!.slice(0, 63)}${fields.get('razorpay_signature')!.endsWith('0') ? '1' : '0'}`;
    expect(client.verifyCheckoutSignature({ orderId: order.id, paymentId, signature: forged })).toBe(false);
    expect(client.verifyCheckoutSignature({ orderId: order.id, paymentId: 'pay_someoneelse0', signature: fields.get('razorpay_signature')! })).toBe(false);

    expect(await client.fetchOrder(order.id)).toMatchObject({ id: order.id, status: 'paid', amountPaidPaise: 1_18_000n });
    const payment = await client.fetchPayment(paymentId);
    expect(payment).toEqual({ id: paymentId, orderId: order.id, amountPaise: 1_18_000n, currency: 'INR', status: 'captured', method: 'upi', errorDescription: null });
    expect(await client.fetchOrderPayments(order.id)).toEqual([payment]);

    const refund = await client.refundPayment({ paymentId, amountPaise: 18_000n, receipt: 'rfd_int_1', notes: { refund_id: 'rfd_int_1' } });
    expect(refund).toEqual({ id: expect.stringMatching(/^rfnd_/), paymentId, amountPaise: 18_000n, status: 'processed' });
    expect(local.refunds()[0]).toMatchObject({ receipt: 'rfd_int_1', notes: { refund_id: 'rfd_int_1' } });
  });

  it('verifies the provider\'s webhooks with the webhook secret, and refuses a forged or re-serialised one', async () => {
    const order = await client.createOrder({ amountPaise: 50_000n, receipt: 'top_int_2', notes: {} });
    const already = webhooks.length;
    local.pay(order.id, 'pay');
    await expect.poll(() => webhooks.length).toBe(already + 2);
    for (const webhook of webhooks.slice(already)) {
      expect(client.verifyWebhookSignature(webhook.body, webhook.signature)).toBe(true);
      expect(webhook.eventId).toMatch(/^[A-Za-z0-9]{14}$/);
      const parsed = JSON.parse(webhook.body.toString()) as { event: string; payload: { payment: { entity: { order_id: string } } } };
      expect(parsed.payload.payment.entity.order_id).toBe(order.id);
      expect(client.verifyWebhookSignature(Buffer.from(JSON.stringify(parsed, null, 1)), webhook.signature)).toBe(false);
      const tampered = Buffer.from(webhook.body.toString().replace('"amount":50000', '"amount":5000000'));
      expect(client.verifyWebhookSignature(tampered, webhook.signature)).toBe(false);
    }
    const wrongSecret = createRazorpayClient({ kind: 'local', baseUrl: local.url, ...keys, webhookSecret: 'another-webhook-secret' });
    expect(wrongSecret.verifyWebhookSignature(webhooks[already]!.body, webhooks[already]!.signature)).toBe(false);
  });

  it('reads a failed attempt with its reason', async () => {
    const order = await client.createOrder({ amountPaise: 10_000n, receipt: 'top_int_3', notes: {} });
    const back = await pressPayPage(order.id, 'fail', 'http://127.0.0.1:1/return');
    expect(back.searchParams.get('error')).toBe('payment_failed');
    const [attempt] = await client.fetchOrderPayments(order.id);
    expect(attempt).toMatchObject({ status: 'failed', method: 'upi', errorDescription: expect.stringContaining('declined') });
    expect(await client.fetchOrder(order.id)).toMatchObject({ status: 'attempted', amountPaidPaise: 0n });
  });

  it('maps the provider\'s 4xx to invalid_request with its description, never a secret', async () => {
    const order = await client.createOrder({ amountPaise: 10_000n, receipt: 'top_int_4', notes: {} });
    local.pay(order.id, 'pay');
    const [payment] = await client.fetchOrderPayments(order.id);
    const tooMuch = await errorOf(client.refundPayment({ paymentId: payment!.id, amountPaise: 10_001n, receipt: 'rfd_int_2', notes: {} }));
    expect(tooMuch.code).toBe('invalid_request');
    expect(tooMuch.publicMessage).toContain('greater than the unrefunded amount');
    const unknown = await errorOf(client.fetchOrder('order_doesnotexist00'));
    expect(unknown.code).toBe('invalid_request');
    expect(unknown.publicMessage).toContain('does not exist');
    for (const error of [tooMuch, unknown]) {
      for (const secret of [keys.keySecret, keys.webhookSecret]) {
        expect(error.publicMessage).not.toContain(secret);
        expect(error.message).not.toContain(secret);
      }
    }
  });

  it('maps refused credentials, the provider\'s 5xx, a stalled answer and a closed port to service_unavailable', async () => {
    const wrongKey = createRazorpayClient({ kind: 'local', baseUrl: local.url, ...keys, keySecret: 'not-the-key-secret' });
    const refused = await errorOf(wrongKey.createOrder({ amountPaise: 10_000n, receipt: 'top_int_5', notes: {} }));
    expect(refused.code).toBe('service_unavailable');
    expect(refused.message).toContain('401');
    expect(refused.message).not.toContain('not-the-key-secret');

    local.injectApiFault({ status: 502 });
    expect((await errorOf(client.fetchOrder('order_anything0000'))).code).toBe('service_unavailable');

    const impatient = createRazorpayClient({ kind: 'local', baseUrl: local.url, ...keys, timeoutMs: 200 });
    local.injectApiFault('stall');
    const stalled = await errorOf(impatient.fetchOrder('order_anything0000'));
    expect(stalled.code).toBe('service_unavailable');
    expect(stalled.message).toContain('timeout');

    const closed = await startLocalPayments(keys);
    const closedUrl = closed.url;
    await closed.close();
    const unreachable = await errorOf(createRazorpayClient({ kind: 'local', baseUrl: closedUrl, ...keys }).fetchPayment('pay_anything00000'));
    expect(unreachable.code).toBe('service_unavailable');
    expect(unreachable.publicMessage).toBe('The payment provider is not available right now; try again shortly.');
  });

  it('lists payments by time range (a payment without an order reads as orderId null) and captures an authorised one', async () => {
    const order = await client.createOrder({ amountPaise: 118_000n, receipt: 'top_sweep', notes: {} });
    const authorised = local.pay(order.id, 'authorize');
    const loose = local.captureWithoutOrder({ amountPaise: 5_000n });
    const now = Math.floor(Date.now() / 1000);
    const listed = await client.listPayments({ fromUnixSeconds: now - 60, toUnixSeconds: now + 60, count: 100, skip: 0 });
    expect(listed.find((payment) => payment.id === loose.id)).toMatchObject({ orderId: null, amountPaise: 5_000n, status: 'captured' });
    expect(listed.find((payment) => payment.id === authorised.paymentIds[0])).toMatchObject({ orderId: order.id, status: 'authorized' });
    const captured = await client.capturePayment({ paymentId: authorised.paymentIds[0]!, amountPaise: 118_000n, currency: 'INR' });
    expect(captured).toMatchObject({ id: authorised.paymentIds[0], orderId: order.id, amountPaise: 118_000n, status: 'captured' });
    await expect(client.capturePayment({ paymentId: authorised.paymentIds[0]!, amountPaise: 118_000n, currency: 'INR' })).rejects.toMatchObject({ code: 'invalid_request' });
  });
});
