import { describe, expect, it } from 'vitest';
import { formatRate, placeOfSupplyText, splitInclusiveTotal } from './gst.ts';

/** A small deterministic generator (LCG), so the property checks are repeatable. */
function* pseudoRandomTotals(count: number): Generator<bigint> {
  let state = 20260401n;
  for (let i = 0; i < count; i++) {
    state = (state * 6364136223846793005n + 1442695040888963407n) % (1n << 64n);
    yield state % 100_000_000_00n; // up to ₹1 crore in paise
  }
}

describe('splitInclusiveTotal', () => {
  it('splits ₹1,180.00 at 18% into ₹1,000.00 taxable and ₹90 + ₹90 intra-state', () => {
    expect(splitInclusiveTotal({ totalPaise: 118_000n, rateBasisPoints: 1800, intraState: true })).toEqual({
      taxablePaise: 100_000n, cgstPaise: 9_000n, sgstPaise: 9_000n, igstPaise: 0n, totalPaise: 118_000n,
    });
  });

  it('puts the whole tax in IGST inter-state', () => {
    expect(splitInclusiveTotal({ totalPaise: 118_000n, rateBasisPoints: 1800, intraState: false })).toEqual({
      taxablePaise: 100_000n, cgstPaise: 0n, sgstPaise: 0n, igstPaise: 18_000n, totalPaise: 118_000n,
    });
  });

  it('rounds the taxable value half up and, intra-state, puts an odd paisa of tax in the taxable value so CGST = SGST', () => {
    // ₹500.00 at 18%: 50000 × 10000 / 11800 = 42372.88… → 42373; tax 7627 is odd → taxable 42374, CGST = SGST = 3813
    expect(splitInclusiveTotal({ totalPaise: 50_000n, rateBasisPoints: 1800, intraState: true })).toEqual({
      taxablePaise: 42_374n, cgstPaise: 3_813n, sgstPaise: 3_813n, igstPaise: 0n, totalPaise: 50_000n,
    });
    // ₹999.00 at 18%: 99900 × 10000 / 11800 = 84661.01… → 84661; tax 15239 is odd → taxable 84662, CGST = SGST = ₹76.19
    expect(splitInclusiveTotal({ totalPaise: 99_900n, rateBasisPoints: 1800, intraState: true })).toEqual({
      taxablePaise: 84_662n, cgstPaise: 7_619n, sgstPaise: 7_619n, igstPaise: 0n, totalPaise: 99_900n,
    });
    // inter-state the tax is one amount: nothing moves
    expect(splitInclusiveTotal({ totalPaise: 99_900n, rateBasisPoints: 1800, intraState: false })).toEqual({
      taxablePaise: 84_661n, cgstPaise: 0n, sgstPaise: 0n, igstPaise: 15_239n, totalPaise: 99_900n,
    });
    // exact halves at 100%: 1 × 10000 / 20000 = 0.5 → 1; 3 × 10000 / 20000 = 1.5 → 2
    expect(splitInclusiveTotal({ totalPaise: 1n, rateBasisPoints: 10_000, intraState: false }).taxablePaise).toBe(1n);
    expect(splitInclusiveTotal({ totalPaise: 3n, rateBasisPoints: 10_000, intraState: false }).taxablePaise).toBe(2n);
  });

  it('has no tax at a zero rate', () => {
    expect(splitInclusiveTotal({ totalPaise: 12_345n, rateBasisPoints: 0, intraState: true })).toEqual({
      taxablePaise: 12_345n, cgstPaise: 0n, sgstPaise: 0n, igstPaise: 0n, totalPaise: 12_345n,
    });
  });

  it('always adds up to the total, never goes negative, and keeps tax within a paisa of the rate (2,000 totals × rates)', () => {
    for (const totalPaise of pseudoRandomTotals(2_000)) {
      for (const rateBasisPoints of [0, 500, 1200, 1800, 2800, 10_000]) {
        for (const intraState of [true, false]) {
          const split = splitInclusiveTotal({ totalPaise, rateBasisPoints, intraState });
          expect(split.taxablePaise + split.cgstPaise + split.sgstPaise + split.igstPaise).toBe(totalPaise);
          for (const part of [split.taxablePaise, split.cgstPaise, split.sgstPaise, split.igstPaise]) expect(part >= 0n).toBe(true);
          if (intraState) {
            expect(split.igstPaise).toBe(0n);
            expect(split.sgstPaise).toBe(split.cgstPaise);
          } else {
            expect(split.cgstPaise + split.sgstPaise).toBe(0n);
          }
          // tax vs taxable × rate: off by at most the half paisa of the taxable value's rounding, scaled by (1 + rate)
          const tax = totalPaise - split.taxablePaise;
          const exactTaxTimes10000 = split.taxablePaise * BigInt(rateBasisPoints);
          const deviation = tax * 10_000n - exactTaxTimes10000;
          // half a paisa of rounding, plus (intra-state) the odd paisa moved from tax to taxable value
          const bound = (10_000n + BigInt(rateBasisPoints)) / 2n + (intraState ? 10_000n + BigInt(rateBasisPoints) : 0n);
          expect(deviation <= bound && deviation >= -bound).toBe(true);
        }
      }
    }
  });

  it('refuses a negative total and an out-of-range rate', () => {
    expect(() => splitInclusiveTotal({ totalPaise: -1n, rateBasisPoints: 1800, intraState: true })).toThrow(RangeError);
    expect(() => splitInclusiveTotal({ totalPaise: 1n, rateBasisPoints: 10_001, intraState: true })).toThrow(RangeError);
    expect(() => splitInclusiveTotal({ totalPaise: 1n, rateBasisPoints: 18.5, intraState: true })).toThrow(RangeError);
  });
});

describe('document text', () => {
  it('formats rates as percentages', () => {
    expect(formatRate(1800)).toBe('18%');
    expect(formatRate(250)).toBe('2.5%');
    expect(formatRate(900)).toBe('9%');
    expect(formatRate(9)).toBe('0.09%');
    expect(formatRate(25 / 2)).toBe('0.125%');
  });

  it('names the place of supply with its state code', () => {
    expect(placeOfSupplyText('29')).toBe('Karnataka (29)');
    expect(placeOfSupplyText('27')).toBe('Maharashtra (27)');
    expect(placeOfSupplyText('42')).toBe('State code 42');
  });
});
