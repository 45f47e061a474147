/**
 * Requests-per-minute pools. Semantics (the same in Redis and in process): a sliding window
 * log. A request is admitted when fewer than `limit` requests of the same pool were admitted
 * in the last 60 s; refused requests are not counted. So there are never more than `limit`
 * admitted requests in any 60-second window, which is what "requests per minute" promises.
 */

/** Length of the RPM window, ms. */
export const rpmWindowMs = 60_000;

/** The outcome of asking a pool for one request. */
export interface RateLimitDecision {
  allowed: boolean;
  /** The pool's limit, requests per window. */
  limit: number;
  /** Requests still admissible in the current window after this one. */
  remaining: number;
  /** When refused: how long until one request is admissible again, ms. 0 when allowed. */
  retryAfterMs: number;
  /** How long until the pool is back to its full limit, ms. */
  resetMs: number;
}

/** A requests-per-minute limiter holding one pool per id (the organisation id). */
export interface RateLimiter {
  /** Counts one request against a pool, if it fits. `requestId` makes the entry unique. */
  consume(poolId: string, limit: number, requestId: string): Promise<RateLimitDecision>;
  /**
   * The same decision synchronously when it needs no I/O (a leased token, a pool known to be
   * full, an in-process pool), or undefined when consume() must be awaited: saves a promise
   * per request on the hot path. Optional; a caller that never uses it loses nothing.
   */
  decideNow?(poolId: string, limit: number): RateLimitDecision | undefined;
  close(): Promise<void>;
}

/**
 * How many tokens one lease from a shared pool admits (tokens, the Redis script mirrors it
 * line for line). `free` = limit minus the pool's counted entries, `need` = requests waiting
 * for a token now, `want` (>= need) = need plus the tokens the replica expects to use within
 * one lease. Waiting requests get what fits, exactly as per-request admission would give them
 * (their tokens are used at once). The speculative part, which may lapse unused, is at most a
 * quarter of what the waiting requests leave free: near the limit (fewer than 4 free after
 * them) it is 0 and the pool is exactly as strict as per-request admission; far from it, R
 * replicas leasing at once still leave at least (3/4)^R of the free tokens to the others.
 */
export function rpmLeaseSize(free: number, need: number, want: number): number {
  if (free <= 0) return 0;
  const forWaiting = Math.min(need, free);
  const spare = Math.max(0, Math.min(want - forWaiting, Math.floor((free - forWaiting) / 4)));
  return forWaiting + spare;
}

/**
 * Tokens a replica asks one lease for: every waiting request, plus speculation from its
 * recent demand (`recentDemand` = requests in the last lease period) capped by `leaseMax`.
 */
export function rpmLeaseWant(need: number, recentDemand: number, leaseMax: number): number {
  return Math.max(need, Math.min(leaseMax, recentDemand), 1);
}

/** Index of the first element >= value in an ascending array. */
function lowerBound(sorted: readonly number[], value: number): number {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (sorted[middle]! < value) low = middle + 1;
    else high = middle;
  }
  return low;
}

/**
 * Decides one request of a sliding window log, mutating `admitted` (ascending admission
 * times, ms). Pure apart from that array, so the Redis script and this share one reading.
 */
export function decideSlidingWindow(admitted: number[], limit: number, nowMs: number, windowMs: number = rpmWindowMs): RateLimitDecision {
  // An entry admitted at t counts while t > now - window.
  admitted.splice(0, lowerBound(admitted, nowMs - windowMs + 1));
  const count = admitted.length;
  if (count < limit) {
    admitted.push(nowMs);
    return { allowed: true, limit, remaining: limit - count - 1, retryAfterMs: 0, resetMs: windowMs };
  }
  // Refused: one slot frees when the entry at index (count - limit) leaves the window.
  const freeingAt = admitted[count - limit]! + windowMs;
  const newest = admitted[count - 1]!;
  return { allowed: false, limit, remaining: 0, retryAfterMs: Math.max(1, freeingAt - nowMs), resetMs: Math.max(1, newest + windowMs - nowMs) };
}

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

/** A duration in OpenAI's header style: `250ms`, `1s`, `59.5s`, `1m0s`. */
export function formatResetDuration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.ceil(ms))}ms`;
  const minutes = Math.floor(ms / 60_000);
  const seconds = Math.round((ms - minutes * 60_000) / 1000 * 1000) / 1000;
  return minutes > 0 ? `${minutes}m${seconds}s` : `${seconds}s`;
}

/** The `x-ratelimit-*` headers OpenAI clients read, for a decision. */
export function rateLimitHeaders(decision: RateLimitDecision): Record<string, string> {
  return {
    'x-ratelimit-limit-requests': String(decision.limit),
    'x-ratelimit-remaining-requests': String(decision.remaining),
    'x-ratelimit-reset-requests': formatResetDuration(decision.resetMs),
  };
}

/** Retry-After in whole seconds (rounded up, at least 1) for a refused decision. */
export function retryAfterSeconds(decision: RateLimitDecision): number {
  return Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
}
