import type { Logger } from '@gateway/logger';
import { storeKeyOf, type ResponseStore, type StoredResponseKey } from '../domain/responses/response-store.ts';
import { closeRedisClient, createRedisClient, observed, redisUp, type RedisClient, type RedisObserver } from '../redis/redis-client.ts';
import type { RedisTarget } from '../redis/redis-target.ts';

/** Options of RedisResponseStore. */
export interface RedisResponseStoreOptions {
  /** The Redis: one server, a Sentinel-watched master or a Cluster (redis-target.ts). */
  target: RedisTarget;
  /** Prefix of every key (PROXY_RESPONSE_STORE_PREFIX), so the store shares a Redis with the RPM pools. */
  keyPrefix: string;
  logger: Logger;
  /** Longest wait for one command, ms; a slower Redis counts as down. */
  commandTimeoutMs?: number;
  /** The Redis metrics. */
  observer?: RedisObserver;
}

/**
 * Stored Responses in Redis (shared by every proxy replica), each under
 * `<prefix><organisation>:<response>` with Redis's own expiry (PX) as the retention, so expiry
 * needs no sweeper. Every command names one key, so a Cluster serves it as one server does.
 * Values are sealed before they get here. Commands fail at once while Redis is down (no offline
 * queue): a read then is a 503 before the Reserve, a write a logged "not stored".
 */
export class RedisResponseStore implements ResponseStore {
  readonly #redis: RedisClient;
  readonly #keyPrefix: string;
  readonly #observer: RedisObserver | undefined;

  /** Connects lazily in the background. */
  constructor(options: RedisResponseStoreOptions) {
    this.#keyPrefix = options.keyPrefix;
    this.#observer = options.observer;
    this.#redis = createRedisClient(options.target, {
      name: 'response_store',
      logger: options.logger,
      commandTimeoutMs: options.commandTimeoutMs ?? 1000,
      unavailableMessage: 'Redis response store unavailable; previous_response_id and GET answer 503, new responses are not stored',
      ...(options.observer === undefined ? {} : { observer: options.observer }),
    });
  }

  async put(key: StoredResponseKey, sealed: Buffer, ttlMs: number): Promise<void> {
    await observed(this.#observer, 'response_store', () => this.#redis.set(this.#keyOf(key), sealed, 'PX', Math.max(1, Math.ceil(ttlMs))));
  }

  async get(key: StoredResponseKey): Promise<Buffer | undefined> {
    return (await observed(this.#observer, 'response_store', () => this.#redis.getBuffer(this.#keyOf(key)))) ?? undefined;
  }

  async delete(key: StoredResponseKey): Promise<boolean> {
    return (await observed(this.#observer, 'response_store', () => this.#redis.del(this.#keyOf(key)))) > 0;
  }

  state(): string {
    return redisUp(this.#redis) ? 'up' : 'down';
  }

  async close(): Promise<void> {
    await closeRedisClient(this.#redis);
  }

  #keyOf(key: StoredResponseKey): string {
    return `${this.#keyPrefix}${storeKeyOf(key)}`;
  }
}
