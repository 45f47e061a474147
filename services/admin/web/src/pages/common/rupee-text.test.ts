import { describe, expect, it } from 'vitest';
import { exactRupees, rupeeInput } from './rupee-text.ts';

describe('exactRupees', () => {
  it('shows paise at least, and every micro-rupee there is', () => {
    expect(exactRupees('100000000000')).toBe('₹1,00,000.00');
    expect(exactRupees('125')).toBe('₹0.000125');
    expect(exactRupees('1500500000')).toBe('₹1,500.50');
    expect(exactRupees('-1234567')).toBe('-₹1.234567');
  });
});

describe('rupeeInput', () => {
  it('gives an exact plain amount a rupee field parses back', () => {
    expect(rupeeInput('1500500000')).toBe('1500.5');
    expect(rupeeInput('20000000')).toBe('20');
    expect(rupeeInput('125')).toBe('0.000125');
    expect(rupeeInput('0')).toBe('0');
    expect(rupeeInput('123456789012345678901234')).toBe('123456789012345678.901234');
  });
});
