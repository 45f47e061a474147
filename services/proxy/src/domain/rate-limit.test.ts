import { describe, expect, it } from 'vitest';
import { decideSlidingWindow, formatResetDuration, InProcessRateLimiter, rateLimitHeaders, retryAfterSeconds } from './rate-limit.ts';

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

describe('InProcessRateLimiter', () => {
  it('keeps one pool per id', async () => {
    let now = 0;
    const limiter = new InProcessRateLimiter({ now: () => now });
    try {
      expect((await limiter.consume('a', 1)).allowed).toBe(true);
      expect((await limiter.consume('a', 1)).allowed).toBe(false);
      expect((await limiter.consume('b', 1)).allowed).toBe(true);
      now = 60_000;
      limiter.sweep();
      expect((await limiter.consume('a', 1)).allowed).toBe(true);
    } finally {
      await limiter.close();
    }
  });
});

describe('rate-limit headers', () => {
  it('formats durations the way OpenAI does and rounds Retry-After up', () => {
    expect(formatResetDuration(250)).toBe('250ms');
    expect(formatResetDuration(1000)).toBe('1s');
    expect(formatResetDuration(59_500)).toBe('59.5s');
    expect(formatResetDuration(60_000)).toBe('1m0s');
    const refused = { allowed: false, limit: 5, remaining: 0, retryAfterMs: 1001, resetMs: 42_000 };
    expect(retryAfterSeconds(refused)).toBe(2);
    expect(rateLimitHeaders(refused)).toEqual({
      'x-ratelimit-limit-requests': '5', 'x-ratelimit-remaining-requests': '0', 'x-ratelimit-reset-requests': '42s',
    });
  });
});
