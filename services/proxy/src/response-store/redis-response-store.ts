import { Redis } from 'ioredis';
import type { Logger } from '@gateway/logger';
import { storeKeyOf, type ResponseStore, type StoredResponseKey } from '../domain/responses/response-store.ts';

/** Options of RedisResponseStore. */
export interface RedisResponseStoreOptions {
  url: string;
  /** Prefix of every key (PROXY_RESPONSE_STORE_PREFIX), so the store shares a Redis with the RPM pools. */
  keyPrefix: string;
  logger: Logger;
  /** Longest wait for one command, ms; a slower Redis counts as down. */
  commandTimeoutMs?: number;
}

/**
 * Stored Responses in Redis (shared by every proxy replica), each under
 * `<prefix><organisation>:<response>` with Redis's own expiry (PX) as the retention, so expiry
 * needs no sweeper. Values are sealed before they get here. Commands fail at once while Redis is
 * down (no offline queue): a read then is a 503 before the Reserve, a write a logged "not stored".
 */
export class RedisResponseStore implements ResponseStore {
  readonly #redis: Redis;
  readonly #keyPrefix: string;
  readonly #logger: Logger;
  #lastErrorLoggedAtMs = 0;

  /** Connects lazily in the background. */
  constructor(options: RedisResponseStoreOptions) {
    this.#keyPrefix = options.keyPrefix;
    this.#logger = options.logger;
    this.#redis = new Redis(options.url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: options.commandTimeoutMs ?? 1000,
      connectTimeout: 2000,
      retryStrategy: (attempt) => Math.min(100 * 2 ** Math.min(attempt, 5), 2000),
    });
    this.#redis.on('error', (error: Error) => {
      const now = Date.now();
      if (now - this.#lastErrorLoggedAtMs > 10_000) {
        this.#lastErrorLoggedAtMs = now;
        this.#logger.warn({ err: { message: error.message } }, 'Redis response store unavailable; previous_response_id and GET answer 503, new responses are not stored');
      }
    });
  }

  async put(key: StoredResponseKey, sealed: Buffer, ttlMs: number): Promise<void> {
    await this.#redis.set(this.#keyOf(key), sealed, 'PX', Math.max(1, Math.ceil(ttlMs)));
  }

  async get(key: StoredResponseKey): Promise<Buffer | undefined> {
    return (await this.#redis.getBuffer(this.#keyOf(key))) ?? undefined;
  }

  async delete(key: StoredResponseKey): Promise<boolean> {
    return (await this.#redis.del(this.#keyOf(key))) > 0;
  }

  state(): string {
    return this.#redis.status === 'ready' ? 'up' : 'down';
  }

  async close(): Promise<void> {
    try {
      if (this.#redis.status === 'ready') await this.#redis.quit();
    } catch {
      // Already gone: disconnect below frees everything.
    }
    this.#redis.disconnect();
  }

  #keyOf(key: StoredResponseKey): string {
    return `${this.#keyPrefix}${storeKeyOf(key)}`;
  }
}
