import type { Logger } from '@gateway/logger';
import { outboxHandOverTimeoutMs, outboxStreamKey, type ProxyConfig } from '../config.ts';
import { OutboxHandover } from '../ledger/outbox-handover.ts';
import type { SettleOutbox } from '../ledger/settle-outbox.ts';
import { closeRedisClient, createRedisClient, redisUp, type RedisObserver } from '../redis/redis-client.ts';
import { redisTargetOf } from '../redis/redis-target.ts';

/** The shared outbox of a proxy with Redis, and the connection it runs on. */
export interface SharedOutbox {
  handover: OutboxHandover;
  /** Whether its Redis connection can run commands now (gateway_proxy_redis_up{client="outbox"}). */
  connected(): boolean;
  /** Closes the connection (after the hand-over). */
  close(): Promise<void>;
}

/**
 * The settle outbox's hand-over to, and adoption from, the Redis stream every replica shares
 * (ledger/outbox-handover.ts), on a client of its own to the shared Redis (REDIS_URL, Sentinel or
 * Cluster: redis/redis-client.ts builds it like the others); undefined without Redis (one
 * replica: what the ledger has not answered at shutdown is logged for replay). Commands fail at
 * once while Redis is down (no offline queue) and each is bounded by outboxHandOverTimeoutMs,
 * which proxyDrainBoundMs counts for the hand-over.
 */
export function createSharedOutbox(config: ProxyConfig, logger: Logger, outbox: SettleOutbox, observer?: RedisObserver): SharedOutbox | undefined {
  const target = redisTargetOf(config);
  if (target === undefined) return undefined;
  const redis = createRedisClient(target, {
    name: 'outbox', logger, commandTimeoutMs: outboxHandOverTimeoutMs, ...(observer === undefined ? {} : { observer }),
    unavailableMessage: 'Redis unavailable: Settles unanswered at shutdown are logged for replay instead of handed over',
  });
  const handover = new OutboxHandover({
    redis, streamKey: outboxStreamKey(config), consumer: config.PROXY_ID, outbox, logger,
    adoptBelowDepth: Math.max(1, Math.floor(config.PROXY_SETTLE_OUTBOX_MAX / 2)),
    intervalMs: config.PROXY_OUTBOX_ADOPT_INTERVAL_MS, claimIdleMs: config.PROXY_OUTBOX_CLAIM_IDLE_MS,
  });
  return { handover, connected: () => redisUp(redis), close: () => closeRedisClient(redis) };
}
