/**
 * The one home of every metric the gateway exports: name, type, help, labels and buckets. The
 * services instantiate what they need from here (service-metrics.ts); the Prometheus alert rules
 * and the Grafana dashboard under deploy/ are checked against it, so a renamed metric cannot
 * leave an alert watching nothing.
 *
 * Cardinality is bounded by design: no label ever carries an organisation, project, key, person
 * or request id. `model` is a slug from the platform's catalogue (unknown names become
 * `unknown`), `provider_kind` a kind the proxy's upstream adapters support (the config snapshot
 * refuses others), `deployment` a deployment name of such a model (at most 16 per model, from
 * the snapshot), `route` a route template, `error_code` a code of @gateway/errors' catalogue.
 * docs/operations.md ("Label cardinality") writes the bounds down.
 */

/** Latency buckets, seconds: sub-millisecond (a carve, a Redis lease) to the longest upstream call. */
export const latencyBucketsSeconds = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
/** Batch-size buckets, operations per database transaction (the ledger's group commit, at most 512). */
export const batchSizeBuckets = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512];

/** What one metric is: Prometheus type, help text, label names, and buckets for histograms. */
export interface MetricDescriptor {
  name: string;
  type: 'counter' | 'gauge' | 'histogram';
  help: string;
  labelNames: readonly string[];
  buckets?: readonly number[];
  /** The services that export it. */
  services: readonly ('proxy' | 'ledger' | 'admin')[];
}

const describe = <const D extends MetricDescriptor>(descriptor: D): D => descriptor;

