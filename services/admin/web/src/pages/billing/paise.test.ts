import { describe, expect, it } from 'vitest';
import { formatPaise, paiseInput, rupeesToPaise } from './paise.ts';

describe('paise for payments', () => {
  it('shows paise as rupees with Indian grouping', () => {
    expect(formatPaise('118000')).toBe('₹1,180.00');
    expect(formatPaise(1_00_00_000_01n)).toBe('₹1,00,00,000.01');
    expect(formatPaise('0')).toBe('₹0.00');
  });

  it('reads typed rupees to the paisa and refuses anything finer', () => {
    expect(rupeesToPaise('1,180')).toBe('118000');
    expect(rupeesToPaise('₹ 499.5')).toBe('49950');
    expect(rupeesToPaise('0.01')).toBe('1');
    expect(() => rupeesToPaise('0.001')).toThrow(/one paisa/);
    expect(() => rupeesToPaise('-5')).toThrow(/Enter an amount/);
  });

  it('gives paise back as an editable amount', () => {
    expect(paiseInput('118000')).toBe('1180');
    expect(paiseInput('49950')).toBe('499.5');
    expect(paiseInput('7')).toBe('0.07');
  });
});
