import { describe, expect, it } from 'vitest';
import { marginPercent } from './margin.ts';

describe('marginPercent', () => {
  it('gives the margin as a share of the customer price, two decimals', () => {
    expect(marginPercent('250000', '1000000')).toBe('25.00%');
    expect(marginPercent('1', '3')).toBe('33.33%');
    expect(marginPercent('2', '3')).toBe('66.67%');
  });

  it('keeps the sign of a loss', () => {
    expect(marginPercent('-31000', '1000000')).toBe('-3.10%');
    expect(marginPercent('-1', '1000000000')).toBe('0.00%');
  });

  it('stays exact beyond the safe integer range', () => {
    expect(marginPercent('123456789012345678901', '987654321098765432109')).toBe('12.50%');
  });

  it('shows a dash when nothing was charged', () => {
    expect(marginPercent('-5000', '0')).toBe('—');
  });
});
