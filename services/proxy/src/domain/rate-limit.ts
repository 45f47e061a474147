/**
 * Requests-per-minute pools: a sliding window log. A request is admitted when fewer than
 * `limit` requests of the same pool were admitted in the last 60 s; refused requests are not
 * counted. So there are never more than `limit` admitted requests in any 60-second window,
 * which is what "requests per minute" promises. Here: the decision every pool answers with,
 * the in-process rule (decideSlidingWindow), the replica's lease want and the 429 headers. The
 * shared pool's rule is the Redis lease script (rate-limit/rpm-lease-script.ts).
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
 * times, ms): the whole rule of the in-process pool (rate-limit/in-process-rate-limiter.ts).
 * Pure apart from that array, so its tests can replay any history.
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

/** A duration in OpenAI's header style: `250ms`, `1s`, `59.5s`, `1m0s`. */
function formatResetDuration(ms: number): string {
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
