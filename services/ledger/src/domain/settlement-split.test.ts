import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { splitSettlement } from './settlement-split.ts';
import { maxAmountMicros } from './validation.ts';

describe('splitSettlement', () => {
  it('returns the unused hold when the cost is below the Reserve', () => {
    expect(splitSettlement(1_000_000n, 250_001n)).toEqual({
      debitedMicros: 250_001n, fromHoldMicros: 250_001n, releasedMicros: 749_999n, overrunMicros: 0n,
    });
  });

  it('reports the part beyond the Reserve as overrun', () => {
    expect(splitSettlement(1_000_000n, 1_000_007n)).toEqual({
      debitedMicros: 1_000_007n, fromHoldMicros: 1_000_000n, releasedMicros: 0n, overrunMicros: 7n,
    });
  });

  it('makes a settle with no hold (after expiry) all overrun', () => {
    expect(splitSettlement(0n, 42n)).toEqual({ debitedMicros: 42n, fromHoldMicros: 0n, releasedMicros: 0n, overrunMicros: 42n });
  });

  it('refuses negative inputs', () => {
    expect(() => splitSettlement(-1n, 0n)).toThrow(RangeError);
    expect(() => splitSettlement(0n, -1n)).toThrow(RangeError);
  });

  it('conserves money for every hold and cost', () => {
    const amount = fc.bigInt({ min: 0n, max: maxAmountMicros });
    fc.assert(fc.property(amount, amount, (held, cost) => {
      const split = splitSettlement(held, cost);
      expect(split.fromHoldMicros + split.releasedMicros).toBe(held);
      expect(split.fromHoldMicros + split.overrunMicros).toBe(cost);
      expect(split.debitedMicros).toBe(cost);
      expect(split.releasedMicros === 0n || split.overrunMicros === 0n).toBe(true);
      // what the account sees: available moves by held - cost, held drops by the whole hold
      expect(split.releasedMicros - split.overrunMicros).toBe(held - cost);
    }));
  });
});
