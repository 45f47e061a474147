import { join } from 'node:path';
import { ledgerV1 } from '@gateway/contracts';
import { openDatabase, type Database } from '@gateway/db';
import {
  authorizeService, certificateExpiryRefresh, closeTransportSecurity, createGrpcServer, grpcTransportSecurity, startGrpcServer, stopGrpcServer,
} from '@gateway/grpc';
import { createLogger, type Logger } from '@gateway/logger';
import { createHealthProbes, createProbeOnlyListener, createLifecycle, startHttpServer } from '@gateway/service-runtime';
import { createServiceMetrics, startMetricsServer, startTracing, type LedgerMetrics, type ServiceTracing } from '@gateway/telemetry';
import type { LedgerConfig } from './config.ts';
import { createLedgerBatcher } from './domain/ledger-batcher.ts';
import { prepareLedgerSchema } from './ledger-schema.ts';
import { startExpirySweeper, type ExpirySweeper } from './expiry-sweeper.ts';
import { createLedgerGrpcService } from './transport/ledger-grpc-service.ts';
import { ledgerMethodRoles } from './transport/ledger-method-roles.ts';
import { instrumentUnaryCalls } from './transport/rpc-metrics.ts';
import { traceUnaryCalls } from './transport/rpc-tracing.ts';
import { startRequestLogMaintenance } from './request-log-maintenance.ts';
import { startUsageMaintenance } from './usage-maintenance.ts';
import { startVerifyMonitor } from './verify-monitor.ts';

/** A running ledger: its bound ports, whether it can serve, and how to stop it. */
export interface LedgerApp {
  ports: { grpc: number; http: number; metrics: number };
  /** The ledger's Prometheus metrics (also served on LEDGER_METRICS_PORT); tests read them directly. */
  metrics: LedgerMetrics;
  /** True once migrations ran, while the database answers and until close() begins. */
  isReady(): boolean;
  /** Stops taking calls, lets in-flight ones finish (up to SHUTDOWN_GRACE_MS), then releases everything it opened. */
  close(): Promise<void>;
}

/** What createLedgerApp may be given instead of building it from config. */
export interface LedgerAppDeps {
  logger?: Logger;
  /** A database to use (and migrate); the caller keeps ownership and closes it. */
  database?: Database;
  /** The ledger's tracing (tests); default: startTracing from the OTEL_* variables of the process (off when none is set). */
  tracing?: ServiceTracing;
}

/** How long a readiness probe waits for the database, ms. */
const readinessQueryTimeoutMs = 2_000;

