import { describe, expect, it } from 'vitest';
import { formatInr, formatInrExact } from './inr-text.ts';

describe('formatInr', () => {
  it('groups rupees the Indian way and shows paise rounded half up', () => {
    expect(formatInr(0n)).toBe('₹0.00');
    expect(formatInr(1_500_000n)).toBe('₹1.50');
    expect(formatInr(999_000_000n)).toBe('₹999.00');
    expect(formatInr(100_000_000_000n)).toBe('₹1,00,000.00');
    expect(formatInr(123_456_789_012_345n)).toBe('₹12,34,56,789.01');
    expect(formatInr(5_000n)).toBe('₹0.01');
    expect(formatInr(4_999n)).toBe('₹0.00');
    expect(formatInr(-12_500_000n)).toBe('-₹12.50');
    expect(formatInr(10n ** 24n)).toBe('₹10,00,00,00,00,00,00,00,000.00');
  });
});

describe('formatInrExact', () => {
  it('shows paise as usual and any amount that is not a whole paisa exactly, to the µ₹', () => {
    expect(formatInrExact(8_000_000_000n)).toBe('₹8,000.00');
    expect(formatInrExact(290n)).toBe('₹0.00029');
    expect(formatInrExact(30_000n)).toBe('₹0.03');
    expect(formatInrExact(1_234_567_891n)).toBe('₹1,234.567891');
    expect(formatInrExact(0n)).toBe('₹0.00');
    expect(formatInrExact(-12_500_000n)).toBe('-₹12.50');
  });
});
