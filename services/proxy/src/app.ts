import { certificateExpiryRefresh, closeTransportSecurity, grpcTransportSecurity } from '@gateway/grpc';
import { createLogger, type Logger } from '@gateway/logger';
import { createHealthProbes, createLifecycle, startHttpServer, type DependencyCheck } from '@gateway/service-runtime';
import { createServiceMetrics, startMetricsServer, startTracing, type ProxyMetrics, type ServiceTracing } from '@gateway/telemetry';
import type { ProxyConfig } from './config.ts';
import { GrantBook } from './billing/grant-book.ts';
import { createHttpApp } from './http/http-app.ts';
import { LedgerClient } from './ledger/ledger-client.ts';
import { GrpcLedger } from './ledger/grpc-ledger.ts';
import { RequestLogRecorder } from './request-log/request-log-recorder.ts';
import { SettleOutbox } from './ledger/settle-outbox.ts';
import { RedisRateLimiter } from './rate-limit/redis-rate-limiter.ts';
import { RedisResponseStore } from './response-store/redis-response-store.ts';
import { TaskTracker } from './task-tracker.ts';
import { redisMetricsObserver, rpmModeGaugeValue } from './telemetry/redis-metrics.ts';
import { ProxyTelemetry } from './telemetry/request-observer.ts';
import { DeploymentMetrics } from './telemetry/deployment-metrics.ts';
import { DeploymentRouter } from './routing/deployment-router.ts';
import type { Routing } from './inference/attempts.ts';
import { createConfigStream, createRateLimiter, createResponseStorage, createUpstreamTransport, snapshotKeyedServices } from './wiring/clients.ts';
import { createHttpDrain } from './wiring/http-drain.ts';
import { createSharedOutbox } from './wiring/outbox-handover.ts';

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
 * Redis is configured, else in process), upstream transport, and the HTTP server. Resolves once
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

  const configStream = createConfigStream(config, logger, security);
  const ledger = new LedgerClient({
    address: config.LEDGER_GRPC_URL,
    callTimeoutMs: config.LEDGER_CALL_TIMEOUT_MS,
    security,
  });
  const outbox = new SettleOutbox({
    ledger, logger, maxEntries: config.PROXY_SETTLE_OUTBOX_MAX,
    retryInitialMs: config.PROXY_SETTLE_RETRY_INITIAL_MS, retryMaxMs: config.PROXY_SETTLE_RETRY_MAX_MS,
  });
  const redisObserver = redisMetricsObserver(metrics);
  // What the ledger has not answered when this replica stops goes to Redis, and it adopts what others left there.
  const sharedOutbox = createSharedOutbox(config, logger, outbox, redisObserver);
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
  const rateLimiter = createRateLimiter(config, logger, redisObserver);
  const { responseStore, storedResponses } = createResponseStorage(config, logger, redisObserver);
  const upstream = createUpstreamTransport(config);
  // Routing across a model's deployments (docs/proxy.md "Routing"): one router per process, its
  // outlier ejection shared by every request of this proxy.
  const deploymentMetrics = new DeploymentMetrics(metrics);
  const routing: Routing = {
    router: new DeploymentRouter({
      consecutiveFailures: config.PROXY_OUTLIER_CONSECUTIVE_FAILURES,
      baseEjectionMs: config.PROXY_OUTLIER_BASE_EJECTION_MS,
      maxEjectionMs: config.PROXY_OUTLIER_MAX_EJECTION_MS,
    }, undefined, deploymentMetrics),
    policy: {
      maxAttempts: config.PROXY_ROUTING_MAX_ATTEMPTS,
      deadlineMs: config.PROXY_ROUTING_DEADLINE_MS,
      attemptTimeoutMs: config.PROXY_ROUTING_ATTEMPT_TIMEOUT_MS,
      upstreamTotalMs: config.UPSTREAM_TOTAL_TIMEOUT_MS,
    },
  };
  /**
   * Ready = started and not shutting down, holds a fresh snapshot, and its settle outbox has room.
   * Redis and the ledger are NOT part of it: every replica shares them, so "unready everywhere"
   * would turn clean per-request 503s (or, for Redis, admissions from the replica's degraded
   * share) into load-balancer connection errors (docs/proxy.md). Their states are named in
   * /readyz's body instead, beside the snapshot's: `redis` up/down, `rpm` shared/degraded/failing_closed. The checks are synchronous,
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
    { name: 'rpm', state: () => (rateLimiter instanceof RedisRateLimiter ? rateLimiter.mode() : 'in_process') },
    { name: 'response_store', state: () => responseStore.state() },
    // Its state is the depth: Settles and Releases waiting for the ledger's answer (what a SIGKILL would lose).
    { name: 'settle_outbox', ready: () => !outbox.outboxFull(), state: () => String(outbox.outboxDepth()) },
  ];
  const isReady = () => lifecycle.isReady() && dependencies.every((dependency) => dependency.ready?.() ?? true);
  const probes = createHealthProbes({ isServing: lifecycle.isReady, dependencies });
  const activeStreams = new Set<AbortController>();
  // The request log (docs/proxy.md "Request log"): records leave in batches off the hot path.
  const requestLog = config.PROXY_REQUEST_LOG === 'on'
    ? new RequestLogRecorder({
      send: (records) => ledger.recordRequests(records), logger,
      onDropped: (reason, count) => { metrics.proxyRequestLogDropped.inc({ reason }, count); },
    })
    : undefined;
  // Both reasons' series start at 0: rate() (the GatewayRequestLogDropping alert) cannot see the first increment of a series that appears with it.
  if (requestLog !== undefined) for (const reason of ['buffer_full', 'refused'] as const) metrics.proxyRequestLogDropped.inc({ reason }, 0);
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
    if (rateLimiter instanceof RedisRateLimiter) {
      metrics.proxyRedisUp.set({ client: 'rate_limiter' }, rateLimiter.connectionState() === 'up' ? 1 : 0);
      metrics.proxyRpmDegraded.set(rpmModeGaugeValue[rateLimiter.mode()]);
    }
    if (responseStore instanceof RedisResponseStore) metrics.proxyRedisUp.set({ client: 'response_store' }, responseStore.state() === 'up' ? 1 : 0);
    if (sharedOutbox !== undefined) metrics.proxyRedisUp.set({ client: 'outbox' }, sharedOutbox.connected() ? 1 : 0);
    // An observation of money: µ₹ as a JS number at the edge (exact below 2^53 µ₹, i.e. ₹9 billion).
    metrics.proxyGrantHeldMicros.set(grants === undefined ? 0 : Number(grants.uncarvedMicros()));
    deploymentMetrics.collect(routing.router, configStream.freshSnapshot()?.modelsBySlug);
  });
  // The certificates in use (reloaded when renewed) and their expiries, read at each scrape.
  metrics.onCollect(certificateExpiryRefresh(security, ['client'], metrics.tlsCertificateExpiry));

  const httpApp = createHttpApp({
    logger,
    freshSnapshot: () => configStream.freshSnapshot(),
    probes,
    isShuttingDown: lifecycle.isClosing,
    rateLimiter,
    ledger: billingLedger,
    grants,
    upstream,
    routing,
    ...snapshotKeyedServices(config, logger),
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
    requestLog,
  });

  const closeClients = async () => {
    configStream.close();
    ledger.close();
    await Promise.allSettled([rateLimiter.close(), upstream.close(), responseStore.close(), sharedOutbox?.close()]);
  };

  const drainHttp = createHttpDrain({ config, logger, tasks, activeStreams, outbox, handover: sharedOutbox?.handover });

  const http = await lifecycle.start(async () => {
    // The metrics listener stops last (registered first): a scrape during the drain still answers.
    const metricsServer = await startMetricsServer({ metrics, host: config.BIND_HOST, port: config.PROXY_METRICS_PORT, logger });
    lifecycle.defer('metrics server', () => metricsServer.close(0));
    lifecycle.defer('certificate watch', () => closeTransportSecurity(security));
    // After the drain and the clients: the spans of the last requests and their Settles are exported.
    lifecycle.defer('tracing', () => tracing.shutdown());
    lifecycle.defer('clients', closeClients);
    // After the HTTP drain (every carve settled or abandoned), before the ledger client closes:
    // what the grants still hold goes back to the wallet now rather than at their deadline.
    if (grants !== undefined) lifecycle.defer('credit grants', () => grants.closeAll());
    // After the HTTP drain (every request finished and recorded), before the ledger client closes.
    if (requestLog !== undefined) lifecycle.defer('request log', () => requestLog.close(2_000));
    const started = await startHttpServer({ listener: httpApp, host: config.BIND_HOST, port: config.PROXY_HTTP_PORT, logger });
    lifecycle.defer('http server', () => drainHttp(started));
    configStream.start();
    sharedOutbox?.handover.start();
    requestLog?.start();
    return { http: started, metricsPort: metricsServer.port };
  });
  const port = http.http.port;
  logger.info({ port, host: config.BIND_HOST, rateLimiter: rateLimiter instanceof RedisRateLimiter ? 'redis' : 'in-process' }, 'proxy listening');

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= lifecycle.close().then(() => logger.info('proxy stopped'));
    return closing;
  };

  return { ports: { http: port, metrics: http.metricsPort }, metrics, isReady, close, idle: (timeoutMs = 10_000) => tasks.drain(timeoutMs) };
}
