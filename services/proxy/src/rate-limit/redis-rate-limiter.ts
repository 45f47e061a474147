import { GatewayError } from '@gateway/errors';
import type { Logger } from '@gateway/logger';
import { Redis } from 'ioredis';
import { rpmWindowMs, type RateLimitDecision, type RateLimiter } from '../domain/rate-limit.ts';

/**
 * The sliding window log of domain/rate-limit.ts as one atomic Lua script, so every proxy
 * replica shares one pool per organisation. Time comes from the Redis server (TIME), so
 * replicas with skewed clocks still agree. KEYS[1] = the pool's sorted set;
 * ARGV = limit, window ms, a member unique to the request.
 * Returns {allowed 0|1, remaining, retryAfterMs, resetMs}.
 */
const slidingWindowScript = `
local key = KEYS[1]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local count = redis.call('ZCARD', key)
if count < limit then
  redis.call('ZADD', key, now, ARGV[3])
  redis.call('PEXPIRE', key, window)
  return {1, limit - count - 1, 0, window}
end
local freeing = redis.call('ZRANGE', key, count - limit, count - limit, 'WITHSCORES')
local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
local retryAfter = math.max(1, tonumber(freeing[2]) + window - now)
local reset = math.max(1, tonumber(newest[2]) + window - now)
return {0, 0, retryAfter, reset}
`;

/** The custom command defineCommand adds to the client. */
interface RpmCommands {
  gatewayRpmConsume(key: string, limit: number, windowMs: number, member: string): Promise<[number, number, number, number]>;
}

/** Options of the Redis limiter. */
export interface RedisRateLimiterOptions {
  url: string;
  /** Prefix of every pool key, e.g. `gw:rpm:`. */
  keyPrefix: string;
  logger: Logger;
  /** Longest a limiter call may take before the request fails closed, ms. */
  commandTimeoutMs?: number;
}

/**
 * The shared limiter. When Redis cannot answer, requests fail closed with 503: falling back to
 * per-replica pools would silently multiply every organisation's limit by the replica count,
 * and admitting everything would remove the limit altogether.
 */
export class RedisRateLimiter implements RateLimiter {
  readonly #redis: Redis & RpmCommands;
  readonly #keyPrefix: string;
  readonly #logger: Logger;
  #lastErrorLoggedAtMs = 0;

  /** Connects lazily in the background; consume() fails closed until the connection is up. */
  constructor(options: RedisRateLimiterOptions) {
    this.#keyPrefix = options.keyPrefix;
    this.#logger = options.logger;
    const redis = new Redis(options.url, {
      // Without a connection, commands fail at once instead of queueing behind a reconnect.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: options.commandTimeoutMs ?? 1000,
      connectTimeout: 2000,
      retryStrategy: (attempt) => Math.min(100 * 2 ** Math.min(attempt, 5), 2000),
      // Checks issued in the same event-loop tick go out in one socket write: under load that
      // is one syscall for many requests (socket writes were the largest item of the proxy's
      // CPU profile, docs/benchmarks.md); a lone request is sent as before.
      enableAutoPipelining: true,
    });
    redis.defineCommand('gatewayRpmConsume', { numberOfKeys: 1, lua: slidingWindowScript });
    redis.on('error', (error: Error) => {
      // ioredis repeats connection errors on every retry; one line per 10 s is enough.
      const now = Date.now();
      if (now - this.#lastErrorLoggedAtMs > 10_000) {
        this.#lastErrorLoggedAtMs = now;
        this.#logger.warn({ err: { message: error.message } }, 'Redis rate limiter unavailable; inference fails closed with 503');
      }
    });
    redis.on('ready', () => this.#logger.info('Redis rate limiter connected'));
    this.#redis = redis as Redis & RpmCommands;
  }

  /** Counts one request against an organisation's shared pool, if it fits. */
  async consume(poolId: string, limit: number, requestId: string): Promise<RateLimitDecision> {
    let reply: [number, number, number, number];
    try {
      reply = await this.#redis.gatewayRpmConsume(`${this.#keyPrefix}${poolId}`, limit, rpmWindowMs, requestId);
    } catch (error) {
      throw new GatewayError('service_unavailable', { internalMessage: `rate limiter: ${(error as Error).message}`, cause: error });
    }
    const [allowed, remaining, retryAfterMs, resetMs] = reply.map(Number) as [number, number, number, number];
    return { allowed: allowed === 1, limit, remaining, retryAfterMs, resetMs };
  }

  /** Whether the connection to Redis is up now (for /readyz's body; readiness does not depend on it). */
  connectionState(): 'up' | 'down' {
    return this.#redis.status === 'ready' ? 'up' : 'down';
  }

  /** Closes the connection. */
  async close(): Promise<void> {
    try {
      if (this.#redis.status === 'ready') await this.#redis.quit();
    } catch {
      // quit failed (connection already gone); disconnect below still frees everything.
    }
    this.#redis.disconnect();
  }
}
