import { join } from 'node:path';
import { openDatabase, type Database } from '@gateway/db';
import {
  authorizeService, certificateExpiryRefresh, closeTransportSecurity, createGrpcServer, grpcTransportSecurity, startGrpcServer, stopGrpcServer,
} from '@gateway/grpc';
import { createLogger, type Logger } from '@gateway/logger';
import { createHealthProbes, createLifecycle, startHttpServer } from '@gateway/service-runtime';
import { systemResolver, type HostResolver } from '@gateway/address-policy';
import { createServiceMetrics, startMetricsServer, type AdminMetrics } from '@gateway/telemetry';
import { agentBuiltInModelNames } from './catalog/domain/agent-model-names.ts';
import { prepareAdminSchema } from './admin-schema.ts';
import type { AdminConfig } from './config.ts';
import { configMethodRoles } from './config-stream/config-method-roles.ts';
import { createConfigStreamHub, type ConfigStreamHub } from './config-stream/config-stream-hub.ts';
import { deriveCacheScopeKey } from './config-stream/cache-scope-key.ts';
import { deriveToolCallIdKey } from './config-stream/tool-call-id-key.ts';
import { deriveResponseStoreKey } from './config-stream/response-store-key.ts';
import { createAdminService } from './admin-service.ts';
import { createConfigSnapshotSource } from './catalog/domain/config-snapshot.ts';
import { createCredentialCipher } from './common/domain/credential-cipher.ts';
import { withholdRefusedUpstreams } from './catalog/domain/upstream-recheck.ts';
import { bootstrapPlatformAdminToken } from './tenancy/domain/admin-tokens.ts';
import { createLiveEvents } from './common/domain/live-events.ts';
import { findProject } from './tenancy/domain/project-store.ts';
import { startAlertWorkers } from './alerts/alerts-wiring.ts';
import { alertsSettingsFrom } from './alerts/alerts-settings.ts';
import {
  countPaymentMismatch, countPaymentWebhooks, countRefundOutcomes, countUnmatchedPayment, createPaymentProvider, startPaymentJobs,
} from './billing/payments-wiring.ts';
import { observeAdminState } from './wiring/state-metrics.ts';
import { startInvoicingJobs } from './invoicing/invoicing-job.ts';
import { invoicingSettingsFrom } from './invoicing/invoicing-settings.ts';
import { startRefundJobs } from './billing/refund-jobs.ts';
import { billingSettingsFrom } from './billing/billing-settings.ts';
import { createDashboard } from './wiring/dashboard.ts';
import { attachLiveUpdates } from './wiring/live.ts';
import { createPeopleWiring } from './people/people-wiring.ts';
import { peopleSettingsFrom, smtpSettingsFrom } from './people/people-settings.ts';
import { createMailer } from './people/transport/smtp-mailer.ts';
import { createAdminHttpApp } from './common/http/admin-http-app.ts';
import { createAdminRoutes } from './common/http/admin-routes.ts';
import { buildOpenApiDocument } from './common/http/openapi-document.ts';
import { createGrpcLedger, type GrpcLedger } from './ledger/grpc-ledger.ts';

/** A running admin: its bound ports, its readiness, and how to stop it completely. */
export interface AdminApp {
  ports: { http: number; grpc: number; metrics: number };
  /** The admin's Prometheus metrics (also served on ADMIN_METRICS_PORT); tests read them directly. */
  metrics: AdminMetrics;
  /** true once the database is migrated and both servers listen; false again once closing. */
  isReady(): boolean;
  /** Stops taking work, drains for up to SHUTDOWN_GRACE_MS, and releases every timer, socket and pool. */
  close(): Promise<void>;
}

/** What a caller may hand the admin instead of letting it create its own. */
export interface AdminAppDeps {
  logger?: Logger;
  /** A database to use (its owner closes it); by default one is opened from DATABASE_URL / DATA_DIR. */
  database?: Database;
  /**
   * Receives a freshly issued platform-admin token, once, to show to the operator. Without it
   * no token is issued (one nobody saw would lock everyone out); set ADMIN_BOOTSTRAP_TOKEN then.
   */
  onBootstrapToken?: (secret: string) => void;
  /** Receives the first platform-admin person's one-time dashboard setup link, once, to show to the operator. */
  onSetupLink?: (url: string) => void;
  /** Largest config update sent in one message, bytes (tests make it small to exercise splitting). */
  maxConfigUpdateBytes?: number;
  /** Resolves upstream host names for the SSRF check; default the system resolver (tests inject a table). */
  resolveHost?: HostResolver;
}

/**
 * Starts the admin: migrates its schema, makes sure a platform admin can log in, seeds the demo
 * model, then serves the config stream (gRPC) and the admin REST API (HTTP).
 */
