import { describe, expect, it } from 'vitest';
import { financialYearOf, formatSerial, istDate, istMonth, istMonthStart, nextIstMonth } from './invoice-serial.ts';

describe('financialYearOf', () => {
  it('turns at midnight IST between 31 March and 1 April', () => {
    expect(financialYearOf(new Date('2027-03-31T23:59:59+05:30'))).toBe('2026-27');
    expect(financialYearOf(new Date('2027-04-01T00:00:00+05:30'))).toBe('2027-28');
    // 1 April 00:00 IST is still 31 March in UTC
    expect(financialYearOf(new Date('2027-03-31T18:30:00Z'))).toBe('2027-28');
    expect(financialYearOf(new Date('2027-03-31T18:29:59.999Z'))).toBe('2026-27');
  });

  it('names a century turn with two digits', () => {
    expect(financialYearOf(new Date('2099-06-01T00:00:00+05:30'))).toBe('2099-00');
  });
});

describe('IST dates', () => {
  it('gives the date and month of issue in IST', () => {
    expect(istDate(new Date('2026-06-30T19:00:00Z'))).toBe('2026-07-01');
    expect(istMonth(new Date('2026-06-30T19:00:00Z'))).toBe('2026-07');
    expect(istDate(new Date('2026-06-30T18:29:00Z'))).toBe('2026-06-30');
  });
});

describe('formatSerial', () => {
  it('writes prefix, financial year, series and a six-digit number', () => {
    expect(formatSerial('GW', '2026-27', 'T', 1n)).toBe('GW2627T-000001');
    expect(formatSerial('GW', '2026-27', 'C', 42n)).toBe('GW2627C-000042');
  });

  it('stays within 16 characters with the longest prefix, and refuses to go past it', () => {
    expect(formatSerial('ABCD', '2026-27', 'R', 999_999n)).toHaveLength(16); // Rule 46(b)'s longest serial
    expect(formatSerial('GW', '2026-27', 'T', 99_999_999n)).toBe('GW2627T-99999999');
    expect(() => formatSerial('ABCD', '2026-27', 'R', 1_000_000n)).toThrow(RangeError);
    expect(() => formatSerial('gw', '2026-27', 'R', 1n)).toThrow(RangeError);
  });

  it('uses only the characters Rule 46 allows', () => {
    expect(formatSerial('GW', '2026-27', 'T', 123n)).toMatch(/^[A-Z0-9/-]{1,16}$/);
  });
});

describe('IST months', () => {
  it('start at 00:00 IST on the first and follow each other across a year end', () => {
    expect(istMonthStart('2026-07').toISOString()).toBe('2026-06-30T18:30:00.000Z');
    expect(nextIstMonth('2026-12')).toBe('2027-01');
    expect(nextIstMonth('2027-01')).toBe('2027-02');
    expect(nextIstMonth('2027-02')).toBe('2027-03');
  });
});
