import { describe, expect, it } from 'vitest';
import { amountInWords } from './amount-in-words.ts';

/** A whole number in words, read through amountInWords (whole rupees are written "Rupees <words> Only"). */
function indianNumberInWords(value: bigint): string {
  return amountInWords(value * 100n).replace(/^Rupees (.*) Only$/, '$1');
}

describe('amountInWords', () => {
  it('writes the issue example on the Indian system', () => {
    expect(amountInWords(11_800_050n)).toBe('Rupees One Lakh Eighteen Thousand and Fifty Paise Only');
  });

  it('writes whole rupees without paise, and paise alone without rupees', () => {
    expect(amountInWords(100n)).toBe('Rupees One Only');
    expect(amountInWords(0n)).toBe('Rupees Zero Only');
    expect(amountInWords(50n)).toBe('Fifty Paise Only');
    expect(amountInWords(1n)).toBe('One Paise Only');
    expect(amountInWords(59_900n)).toBe('Rupees Five Hundred Ninety Nine Only');
  });

  it('counts lakhs and crores, and crores beyond ninety-nine in words', () => {
    expect(indianNumberInWords(100_000n)).toBe('One Lakh');
    expect(indianNumberInWords(10_000_000n)).toBe('One Crore');
    expect(indianNumberInWords(12_34_56_789n)).toBe('Twelve Crore Thirty Four Lakh Fifty Six Thousand Seven Hundred Eighty Nine');
    expect(indianNumberInWords(1_000_00_00_000n)).toBe('One Thousand Crore');
    expect(indianNumberInWords(99_99_999n)).toBe('Ninety Nine Lakh Ninety Nine Thousand Nine Hundred Ninety Nine');
    expect(indianNumberInWords(1_01_011n)).toBe('One Lakh One Thousand Eleven');
    expect(indianNumberInWords(20n)).toBe('Twenty');
    expect(indianNumberInWords(105n)).toBe('One Hundred Five');
  });

  it('refuses a negative amount', () => {
    expect(() => amountInWords(-1n)).toThrow(RangeError);
  });
});