/** Resolves with whether the database answered a trivial query in time. */
async function databaseAnswers(database: Database): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => { timer = setTimeout(() => resolve(false), readinessQueryTimeoutMs); });
  try {
    return await Promise.race([database.query('SELECT 1').then(() => true, () => false), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Wires the ledger: opens (or takes) its database and migrates it, serves LedgerService over
 * gRPC, answers health probes over HTTP, and runs the expiry sweeper. Ports of 0 bind free
 * ports (tests); the handle reports the bound ones.
 */
export async function createLedgerApp(config: LedgerConfig, deps: LedgerAppDeps = {}): Promise<LedgerApp> {
  const logger = deps.logger ?? createLogger('ledger', config.LOG_LEVEL);
  // Certificates are read before anything opens, so a bad path fails the start at once.
  const security = grpcTransportSecurity(config, logger);
  const ownsDatabase = deps.database === undefined;
  const database = deps.database ?? await openDatabase({
    url: config.DATABASE_URL,
    dataDir: config.DATABASE_URL ? undefined : join(config.DATA_DIR, 'ledger'),
    schema: 'ledger',
    poolSize: config.LEDGER_DB_POOL_SIZE,
  });

  // Whether the database answered the last probe or sweeper pass; part of isReady().
  let databaseAnswered = true;
  // Each step registers its close as soon as it has started: a failed start closes what had
  // started, in reverse, and close() is the reverse of start (sweeper, gRPC drain, health
  // server, then the database they used).
  const lifecycle = createLifecycle({ logger });
  const metrics = createServiceMetrics('ledger');
  // A malformed OTEL_* value fails the start here, before anything opens.
  const tracing = deps.tracing ?? startTracing('ledger', process.env, logger);
  // The certificates in use (reloaded when renewed) and their expiries, read at each scrape.
  metrics.onCollect(certificateExpiryRefresh(security, ['serving'], metrics.tlsCertificateExpiry));
  const ports = await lifecycle.start(async () => {
    lifecycle.defer('certificate watch', () => closeTransportSecurity(security));
    if (ownsDatabase) lifecycle.defer('database', () => database.close());
    // Closed last of all: the spans of the calls the gRPC drain let finish are exported too.
    lifecycle.defer('tracing', () => tracing.shutdown());
    // Started before the migrations, stopped after everything else: a scrape answers throughout.
    const metricsServer = await startMetricsServer({ metrics, host: config.BIND_HOST, port: config.LEDGER_METRICS_PORT, logger });
    lifecycle.defer('metrics server', () => metricsServer.close(0));
    const { applied } = await prepareLedgerSchema(database, config.LEDGER_MIGRATIONS);
    logger.info({ applied, database: database.kind }, 'ledger database migrated');

    // The health server starts first and stops last, so probes see 503 (not a refused
    // connection) while gRPC calls drain.
    const probes = createHealthProbes({
      isServing: lifecycle.isReady,
      dependencies: [{
        name: 'database',
        ready: async () => {
          databaseAnswered = await databaseAnswers(database);
          return databaseAnswered;
        },
      }],
    });
    const health = await startHttpServer({
      listener: createProbeOnlyListener(probes, { logger, notFoundMessage: 'The ledger serves only /healthz and /readyz over HTTP.' }),
      host: config.BIND_HOST,
      port: config.LEDGER_HTTP_PORT,
      logger,
    });
    // Nothing in flight on it matters at the end: probes' keep-alive sockets are cut at once.
    lifecycle.defer('health server', () => health.close(0));

    // Group commit for Reserve and Settle: closed after the gRPC drain (steps close in reverse),
    // so every call that was let in gets its answer.
    const batcher = createLedgerBatcher(database, { metrics, settleLingerMs: config.LEDGER_SETTLE_LINGER_MS });
    lifecycle.defer('batcher', () => batcher.close());
    // The request log's day partitions: today and two days ahead, strays moved, days past retention
    // dropped. The first pass ends before the gRPC server listens (see firstPass).
    const requestLogMaintenance = startRequestLogMaintenance({ database, logger, retentionDays: config.LEDGER_REQUEST_LOG_RETENTION_DAYS });
    lifecycle.defer('request log maintenance', () => requestLogMaintenance.stop());
    await requestLogMaintenance.firstPass;
    const grpcServer = createGrpcServer();
    const service = createLedgerGrpcService(database, logger, {
      pollIntervalMs: config.LEDGER_ALERT_POLL_INTERVAL_MS, grantSharePercent: config.LEDGER_GRANT_MAX_SHARE_PERCENT,
      recallPollIntervalMs: config.LEDGER_RECALL_POLL_INTERVAL_MS, budgetRecallWaitMs: config.LEDGER_BUDGET_RECALL_WAIT_MS, rpcMetrics: metrics, tracing,
    }, batcher);
    // Every method checks the caller's certificate identity against ledgerMethodRoles first;
    // every unary answer, a refusal included, is counted (Operate counts its operations itself).
    // With tracing on, each unary call is a SERVER span continuing the caller's traceparent metadata.
    grpcServer.addService(ledgerV1.LedgerServiceService, traceUnaryCalls(ledgerV1.LedgerServiceService, instrumentUnaryCalls(ledgerV1.LedgerServiceService, authorizeService(
      ledgerV1.LedgerServiceService, service.implementation, ledgerMethodRoles, { logger, enforce: security.mode === 'mtls' },
    ), metrics), tracing));
    const grpcPort = await startGrpcServer(grpcServer, config.BIND_HOST, config.LEDGER_GRPC_PORT, security);
    lifecycle.defer('grpc server', () => stopGrpcServer(grpcServer, config.SHUTDOWN_GRACE_MS));
    // Watches and Operate streams never finish on their own: end them first, so the drain waits
    // only for unary calls and the answers to operations already received.
    lifecycle.defer('grpc streams', () => { service.endStreams(); });

    const sweeper: ExpirySweeper = startExpirySweeper({
      database, logger, intervalMs: config.LEDGER_SWEEP_INTERVAL_MS,
      onPass: (answered) => { databaseAnswered = answered; }, metrics,
    });
    lifecycle.defer('expiry sweeper', () => sweeper.stop());
    const verifyMonitor = startVerifyMonitor({ database, logger, metrics, intervalMs: config.LEDGER_VERIFY_INTERVAL_MS });
    lifecycle.defer('periodic verify', () => verifyMonitor.stop());
    // The usage records' monthly partitions: created ahead, strays moved, old months dropped by retention.
    const usageMaintenance = startUsageMaintenance({
      database, logger, metrics, partitionsAhead: config.LEDGER_USAGE_PARTITIONS_AHEAD, retentionMonths: config.LEDGER_USAGE_RETENTION_MONTHS,
    });
    lifecycle.defer('usage maintenance', () => usageMaintenance.stop());
    return { grpc: grpcPort, http: health.port, metrics: metricsServer.port };
  });
  logger.info({ ports }, 'ledger listening');

  let closed: Promise<void> | undefined;
  return {
    ports,
    metrics,
    isReady: () => lifecycle.isReady() && databaseAnswered,
    close() {
      closed ??= lifecycle.close().then(() => logger.info('ledger stopped'));
      return closed;
    },
  };
}
