/** Asia/Kolkata day arithmetic for SummarizeUsage: which part of a window the daily roll-ups answer and which the raw records do. */

/** India Standard Time's offset from UTC, ms: +05:30, without daylight saving since 1945 (every date a usage record can have). */
const istOffsetMs = 19_800_000n;
/** One day, ms. */
const dayMs = 86_400_000n;

/** How a window splits: whole Asia/Kolkata days, read from the daily roll-ups, and the partial days at its edges, read from raw records. */
interface UsageWindowSplit {
  /** Whether any whole day lies in the window. */
  hasWholeDays: boolean;
  /** First whole day, e.g. '2026-11-01'; null: from the first day there is. */
  wholeDaysFrom: string | null;
  /** The day after the last whole day (exclusive); null: up to the last day there is. */
  wholeDaysTo: string | null;
  /** Ranges of raw records outside the whole days, ms since the epoch (from inclusive, to exclusive); at most two. */
  rawRanges: Array<{ fromMs: bigint; toMs: bigint }>;
}

/** The start of the Asia/Kolkata day that contains an instant, ms since the epoch. */
function istDayStartMs(instantMs: bigint): bigint {
  const shifted = instantMs + istOffsetMs;
  const floorDays = shifted >= 0n ? shifted / dayMs : -((-shifted + dayMs - 1n) / dayMs);
  return floorDays * dayMs - istOffsetMs;
}

/** The Asia/Kolkata date of a day that starts at `dayStartMs`, e.g. '2026-11-21'. */
function istDate(dayStartMs: bigint): string {
  return new Date(Number(dayStartMs + istOffsetMs)).toISOString().slice(0, 10);
}

/**
 * Splits a SummarizeUsage window (ms since the epoch, 0 = unbounded) into the whole Asia/Kolkata
 * days inside it and the partial days at its ends: a month's or a day's window is whole days
 * only, so it reads roll-ups alone, however many records the days hold.
 */
export function splitUsageWindow(fromMs: bigint, toMs: bigint): UsageWindowSplit {
  const from = fromMs > 0n ? fromMs : null;
  const to = toMs > 0n ? toMs : null;
  const wholeStart = from === null ? null : (istDayStartMs(from) === from ? from : istDayStartMs(from) + dayMs);
  const wholeEnd = to === null ? null : istDayStartMs(to);
  if (wholeStart !== null && wholeEnd !== null && wholeStart >= wholeEnd) {
    return { hasWholeDays: false, wholeDaysFrom: null, wholeDaysTo: null, rawRanges: [{ fromMs: from!, toMs: to! }] };
  }
  const rawRanges: UsageWindowSplit['rawRanges'] = [];
  if (from !== null && wholeStart !== null && from < wholeStart) rawRanges.push({ fromMs: from, toMs: wholeStart });
  if (to !== null && wholeEnd !== null && wholeEnd < to) rawRanges.push({ fromMs: wholeEnd, toMs: to });
  return {
    hasWholeDays: true,
    wholeDaysFrom: wholeStart === null ? null : istDate(wholeStart),
    wholeDaysTo: wholeEnd === null ? null : istDate(wholeEnd),
    rawRanges,
  };
}

/** The first and last Asia/Kolkata days a raw range touches, e.g. ['2026-11-21', '2026-11-21']. */
export function rangeDays(range: { fromMs: bigint; toMs: bigint }): [string, string] {
  return [istDate(istDayStartMs(range.fromMs)), istDate(istDayStartMs(range.toMs - 1n))];
}
