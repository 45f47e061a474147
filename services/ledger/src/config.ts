import { commonEnv, loadConfig, z } from '@gateway/config';
import { checkGrpcTlsEnv, grpcTlsEnv } from '@gateway/grpc';

/** The ledger's environment: the shared variables plus its own ports, sweep interval and pool size. */
export const ledgerConfigSchema = z.object({
  /** Address the gRPC and health servers listen on. */
  BIND_HOST: z.string().min(1).default('127.0.0.1'),
  LOG_LEVEL: commonEnv.logLevel,
  /** PostgreSQL URL; unset means embedded PGlite under DATA_DIR/ledger. */
  DATABASE_URL: commonEnv.postgresUrl.optional(),
  /** Where embedded PGlite keeps its data. */
  DATA_DIR: z.string().min(1).default('.data'),
  /** How long in-flight calls may take after SIGTERM, ms. */
  SHUTDOWN_GRACE_MS: commonEnv.durationMs(10_000),
  /** gRPC port of LedgerService (0: any free port). */
  LEDGER_GRPC_PORT: commonEnv.port(50051),
  /** HTTP port of /healthz and /readyz (0: any free port). */
  LEDGER_HTTP_PORT: commonEnv.port(8082),
  /** Internal port of GET /metrics (Prometheus), apart from the probes (0: any free port). */
  LEDGER_METRICS_PORT: commonEnv.port(9103),
  /**
   * `apply`: the ledger brings its schema up to this build at start (one machine, `pnpm start`).
   * `verify`: it only checks the schema is current and refuses to start otherwise: in Kubernetes
   * the release's migration Job applies it once (docs/deploy.md "Upgrades").
   */
  LEDGER_MIGRATIONS: z.enum(['apply', 'verify']).default('apply'),
  /** How often the ledger re-checks its books (the `verify` checks) and exports the differences as metrics, ms. */
  LEDGER_VERIFY_INTERVAL_MS: z.coerce.number().int().min(1_000).max(86_400_000).default(300_000),
  /** Monthly partitions of the usage records created ahead of the current month. */
  LEDGER_USAGE_PARTITIONS_AHEAD: z.coerce.number().int().min(1).max(24).default(3),
  /**
   * Whole months of raw usage records kept before the current one (older monthly partitions are
   * dropped; daily roll-ups and money movements are kept). 0 keeps every raw record.
   */
  LEDGER_USAGE_RETENTION_MONTHS: z.coerce.number().int().min(0).max(1200).default(0),
  /**
   * Days of request-log records (RecordRequests; docs/ledger.md "Request log") kept before today,
   * Asia/Kolkata: older day partitions are dropped whole. 0 keeps every day. Not money: the usage
   * records are what was billed, and their retention is LEDGER_USAGE_RETENTION_MONTHS.
   */
  LEDGER_REQUEST_LOG_RETENTION_DAYS: z.coerce.number().int().min(0).max(3650).default(30),
  /** How often the sweeper looks for reservations past their deadline, ms. */
  LEDGER_SWEEP_INTERVAL_MS: commonEnv.durationMs(5_000),
  /** How often a WatchBudgetAlerts stream looks for new alerts, ms. */
  LEDGER_ALERT_POLL_INTERVAL_MS: commonEnv.durationMs(1_000),
  /**
   * Longest a batch of Settles alone waits for more before it goes to PostgreSQL, ms (0: never
   * waits). No client waits for a Settle, and a batch costs a fixed round of database work, so
   * at low concurrency a few ms turn batches of one into batches of several (docs/ledger.md,
   * "What a Settle costs"). A Reserve never waits.
   */
  LEDGER_SETTLE_LINGER_MS: z.coerce.number().int().min(0).max(1_000).default(5),
  /** Connections in the PostgreSQL pool (ignored with PGlite). */
  LEDGER_DB_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(10),
  /** Largest share of an organisation's available balance (and of a project's budget headroom) one credit grant may hold, percent. */
  LEDGER_GRANT_MAX_SHARE_PERCENT: z.coerce.number().int().min(1).max(50).default(10),
  /** How often a replica looks for recalled grants whose owners' Operate streams it serves, ms. */
  LEDGER_RECALL_POLL_INTERVAL_MS: commonEnv.durationMs(100),
  /**
   * Longest a budget change (SetProjectBudget) that recalled the project's credit grants waits for
   * their owners' answers, ms. The wait also ends at each grant's deadline, after which its owner
   * carves nothing: keep this above the proxies' PROXY_GRANT_TTL_MS and below the admin's
   * LEDGER_BUDGET_CALL_TIMEOUT_MS.
   */
  LEDGER_BUDGET_RECALL_WAIT_MS: commonEnv.durationMs(25_000),
  ...grpcTlsEnv,
}).superRefine(checkGrpcTlsEnv);

/** The ledger's validated configuration, keyed by environment variable name. */
export type LedgerConfig = z.infer<typeof ledgerConfigSchema>;

/** Reads the ledger's configuration from an environment; throws ConfigError listing every problem. */
export function loadLedgerConfig(env: Record<string, string | undefined> = process.env): LedgerConfig {
  return loadConfig('ledger', ledgerConfigSchema, env);
}
