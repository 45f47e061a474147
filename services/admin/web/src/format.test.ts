import { describe, expect, it } from 'vitest';
import { formatCount, formatIst, formatRupees, rupeesToMicros } from './format.ts';

describe('formatRupees', () => {
  it('shows rupees with Indian grouping and paise, exactly from the decimal string', () => {
    expect(formatRupees('100000000000')).toBe('₹1,00,000.00');
    expect(formatRupees('0')).toBe('₹0.00');
    expect(formatRupees('1500000')).toBe('₹1.50');
    expect(formatRupees('123456789012345678901234567')).toBe('₹12,34,56,78,90,12,34,56,78,901.234567');
    expect(formatRupees(999_999_999_990_000n)).toBe('₹99,99,99,999.99');
  });

  it('shows an amount that is not a whole paisa exactly, to the micro-rupee, never as ₹0.00', () => {
    expect(formatRupees('290')).toBe('₹0.00029');
    expect(formatRupees('1')).toBe('₹0.000001');
    expect(formatRupees('4999')).toBe('₹0.004999');
    expect(formatRupees('30000')).toBe('₹0.03');
    expect(formatRupees('1234567891')).toBe('₹1,234.567891');
    expect(formatRupees('-12500000')).toBe('-₹12.50');
    expect(formatRupees('-290')).toBe('-₹0.00029');
  });

  it('rounds half away from zero to the places asked for, keeping the sign', () => {
    expect(formatRupees('4999', 2)).toBe('₹0.00');
    expect(formatRupees('5000', 2)).toBe('₹0.01');
    expect(formatRupees('-5000', 2)).toBe('-₹0.01');
    expect(formatRupees('-4999', 2)).toBe('₹0.00');
  });

  it('shows up to six decimals when asked', () => {
    expect(formatRupees('1234', 6)).toBe('₹0.001234');
    expect(formatRupees('123456789', 0)).toBe('₹123');
  });

  it('refuses what is not an amount of micro-rupees', () => {
    expect(() => formatRupees('1.5')).toThrow();
    expect(() => formatRupees('')).toThrow();
  });
});

describe('rupeesToMicros', () => {
  it('parses grouped rupees and paise into micro-rupees exactly', () => {
    expect(rupeesToMicros('1,00,000.50')).toBe('100000500000');
    expect(rupeesToMicros('100,000.50')).toBe('100000500000');
    expect(rupeesToMicros('₹ 250')).toBe('250000000');
    expect(rupeesToMicros('0.000001')).toBe('1');
    expect(rupeesToMicros('12.')).toBe('12000000');
    expect(rupeesToMicros('  9007199254740993.123456 ')).toBe('9007199254740993123456');
  });

  it('round-trips with formatRupees', () => {
    expect(formatRupees(rupeesToMicros('12,34,567.89'))).toBe('₹12,34,567.89');
  });

  it.each(['', 'abc', '-5', '1.2345678', '1,0', ',100', '1,,000', '1e6', '.5', '1.000,00'])('refuses %j', (input) => {
    expect(() => rupeesToMicros(input)).toThrow();
  });
});

describe('formatIst', () => {
  it('shows an instant in India Standard Time', () => {
    expect(formatIst('2026-11-24T12:15:00Z')).toBe('24 Nov 2026, 17:45 IST');
    expect(formatIst(Date.UTC(2026, 8, 1, 18, 30))).toBe('2 Sep 2026, 00:00 IST');
    expect(formatIst(new Date('2026-01-05T03:04:00+05:30'))).toBe('5 Jan 2026, 03:04 IST');
  });

  it('shows a dash for an invalid date', () => {
    expect(formatIst('not a date')).toBe('—');
  });
});

describe('formatCount', () => {
  it('groups counts the Indian way', () => {
    expect(formatCount(1234567)).toBe('12,34,567');
    expect(formatCount(999)).toBe('999');
    expect(formatCount(1000n)).toBe('1,000');
    expect(formatCount('-100000')).toBe('-1,00,000');
  });
});
