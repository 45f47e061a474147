import type { Server } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Response } from 'express';
import type { AddressInfo } from 'node:net';
import { createGuardedServer } from '@gateway/http-guard';
import { grpcTransportSecurity } from '@gateway/grpc';
import { createLogger, type Logger } from '@gateway/logger';
import type { ProxyConfig } from './config.ts';
import { ConfigStreamClient } from './config-stream/config-stream-client.ts';
import { InProcessRateLimiter, type RateLimiter } from './domain/rate-limit.ts';
import { createHttpApp } from './http/http-app.ts';
import { LedgerClient } from './ledger/ledger-client.ts';
import { GrpcLedger } from './ledger/grpc-ledger.ts';
import { SettleOutbox } from './ledger/settle-outbox.ts';
import { RedisRateLimiter } from './rate-limit/redis-rate-limiter.ts';
import { TaskTracker } from './task-tracker.ts';
import { supportsProviderKind } from './upstreams/upstream-adapters.ts';
import { UpstreamTransport } from './upstreams/upstream-transport.ts';

/** A running proxy: its bound port, readiness, and a close that leaves nothing running. */
export interface ProxyApp {
  ports: { http: number };
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
}

function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
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
  let shuttingDown = false;

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
  const rateLimiter: RateLimiter = config.REDIS_URL === undefined
    ? new InProcessRateLimiter()
    : new RedisRateLimiter({ url: config.REDIS_URL, keyPrefix: config.PROXY_REDIS_PREFIX, logger });
  const upstream = new UpstreamTransport({
    connectTimeoutMs: config.UPSTREAM_CONNECT_TIMEOUT_MS,
    firstByteTimeoutMs: config.UPSTREAM_FIRST_BYTE_TIMEOUT_MS,
    idleTimeoutMs: config.UPSTREAM_IDLE_TIMEOUT_MS,
    totalTimeoutMs: config.UPSTREAM_TOTAL_TIMEOUT_MS,
  });
  /**
   * Ready = holds a fresh snapshot, is not shutting down, and its settle outbox has room. Redis
   * and the ledger are NOT part of it: every replica shares them, so "unready everywhere" would
   * turn clean per-request 503s into load-balancer connection errors (docs/proxy.md). Their
   * states are named in /readyz's body instead (dependencyStates).
   */
  const isReady = () => !shuttingDown && configStream.isFresh() && !outbox.outboxFull();
  const dependencyStates = (): Record<string, string> => ({
    config: configStream.isFresh() ? 'fresh' : configStream.appliedVersion() > 0n ? 'stale' : 'none',
    ledger: ledger.channelState(),
    redis: rateLimiter instanceof RedisRateLimiter ? rateLimiter.connectionState() : 'in_process',
  });
  const activeResponses = new Set<Response>();
  const activeStreams = new Set<AbortController>();

  const server = createGuardedServer(createHttpApp({
    logger,
    freshSnapshot: () => configStream.freshSnapshot(),
    isReady,
    dependencyStates,
    isShuttingDown: () => shuttingDown,
    rateLimiter,
    // The billing's Ledger port: Reserve and Checkpoint on the client, Settle and Release through the outbox.
    ledger: new GrpcLedger(ledger, outbox),
    upstream,
    track: (work) => tasks.track(work),
    maxBodyBytes: config.PROXY_MAX_BODY_BYTES,
    maxMessageChars: config.PROXY_MAX_MESSAGE_CHARS,
    reserveTtlMs: config.RESERVE_TTL_MS,
    checkpointIntervalMs: config.PROXY_CHECKPOINT_INTERVAL_MS,
    activeResponses,
    activeStreams,
  }), { logger });

  const closeClients = async () => {
    configStream.close();
    ledger.close();
    await Promise.allSettled([rateLimiter.close(), upstream.close()]);
  };

  let port: number;
  try {
    port = await listen(server, config.PROXY_HTTP_PORT, config.BIND_HOST);
  } catch (error) {
    await closeClients();
    throw error;
  }
  configStream.start();
  logger.info({ port, host: config.BIND_HOST, rateLimiter: config.REDIS_URL === undefined ? 'in-process' : 'redis' }, 'proxy listening');

  // After the grace, cut streams still get time for their Settles to leave the outbox (a few attempts).
  const settleBoundMs = config.LEDGER_CALL_TIMEOUT_MS * 3 + 1000;
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      shuttingDown = true;
      const serverClosed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      // Responses still to be written end their keep-alive connection, so the server can close.
      for (const res of activeResponses) if (!res.headersSent) res.setHeader('connection', 'close');
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
      await Promise.race([serverClosed, sleep(drained ? 1000 : 0)]);
      server.closeAllConnections();
      await serverClosed;
      await closeClients();
      logger.info('proxy stopped');
    })();
    return closing;
  };

  return { ports: { http: port }, isReady, close, idle: (timeoutMs = 10_000) => tasks.drain(timeoutMs) };
}
