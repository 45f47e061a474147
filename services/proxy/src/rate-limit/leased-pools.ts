import { GatewayError } from '@gateway/errors';
import { rpmLeaseWant, type RateLimitDecision } from '../domain/rate-limit.ts';

/** What one lease call on the shared pool answered (the Redis script's reply). */
export interface LeaseReply {
  /** Tokens admitted to this replica, each usable until the lease lapses. */
  admitted: number;
  /** limit minus the pool's counted entries before this lease (>= 0): the headers' remaining. */
  free: number;
  /** When the pool is full after this lease: ms until one more token fits; 0 otherwise. */
  retryAfterMs: number;
  /** ms until the pool is back to its full limit (0 when it holds nothing). */
  resetMs: number;
}

/** Asks the shared pool for tokens: `need` for waiting requests, up to `want` in all (>= need). */
export type LeaseCall = (poolId: string, limit: number, need: number, want: number) => Promise<LeaseReply>;

/** Options of the local lease book. */
export interface LeasedPoolsOptions {
  lease: LeaseCall;
  /** Most tokens one lease takes beyond the waiting requests (PROXY_RPM_LEASE_MAX). */
  leaseMax: number;
  /** A token not used this long after its lease call was SENT is spent unused, ms (PROXY_RPM_LEASE_MS). */
  leaseMs: number;
  /** Monotonic clock, ms; injectable for tests. */
  now?: () => number;
}

interface Waiter {
  resolve(decision: RateLimitDecision): void;
  reject(error: unknown): void;
}

/** One pool's local state: its current lease, what is known about it, its waiting requests. */
interface PoolState {
  /** Limit the current lease was taken under; a changed limit leases afresh. */
  leaseLimit: number;
  tokens: number;
  /** Monotonic ms after which the leased tokens are spent (send time + leaseMs). */
  lapseAtMs: number;
  /** The pool's free tokens at the lease, minus the tokens handed out since (remaining header + handed). */
  free: number;
  handed: number;
  resetAtMs: number;
  /** Before this monotonic ms the pool is certainly full (slots only free as time passes). */
  fullUntilMs: number;
  fullLimit: number;
  waiters: Waiter[];
  leasing: boolean;
  /** Demand (consume calls) in the current and the previous lease period, for the next want. */
  periodStartMs: number;
  periodDemand: number;
  previousDemand: number;
}

/**
 * The replica's side of leased RPM tokens: per pool a local lease of tokens taken from the
 * shared pool in one call, used without any call until it runs out or lapses. The lapse is
 * measured from BEFORE the lease call was sent, so every token is used no later than the
 * score the pool logged it with (its lease time + leaseMs): the proof that no window admits
 * more than the limit rests on that (docs/proxy.md "Requests per minute"). Requests that find
 * no valid token wait for one shared lease call per pool (sent once the current I/O phase ends).
 */
export class LeasedPools {
  readonly #pools = new Map<string, PoolState>();
  readonly #lease: LeaseCall;
  readonly #leaseMax: number;
  readonly #leaseMs: number;
  readonly #now: () => number;

  /** See LeasedPoolsOptions. */
  constructor(options: LeasedPoolsOptions) {
    this.#lease = options.lease;
    this.#leaseMax = options.leaseMax;
    this.#leaseMs = options.leaseMs;
    this.#now = options.now ?? (() => performance.now());
  }

  /** A decision without I/O (a valid local token, or a pool known to be full), else undefined. */
  decideNow(poolId: string, limit: number): RateLimitDecision | undefined {
    const pool = this.#pool(poolId);
    const now = this.#now();
    const decision = this.#decideLocally(pool, limit, now);
    // Undecided, the caller goes on to consume(), which counts the request.
    if (decision !== undefined) this.#countDemand(pool, now);
    return decision;
  }

  /** Counts one request against the pool: a local token if one is valid, else via a shared lease call. */
  consume(poolId: string, limit: number): Promise<RateLimitDecision> {
    const pool = this.#pool(poolId);
    const now = this.#now();
    this.#countDemand(pool, now);
    const local = this.#decideLocally(pool, limit, now);
    if (local !== undefined) return Promise.resolve(local);
    return new Promise<RateLimitDecision>((resolve, reject) => {
      pool.waiters.push({ resolve, reject });
      this.#startLease(poolId, pool, limit);
    });
  }

  /** Unused tokens this replica holds for a pool now (0 once they lapsed); for tests and metrics. */
  localTokens(poolId: string): number {
    const pool = this.#pools.get(poolId);
    return pool !== undefined && this.#now() < pool.lapseAtMs ? pool.tokens : 0;
  }

  /** Forgets pools with nothing waiting, nothing valid and no demand for two lease periods. */
  sweep(): void {
    const now = this.#now();
    for (const [poolId, pool] of this.#pools) {
      const quiet = now - pool.periodStartMs >= 2 * this.#leaseMs;
      if (!pool.leasing && pool.waiters.length === 0 && quiet && now >= pool.lapseAtMs && now >= pool.fullUntilMs) this.#pools.delete(poolId);
    }
  }

