import { describe, expect, it } from 'vitest';
import { placeOfSupplyStates } from '../../shared/gst-states.ts';
import { gstStateLabel, gstStates } from './gst-states.ts';

describe('the dashboard\'s GST states', () => {
  it('offers exactly the places of supply the server accepts: codes in force and 96, no retired code', () => {
    const codes = gstStates.map((state) => state.code);
    expect(codes).toContain('96');
    expect(codes).toContain('38');
    expect(codes).toContain('26');
    for (const retired of ['25', '28', '99']) expect(codes).not.toContain(retired);
    expect(codes).toEqual([...codes].sort());
  });

  it('still names a retired code on an old document', () => {
    expect(gstStateLabel('25')).toBe('25 · Daman and Diu (before the 2020 merger)');
    expect(gstStateLabel('96')).toBe('96 · Foreign Country');
  });

  it('is the server\'s list itself, so the picker offers exactly what a billing profile accepts (domain/billing-profile.test.ts checks the server side)', () => {
    expect(gstStates).toBe(placeOfSupplyStates);
  });
});
