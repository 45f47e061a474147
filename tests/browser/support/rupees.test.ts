import { describe, expect, it } from 'vitest';
import { expectedRupees } from './rupees.ts';

describe('the browser test\'s expected rupee text', () => {
  it('groups the Indian way and shows paise, and exactly to the µ₹ what is not a whole paisa', () => {
    expect(expectedRupees(0n)).toBe('₹0.00');
    expect(expectedRupees('4999')).toBe('₹0.004999');
    expect(expectedRupees('5000')).toBe('₹0.005');
    expect(expectedRupees('290')).toBe('₹0.00029');
    expect(expectedRupees(999_990_000n)).toBe('₹999.99');
    expect(expectedRupees('100000000000')).toBe('₹1,00,000.00');
    expect(expectedRupees(1_234_567_890_123n)).toBe('₹12,34,567.890123');
    expect(expectedRupees('123456789012345678901')).toBe('₹12,34,56,78,90,12,345.678901');
    expect(expectedRupees(-12_500_000n)).toBe('-₹12.50');
    expect(expectedRupees(-4_000n)).toBe('-₹0.004');
  });
});