  #pool(poolId: string): PoolState {
    let pool = this.#pools.get(poolId);
    if (pool === undefined) {
      pool = {
        leaseLimit: 0, tokens: 0, lapseAtMs: 0, free: 0, handed: 0, resetAtMs: 0, fullUntilMs: 0, fullLimit: 0,
        waiters: [], leasing: false, periodStartMs: this.#now(), periodDemand: 0, previousDemand: 0,
      };
      this.#pools.set(poolId, pool);
    }
    return pool;
  }

  /** Demand per lease period: the want of the next lease is what the last period asked for. */
  #countDemand(pool: PoolState, now: number): void {
    if (now - pool.periodStartMs >= this.#leaseMs) {
      pool.previousDemand = now - pool.periodStartMs < 2 * this.#leaseMs ? pool.periodDemand : 0;
      pool.periodDemand = 0;
      pool.periodStartMs = now;
    }
    pool.periodDemand += 1;
  }

  #decideLocally(pool: PoolState, limit: number, now: number): RateLimitDecision | undefined {
    // Waiting requests are first in line: a token never overtakes them.
    if (pool.waiters.length > 0) return undefined;
    if (pool.tokens > 0 && now < pool.lapseAtMs && pool.leaseLimit === limit) return this.#hand(pool, limit, now);
    if (now < pool.fullUntilMs && pool.fullLimit === limit) return this.#refusal(pool, limit, now);
    return undefined;
  }

  #hand(pool: PoolState, limit: number, now: number): RateLimitDecision {
    pool.tokens -= 1;
    pool.handed += 1;
    return { allowed: true, limit, remaining: Math.max(0, pool.free - pool.handed), retryAfterMs: 0, resetMs: Math.max(1, pool.resetAtMs - now) };
  }

  #refusal(pool: PoolState, limit: number, now: number): RateLimitDecision {
    return { allowed: false, limit, remaining: 0, retryAfterMs: Math.max(1, pool.fullUntilMs - now), resetMs: Math.max(1, pool.resetAtMs - now) };
  }

  /** One lease call for every request waiting on the pool; more calls follow while some still wait. */
  #startLease(poolId: string, pool: PoolState, limit: number): void {
    if (pool.leasing) return;
    pool.leasing = true;
    // Sent after the current I/O phase: every request the event loop reads in it joins this
    // one call (ioredis's auto-pipelining defers the write to about the same point anyway).
    setImmediate(() => this.#sendLease(poolId, pool, limit));
  }

  #sendLease(poolId: string, pool: PoolState, limit: number): void {
    const batch = pool.waiters.length;
    const want = rpmLeaseWant(batch, Math.max(pool.previousDemand, pool.periodDemand), this.#leaseMax);
    // The lapse counts from before the call leaves: the pool logs each token at its own (later)
    // lease time + leaseMs, so a token used before our lapse is used before its logged score.
    const sentAtMs = this.#now();
    this.#lease(poolId, limit, batch, want).then(
      (reply) => this.#onReply(pool, limit, batch, sentAtMs, reply),
      (error: unknown) => this.#failBatch(pool, batch, error),
    ).finally(() => {
      pool.leasing = false;
      if (pool.waiters.length > 0) this.#startLease(poolId, pool, limit);
    });
  }

  #onReply(pool: PoolState, limit: number, batch: number, sentAtMs: number, reply: LeaseReply): void {
    const now = this.#now();
    const lapseAtMs = sentAtMs + this.#leaseMs;
    if (now >= lapseAtMs) {
      // The tokens lapsed in transit: using them now could exceed their logged score. They are spent.
      this.#failBatch(pool, batch, new Error(`rate limiter lease answered after ${String(Math.round(now - sentAtMs))} ms, past its ${String(this.#leaseMs)} ms lapse`));
      return;
    }
    Object.assign(pool, { leaseLimit: limit, tokens: reply.admitted, lapseAtMs, free: reply.free, handed: 0, resetAtMs: sentAtMs + reply.resetMs });
    if (reply.retryAfterMs > 0) Object.assign(pool, { fullUntilMs: sentAtMs + reply.retryAfterMs, fullLimit: limit });
    while (pool.waiters.length > 0 && pool.tokens > 0) pool.waiters.shift()!.resolve(this.#hand(pool, limit, now));
    // Still waiting with no token: refused while the pool is certainly full, else leased again.
    if (pool.waiters.length > 0 && now < pool.fullUntilMs && pool.fullLimit === limit) {
      for (const waiter of pool.waiters.splice(0)) waiter.resolve(this.#refusal(pool, limit, now));
    }
  }

  /** Fails closed (503) the requests a failed lease call was for; later arrivals lease again. */
  #failBatch(pool: PoolState, batch: number, error: unknown): void {
    const failure = new GatewayError('service_unavailable', { internalMessage: `rate limiter: ${(error as Error).message}`, cause: error });
    for (const waiter of pool.waiters.splice(0, batch)) waiter.reject(failure);
  }
}
