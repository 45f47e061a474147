import type { Logger } from '@gateway/logger';
import { Redis } from 'ioredis';
import { outboxHandOverTimeoutMs, outboxStreamKey, type ProxyConfig } from '../config.ts';
import { OutboxHandover } from '../ledger/outbox-handover.ts';
import type { SettleOutbox } from '../ledger/settle-outbox.ts';

/** The shared outbox of a proxy with Redis, and the connection it runs on. */
export interface SharedOutbox {
  handover: OutboxHandover;
  /** Closes the connection (after the hand-over). */
  close(): Promise<void>;
}

/**
 * The settle outbox's hand-over to, and adoption from, the Redis stream every replica shares
 * (ledger/outbox-handover.ts), on a connection of its own to REDIS_URL's Redis; undefined
 * without REDIS_URL (one replica: what the ledger has not answered at shutdown is logged for
 * replay). Commands fail at once while Redis is down (no offline queue) and each is bounded by
 * outboxHandOverTimeoutMs, which proxyDrainBoundMs counts for the hand-over.
 */
export function createSharedOutbox(config: ProxyConfig, logger: Logger, outbox: SettleOutbox): SharedOutbox | undefined {
  if (config.REDIS_URL === undefined) return undefined;
  // The same connection settings as the proxy's other Redis clients (rate-limit/, response-store/).
  const redis = new Redis(config.REDIS_URL, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: outboxHandOverTimeoutMs,
    connectTimeout: 2000,
    retryStrategy: (attempt) => Math.min(100 * 2 ** Math.min(attempt, 5), 2000),
  });
  // Errors are reported by the hand-over's rounds (throttled); this listener keeps ioredis from printing each.
  redis.on('error', () => {});
  const handover = new OutboxHandover({
    redis, streamKey: outboxStreamKey(config), consumer: config.PROXY_ID, outbox, logger,
    adoptBelowDepth: Math.max(1, Math.floor(config.PROXY_SETTLE_OUTBOX_MAX / 2)),
    intervalMs: config.PROXY_OUTBOX_ADOPT_INTERVAL_MS, claimIdleMs: config.PROXY_OUTBOX_CLAIM_IDLE_MS,
  });
  return {
    handover,
    async close() {
      try {
        if (redis.status === 'ready') await redis.quit();
      } catch {
        // quit failed (connection already gone); disconnect below still frees everything.
      }
      redis.disconnect();
    },
  };
}
