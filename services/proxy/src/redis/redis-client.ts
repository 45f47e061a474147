import type { Logger } from '@gateway/logger';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { describeRedisTarget, type RedisTarget } from './redis-target.ts';

/** A client of the shared Redis in any of its shapes: both answer the same commands and custom scripts. */
export type RedisClient = Redis | Cluster;

/** Which of the proxy's Redis clients an observation is about (a bounded metric label). */
export type RedisClientName = 'rate_limiter' | 'response_store' | 'outbox';

/** Where a client reports its commands and connection errors (the proxy's Redis metrics). */
export interface RedisObserver {
  /** One command answered (`ok`) or failed, after `seconds`. */
  command(client: RedisClientName, seconds: number, ok: boolean): void;
  /** The connection reported an error (refused, reset, failover in progress). */
  connectionError(client: RedisClientName): void;
}

/** How one client behaves; the same for every target shape. */
export interface RedisClientOptions {
  name: RedisClientName;
  logger: Logger;
  /** Longest wait for one command, ms; a slower Redis counts as down. */
  commandTimeoutMs: number;
  /** Sends the commands of one event-loop tick in one write (the rate limiter's hot path). */
  autoPipelining?: boolean;
  /** The log line for a connection error (at most one per 10 s): what the outage costs this client. */
  unavailableMessage: string;
  observer?: RedisObserver;
}

/**
 * Builds a client of the shared Redis: the one place REDIS_URL, Sentinel and Cluster become an
 * ioredis client. Without a connection commands fail at once instead of queueing behind a
 * reconnect (the callers decide what an outage costs); ioredis itself follows a Sentinel
 * failover (asks the Sentinels for the new master, checks its role) and a Cluster's slot moves.
 */
export function createRedisClient(target: RedisTarget, options: RedisClientOptions): RedisClient {
  const common: RedisOptions = {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: options.commandTimeoutMs,
    connectTimeout: 2000,
    enableAutoPipelining: options.autoPipelining ?? false,
  };
  const retryStrategy = (attempt: number) => Math.min(100 * 2 ** Math.min(attempt, 5), 2000);
  let client: RedisClient;
  switch (target.kind) {
    case 'url':
      client = new Redis(target.url, { ...common, retryStrategy });
      break;
    case 'sentinel':
      client = new Redis({
        ...common,
        retryStrategy,
        sentinels: target.sentinels,
        name: target.masterName,
        ...(target.password === undefined ? {} : { password: target.password }),
        ...(target.sentinelPassword === undefined ? {} : { sentinelPassword: target.sentinelPassword }),
        ...(target.tls ? { tls: {}, enableTLSForSentinelMode: true } : {}),
        // Keep asking the Sentinels while none answers: the client must come back by itself.
        sentinelRetryStrategy: retryStrategy,
      });
      break;
    case 'cluster':
      client = new Cluster(target.nodes, {
        enableOfflineQueue: false,
        enableAutoPipelining: options.autoPipelining ?? false,
        clusterRetryStrategy: retryStrategy,
        redisOptions: {
          maxRetriesPerRequest: 0, commandTimeout: options.commandTimeoutMs, connectTimeout: 2000,
          ...(target.password === undefined ? {} : { password: target.password }),
          ...(target.tls ? { tls: {} } : {}),
        },
      });
      break;
  }
  let lastErrorLoggedAtMs = 0;
  client.on('error', (error: Error) => {
    options.observer?.connectionError(options.name);
    // ioredis repeats connection errors on every retry; one line per 10 s is enough.
    const now = Date.now();
    if (now - lastErrorLoggedAtMs > 10_000) {
      lastErrorLoggedAtMs = now;
      options.logger.warn({ err: { message: error.message }, redis: describeRedisTarget(target) }, options.unavailableMessage);
    }
  });
  // Also after every reconnect and failover: the log shows when the client came back.
  client.on('ready', () => options.logger.info({ redis: describeRedisTarget(target) }, `Redis ${options.name.replace('_', ' ')} connected`));
  return client;
}

/** Runs one command, reporting its time and outcome to the observer. */
export async function observed<T>(observer: RedisObserver | undefined, client: RedisClientName, command: () => Promise<T>): Promise<T> {
  const startedAt = performance.now();
  try {
    const result = await command();
    observer?.command(client, (performance.now() - startedAt) / 1000, true);
    return result;
  } catch (error) {
    observer?.command(client, (performance.now() - startedAt) / 1000, false);
    throw error;
  }
}

/** Whether a client can run commands now. */
export function redisUp(client: RedisClient): boolean {
  return client.status === 'ready';
}

/** Closes a client: QUIT when connected, then drops the socket either way. */
export async function closeRedisClient(client: RedisClient): Promise<void> {
  try {
    if (client.status === 'ready') await client.quit();
  } catch {
    // quit failed (connection already gone); disconnect below still frees everything.
  }
  client.disconnect();
}
