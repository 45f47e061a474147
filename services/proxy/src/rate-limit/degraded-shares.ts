import { decideSlidingWindow, rpmWindowMs, type RateLimitDecision } from '../domain/rate-limit.ts';

/** Options of the degraded-mode book. */
export interface DegradedSharesOptions {
  /**
   * Most proxy replicas that can run at once (PROXY_REPLICAS: the HPA's maxReplicas); undefined
   * turns degraded mode off (an outage of the shared pool fails closed with 503, as without it).
   */
  replicas: number | undefined;
  /** Longest the replica admits from its share after the shared pool stopped answering, ms (PROXY_RPM_DEGRADED_MS); then 503. */
  boundMs: number;
  /** Monotonic clock, ms; injectable for tests. */
  now?: () => number;
}

/** What the limiter is doing now: leasing from the shared pool, admitting from its share, or refusing (503). */
export type RpmMode = 'shared' | 'degraded' | 'failing_closed';

/**
 * The replica's side of an outage of the shared RPM pool (docs/operations.md "When Redis is
 * down"). While the pool cannot be reached, each replica admits per organisation at most its
 * share, floor(limit / replicas), in any 60-s window, counting every request IT admitted in that
 * window (through the shared pool too): with every replica doing so, the replicas together never
 * hold more than replicas × floor(limit / replicas) <= limit from their shares. After `boundMs`
 * without the pool it refuses (the caller's 503). The requests it admitted alone are written into
 * the shared pool with their ages at its next lease (takeUnrecorded), so the pool counts them
 * once it is back and does not admit a full limit on top of them.
 */
export class DegradedShares {
  readonly #replicas: number | undefined;
  readonly #boundMs: number;
  readonly #now: () => number;
  /** Per pool: when this replica admitted requests (any path), ascending monotonic ms. */
  readonly #admitted = new Map<string, number[]>();
  /** Per pool: admissions made without the shared pool and not yet written into it, ascending ms. */
  readonly #unrecorded = new Map<string, number[]>();
  /** Monotonic ms of the first failed lease since the last one that succeeded. */
  #downSinceMs: number | undefined;

  /** See DegradedSharesOptions. */
  constructor(options: DegradedSharesOptions) {
    this.#replicas = options.replicas;
    this.#boundMs = options.boundMs;
    this.#now = options.now ?? (() => performance.now());
  }

  /** Notes a request the shared pool admitted: it counts against this replica's share if the pool goes away. */
  admittedShared(poolId: string): void {
    if (this.#replicas === undefined) return;
    let admitted = this.#admitted.get(poolId);
    if (admitted === undefined) {
      admitted = [];
      this.#admitted.set(poolId, admitted);
    }
    admitted.push(this.#now());
  }

  /** The shared pool answered a lease: the outage (if any) is over. */
  sharedPoolAnswered(): void {
    this.#downSinceMs = undefined;
  }

  /**
   * A lease on the shared pool failed: the decision from this replica's share, or undefined when
   * degraded mode is off or past its bound (the request fails closed).
   */
  decide(poolId: string, limit: number): RateLimitDecision | undefined {
    const now = this.#now();
    this.#downSinceMs ??= now;
    if (this.#replicas === undefined || now - this.#downSinceMs >= this.#boundMs) return undefined;
    const share = Math.floor(limit / this.#replicas);
    let admitted = this.#admitted.get(poolId);
    if (admitted === undefined) {
      admitted = [];
      this.#admitted.set(poolId, admitted);
    }
    if (share === 0) return { allowed: false, limit: 0, remaining: 0, retryAfterMs: rpmWindowMs, resetMs: rpmWindowMs };
    const decision = decideSlidingWindow(admitted, share, now);
    if (decision.allowed) {
      const unrecorded = this.#unrecorded.get(poolId);
      if (unrecorded === undefined) this.#unrecorded.set(poolId, [now]);
      else unrecorded.push(now);
    }
    return decision;
  }

  /**
   * The ages (ms) of the admissions the shared pool has not counted yet, for the next lease to
   * write, taken out of the book; `restore` puts them back when that lease fails.
   */
  takeUnrecorded(poolId: string): { ages: number[]; restore(): void } {
    const unrecorded = this.#unrecorded.get(poolId);
    if (unrecorded === undefined) return { ages: [], restore: () => undefined };
    this.#unrecorded.delete(poolId);
    const now = this.#now();
    // Older than a window they no longer count anywhere.
    const kept = unrecorded.filter((at) => now - at < rpmWindowMs);
    return {
      ages: kept.map((at) => now - at),
      restore: () => {
        const current = this.#unrecorded.get(poolId) ?? [];
        this.#unrecorded.set(poolId, [...kept, ...current]);
      },
    };
  }

  /** What the limiter does now, for /readyz and the rpm mode gauge. */
  mode(): RpmMode {
    if (this.#downSinceMs === undefined) return 'shared';
    return this.#replicas !== undefined && this.#now() - this.#downSinceMs < this.#boundMs ? 'degraded' : 'failing_closed';
  }

  /** Forgets admissions that left the window (memory stays bounded by the pools active in the last minute). */
  sweep(): void {
    const cutoff = this.#now() - rpmWindowMs;
    for (const book of [this.#admitted, this.#unrecorded]) {
      for (const [poolId, times] of book) {
        const kept = times.filter((at) => at > cutoff);
        if (kept.length === 0) book.delete(poolId);
        else book.set(poolId, kept);
      }
    }
  }
}
