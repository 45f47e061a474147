import type { GrpcTransportSecurity } from '@gateway/grpc';
import type { Logger } from '@gateway/logger';
import type { ProxyConfig } from '../config.ts';
import { ConfigStreamClient } from '../config-stream/config-stream-client.ts';
import { cacheScopingForKey, type CacheScoping } from '../domain/cache-scope.ts';
import type { ConfigSnapshot } from '../domain/config-snapshot.ts';
import type { RateLimiter } from '../domain/rate-limit.ts';
import { responseSealerForKey } from '../domain/responses/response-sealer.ts';
import { InProcessResponseStore, type ResponseStore } from '../domain/responses/response-store.ts';
import { StoredResponses } from '../domain/responses/stored-responses.ts';
import { toolCallIdCodecForKey } from '../domain/tool-call-id-codec.ts';
import type { ToolCallIdCodec } from '../domain/tool-call-ids.ts';
import { InProcessRateLimiter } from '../rate-limit/in-process-rate-limiter.ts';
import { RedisRateLimiter } from '../rate-limit/redis-rate-limiter.ts';
import type { RedisObserver } from '../redis/redis-client.ts';
import { redisTargetOf, type RedisTarget } from '../redis/redis-target.ts';
import { RedisResponseStore } from '../response-store/redis-response-store.ts';
import { supportsProviderKind } from '../upstreams/upstream-adapters.ts';
import { UpstreamTransport } from '../upstreams/upstream-transport.ts';

// The proxy's clients and stores other than the ledger's, each built from its config as
// createProxyApp wires them.

/** The config stream client of the admin: the snapshots the proxy serves from. */
export function createConfigStream(config: ProxyConfig, logger: Logger, security: GrpcTransportSecurity): ConfigStreamClient {
  return new ConfigStreamClient({
    address: config.ADMIN_GRPC_URL,
    proxyId: config.PROXY_ID,
    stalenessMs: config.PROXY_CONFIG_STALENESS_MS,
    maxReceiveMessageBytes: config.PROXY_CONFIG_MAX_MESSAGE_BYTES,
    logger,
    security,
    supportsProviderKind,
  });
}

/** The RPM limiter: Redis when one is configured (shared by every replica), else in this process. */
export function createRateLimiter(config: ProxyConfig, logger: Logger, observer?: RedisObserver): RateLimiter {
  const target = redisTargetOf(config);
  return target === undefined
    ? new InProcessRateLimiter()
    : new RedisRateLimiter({
      target, keyPrefix: config.PROXY_REDIS_PREFIX, logger, leaseMax: config.PROXY_RPM_LEASE_MAX, leaseMs: config.PROXY_RPM_LEASE_MS,
      degradedBoundMs: config.PROXY_RPM_DEGRADED_MS,
      ...(config.PROXY_REPLICAS === undefined ? {} : { replicas: config.PROXY_REPLICAS }),
      ...(observer === undefined ? {} : { observer }),
    });
}

/** Stored Responses and the store under them. */
export function createResponseStorage(config: ProxyConfig, logger: Logger, observer?: RedisObserver): { responseStore: ResponseStore; storedResponses: StoredResponses } {
  // Stored Responses live beside the RPM pools when the proxy has Redis (shared by every replica), else in this process.
  const target: RedisTarget | undefined = config.PROXY_RESPONSE_STORE_REDIS_URL === undefined
    ? redisTargetOf(config)
    : { kind: 'url', url: config.PROXY_RESPONSE_STORE_REDIS_URL };
  const responseStore: ResponseStore = target === undefined
    ? new InProcessResponseStore({ maxBytes: config.PROXY_RESPONSE_STORE_MAX_BYTES })
    : new RedisResponseStore({ target, keyPrefix: config.PROXY_RESPONSE_STORE_PREFIX, logger, ...(observer === undefined ? {} : { observer }) });
  const sealerOf = responseSealerForKey(() => logger.warn(
    'the admin sent no response store key (an older admin): stored responses are sealed with a key of this process and open only on this replica, until restart',
  ));
  const storedResponses = new StoredResponses({ store: responseStore, sealerOf: (snapshot) => sealerOf(snapshot.responseStoreKey) });
  return { responseStore, storedResponses };
}

/** The upstream transport with the configured timeouts, ms. */
export function createUpstreamTransport(config: ProxyConfig): UpstreamTransport {
  return new UpstreamTransport({
    connectTimeoutMs: config.UPSTREAM_CONNECT_TIMEOUT_MS,
    firstByteTimeoutMs: config.UPSTREAM_FIRST_BYTE_TIMEOUT_MS,
    idleTimeoutMs: config.UPSTREAM_IDLE_TIMEOUT_MS,
    totalTimeoutMs: config.UPSTREAM_TOTAL_TIMEOUT_MS,
  });
}

/** What the admin's per-snapshot keys give the HTTP layer: the tool-call id codec and the prompt-cache scoping of a snapshot. */
export function snapshotKeyedServices(config: ProxyConfig, logger: Logger): {
  toolCallIds(snapshot: ConfigSnapshot): ToolCallIdCodec;
  cacheScoping(snapshot: ConfigSnapshot): CacheScoping;
} {
  const toolCallIdCodecOf = toolCallIdCodecForKey(() => logger.warn(
    'the admin sent no tool-call id key (an older admin): tool-call ids are sealed with a key of this process and map back only on this replica, until restart',
  ));
  const cacheScopingOf = cacheScopingForKey(config.PROXY_CACHE_SCOPE_MIN_PROMPT_TOKENS, () => logger.warn(
    'the admin sent no cache scope key (an older admin): prompts are marked under a key of this process, so replicas do not share an organisation\'s upstream prompt cache',
  ));
  return {
    // Tool-call ids sealed under the admin's key (one codec per key); docs/surfaces/tool-call-ids.md.
    toolCallIds: (snapshot) => toolCallIdCodecOf(snapshot.toolCallIdKey),
    // Prompt caches kept to each organisation under the admin's key (docs/decisions.md).
    cacheScoping: (snapshot) => cacheScopingOf(snapshot.cacheScopeKey),
  };
}
