import { grpcTransportSecurity } from '@gateway/grpc';
import { createLogger, type Logger } from '@gateway/logger';
import { createHealthProbes, createLifecycle, startHttpServer, type DependencyCheck, type RunningHttpServer } from '@gateway/service-runtime';
import { createServiceMetrics, startMetricsServer, startTracing, type ProxyMetrics, type ServiceTracing } from '@gateway/telemetry';
import { proxySettleBoundMs, type ProxyConfig } from './config.ts';
import { ConfigStreamClient } from './config-stream/config-stream-client.ts';
import type { RateLimiter } from './domain/rate-limit.ts';
import { GrantBook } from './billing/grant-book.ts';
import { createHttpApp } from './http/http-app.ts';
import { LedgerClient } from './ledger/ledger-client.ts';
import { GrpcLedger } from './ledger/grpc-ledger.ts';
import { SettleOutbox } from './ledger/settle-outbox.ts';
import { InProcessRateLimiter } from './rate-limit/in-process-rate-limiter.ts';
import { RedisRateLimiter } from './rate-limit/redis-rate-limiter.ts';
import { cacheScopingForKey } from './domain/cache-scope.ts';
import { toolCallIdCodecForKey } from './domain/tool-call-id-codec.ts';
import { TaskTracker } from './task-tracker.ts';
import { responseSealerForKey } from './domain/responses/response-sealer.ts';
import { InProcessResponseStore, type ResponseStore } from './domain/responses/response-store.ts';
import { StoredResponses } from './domain/responses/stored-responses.ts';
import { RedisResponseStore } from './response-store/redis-response-store.ts';
import { ProxyTelemetry } from './telemetry/request-observer.ts';
import { supportsProviderKind } from './upstreams/upstream-adapters.ts';
import { UpstreamTransport } from './upstreams/upstream-transport.ts';

/** A running proxy: its bound port, readiness, and a close that leaves nothing running. */
export interface ProxyApp {
  ports: { http: number; metrics: number };
  /** The proxy's Prometheus metrics (also served on PROXY_METRICS_PORT); tests read them directly. */
  metrics: ProxyMetrics;
  /** True while the proxy holds a fresh config snapshot and is not shutting down. */
  isReady(): boolean;
  /** Stops taking requests, lets in-flight ones finish (up to SHUTDOWN_GRACE_MS), then closes everything. */
  close(): Promise<void>;
  /**
   * Resolves true once no request work is pending, including Settles that run after their
   * response has gone out; false if that takes longer than timeoutMs (tests wait on it).
   */
  idle(timeoutMs?: number): Promise<boolean>;
}

/** Optional collaborators of createProxyApp. */
export interface ProxyAppDeps {
  logger?: Logger;
  /** The proxy's tracing (tests); default: startTracing from the OTEL_* variables of the process (off when none is set). */
  tracing?: ServiceTracing;
}

/**
 * Wires the proxy: config stream client (admin), ledger client, RPM limiter (Redis when
 * REDIS_URL is set, else in process), upstream transport, and the HTTP server. Resolves once
 * the HTTP server listens, whether or not the admin is reachable yet: the proxy answers 503
 * and is not ready until its first snapshot arrives.
 */
