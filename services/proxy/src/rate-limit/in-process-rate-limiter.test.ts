import { describe, expect, it } from 'vitest';
import { InProcessRateLimiter } from './in-process-rate-limiter.ts';

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
