import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { splitUsageWindow } from './usage-window.ts';

/** 2026-11-01 00:00 in Asia/Kolkata (2026-10-31T18:30Z), ms since the epoch. */
const november = BigInt(Date.UTC(2026, 9, 31, 18, 30));
const day = 86_400_000n;

/** The start of an Asia/Kolkata day given as 'YYYY-MM-DD', ms. */
const istDayStart = (date: string) => BigInt(Date.parse(`${date}T00:00:00+05:30`));

describe('splitUsageWindow: whole Asia/Kolkata days from the roll-ups, the edges from raw records', () => {
  it('reads a calendar month from roll-ups alone', () => {
    expect(splitUsageWindow(november, BigInt(Date.parse('2026-12-01T00:00:00+05:30')))).toEqual({
      hasWholeDays: true, wholeDaysFrom: '2026-11-01', wholeDaysTo: '2026-12-01', rawRanges: [],
    });
  });

  it('reads partial days at both edges from raw records, and unbounded ends from roll-ups', () => {
    expect(splitUsageWindow(november + 5n, november + 2n * day + 7n)).toEqual({
      hasWholeDays: true, wholeDaysFrom: '2026-11-02', wholeDaysTo: '2026-11-03',
      rawRanges: [{ fromMs: november + 5n, toMs: november + day }, { fromMs: november + 2n * day, toMs: november + 2n * day + 7n }],
    });
    expect(splitUsageWindow(0n, 0n)).toEqual({ hasWholeDays: true, wholeDaysFrom: null, wholeDaysTo: null, rawRanges: [] });
    expect(splitUsageWindow(0n, november + 1n)).toEqual({
      hasWholeDays: true, wholeDaysFrom: null, wholeDaysTo: '2026-11-01', rawRanges: [{ fromMs: november, toMs: november + 1n }],
    });
  });

  it('reads a window inside one day from raw records alone', () => {
    expect(splitUsageWindow(november + 1n, november + day - 1n)).toEqual({
      hasWholeDays: false, wholeDaysFrom: null, wholeDaysTo: null, rawRanges: [{ fromMs: november + 1n, toMs: november + day - 1n }],
    });
  });

  it('covers every instant of any window exactly once: whole days and raw ranges neither overlap nor leave a gap', () => {
    const instant = fc.bigInt({ min: 1n, max: 253_402_300_799_999n });
    fc.assert(fc.property(instant, instant, (a, b) => {
      const [fromMs, toMs] = a < b ? [a, b] : [b, a + 1n];
      const split = splitUsageWindow(fromMs, toMs);
      const pieces = split.rawRanges.map((range) => [range.fromMs, range.toMs] as const);
      if (split.hasWholeDays) pieces.push([istDayStart(split.wholeDaysFrom!), istDayStart(split.wholeDaysTo!)]);
      pieces.sort((x, y) => (x[0] < y[0] ? -1 : 1));
      // Contiguous from `from` to `to`, each piece non-empty; whole days start and end at Kolkata midnights.
      expect(pieces[0]![0]).toBe(fromMs);
      expect(pieces.at(-1)![1]).toBe(toMs);
      for (const [index, piece] of pieces.entries()) {
        expect(piece[0] < piece[1]).toBe(true);
        if (index > 0) expect(piece[0]).toBe(pieces[index - 1]![1]);
      }
      for (const range of split.rawRanges) expect(range.toMs - range.fromMs < day).toBe(true);
    }), { numRuns: 2_000 });
  });
});
