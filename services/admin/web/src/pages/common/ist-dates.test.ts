import { describe, expect, it } from 'vitest';
import { istDayBefore, istDayOf, istWindowQuery } from './ist-dates.ts';

/** The bound a filter's "from" day gives the query, ms (undefined for an empty or invalid day): what the pages send. */
function istDayStartMs(day: string): number | undefined {
  const window = istWindowQuery(day, '');
  return window.ok && window.query.from !== undefined ? Number(window.query.from) : undefined;
}

/** The bound a filter's "to" day gives the query (the next day's start, exclusive), ms, or undefined. */
function istDayEndMs(day: string): number | undefined {
  const window = istWindowQuery('', day);
  return window.ok && window.query.to !== undefined ? Number(window.query.to) : undefined;
}

describe('IST calendar days', () => {
  it('starts a day at 00:00 IST, which is 18:30 UTC the day before', () => {
    expect(istDayStartMs('2026-11-01')).toBe(Date.parse('2026-10-31T18:30:00Z'));
  });

  it('ends a day at the next IST midnight (exclusive)', () => {
    expect(istDayEndMs('2026-11-01')).toBe(Date.parse('2026-11-01T18:30:00Z'));
    expect(istDayEndMs('2026-12-31')).toBe(Date.parse('2026-12-31T18:30:00Z'));
  });

  it('refuses empty, malformed and impossible dates', () => {
    expect(istDayStartMs('')).toBeUndefined();
    expect(istDayStartMs('2026-1-01')).toBeUndefined();
    expect(istDayStartMs('2026-02-30')).toBeUndefined();
    expect(istDayEndMs('2026-13-01')).toBeUndefined();
  });

  it('names the IST day an instant falls on, across the UTC date line', () => {
    expect(istDayOf(Date.parse('2026-10-31T18:29:59.999Z'))).toBe('2026-10-31');
    expect(istDayOf(Date.parse('2026-10-31T18:30:00Z'))).toBe('2026-11-01');
    expect(istDayOf(istDayStartMs('2024-02-29')!)).toBe('2024-02-29');
  });

  it('counts days back in IST', () => {
    expect(istDayBefore(Date.parse('2026-03-01T00:00:00+05:30'), 1)).toBe('2026-02-28');
    expect(istDayBefore(Date.parse('2026-03-01T00:00:00+05:30'), 0)).toBe('2026-03-01');
  });

  it('makes a from/to window of IST days (to inclusive) or says why it cannot', () => {
    expect(istWindowQuery('', '')).toEqual({ ok: true, query: {} });
    expect(istWindowQuery('2026-11-24', '2026-11-24')).toEqual({
      ok: true, query: { from: String(Date.UTC(2026, 10, 23, 18, 30)), to: String(Date.UTC(2026, 10, 24, 18, 30)) },
    });
    expect(istWindowQuery('2026-02-30', '')).toEqual({ ok: false, problem: 'The "from" date is not a valid date.' });
    expect(istWindowQuery('', 'x')).toEqual({ ok: false, problem: 'The "to" date is not a valid date.' });
    expect(istWindowQuery('2026-11-25', '2026-11-24')).toEqual({ ok: false, problem: 'The "from" date must not be after the "to" date.' });
  });
});
