import { describe, expect, it } from 'vitest';
import { gstinCheckCharacter, gstinProblem } from './gstin.ts';

describe('GSTIN', () => {
  it('accepts a published GSTIN whose check character the mod-36 algorithm gives', () => {
    expect(gstinCheckCharacter('27AAPFU0939F1Z')).toBe('V');
    expect(gstinProblem('27AAPFU0939F1ZV')).toBeUndefined();
  });

  it('computes check characters that are letters and digits alike', () => {
    // By hand: all zeros sum to 0 → '0'; a leading 1 (weight 1) sums to 1 → 35 'Z'; a 1 in second place (weight 2) sums to 2 → 34 'Y'.
    expect(gstinCheckCharacter('29AAGCB7383J1Z')).toBe('4');
    expect(gstinCheckCharacter('00000000000000')).toBe('0');
    expect(gstinCheckCharacter('10000000000000')).toBe('Z');
    expect(gstinCheckCharacter('01000000000000')).toBe('Y');
  });

  it('refuses every single-character change of the check character', () => {
    for (const wrong of '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ'.replace('V', '')) {
      expect(gstinProblem(`27AAPFU0939F1Z${wrong}`)).toMatch(/check character/);
    }
  });

  it('catches a typing error in the body (one changed character, two swapped)', () => {
    expect(gstinProblem('27AAPFU0938F1ZV')).toMatch(/check character/);
    expect(gstinProblem('27AAPFU0993F1ZV')).toMatch(/check character/);
  });

  it('refuses the wrong layout before looking at the check character', () => {
    for (const bad of ['27AAPFU0939F1Z', '27AAPFU0939F1ZVV', '27aapfu0939f1zv', 'A7AAPFU0939F1ZV', '2712345678901ZV', '27AAPFU0939F0ZV', '27AAPFU0939F1Z-']) {
      expect(gstinProblem(bad)).toMatch(/15-character GSTIN/);
    }
  });

  it('refuses input that is not 14 characters of 0-9 and A-Z', () => {
    expect(() => gstinCheckCharacter('27aapfu0939f1z')).toThrow(RangeError);
    expect(() => gstinCheckCharacter('27AAPFU0939F1')).toThrow(RangeError);
  });
});
