import { describe, expect, it } from 'vitest';
import { rpmLeaseSize } from '../test-support/rpm-lease-model.ts';
import { decideSlidingWindow, rateLimitHeaders, retryAfterSeconds, rpmLeaseWant } from './rate-limit.ts';

describe('the sliding window log', () => {
  it('admits the limit within any 60 s, and frees a slot exactly when the oldest admission leaves', () => {
    const admitted: number[] = [];
    expect(decideSlidingWindow(admitted, 2, 1000)).toMatchObject({ allowed: true, remaining: 1, resetMs: 60_000 });
    expect(decideSlidingWindow(admitted, 2, 31_000)).toMatchObject({ allowed: true, remaining: 0 });
    expect(decideSlidingWindow(admitted, 2, 60_999)).toEqual({ allowed: false, limit: 2, remaining: 0, retryAfterMs: 1, resetMs: 30_001 });
    expect(decideSlidingWindow(admitted, 2, 61_000)).toMatchObject({ allowed: true, remaining: 0 });
    expect(admitted).toEqual([31_000, 61_000]);
  });

  it('does not count refused requests, and handles a limit lowered below the current count', () => {
    const admitted = [0, 10, 20, 30];
    // Two must leave before one fits: the one admitted at 20 is the second to go.
    expect(decideSlidingWindow(admitted, 2, 40)).toMatchObject({ allowed: false, retryAfterMs: 60_020 - 40 });
    expect(admitted).toHaveLength(4);
  });
});

describe('rate-limit headers', () => {
  it('formats durations the way OpenAI does and rounds Retry-After up', () => {
    const resetOf = (resetMs: number) => rateLimitHeaders({ allowed: true, limit: 5, remaining: 4, retryAfterMs: 0, resetMs })['x-ratelimit-reset-requests'];
    expect(resetOf(250)).toBe('250ms');
    expect(resetOf(1000)).toBe('1s');
    expect(resetOf(59_500)).toBe('59.5s');
    expect(resetOf(60_000)).toBe('1m0s');
    const refused = { allowed: false, limit: 5, remaining: 0, retryAfterMs: 1001, resetMs: 42_000 };
    expect(retryAfterSeconds(refused)).toBe(2);
    expect(rateLimitHeaders(refused)).toEqual({
      'x-ratelimit-limit-requests': '5', 'x-ratelimit-remaining-requests': '0', 'x-ratelimit-reset-requests': '42s',
    });
  });
});

describe('the RPM lease size (rpm-lease-script.int.test.ts holds the Redis script to it)', () => {
  it('gives waiting requests what fits and speculates at most a quarter of what they leave free', () => {
    expect(rpmLeaseSize(100, 1, 8)).toBe(8); // far from the limit: the whole want (it includes the waiting one)
    expect(rpmLeaseSize(21, 1, 8)).toBe(1 + 5); // (21 - 1) / 4 = 5 spare
    expect(rpmLeaseSize(10, 3, 8)).toBe(3 + 1); // (10 - 3) / 4 = 1
    expect(rpmLeaseSize(4, 1, 8)).toBe(1); // near the limit: per-request exactness, no spare
    expect(rpmLeaseSize(5, 9, 9)).toBe(5); // more waiting than fits: all that fits, nothing more
    expect(rpmLeaseSize(0, 1, 8)).toBe(0);
    expect(rpmLeaseSize(-3, 1, 8)).toBe(0); // a limit lowered below the count
    expect(rpmLeaseSize(1000, 50, 50)).toBe(50); // no speculation asked for
  });

  it('never admits more than is free, never less than min(need, free)', () => {
    for (let free = -2; free <= 40; free += 1) {
      for (let need = 1; need <= 12; need += 1) {
        for (let want = need; want <= need + 10; want += 1) {
          const size = rpmLeaseSize(free, need, want);
          expect(size).toBeLessThanOrEqual(Math.max(0, free));
          expect(size).toBeGreaterThanOrEqual(Math.min(need, Math.max(0, free)));
          expect(size).toBeLessThanOrEqual(want);
        }
      }
    }
  });

  it('wants every waiting request plus the recent demand, capped by the lease max, at least 1', () => {
    expect(rpmLeaseWant(1, 0, 8)).toBe(1);
    expect(rpmLeaseWant(1, 30, 8)).toBe(8);
    expect(rpmLeaseWant(3, 5, 8)).toBe(5);
    expect(rpmLeaseWant(20, 5, 8)).toBe(20); // waiting requests are never capped: their tokens are used at once
  });
});
