import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { formatRupees, hexHmac, newId, parseWireJson, toWireJson } from './wire.ts';
import { renderPayPage, withCheckoutFields } from './pay-page.ts';

describe('the wire format of the local payment provider', () => {
  it('reads and writes amounts in paise as exact integers, beyond what a double holds', () => {
    const parsed = parseWireJson('{"amount":9007199254740993,"amount_paid":0,"attempts":2,"notes":{"amount":"x"}}') as Record<string, unknown>;
    expect(parsed.amount).toBe(9_007_199_254_740_993n);
    expect(parsed.amount_paid).toBe(0n);
    expect(parsed.attempts).toBe(2);
    expect(toWireJson({ amount: 9_007_199_254_740_993n, notes: {} })).toBe('{"amount":9007199254740993,"notes":{}}');
  });

  it('keeps a fractional amount a number, so validation refuses it', () => {
    expect((parseWireJson('{"amount":100.5}') as { amount: unknown }).amount).toBe(100.5);
  });

  it('makes Razorpay-style ids and hex HMAC-SHA256 signatures', () => {
    expect(newId('order_')).toMatch(/^order_[A-Za-z0-9]{14}$/);
    expect(newId('pay_')).not.toBe(newId('pay_'));
    expect(hexHmac('secret', 'order_1|pay_1')).toBe(createHmac('sha256', 'secret').update('order_1|pay_1').digest('hex'));
  });

  it('formats paise as rupees with Indian grouping', () => {
    expect(formatRupees(5n)).toBe('₹0.05');
    expect(formatRupees(99_900n)).toBe('₹999.00');
    expect(formatRupees(1_00_000_00n)).toBe('₹1,00,000.00');
    expect(formatRupees(12_34_56_789_01n)).toBe('₹12,34,56,789.01');
  });
});

describe('the pay page', () => {
  it('appends the Checkout fields to the query, or to the fragment\'s query when the return URL has a fragment', () => {
    const fields = { razorpay_payment_id: 'pay_A', razorpay_order_id: 'order_B', razorpay_signature: 'ab' };
    expect(withCheckoutFields('http://host/back?x=1', fields)).toBe('http://host/back?x=1&razorpay_payment_id=pay_A&razorpay_order_id=order_B&razorpay_signature=ab');
    expect(withCheckoutFields('http://host/#/orgs/o1/topups/top_1', fields))
      .toBe('http://host/#/orgs/o1/topups/top_1?razorpay_payment_id=pay_A&razorpay_order_id=order_B&razorpay_signature=ab');
    expect(withCheckoutFields('http://host/?q=1#/billing?tab=topups', { error: 'payment_failed' }))
      .toBe('http://host/?q=1#/billing?tab=topups&error=payment_failed');
  });

  it('labels its three buttons with the amount and escapes what it echoes', () => {
    const html = renderPayPage({
      orderId: 'order_X', amountPaise: 1_18_000_00n, status: 'created', receipt: 'top_"<b>"', returnUrl: 'http://h/?a="><script>', scenario: null, notice: null,
    });
    expect(html).toContain('>Pay ₹1,18,000.00</button>');
    expect(html).toContain('>Fail payment</button>');
    expect(html).toContain('>Pay twice</button>');
    expect(html).not.toContain('<script>');
    expect(html).not.toContain('<b>');
    expect(html).toContain('value="http://h/?a=&#34;&#62;&#60;script&#62;"');
  });
});
