import { describe, expect, it } from 'vitest';
import { refundDebitMicros } from './refund-debit-micros.ts';

describe('refundDebitMicros', () => {
  const topUp = { creditMicros: 1_000_000_000n, pricePaise: 118_000n };

  it('returns the credit in proportion to the part of the price refunded', () => {
    expect(refundDebitMicros(topUp, 118_000n)).toBe(1_000_000_000n);
    expect(refundDebitMicros(topUp, 59_000n)).toBe(500_000_000n);
  });

  it('rounds down, so the refunds of a top-up never take more than it credited', () => {
    // 1,000,000,000 × 100 / 118,000 = 847,457.627… µ₹
    expect(refundDebitMicros(topUp, 100n)).toBe(847_457n);
    const parts = [100n, 333n, 117_567n];
    expect(parts.reduce((sum, part) => sum + part, 0n)).toBe(topUp.pricePaise);
    expect(parts.reduce((sum, part) => sum + refundDebitMicros(topUp, part), 0n)).toBeLessThanOrEqual(topUp.creditMicros);
  });

  it('stays exact for amounts far beyond a JavaScript number', () => {
    expect(refundDebitMicros({ creditMicros: 9_007_199_254_740_993_000n, pricePaise: 3n }, 1n)).toBe(3_002_399_751_580_331_000n);
  });
});
