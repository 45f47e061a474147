import { randomUUID } from 'node:crypto';
import type { Logger } from '@gateway/logger';
import { Redis } from 'ioredis';
import { rpmWindowMs, type RateLimitDecision, type RateLimiter } from '../domain/rate-limit.ts';
import { LeasedPools, type LeaseReply } from './leased-pools.ts';
import { defineRpmLeaseCommand, type RpmLeaseCommand } from './rpm-lease-script.ts';

/** Options of the Redis limiter. */
export interface RedisRateLimiterOptions {
  url: string;
  /** Prefix of every pool key, e.g. `gw:rpm:`. */
  keyPrefix: string;
  logger: Logger;
  /** Longest a limiter call may take before the request fails closed, ms (capped at leaseMs: a later reply has lapsed). */
  commandTimeoutMs?: number;
  /** Most tokens one lease takes beyond the requests waiting (PROXY_RPM_LEASE_MAX); default 8. */
  leaseMax?: number;
  /** A leased token unused this long after its lease call was sent is spent, ms (PROXY_RPM_LEASE_MS); default 1000. */
  leaseMs?: number;
}

/**
 * The shared limiter, taking tokens in leases (LeasedPools) so most requests make no Redis
 * call; each lease is one run of the atomic lease script (rpm-lease-script.ts), so every proxy
 * replica shares one pool per organisation. When Redis cannot answer and no leased token is
 * left, requests fail closed with 503: falling back to per-replica pools would silently multiply
 * every organisation's limit by the replica count, and admitting everything would remove the
 * limit altogether.
 */
export class RedisRateLimiter implements RateLimiter {
  readonly #redis: Redis;
  readonly #leaseCommand: RpmLeaseCommand;
  readonly #keyPrefix: string;
  readonly #logger: Logger;
  readonly #pools: LeasedPools;
  readonly #sweepTimer: NodeJS.Timeout;
  /** Members are `<replica uuid>:<call>:<token>`: unique across replicas, calls and tokens. */
  readonly #memberPrefix = randomUUID();
  #calls = 0;
  #lastErrorLoggedAtMs = 0;

  /** Connects lazily in the background; consume() fails closed until the connection is up. */
  constructor(options: RedisRateLimiterOptions) {
    this.#keyPrefix = options.keyPrefix;
    this.#logger = options.logger;
    const leaseMs = options.leaseMs ?? 1000;
    const redis = new Redis(options.url, {
      // Without a connection, commands fail at once instead of queueing behind a reconnect.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: Math.min(options.commandTimeoutMs ?? 1000, leaseMs),
      connectTimeout: 2000,
      retryStrategy: (attempt) => Math.min(100 * 2 ** Math.min(attempt, 5), 2000),
      // Checks issued in the same event-loop tick go out in one socket write: under load that
      // is one syscall for many requests (socket writes were the largest item of the proxy's
      // CPU profile, docs/benchmarks.md); a lone request is sent as before.
      enableAutoPipelining: true,
    });
    this.#leaseCommand = defineRpmLeaseCommand(redis);
    redis.on('error', (error: Error) => {
      // ioredis repeats connection errors on every retry; one line per 10 s is enough.
      const now = Date.now();
      if (now - this.#lastErrorLoggedAtMs > 10_000) {
        this.#lastErrorLoggedAtMs = now;
        this.#logger.warn({ err: { message: error.message } }, 'Redis rate limiter unavailable; inference fails closed with 503');
      }
    });
    redis.on('ready', () => this.#logger.info('Redis rate limiter connected'));
    this.#redis = redis;
    this.#pools = new LeasedPools({ lease: (poolId, limit, need, want) => this.#leaseCall(poolId, limit, need, want, leaseMs), leaseMax: options.leaseMax ?? 8, leaseMs });
    this.#sweepTimer = setInterval(() => this.#pools.sweep(), rpmWindowMs);
    this.#sweepTimer.unref();
  }

  /** Counts one request against an organisation's shared pool, if it fits: a leased token, else one shared lease call. */
  consume(poolId: string, limit: number): Promise<RateLimitDecision> {
    return this.#pools.consume(poolId, limit);
  }

  /** The decision without a promise when a leased token or a pool known to be full decides it. */
  decideNow(poolId: string, limit: number): RateLimitDecision | undefined {
    return this.#pools.decideNow(poolId, limit);
  }

  /** Unused leased tokens this replica holds for a pool (0 once they lapsed). */
  localTokens(poolId: string): number {
    return this.#pools.localTokens(poolId);
  }

  async #leaseCall(poolId: string, limit: number, need: number, want: number, leaseMs: number): Promise<LeaseReply> {
    this.#calls += 1;
    const member = `${this.#memberPrefix}:${String(this.#calls)}`;
    return this.#leaseCommand(`${this.#keyPrefix}${poolId}`, limit, rpmWindowMs, leaseMs, need, want, member);
  }

  /** Whether the connection to Redis is up now (for /readyz's body; readiness does not depend on it). */
  connectionState(): 'up' | 'down' {
    return this.#redis.status === 'ready' ? 'up' : 'down';
  }

  /** Closes the connection. */
  async close(): Promise<void> {
    clearInterval(this.#sweepTimer);
    try {
      if (this.#redis.status === 'ready') await this.#redis.quit();
    } catch {
      // quit failed (connection already gone); disconnect below still frees everything.
    }
    this.#redis.disconnect();
  }
}
