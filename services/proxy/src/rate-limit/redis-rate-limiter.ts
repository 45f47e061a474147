import { randomUUID } from 'node:crypto';
import type { Logger } from '@gateway/logger';
import { rpmWindowMs, type RateLimitDecision, type RateLimiter } from '../domain/rate-limit.ts';
import { closeRedisClient, createRedisClient, observed, redisUp, type RedisClient, type RedisObserver } from '../redis/redis-client.ts';
import type { RedisTarget } from '../redis/redis-target.ts';
import { DegradedShares, type RpmMode } from './degraded-shares.ts';
import { LeasedPools, type LeaseReply } from './leased-pools.ts';
import { defineRpmLeaseCommand, type RpmLeaseCommand } from './rpm-lease-script.ts';

/** Options of the Redis limiter. */
export interface RedisRateLimiterOptions {
  /** The shared Redis: one server, a Sentinel-watched master or a Cluster (redis-target.ts). */
  target: RedisTarget;
  /** Prefix of every pool key, e.g. `gw:rpm:`. */
  keyPrefix: string;
  logger: Logger;
  /** Longest a limiter call may take before the request fails closed, ms (capped at leaseMs: a later reply has lapsed). */
  commandTimeoutMs?: number;
  /** Most tokens one lease takes beyond the requests waiting (PROXY_RPM_LEASE_MAX); default 8. */
  leaseMax?: number;
  /** A leased token unused this long after its lease call was sent is spent, ms (PROXY_RPM_LEASE_MS); default 1000. */
  leaseMs?: number;
  /** Most proxy replicas at once (PROXY_REPLICAS); unset: no degraded mode, an outage fails closed. */
  replicas?: number;
  /** Longest degraded mode lasts, ms (PROXY_RPM_DEGRADED_MS); default 5 minutes. */
  degradedBoundMs?: number;
  /** The Redis metrics. */
  observer?: RedisObserver;
}

/**
 * The shared limiter, taking tokens in leases (LeasedPools) so most requests make no Redis
 * call; each lease is one run of the atomic lease script (rpm-lease-script.ts), so every proxy
 * replica shares one pool per organisation. When Redis cannot answer and no leased token is
 * left, the replica admits from its own share of each pool for a bounded time (DegradedShares,
 * docs/operations.md "When Redis is down"), then fails closed with 503: falling back to whole
 * per-replica pools would silently multiply every organisation's limit by the replica count.
 */
export class RedisRateLimiter implements RateLimiter {
  readonly #redis: RedisClient;
  readonly #leaseCommand: RpmLeaseCommand;
  readonly #keyPrefix: string;
  readonly #pools: LeasedPools;
  readonly #shares: DegradedShares;
  readonly #observer: RedisObserver | undefined;
  readonly #sweepTimer: NodeJS.Timeout;
  /** Members are `<replica uuid>:<call>:<token>`: unique across replicas, calls and tokens. */
  readonly #memberPrefix = randomUUID();
  #calls = 0;

  /** Connects lazily in the background; until the connection is up consume() answers from the degraded share or fails closed. */
  constructor(options: RedisRateLimiterOptions) {
    this.#keyPrefix = options.keyPrefix;
    this.#observer = options.observer;
    const leaseMs = options.leaseMs ?? 1000;
    this.#redis = createRedisClient(options.target, {
      name: 'rate_limiter',
      logger: options.logger,
      commandTimeoutMs: Math.min(options.commandTimeoutMs ?? 1000, leaseMs),
      // Checks issued in the same event-loop tick go out in one socket write: under load that
      // is one syscall for many requests (socket writes were the largest item of the proxy's
      // CPU profile, docs/benchmarks.md); a lone request is sent as before.
      autoPipelining: true,
      unavailableMessage: options.replicas === undefined
        ? 'Redis rate limiter unavailable; inference fails closed with 503'
        : 'Redis rate limiter unavailable; admitting each organisation\'s per-replica share for PROXY_RPM_DEGRADED_MS, then 503',
      ...(options.observer === undefined ? {} : { observer: options.observer }),
    });
    this.#leaseCommand = defineRpmLeaseCommand(this.#redis);
    this.#shares = new DegradedShares({ replicas: options.replicas, boundMs: options.degradedBoundMs ?? 300_000 });
    this.#pools = new LeasedPools({ lease: (poolId, limit, need, want) => this.#leaseCall(poolId, limit, need, want, leaseMs), leaseMax: options.leaseMax ?? 8, leaseMs });
    this.#sweepTimer = setInterval(() => {
      this.#pools.sweep();
      this.#shares.sweep();
    }, rpmWindowMs);
    this.#sweepTimer.unref();
  }

  /** Counts one request against an organisation's shared pool, if it fits: a leased token, else one shared lease call, else the degraded share. */
  consume(poolId: string, limit: number): Promise<RateLimitDecision> {
    return this.#pools.consume(poolId, limit).then(
      (decision) => this.#noted(poolId, decision),
      (error: unknown) => {
        // The shared pool did not answer: this replica's share decides, or the 503 stands.
        const degraded = this.#shares.decide(poolId, limit);
        if (degraded === undefined) throw error;
        return degraded;
      },
    );
  }

  /** The decision without a promise when a leased token or a pool known to be full decides it. */
  decideNow(poolId: string, limit: number): RateLimitDecision | undefined {
    const decision = this.#pools.decideNow(poolId, limit);
    return decision === undefined ? undefined : this.#noted(poolId, decision);
  }

  /** Unused leased tokens this replica holds for a pool (0 once they lapsed). */
  localTokens(poolId: string): number {
    return this.#pools.localTokens(poolId);
  }

  /** A shared-pool admission counts against the replica's share should Redis go away. */
  #noted(poolId: string, decision: RateLimitDecision): RateLimitDecision {
    if (decision.allowed) this.#shares.admittedShared(poolId);
    return decision;
  }

  async #leaseCall(poolId: string, limit: number, need: number, want: number, leaseMs: number): Promise<LeaseReply> {
    this.#calls += 1;
    const member = `${this.#memberPrefix}:${String(this.#calls)}`;
    const unrecorded = this.#shares.takeUnrecorded(poolId);
    try {
      const reply = await observed(this.#observer, 'rate_limiter', () => this.#leaseCommand(`${this.#keyPrefix}${poolId}`, limit, rpmWindowMs, leaseMs, need, want, member, unrecorded.ages));
      this.#shares.sharedPoolAnswered();
      return reply;
    } catch (error) {
      unrecorded.restore();
      throw error;
    }
  }

  /** Whether the connection to Redis is up now (for /readyz's body and the redis up gauge). */
  connectionState(): 'up' | 'down' {
    return redisUp(this.#redis) ? 'up' : 'down';
  }

  /** Leasing from the shared pool, admitting from the replica's share, or failing closed. */
  mode(): RpmMode {
    return this.#shares.mode();
  }

  /** Closes the connection. */
  async close(): Promise<void> {
    clearInterval(this.#sweepTimer);
    await closeRedisClient(this.#redis);
  }
}