/** Every metric of the gateway, by a stable key (the key is what code uses; the name is what Prometheus sees). */
export const metricCatalogue = {
  // --- HTTP, every service with an HTTP API (proxy /v1, admin /admin/v1 and the dashboard) ---
  httpRequests: describe({
    name: 'gateway_http_requests_total', type: 'counter', services: ['proxy', 'admin'],
    help: 'HTTP requests answered, by route template, model slug (inference routes; empty elsewhere), status and error code (empty on success).',
    labelNames: ['route', 'method', 'model', 'status', 'error_code'],
  }),
  httpRequestDuration: describe({
    name: 'gateway_http_request_duration_seconds', type: 'histogram', services: ['proxy', 'admin'],
    help: 'Whole-request time from the first byte read to the last byte written (a stream: to its end), seconds.',
    labelNames: ['route', 'model', 'status_class'], buckets: latencyBucketsSeconds,
  }),

  // --- Proxy: the inference hot path ---
  proxyTimeToFirstByte: describe({
    name: 'gateway_proxy_time_to_first_byte_seconds', type: 'histogram', services: ['proxy'],
    help: 'From the request read to the first byte of the response body sent to the client, seconds.',
    labelNames: ['model', 'stream'], buckets: latencyBucketsSeconds,
  }),
  proxyUpstreamDuration: describe({
    name: 'gateway_proxy_upstream_duration_seconds', type: 'histogram', services: ['proxy'],
    help: 'One upstream call from dispatch to its last body byte (or failure), seconds, by provider kind and gateway model slug (both from the config snapshot).',
    labelNames: ['provider_kind', 'model', 'outcome'], buckets: latencyBucketsSeconds,
  }),
  proxyUpstreamRequests: describe({
    name: 'gateway_proxy_upstream_requests_total', type: 'counter', services: ['proxy'],
    help: 'Upstream calls by provider kind, gateway model slug (both from the config snapshot) and outcome (ok, http_error, timeout, connect_error, aborted, bad_response).',
    labelNames: ['provider_kind', 'model', 'outcome'],
  }),
  proxyDeploymentAttempts: describe({
    name: 'gateway_proxy_deployment_attempts_total', type: 'counter', services: ['proxy'],
    help: 'Upstream attempts by gateway model slug, deployment name (both from the config snapshot) and outcome (ok, http_429, http_5xx, http_error, timeout, connect_error, stream_broken, bad_response).',
    labelNames: ['model', 'deployment', 'outcome'],
  }),
  proxyDeploymentAttemptDuration: describe({
    name: 'gateway_proxy_deployment_attempt_duration_seconds', type: 'histogram', services: ['proxy'],
    help: 'One upstream attempt at a deployment, from dispatch to its answer read (a stream: its end) or its failure, seconds.',
    labelNames: ['model', 'deployment'], buckets: latencyBucketsSeconds,
  }),
  proxyDeploymentEjections: describe({
    name: 'gateway_proxy_deployment_ejections_total', type: 'counter', services: ['proxy'],
    help: 'Outlier ejections of a deployment by this proxy (PROXY_OUTLIER_CONSECUTIVE_FAILURES failed attempts in a row).',
    labelNames: ['model', 'deployment'],
  }),
  proxyDeploymentEjected: describe({
    name: 'gateway_proxy_deployment_ejected', type: 'gauge', services: ['proxy'],
    help: '1 while this proxy has the deployment ejected, else 0 (read at scrape time).',
    labelNames: ['model', 'deployment'],
  }),
  proxyModelHealthyDeployments: describe({
    name: 'gateway_proxy_model_healthy_deployments', type: 'gauge', services: ['proxy'],
    help: 'Deployments of a gateway model this proxy has not ejected (read at scrape time); 0: every request of the slug goes to an ejected one.',
    labelNames: ['model'],
  }),
  proxyFailovers: describe({
    name: 'gateway_proxy_failovers_total', type: 'counter', services: ['proxy'],
    help: 'Requests of a gateway model that went on to another deployment after a failed attempt (one per extra attempt).',
    labelNames: ['model'],
  }),
  proxyLedgerCallDuration: describe({
    name: 'gateway_proxy_ledger_call_duration_seconds', type: 'histogram', services: ['proxy'],
    help: 'Billing steps as the proxy sees them: reserve (path carved = from a credit grant in memory, exact = at the ledger), settle, release, checkpoint, acquire_grant, adjust_grant; seconds.',
    labelNames: ['operation', 'path'], buckets: latencyBucketsSeconds,
  }),
  proxyReserves: describe({
    name: 'gateway_proxy_reserves_total', type: 'counter', services: ['proxy'],
    help: 'Reserves by path (carved, exact) and outcome (held, insufficient_balance, budget_exceeded, ledger_unavailable, error).',
    labelNames: ['path', 'outcome'],
  }),
  proxyTokens: describe({
    name: 'gateway_proxy_tokens_total', type: 'counter', services: ['proxy'],
    help: 'Tokens billed, by model slug and kind (input, output).',
    labelNames: ['model', 'kind'],
  }),
  proxyChargedMicros: describe({
    name: 'gateway_proxy_charged_micros_total', type: 'counter', services: ['proxy'],
    help: 'Micro-rupees charged by the Settles the proxy sent, by model slug (an observation: the ledger is the record).',
    labelNames: ['model'],
  }),
  proxyRpmRefusals: describe({
    name: 'gateway_proxy_rpm_refusals_total', type: 'counter', services: ['proxy'],
    help: 'Requests refused with 429 by the requests-per-minute limit, by the pool that was full (organisation: the RPM pool is per organisation).',
    labelNames: ['scope'],
  }),
  proxyActiveStreams: describe({
    name: 'gateway_proxy_active_streams', type: 'gauge', services: ['proxy'],
    help: 'Streaming responses in flight now.',
    labelNames: [],
  }),
  proxyOutboxDepth: describe({
    name: 'gateway_proxy_settle_outbox_depth', type: 'gauge', services: ['proxy'],
    help: 'Settles and Releases waiting for the ledger to answer (what a SIGKILL of this replica would leave to the expiry sweeper).',
    labelNames: [],
  }),
  proxyOutboxOldestAge: describe({
    name: 'gateway_proxy_settle_outbox_oldest_age_seconds', type: 'gauge', services: ['proxy'],
    help: 'Age of the oldest entry in the settle outbox, seconds (0 when empty).',
    labelNames: [],
  }),
  proxyOutboxAbandoned: describe({
    name: 'gateway_proxy_settle_outbox_abandoned_total', type: 'counter', services: ['proxy'],
    help: 'Outbox entries given up at shutdown and logged for replay.',
    labelNames: [],
  }),
  proxyRequestLogDropped: describe({
    name: 'gateway_proxy_request_log_dropped_total', type: 'counter', services: ['proxy'],
    help: 'Request-log records this replica gave up (reason buffer_full: the ledger was away long enough to fill the buffer, the oldest went; refused: the ledger refused a batch as malformed). Display only: no money is lost.',
    labelNames: ['reason'],
  }),
  proxyConfigVersion: describe({
    name: 'gateway_proxy_config_version', type: 'gauge', services: ['proxy'],
    help: 'Version of the config snapshot this replica applied (0 before the first).',
    labelNames: [],
  }),
  proxyConfigStaleness: describe({
    name: 'gateway_proxy_config_staleness_seconds', type: 'gauge', services: ['proxy'],
    help: 'Seconds since the config stream last confirmed the snapshot (a message or heartbeat); the proxy refuses traffic past PROXY_CONFIG_STALENESS_MS.',
    labelNames: [],
  }),
  proxyConfigFresh: describe({
    name: 'gateway_proxy_config_fresh', type: 'gauge', services: ['proxy'],
    help: '1 while the applied config snapshot is fresh, else 0.',
    labelNames: [],
  }),
  proxyRedisUp: describe({
    name: 'gateway_proxy_redis_up', type: 'gauge', services: ['proxy'],
    help: '1 while the proxy\'s Redis client (rate_limiter: the shared RPM pools; response_store: stored Responses; outbox: the Settles handed over between replicas) is connected and ready, else 0.',
    labelNames: ['client'],
  }),
  proxyRedisCommandDuration: describe({
    name: 'gateway_proxy_redis_command_duration_seconds', type: 'histogram', services: ['proxy'],
    help: 'One Redis command (an RPM lease; a stored Response read, write or delete) from send to reply or failure, by client and outcome (ok, error); seconds.',
    labelNames: ['client', 'outcome'], buckets: latencyBucketsSeconds,
  }),
  proxyRedisErrors: describe({
    name: 'gateway_proxy_redis_errors_total', type: 'counter', services: ['proxy'],
    help: 'Redis failures by client and kind (command: a command failed or timed out; connection: the client lost or could not make its connection, once per retry).',
    labelNames: ['client', 'kind'],
  }),
  proxyRpmDegraded: describe({
    name: 'gateway_proxy_rpm_degraded', type: 'gauge', services: ['proxy'],
    help: 'The RPM limiter\'s mode without its shared pool: 1 while it admits each organisation\'s per-replica share (Redis down, within PROXY_RPM_DEGRADED_MS), 2 while it refuses with 503 (past the bound, or no PROXY_REPLICAS), 0 while Redis answers.',
    labelNames: [],
  }),
  proxyGrantHeldMicros: describe({
    name: 'gateway_proxy_grant_held_micros', type: 'gauge', services: ['proxy'],
    help: 'Micro-rupees this replica holds in credit grants and has not carved yet.',
    labelNames: [],
  }),

  // --- Ledger ---
  ledgerRpcRequests: describe({
    name: 'gateway_ledger_rpc_requests_total', type: 'counter', services: ['ledger'],
    help: 'gRPC calls answered, by LedgerService method as the proto names it (Reserve, Operate, ...), Operate-stream operation (reserve, settle_batch, ...; empty for a unary call) and gRPC status code name.',
    labelNames: ['method', 'operation', 'code'],
  }),
  ledgerRpcDuration: describe({
    name: 'gateway_ledger_rpc_duration_seconds', type: 'histogram', services: ['ledger'],
    help: 'Time from receiving a call or Operate-stream operation to sending its answer, seconds, by method and operation.',
    labelNames: ['method', 'operation'], buckets: latencyBucketsSeconds,
  }),
  ledgerBatchSize: describe({
    name: 'gateway_ledger_batch_size', type: 'histogram', services: ['ledger'],
    help: 'Operations committed in one database transaction by the group commit, by operation.',
    labelNames: ['operation'], buckets: batchSizeBuckets,
  }),
  ledgerCommitDuration: describe({
    name: 'gateway_ledger_commit_duration_seconds', type: 'histogram', services: ['ledger'],
    help: 'One committed group-commit transaction from BEGIN to COMMIT, seconds (a batch that rolled back as a whole is not observed).',
    labelNames: ['operation'], buckets: latencyBucketsSeconds,
  }),
  ledgerSweeperPasses: describe({
    name: 'gateway_ledger_sweeper_passes_total', type: 'counter', services: ['ledger'],
    help: 'Expiry sweeper passes by outcome (ok, error).',
    labelNames: ['outcome'],
  }),
  ledgerSweeperExpired: describe({
    name: 'gateway_ledger_sweeper_expired_total', type: 'counter', services: ['ledger'],
    help: 'Holds the sweeper resolved at their deadline, by kind (reservation, grant).',
    labelNames: ['kind'],
  }),
  ledgerSweeperPassDuration: describe({
    name: 'gateway_ledger_sweeper_pass_duration_seconds', type: 'histogram', services: ['ledger'],
    help: 'One sweeper pass, seconds.',
    labelNames: [], buckets: latencyBucketsSeconds,
  }),
  ledgerHoldsPastDeadline: describe({
    name: 'gateway_ledger_holds_past_deadline', type: 'gauge', services: ['ledger'],
    help: 'Holds still open more than one sweep interval past their deadline, by kind (reservation, grant); anything above 0 for long means the sweeper is not keeping up (EXPIRY).',
    labelNames: ['kind'],
  }),
  ledgerVerifyDifferences: describe({
    name: 'gateway_ledger_verify_differences', type: 'gauge', services: ['ledger'],
    help: 'Differences the last periodic verify found, by check (balances, usage, grants, ...); must be 0 (CONSERVATION).',
    labelNames: ['check'],
  }),
  ledgerVerifyLastSuccess: describe({
    name: 'gateway_ledger_verify_last_success_timestamp_seconds', type: 'gauge', services: ['ledger'],
    help: 'Unix time of the last periodic verify that ran to completion (whatever it found).',
    labelNames: [],
  }),
  ledgerVerifyDuration: describe({
    name: 'gateway_ledger_verify_duration_seconds', type: 'gauge', services: ['ledger'],
    help: 'How long the last periodic verify took, seconds.',
    labelNames: [],
  }),
  ledgerUsagePartitions: describe({
    name: 'gateway_ledger_usage_partitions', type: 'gauge', services: ['ledger'],
    help: 'Monthly partitions of the usage records, by state (past, current, ahead).',
    labelNames: ['state'],
  }),
  ledgerUsageRowsPruned: describe({
    name: 'gateway_ledger_usage_rows_pruned_total', type: 'counter', services: ['ledger'],
    help: 'Raw usage records removed by retention (LEDGER_USAGE_RETENTION_MONTHS); their roll-ups and money movements stay.',
    labelNames: [],
  }),

  // --- Admin ---
  adminConfigVersion: describe({
    name: 'gateway_admin_config_version', type: 'gauge', services: ['admin'],
    help: 'Latest config version the admin publishes to proxies.',
    labelNames: [],
  }),
  adminConnectedProxies: describe({
    name: 'gateway_admin_connected_proxies', type: 'gauge', services: ['admin'],
    help: 'Proxies connected to this admin replica\'s config stream now.',
    labelNames: [],
  }),
  adminPaymentEvents: describe({
    name: 'gateway_admin_payment_events_total', type: 'counter', services: ['admin'],
    help: 'Payment events by kind (webhook, reconciliation, sweep, checkout) and outcome: a webhook processed, duplicate, ignored, unmatched (genuine, matching no top-up: recorded), rejected (bad signature) or error; a reconciled top-up or swept payment checked or error; mismatch (a captured payment of another amount or currency, not credited) and unmatched (a payment matching nothing sold, recorded once) on top of the event\'s own outcome.',
    labelNames: ['kind', 'outcome'],
  }),
  adminRefundOutcomes: describe({
    name: 'gateway_admin_refund_outcomes_total', type: 'counter', services: ['admin'],
    help: 'Refund outcomes platform admins must act on, each counted once when it is recorded: failed (a refund of the gateway\'s refused for good by the payment provider; its money is back in the balance) and shortfall (a refund or dispute made outside the gateway that the balance could not cover in full; the organisation is flagged).',
    labelNames: ['outcome'],
  }),
  adminAlertDeliveries: describe({
    name: 'gateway_admin_alert_deliveries_total', type: 'counter', services: ['admin'],
    help: 'Alert delivery attempts by channel (email, webhook) and outcome: delivered; failed (the send failed: mail relay error, webhook endpoint error or timeout; retried later or given up); undeliverable (nothing to send to: no owner email, email off, alert or webhook gone, address refused).',
    labelNames: ['channel', 'outcome'],
  }),

  // --- Every service: internal mTLS certificates (reloaded from disk when renewed) ---
  tlsCertificateExpiry: describe({
    name: 'gateway_tls_certificate_expiry_timestamp_seconds', type: 'gauge', services: ['proxy', 'ledger', 'admin'],
    help: 'Unix time at which a certificate in use for internal gRPC stops being valid, by use: serving (the gRPC server\'s), client (the channels\'), ca (the trust bundle\'s first to expire). Moves forward when a renewal is reloaded; absent under GRPC_INSECURE.',
    labelNames: ['certificate'],
  }),
} as const satisfies Record<string, MetricDescriptor>;

/** A key of the catalogue. */
export type MetricKey = keyof typeof metricCatalogue;

/** Every metric name the gateway exports, the Node.js defaults (prefix `nodejs_`, `process_`) aside. */
export const exportedMetricNames: ReadonlySet<string> = new Set(Object.values(metricCatalogue).map((descriptor) => descriptor.name));
