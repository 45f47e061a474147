import { describe, expect, it } from 'vitest';
import { nextAttemptAt } from './alert-delivery.ts';

const at = (ms: number) => new Date(Date.UTC(2026, 10, 21) + ms);

describe('alert retry schedule', () => {
  it('waits base·2^(n−1) after the n-th failure, each step capped at one hour', () => {
    const schedule = { baseMs: 30_000, windowMs: 24 * 3_600_000 };
    const steps = [1, 2, 3, 4, 5, 6, 7, 8, 9, 40].map((failures) => nextAttemptAt(schedule, at(0), at(0), failures)!.getTime() - at(0).getTime());
    expect(steps).toEqual([30_000, 60_000, 120_000, 240_000, 480_000, 960_000, 1_920_000, 3_600_000, 3_600_000, 3_600_000]);
  });

  it('counts the window from the first attempt and makes no attempt after it', () => {
    const schedule = { baseMs: 100, windowMs: 1_000 };
    expect(nextAttemptAt(schedule, at(0), at(500), 3)).toEqual(at(900));
    expect(nextAttemptAt(schedule, at(0), at(600), 3)).toEqual(at(1_000));
    expect(nextAttemptAt(schedule, at(0), at(601), 3)).toBeUndefined();
  });

  it('makes about 30 attempts over a day with the defaults', () => {
    const schedule = { baseMs: 30_000, windowMs: 24 * 3_600_000 };
    let attempts = 1;
    let last = at(0);
    for (let next = nextAttemptAt(schedule, at(0), last, attempts); next; next = nextAttemptAt(schedule, at(0), last, attempts)) {
      attempts += 1;
      last = next;
    }
    expect(attempts).toBe(30);
  });
});