export async function createProxyApp(config: ProxyConfig, deps: ProxyAppDeps = {}): Promise<ProxyApp> {
  const logger = deps.logger ?? createLogger('proxy', config.LOG_LEVEL);
  // Certificates are read at start: the same identity (proxy) on both channels.
  const security = grpcTransportSecurity(config, logger);
  const tasks = new TaskTracker();
  // Its steps close in reverse: the HTTP drain (which still needs the ledger for its Settles), then the clients.
  const lifecycle = createLifecycle({ logger });
  const metrics = createServiceMetrics('proxy');
  // A malformed OTEL_* value fails the start here, before anything opens.
  const tracing = deps.tracing ?? startTracing('proxy', process.env, logger);

  const configStream = new ConfigStreamClient({
    address: config.ADMIN_GRPC_URL,
    proxyId: config.PROXY_ID,
    stalenessMs: config.PROXY_CONFIG_STALENESS_MS,
    maxReceiveMessageBytes: config.PROXY_CONFIG_MAX_MESSAGE_BYTES,
    logger,
    security,
    supportsProviderKind,
  });
  const ledger = new LedgerClient({
    address: config.LEDGER_GRPC_URL,
    callTimeoutMs: config.LEDGER_CALL_TIMEOUT_MS,
    security,
  });
  const outbox = new SettleOutbox({
    ledger, logger, maxEntries: config.PROXY_SETTLE_OUTBOX_MAX,
    retryInitialMs: config.PROXY_SETTLE_RETRY_INITIAL_MS, retryMaxMs: config.PROXY_SETTLE_RETRY_MAX_MS,
  });
  // The billing's Ledger port: Reserve and Checkpoint on the client, Settle and Release through the outbox.
  const billingLedger = new GrpcLedger(ledger, outbox, { recallWaitMs: config.PROXY_RECALL_WAIT_MS, callDuration: metrics.proxyLedgerCallDuration });
  // Credit grants (docs/proxy.md "Credit grants"): Reserves carved in memory; off = every Reserve at the ledger.
  const grants = config.PROXY_CREDIT_GRANTS === 'on'
    ? new GrantBook({
      ledger: billingLedger, logger, ownerId: config.PROXY_ID, ttlMs: config.PROXY_GRANT_TTL_MS, windowMs: config.PROXY_GRANT_WINDOW_MS,
      idleReturnMs: config.PROXY_GRANT_IDLE_RETURN_MS, checkpointIntervalMs: config.PROXY_CHECKPOINT_INTERVAL_MS,
    })
    : undefined;
  if (grants !== undefined) {
    billingLedger.onRecall((grantIds) => grants.recall(grantIds));
    // A replica carves only from grants of the Operate stream it has open: the ledger closes an
    // ended stream's grants when it sees their owner gone (docs/proxy.md "Credit grants").
    ledger.onStreamEnded(() => grants.streamEnded());
  }
  const rateLimiter: RateLimiter = config.REDIS_URL === undefined
    ? new InProcessRateLimiter()
    : new RedisRateLimiter({ url: config.REDIS_URL, keyPrefix: config.PROXY_REDIS_PREFIX, logger, leaseMax: config.PROXY_RPM_LEASE_MAX, leaseMs: config.PROXY_RPM_LEASE_MS });
  // Stored Responses live beside the RPM pools when the proxy has Redis (shared by every replica), else in this process.
  const responseStoreUrl = config.PROXY_RESPONSE_STORE_REDIS_URL ?? config.REDIS_URL;
  const responseStore: ResponseStore = responseStoreUrl === undefined
    ? new InProcessResponseStore({ maxBytes: config.PROXY_RESPONSE_STORE_MAX_BYTES })
    : new RedisResponseStore({ url: responseStoreUrl, keyPrefix: config.PROXY_RESPONSE_STORE_PREFIX, logger });
  const sealerOf = responseSealerForKey(() => logger.warn(
    'the admin sent no response store key (an older admin): stored responses are sealed with a key of this process and open only on this replica, until restart',
  ));
  const storedResponses = new StoredResponses({ store: responseStore, sealerOf: (snapshot) => sealerOf(snapshot.responseStoreKey) });
  const upstream = new UpstreamTransport({
    connectTimeoutMs: config.UPSTREAM_CONNECT_TIMEOUT_MS,
    firstByteTimeoutMs: config.UPSTREAM_FIRST_BYTE_TIMEOUT_MS,
    idleTimeoutMs: config.UPSTREAM_IDLE_TIMEOUT_MS,
    totalTimeoutMs: config.UPSTREAM_TOTAL_TIMEOUT_MS,
  });
  /**
   * Ready = started and not shutting down, holds a fresh snapshot, and its settle outbox has room.
   * Redis and the ledger are NOT part of it: every replica shares them, so "unready everywhere"
   * would turn clean per-request 503s into load-balancer connection errors (docs/proxy.md). Their
   * states are named in /readyz's body instead, beside the snapshot's. The checks are synchronous,
   * so the handle's isReady() and /readyz agree without a probe's round trip.
   */
  const dependencies: Array<Omit<DependencyCheck, 'ready'> & { ready?(): boolean }> = [
    {
      name: 'config',
      ready: () => configStream.isFresh(),
      state: () => (configStream.isFresh() ? 'fresh' : configStream.appliedVersion() > 0n ? 'stale' : 'none'),
    },
    { name: 'ledger', state: () => ledger.channelState() },
    { name: 'redis', state: () => (rateLimiter instanceof RedisRateLimiter ? rateLimiter.connectionState() : 'in_process') },
    { name: 'response_store', state: () => responseStore.state() },
    // Its state is the depth: Settles and Releases waiting for the ledger's answer (what a SIGKILL would lose).
    { name: 'settle_outbox', ready: () => !outbox.outboxFull(), state: () => String(outbox.outboxDepth()) },
  ];
  const isReady = () => lifecycle.isReady() && dependencies.every((dependency) => dependency.ready?.() ?? true);
  const probes = createHealthProbes({ isServing: lifecycle.isReady, dependencies });
  const activeStreams = new Set<AbortController>();
  // State gauges are read at scrape time, not kept up to date on every change.
  let abandonedCounted = 0;
  metrics.onCollect(() => {
    metrics.proxyOutboxDepth.set(outbox.outboxDepth());
    const oldestQueuedAtMs = outbox.oldestQueuedAtMs();
    metrics.proxyOutboxOldestAge.set(oldestQueuedAtMs === undefined ? 0 : Math.max(0, Date.now() - oldestQueuedAtMs) / 1000);
    // A counter only grows: what the outbox gave up since the last scrape.
    const abandoned = outbox.abandonedCount;
    if (abandoned > abandonedCounted) metrics.proxyOutboxAbandoned.inc(abandoned - abandonedCounted);
    abandonedCounted = abandoned;
    metrics.proxyConfigVersion.set(Number(configStream.appliedVersion()));
    metrics.proxyConfigFresh.set(configStream.isFresh() ? 1 : 0);
    metrics.proxyConfigStaleness.set(configStream.stalenessMs() / 1000);
    metrics.proxyActiveStreams.set(activeStreams.size);
    // An observation of money: µ₹ as a JS number at the edge (exact below 2^53 µ₹, i.e. ₹9 billion).
    metrics.proxyGrantHeldMicros.set(grants === undefined ? 0 : Number(grants.uncarvedMicros()));
  });

  const toolCallIdCodecOf = toolCallIdCodecForKey(() => logger.warn(
    'the admin sent no tool-call id key (an older admin): tool-call ids are sealed with a key of this process and map back only on this replica, until restart',
  ));
  const cacheScopingOf = cacheScopingForKey(config.PROXY_CACHE_SCOPE_MIN_PROMPT_TOKENS, () => logger.warn(
    'the admin sent no cache scope key (an older admin): prompts are marked under a key of this process, so replicas do not share an organisation\'s upstream prompt cache',
  ));
  const httpApp = createHttpApp({
    logger,
    freshSnapshot: () => configStream.freshSnapshot(),
    probes,
    isShuttingDown: lifecycle.isClosing,
    rateLimiter,
    ledger: billingLedger,
    grants,
    upstream,
    // Tool-call ids sealed under the admin's key (one codec per key); docs/surfaces/tool-call-ids.md.
    toolCallIds: (snapshot) => toolCallIdCodecOf(snapshot.toolCallIdKey),
    // Prompt caches kept to each organisation under the admin's key (docs/decisions.md).
    cacheScoping: (snapshot) => cacheScopingOf(snapshot.cacheScopeKey),
    track: (work) => tasks.track(work),
    maxBodyBytes: config.PROXY_MAX_BODY_BYTES,
    maxInflightBodyBytes: config.PROXY_MAX_INFLIGHT_BODY_BYTES,
    maxMessageChars: config.PROXY_MAX_MESSAGE_CHARS,
    reserveTtlMs: config.RESERVE_TTL_MS,
    checkpointIntervalMs: config.PROXY_CHECKPOINT_INTERVAL_MS,
    streamLeaseMs: config.PROXY_STREAM_LEASE_MS,
    activeStreams,
    telemetry: new ProxyTelemetry(metrics, tracing),
    storedResponses,
  });

  const closeClients = async () => {
    configStream.close();
    ledger.close();
    await Promise.allSettled([rateLimiter.close(), upstream.close(), responseStore.close()]);
  };

  // After the grace, cut streams still get time for their Settles to leave the outbox (a few attempts).
  const settleBoundMs = proxySettleBoundMs(config);
  /** The proxy's drain: the HTTP server's close stage, waiting for every request's billing rather than for its bytes. */
  const drainHttp = async (http: RunningHttpServer) => {
    // No new connections; idle keep-alive ones closed; responses still to be written end their connection.
    http.stopAccepting();
    // In-flight requests (streams included) settle or release their Reserve before they end, so wait for them.
    let drained = await tasks.drain(config.SHUTDOWN_GRACE_MS);
    if (!drained) {
      logger.warn({ pending: tasks.size, streams: activeStreams.size }, 'shutdown grace ran out; cutting remaining streams');
      // Each cut stream ends with an error event, aborts its upstream and settles what it delivered.
      const cutStreams = activeStreams.size;
      for (const stream of activeStreams) stream.abort('shutdown');
      if (cutStreams > 0) drained = await tasks.drain(settleBoundMs);
    }
    // Settles and Releases the ledger has still not answered: each is logged for replay (the
    // requests waiting on them then finish and write their log lines).
    if (outbox.abandon() > 0) drained = await tasks.drain(1000);
    if (!drained) logger.error({ pending: tasks.size }, 'requests still pending after the cut; the ledger expiry sweeper will resolve their reservations');
    // Bounded wait for the last responses to flush and their connections to close, then cut.
    await http.close(drained ? 1000 : 0);
  };

  const http = await lifecycle.start(async () => {
    // The metrics listener stops last (registered first): a scrape during the drain still answers.
    const metricsServer = await startMetricsServer({ metrics, host: config.BIND_HOST, port: config.PROXY_METRICS_PORT, logger });
    lifecycle.defer('metrics server', () => metricsServer.close(0));
    // After the drain and the clients: the spans of the last requests and their Settles are exported.
    lifecycle.defer('tracing', () => tracing.shutdown());
    lifecycle.defer('clients', closeClients);
    // After the HTTP drain (every carve settled or abandoned), before the ledger client closes:
    // what the grants still hold goes back to the wallet now rather than at their deadline.
    if (grants !== undefined) lifecycle.defer('credit grants', () => grants.closeAll());
    const started = await startHttpServer({ listener: httpApp, host: config.BIND_HOST, port: config.PROXY_HTTP_PORT, logger });
    lifecycle.defer('http server', () => drainHttp(started));
    configStream.start();
    return { http: started, metricsPort: metricsServer.port };
  });
  const port = http.http.port;
  logger.info({ port, host: config.BIND_HOST, rateLimiter: config.REDIS_URL === undefined ? 'in-process' : 'redis' }, 'proxy listening');

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= lifecycle.close().then(() => logger.info('proxy stopped'));
    return closing;
  };

  return { ports: { http: port, metrics: http.metricsPort }, metrics, isReady, close, idle: (timeoutMs = 10_000) => tasks.drain(timeoutMs) };
}
