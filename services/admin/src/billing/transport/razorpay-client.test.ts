import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createRazorpayClient, parseProviderJson, sanitiseDescription } from './razorpay-client.ts';

const options = { baseUrl: 'http://127.0.0.1:9', keyId: 'rzp_test_UnitKey0001', keySecret: 'unit-key-secret', webhookSecret: 'unit-webhook-secret' };

describe('the Razorpay adapter, without a network', () => {
  it('verifies a Checkout signature (HMAC-SHA256 of order_id|payment_id with the key secret, hex) and refuses anything else', () => {
    const client = createRazorpayClient({ ...options, kind: 'razorpay' });
    const signature = createHmac('sha256', options.keySecret).update('order_A|pay_B').digest('hex');
    expect(client.verifyCheckoutSignature({ orderId: 'order_A', paymentId: 'pay_B', signature })).toBe(true);
    expect(client.verifyCheckoutSignature({ orderId: 'order_A', paymentId: 'pay_B', signature: signature.toUpperCase() })).toBe(true);
    expect(client.verifyCheckoutSignature({ orderId: 'order_A', paymentId: 'pay_C', signature })).toBe(false);
    expect(client.verifyCheckoutSignature({ orderId: 'order_A', paymentId: 'pay_B', signature: signature.slice(0, 62) })).toBe(false);
    expect(client.verifyCheckoutSignature({ orderId: 'order_A', paymentId: 'pay_B', signature: `${signature}00` })).toBe(false);
    expect(client.verifyCheckoutSignature({ orderId: 'order_A', paymentId: 'pay_B', signature: 'z'.repeat(64) })).toBe(false);
    const withWebhookSecret = createHmac('sha256', options.webhookSecret).update('order_A|pay_B').digest('hex');
    expect(client.verifyCheckoutSignature({ orderId: 'order_A', paymentId: 'pay_B', signature: withWebhookSecret })).toBe(false);
  });

  it('verifies a webhook signature over the raw bytes with the webhook secret; a re-serialised body fails', () => {
    const client = createRazorpayClient({ ...options, kind: 'razorpay' });
    const raw = Buffer.from('{"event":"payment.captured", "payload":{}}');
    const signature = createHmac('sha256', options.webhookSecret).update(raw).digest('hex');
    expect(client.verifyWebhookSignature(raw, signature)).toBe(true);
    expect(client.verifyWebhookSignature(Buffer.from(JSON.stringify(JSON.parse(raw.toString()))), signature)).toBe(false);
    expect(client.verifyWebhookSignature(raw, undefined)).toBe(false);
    expect(client.verifyWebhookSignature(raw, '')).toBe(false);
    expect(client.verifyWebhookSignature(raw, createHmac('sha256', options.keySecret).update(raw).digest('hex'))).toBe(false);
  });

  it('accepts the previous webhook secret until the end of its window (Razorpay retries older events signed with it), never after', () => {
    const raw = Buffer.from('{"event":"payment.captured","payload":{}}');
    const signedWithOld = createHmac('sha256', 'the-old-webhook-secret').update(raw).digest('hex');
    const current = createRazorpayClient({ ...options, kind: 'razorpay', previousWebhookSecret: { secret: 'the-old-webhook-secret', until: new Date(Date.now() + 60_000) } });
    expect(current.verifyWebhookSignature(raw, signedWithOld)).toBe(true);
    expect(current.verifyWebhookSignature(raw, createHmac('sha256', options.webhookSecret).update(raw).digest('hex'))).toBe(true);
    const ended = createRazorpayClient({ ...options, kind: 'razorpay', previousWebhookSecret: { secret: 'the-old-webhook-secret', until: new Date(Date.now() - 1) } });
    expect(ended.verifyWebhookSignature(raw, signedWithOld)).toBe(false);
    expect(createRazorpayClient({ ...options, kind: 'razorpay' }).verifyWebhookSignature(raw, signedWithOld)).toBe(false);
  });

  it('offers a pay page only for the local provider, returning to the given URL', () => {
    expect(createRazorpayClient({ ...options, kind: 'razorpay' }).payPageUrl).toBeUndefined();
    const local = createRazorpayClient({ ...options, kind: 'local', baseUrl: 'http://127.0.0.1:8790/' });
    expect(local.kind).toBe('local');
    expect(local.keyId).toBe(options.keyId);
    expect(local.payPageUrl!('order_A', 'http://dash/#/topups/top_1'))
      .toBe('http://127.0.0.1:8790/pay/order_A?return_url=http%3A%2F%2Fdash%2F%23%2Ftopups%2Ftop_1');
  });

  it('reads amounts as exact bigint paise from the JSON text, and leaves other numbers alone', () => {
    const parsed = parseProviderJson('{"amount":9007199254740993,"amount_paid":118000,"attempts":1,"created_at":1700000000}') as Record<string, unknown>;
    expect(parsed).toEqual({ amount: 9_007_199_254_740_993n, amount_paid: 118_000n, attempts: 1, created_at: 1_700_000_000 });
    expect((parseProviderJson('{"amount":1.5}') as { amount: unknown }).amount).toBe(1.5);
  });

  it('cleans a provider description: no secret, no control characters, bounded length', () => {
    expect(sanitiseDescription('bad key unit-key-secret\n\u0000here', ['unit-key-secret'])).toBe('bad key [redacted] here');
    expect(sanitiseDescription('x'.repeat(500), [])).toHaveLength(200);
  });

  it('refuses ids that are not provider ids before making a request', async () => {
    const client = createRazorpayClient({ ...options, kind: 'razorpay' });
    await expect(client.fetchOrder('../payments/pay_1')).rejects.toMatchObject({ code: 'invalid_request' });
    await expect(client.fetchPayment('pay_1?x=1')).rejects.toMatchObject({ code: 'invalid_request' });
    await expect(client.createOrder({ amountPaise: 0n, receipt: 'top_1', notes: {} })).rejects.toMatchObject({ code: 'invalid_request' });
  });
});
