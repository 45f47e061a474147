import { decideSlidingWindow, rpmWindowMs, type RateLimitDecision, type RateLimiter } from '../domain/rate-limit.ts';

/**
 * The in-process limiter, for a single replica (no REDIS_URL). Same semantics as the Redis
 * one; its pools are per process, so with N replicas the effective limit would be N × limit.
 */
export class InProcessRateLimiter implements RateLimiter {
  readonly #pools = new Map<string, number[]>();
  readonly #now: () => number;
  readonly #windowMs: number;
  readonly #sweepTimer: NodeJS.Timeout;

  /** `now` is injectable for tests; the sweep drops pools idle for a whole window. */
  constructor(options: { now?: () => number; windowMs?: number } = {}) {
    this.#now = options.now ?? Date.now;
    this.#windowMs = options.windowMs ?? rpmWindowMs;
    this.#sweepTimer = setInterval(() => this.sweep(), this.#windowMs);
    this.#sweepTimer.unref();
  }

  /** Counts one request against a pool, if it fits. */
  consume(poolId: string, limit: number): Promise<RateLimitDecision> {
    return Promise.resolve(this.decideNow(poolId, limit));
  }

  /** consume() without the promise: an in-process pool always decides at once. */
  decideNow(poolId: string, limit: number): RateLimitDecision {
    let admitted = this.#pools.get(poolId);
    if (admitted === undefined) {
      admitted = [];
      this.#pools.set(poolId, admitted);
    }
    return decideSlidingWindow(admitted, limit, this.#now(), this.#windowMs);
  }

  /** Forgets pools whose newest admission has left the window (memory stays bounded by active pools). */
  sweep(): void {
    const cutoff = this.#now() - this.#windowMs;
    for (const [poolId, admitted] of this.#pools) {
      const newest = admitted.at(-1);
      if (newest === undefined || newest <= cutoff) this.#pools.delete(poolId);
    }
  }

  /** Stops the sweep timer. */
  close(): Promise<void> {
    clearInterval(this.#sweepTimer);
    this.#pools.clear();
    return Promise.resolve();
  }
}