export async function createAdminApp(config: AdminConfig, deps: AdminAppDeps = {}): Promise<AdminApp> {
  const logger = deps.logger ?? createLogger('admin', config.LOG_LEVEL);
  // Certificates are read before anything opens, so a bad path fails the start at once.
  const security = grpcTransportSecurity(config, logger);
  const ownsDatabase = deps.database === undefined;

  // Each step registers its close as soon as it has started: a failed start closes what had
  // started, in reverse; close() turns not ready at once and runs the same steps.
  const lifecycle = createLifecycle({ logger });
  const metrics = createServiceMetrics('admin');
  // The certificates in use (reloaded when renewed) and their expiries, read at each scrape.
  metrics.onCollect(certificateExpiryRefresh(security, ['serving', 'client'], metrics.tlsCertificateExpiry));
  const ports = await lifecycle.start(async () => {
    lifecycle.defer('certificate watch', () => closeTransportSecurity(security));
    // Started first, stopped last: a scrape answers through the start and the drain.
    const metricsServer = await startMetricsServer({ metrics, host: config.BIND_HOST, port: config.ADMIN_METRICS_PORT, logger });
    lifecycle.defer('metrics server', () => metricsServer.close(0));
    const db = deps.database ?? await openDatabase({
      url: config.DATABASE_URL,
      dataDir: config.DATABASE_URL ? undefined : join(config.DATA_DIR, 'admin'),
      schema: 'admin',
    });
    if (ownsDatabase) lifecycle.defer('database', () => db.close());
    const { applied } = await prepareAdminSchema(db, config.ADMIN_MIGRATIONS);
    if (applied.length > 0) logger.info({ applied }, 'admin migrations applied');

    const cipher = createCredentialCipher(config.ADMIN_ENCRYPTION_KEY, config.ADMIN_ENCRYPTION_KEYS_PREVIOUS);
    const bootstrap = await bootstrapPlatformAdminToken(db, {
      bootstrapToken: config.ADMIN_BOOTSTRAP_TOKEN,
      handOver: deps.onBootstrapToken,
    });
    switch (bootstrap.kind) {
      case 'issued':
        logger.info('no platform-admin token existed: one was issued and handed to the operator (not logged)');
        break;
      case 'stored_from_env':
        logger.info('platform-admin token stored from ADMIN_BOOTSTRAP_TOKEN (hash only)');
        break;
      case 'existing':
        if (bootstrap.bootstrapTokenIgnored) logger.info('ADMIN_BOOTSTRAP_TOKEN ignored: a platform-admin token already exists');
        break;
      case 'none':
        logger.warn('no platform-admin token exists and none was issued: set ADMIN_BOOTSTRAP_TOKEN, or start with main.ts to have one printed');
        break;
    }

    const ledger: GrpcLedger = createGrpcLedger({
      target: config.LEDGER_GRPC_URL, callTimeoutMs: config.LEDGER_CALL_TIMEOUT_MS, budgetCallTimeoutMs: config.LEDGER_BUDGET_CALL_TIMEOUT_MS, security,
    });
    lifecycle.defer('ledger channel', () => ledger.close());

    const resolveHost = deps.resolveHost ?? systemResolver;
    // Filled by the SSRF re-check below, which commits a new version so no snapshot built before it is sent.
    const refusedUpstreams = new Map<string, string>();
    const refusedDeployments = new Map<string, string>();
    const snapshots = createConfigSnapshotSource(db, cipher, { allowPrivateNetwork: config.ADMIN_ALLOW_PRIVATE_UPSTREAMS, refusedUpstreams, refusedDeployments });
    const hub: ConfigStreamHub = createConfigStreamHub({
      snapshots, logger, ackTimeoutMs: config.SNAPSHOT_ACK_TIMEOUT_MS, heartbeatIntervalMs: config.ADMIN_HEARTBEAT_INTERVAL_MS,
      // Tool-call ids sealed by one proxy open on every other (docs/surfaces/tool-call-ids.md).
      toolCallIdKey: deriveToolCallIdKey(config.ADMIN_ENCRYPTION_KEY),
      // Every proxy marks an organisation's cacheable prompts alike (docs/decisions.md, prompt caching).
      cacheScopeKey: deriveCacheScopeKey(config.ADMIN_ENCRYPTION_KEY),
      // Stored Responses sealed by one proxy open on every other; kept for the platform's retention (docs/surfaces/responses.md).
      responseStore: { key: deriveResponseStoreKey(config.ADMIN_ENCRYPTION_KEY), retentionS: config.ADMIN_RESPONSE_RETENTION_S },
      ...(deps.maxConfigUpdateBytes === undefined ? {} : { maxUpdateBytes: deps.maxConfigUpdateBytes }),
    });
    lifecycle.defer('config stream hub', () => hub.close());
    observeAdminState(metrics, { db, hub });
    const liveEvents = createLiveEvents();
    const paymentProvider = createPaymentProvider(config);
    const refundOutcomes = countRefundOutcomes(metrics);
    const areas = createAdminService({
      db, ledger, cipher, publisher: hub, resolveHost, config, liveEvents, logger,
      paymentProvider, onPaymentAmountMismatch: countPaymentMismatch(metrics), onUnmatchedPayment: countUnmatchedPayment(metrics), ...refundOutcomes,
    });
    const service = { ...areas, billing: countPaymentWebhooks(areas.billing, metrics) };
    const people = createPeopleWiring({ db, settings: peopleSettingsFrom(config), logger, onSetupLink: deps.onSetupLink });

    if (config.DEMO_UPSTREAM_URL !== undefined && await service.catalog.seedDemoModel(config.DEMO_UPSTREAM_URL)) {
      logger.info({ slug: 'demo' }, 'demo gateway model created');
      // With the demo model, the agents' built-in names reach it: Claude Code and Codex work with
      // no model variables (README, "Agents"). Only when the demo model is created, so an alias an
      // admin deleted later does not come back on the next start.
      const aliases = await service.catalog.seedPlatformModelAliases([...agentBuiltInModelNames.claudeCode, ...agentBuiltInModelNames.codex], 'demo');
      logger.info({ slug: 'demo', aliases: aliases.length }, 'demo model aliases created');
    }
    // Models stored under a laxer setting (or whose names moved) are not served: docs/admin-api.md.
    await withholdRefusedUpstreams(db, { models: refusedUpstreams, deployments: refusedDeployments }, { allowPrivate: config.ADMIN_ALLOW_PRIVATE_UPSTREAMS }, resolveHost, logger);
    // Building the first snapshot proves every stored credential still opens with this key.
    const firstSnapshot = await snapshots.load();
    logger.info({ version: firstSnapshot.version.toString() }, 'config snapshot ready');

    const grpcServer = createGrpcServer();
    // Only a proxy's certificate opens the config stream (it carries upstream credentials).
    grpcServer.addService(hub.definition, authorizeService(
      hub.definition, hub.service, configMethodRoles, { logger, enforce: security.mode === 'mtls' },
    ));
    const grpcPort = await startGrpcServer(grpcServer, config.BIND_HOST, config.ADMIN_GRPC_PORT, security);
    lifecycle.defer('grpc server', () => stopGrpcServer(grpcServer, config.SHUTDOWN_GRACE_MS));

    const routes = createAdminRoutes({ allowPrivate: config.ADMIN_ALLOW_PRIVATE_UPSTREAMS });
    const openApiDocument = buildOpenApiDocument(routes);
    const dashboard = await createDashboard({ logger, paymentProvider: config.PAYMENT_PROVIDER });
    const httpApp = createAdminHttpApp({
      routes,
      context: { service, openApiDocument: () => openApiDocument },
      authenticate: people.authenticate,
      organisationOfProject: async (projectId) => (await findProject(db, projectId))?.organisationId,
      dashboard,
      trustProxy: config.ADMIN_TRUST_PROXY,
      publicUrl: config.ADMIN_PUBLIC_URL,
      logger,
      metrics,
      // Ready once the database is migrated and both servers listen; not ready from the start of close().
      probes: createHealthProbes({ isServing: lifecycle.isReady }),
    });
    const http = await startHttpServer({ listener: httpApp, host: config.BIND_HOST, port: config.ADMIN_HTTP_PORT, logger });
    lifecycle.defer('http server', () => http.close(config.SHUTDOWN_GRACE_MS));
    const live = attachLiveUpdates({ server: http.server, db, ledger, liveEvents, config, logger, authenticate: people.authenticate });
    lifecycle.defer('live updates', () => live.close());
    const alertWorkers = startAlertWorkers({
      db, ledger, cipher, settings: alertsSettingsFrom(config), mailer: createMailer(smtpSettingsFrom(config)), logger, liveEvents, resolveHost, metrics,
    });
    lifecycle.defer('alert workers', () => alertWorkers.close());
    const paymentJobs = startPaymentJobs({ db, config, logger, service, provider: paymentProvider, metrics });
    lifecycle.defer('payment jobs', () => paymentJobs.close());
    lifecycle.defer('invoicing jobs', startInvoicingJobs({ db, ledger, settings: invoicingSettingsFrom(config), logger }).close);
    lifecycle.defer('refund jobs', startRefundJobs({
      db, ledger, settings: billingSettingsFrom(config), invoicing: invoicingSettingsFrom(config), logger, provider: paymentProvider, ...refundOutcomes,
    }).close);
    await people.afterListen(config.ADMIN_PUBLIC_URL ?? `http://${config.BIND_HOST.includes(':') ? `[${config.BIND_HOST}]` : config.BIND_HOST}:${http.port}`);
    // First step of close(): ending the config streams releases calls waiting for acks, so
    // in-flight requests finish quickly; then the HTTP and gRPC servers drain; then the ledger
    // channel and the database go.
    lifecycle.defer('config streams', () => hub.close());

    logger.info({ httpPort: http.port, grpcPort, ledger: config.LEDGER_GRPC_URL }, 'admin ready');
    return { http: http.port, grpc: grpcPort, metrics: metricsServer.port };
  });

  let closed: Promise<void> | undefined;
  return {
    ports,
    metrics,
    isReady: lifecycle.isReady,
    close() {
      closed ??= lifecycle.close().then(() => logger.info('admin stopped'));
      return closed;
    },
  };
}
