import { describe, expect, it } from 'vitest';
import { moneyScale, niceAxis } from './chart.tsx';

describe('niceAxis', () => {
  it('runs to a bound of 1, 2 or 5 × a power of ten just above the largest value, in whole steps', () => {
    expect(niceAxis(290n)).toEqual({ max: 500n, step: 100n }); // ₹0.00029 → axis to ₹0.0005
    expect(niceAxis(0n)).toEqual({ max: 10n, step: 2n });
    expect(niceAxis(10n)).toEqual({ max: 10n, step: 2n });
    expect(niceAxis(11n)).toEqual({ max: 20n, step: 5n });
    expect(niceAxis(1_000_001n)).toEqual({ max: 2_000_000n, step: 500_000n });
    expect(niceAxis(4_999_999_999n)).toEqual({ max: 5_000_000_000n, step: 1_000_000_000n });
  });
});

describe('moneyScale', () => {
  it('runs from ₹0 (or a nice bound below a negative bar) to a nice bound above, with exact rupee ticks', () => {
    const small = moneyScale([290n, 41n]);
    expect([small.min, small.max]).toEqual([0n, 500n]);
    const ticks = small.scale['ticks'] as { stepSize: number; callback: (value: number) => string };
    expect(ticks.stepSize).toBe(100);
    expect(ticks.callback(500)).toBe('₹0.0005');
    expect(ticks.callback(100)).toBe('₹0.0001');
    const signed = moneyScale([1_500_000n, -300_000n]);
    expect([signed.min, signed.max]).toEqual([-500_000n, 2_000_000n]);
  });
});
